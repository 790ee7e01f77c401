//! The attribute values every span shares the making of: token counts as
//! the GenAI conventions count them, model and provider names, counts as
//! OTLP integers, and texts cut to what a span may carry.
//!
//! Apart from `spans.rs` so that the event-to-span table reads as one table
//! and `workflow_spans.rs` uses the same conversions.

use alcove_protocol::Usage;
use opentelemetry::KeyValue;

/// Tool inputs and results exported with `log_content` are cut here.
const CONTENT_CAP: usize = 8 * 1024;

/// Token attributes: `gen_ai.usage.input_tokens` counts every prompt token
/// (cached or not, as the conventions and OpenAI count them); the cache's
/// shares are apart.
pub(super) fn usage_attributes(usage: &Usage) -> Vec<KeyValue> {
    vec![
        KeyValue::new(
            "gen_ai.usage.input_tokens",
            count_u64(usage.prompt_tokens()),
        ),
        KeyValue::new("gen_ai.usage.output_tokens", count_u64(usage.output_tokens)),
        KeyValue::new(
            "gen_ai.usage.cache_read.input_tokens",
            count_u64(usage.cache_read_tokens),
        ),
        KeyValue::new(
            "gen_ai.usage.cache_creation.input_tokens",
            count_u64(usage.cache_write_tokens),
        ),
        KeyValue::new(
            "alcove.usage.uncached_input_tokens",
            count_u64(usage.input_tokens),
        ),
    ]
}

/// `provider/name` → `name`.
pub(super) fn model_name(model: &str) -> String {
    model
        .split_once('/')
        .map_or(model, |(_, name)| name)
        .to_owned()
}

/// `provider/name` → `provider`.
pub(super) fn provider_name(model: &str) -> String {
    model
        .split_once('/')
        .map_or("", |(provider, _)| provider)
        .to_owned()
}

pub(super) fn count(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(super) fn count_u64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(super) use crate::output::first_line;

pub(super) fn cap(mut text: String) -> String {
    if text.len() > CONTENT_CAP {
        let mut end = CONTENT_CAP;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("…[cut]");
    }
    text
}
