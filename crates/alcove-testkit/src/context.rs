//! What the fake server knows about context: a window that rejects a
//! request over N tokens with each provider's real error, each provider's
//! prompt cache, and a stand-in summariser.
//!
//! Tokens are counted the same simple way everywhere: each element of the
//! request (a tool, the system prompt, one content block of a message) costs
//! its JSON size over four, rounded up, with any `cache_control` left out.
//!
//! The cache follows Anthropic's documented behaviour: a request's
//! `cache_control` breakpoints mark prefixes (tools, then system, then
//! messages) that are stored for the conversation; a later request reads
//! from the cache the longest of its prefixes, up to its last breakpoint,
//! that an earlier request stored (`cache_read_input_tokens`), writes the
//! rest up to that breakpoint (`cache_creation_input_tokens`), and pays
//! full price for what follows (`input_tokens`). OpenAI's cache is
//! automatic: a prompt of 1,024 tokens or more reads the longest prefix an
//! earlier request of the conversation sent, in steps of 128 tokens
//! (`prompt_tokens_details.cached_tokens`, a part of `prompt_tokens`).

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Value, json};

use crate::record::{Protocol, RecordedRequest};

/// How an OpenAI-compatible server words "too long".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverflowStyle {
    /// OpenAI: `code: context_length_exceeded`.
    OpenAi,
    /// llama.cpp's server: `type: exceed_context_size_error` with counts.
    LlamaCpp,
}

/// The context settings of a script.
#[derive(Debug, Clone, Default)]
pub(crate) struct ContextModel {
    /// Reject requests over this many tokens.
    pub(crate) window: Option<(u64, OverflowStyle)>,
    /// Report input usage counted from the request (and the cache).
    pub(crate) count_tokens: bool,
    /// `(marker, keep)`: a request whose last user text contains `marker`
    /// is answered with every line of its messages containing `keep`.
    pub(crate) summarizer: Option<(String, String)>,
}

/// Input token counts of one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Accounting {
    pub(crate) uncached: u64,
    pub(crate) cache_read: u64,
    pub(crate) cache_write: u64,
}

impl Accounting {
    #[cfg(test)]
    pub(crate) fn total(&self) -> u64 {
        self.uncached + self.cache_read + self.cache_write
    }
}

/// Cached prefixes, per conversation (its first user message text).
#[derive(Debug, Default)]
pub(crate) struct Cache {
    stored: HashMap<String, HashSet<u64>>,
}

/// What to do with a model request before the script is consulted.
pub(crate) enum Verdict {
    /// Answer with this status and JSON body (the window was exceeded).
    Reject(u16, Value),
    /// Answer with this text (the summariser), with these counts.
    Summary(String, Accounting),
    /// Go on to the script, reporting these counts (when counting).
    Script(Option<Accounting>),
}

/// Counts the request, applies the window and the summariser, and updates
/// the cache.
pub(crate) fn judge(model: &ContextModel, cache: &mut Cache, record: &RecordedRequest) -> Verdict {
    if model.window.is_none() && !model.count_tokens && model.summarizer.is_none() {
        return Verdict::Script(None);
    }
    let protocol = record.protocol();
    let elements = elements(&record.body, protocol);
    let total: u64 = elements.iter().map(|(tokens, _, _)| tokens).sum();
    if let Some((window, style)) = model.window
        && total > window
    {
        return Verdict::Reject(400, overflow_body(protocol, style, total, window));
    }
    let accounting = match protocol {
        Protocol::Anthropic => cached(cache, &record.first_user_message_text(), &elements),
        Protocol::OpenAi => automatic(
            cache,
            &record.first_user_message_text(),
            &elements,
            Some((1024, 128)),
        ),
        // Any shared prefix counts on the Responses wire, so the short
        // prompts of tests show its cached input.
        Protocol::Responses => automatic(cache, &record.first_user_message_text(), &elements, None),
    };
    if let Some((marker, keep)) = &model.summarizer
        && record.last_user_text().contains(marker.as_str())
    {
        return Verdict::Summary(summary(&record.body, marker, keep), accounting);
    }
    Verdict::Script(Some(accounting))
}

/// llama.cpp's `GET /props`, when the script models a llama.cpp window.
pub(crate) fn props(model: &ContextModel) -> Option<Value> {
    match model.window {
        Some((window, OverflowStyle::LlamaCpp)) => {
            Some(json!({"default_generation_settings": {"n_ctx": window}, "total_slots": 1}))
        }
        _ => None,
    }
}

/// The request's elements in cache order: (tokens, prefix hash, breakpoint).
fn elements(body: &Value, protocol: Protocol) -> Vec<(u64, u64, bool)> {
    let mut parts: Vec<Value> = Vec::new();
    if let Some(tools) = body["tools"].as_array() {
        parts.extend(tools.iter().cloned());
    }
    match &body["system"] {
        Value::Array(blocks) => parts.extend(blocks.iter().cloned()),
        Value::String(text) => parts.push(json!({"type": "text", "text": text})),
        _ => {}
    }
    if let Some(instructions) = body["instructions"].as_str() {
        parts.push(json!({"type": "text", "text": instructions}));
    }
    let conversation = body["messages"]
        .as_array()
        .or_else(|| body["input"].as_array());
    for message in conversation.into_iter().flatten() {
        match (&message["content"], protocol) {
            (Value::Array(blocks), Protocol::Anthropic) => {
                for block in blocks {
                    parts.push(json!({"role": message["role"], "block": block}));
                }
            }
            _ => parts.push(message.clone()),
        }
    }
    let mut hasher = DefaultHasher::new();
    parts
        .into_iter()
        .map(|mut part| {
            let breakpoint = strip_cache_control(&mut part);
            let text = part.to_string();
            text.hash(&mut hasher);
            ((text.len() as u64).div_ceil(4), hasher.finish(), breakpoint)
        })
        .collect()
}

/// Removes every `cache_control` in `value`; says whether there was one.
fn strip_cache_control(value: &mut Value) -> bool {
    match value {
        Value::Object(map) => {
            let mut found = map.remove("cache_control").is_some();
            for inner in map.values_mut() {
                found |= strip_cache_control(inner);
            }
            found
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |found, item| strip_cache_control(item) | found),
        _ => false,
    }
}

fn cached(cache: &mut Cache, conversation: &str, elements: &[(u64, u64, bool)]) -> Accounting {
    let total: u64 = elements.iter().map(|(tokens, _, _)| tokens).sum();
    let Some(last) = elements.iter().rposition(|(_, _, breakpoint)| *breakpoint) else {
        return Accounting {
            uncached: total,
            ..Accounting::default()
        };
    };
    let stored = cache.stored.entry(conversation.to_owned()).or_default();
    let mut running = 0;
    let mut read = 0;
    let mut upto_last = 0;
    for (index, (tokens, hash, _)) in elements.iter().enumerate() {
        running += tokens;
        if index <= last && stored.contains(hash) {
            read = running;
        }
        if index == last {
            upto_last = running;
        }
    }
    for (_, hash, breakpoint) in elements {
        if *breakpoint {
            stored.insert(*hash);
        }
    }
    Accounting {
        uncached: total - upto_last,
        cache_read: read,
        cache_write: upto_last - read,
    }
}

/// OpenAI's automatic prompt cache (both of its wires): no breakpoints; a
/// request reads the longest prefix an earlier request of the conversation
/// began with, and every prefix of it is stored for the next; nothing is
/// billed as a write. `rounding` is the real service's `(minimum, step)`:
/// a prompt under `minimum` tokens reads nothing, and reads count in
/// `step`s; `None` counts any shared prefix.
fn automatic(
    cache: &mut Cache,
    conversation: &str,
    elements: &[(u64, u64, bool)],
    rounding: Option<(u64, u64)>,
) -> Accounting {
    let total: u64 = elements.iter().map(|(tokens, _, _)| tokens).sum();
    let stored = cache.stored.entry(conversation.to_owned()).or_default();
    let mut running = 0;
    let mut read = 0;
    for (tokens, hash, _) in elements {
        running += tokens;
        if !stored.contains(hash) {
            break;
        }
        read = running;
    }
    stored.extend(elements.iter().map(|(_, hash, _)| *hash));
    let read = match rounding {
        Some((minimum, _)) if total < minimum => 0,
        Some((_, step)) => read / step * step,
        None => read,
    };
    Accounting {
        uncached: total - read,
        cache_read: read,
        cache_write: 0,
    }
}

fn overflow_body(protocol: Protocol, style: OverflowStyle, total: u64, window: u64) -> Value {
    match (protocol, style) {
        (Protocol::Responses, _) => crate::responses::overflow_body(),
        (Protocol::Anthropic, _) => crate::anthropic::error_body(
            "invalid_request_error",
            &format!("prompt is too long: {total} tokens > {window} maximum"),
        ),
        (Protocol::OpenAi, OverflowStyle::OpenAi) => json!({"error": {
            "message": format!("This model's maximum context length is {window} tokens. However, your messages resulted in {total} tokens. Please reduce the length of the messages."),
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }}),
        (Protocol::OpenAi, OverflowStyle::LlamaCpp) => json!({"error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": total,
            "n_ctx": window,
        }}),
    }
}

/// Every distinct line of the request's messages that contains `keep`,
/// leaving out the summary request itself (the text around `marker`).
fn summary(body: &Value, marker: &str, keep: &str) -> String {
    let mut strings = Vec::new();
    collect_strings(&body["messages"], &mut strings);
    collect_strings(&body["input"], &mut strings);
    let mut seen = HashSet::new();
    let mut lines = vec!["## Facts".to_owned()];
    for text in strings.iter().filter(|text| !text.contains(marker)) {
        for line in text.lines().filter(|line| line.contains(keep)) {
            if seen.insert(line.trim().to_owned()) {
                lines.push(line.trim().to_owned());
            }
        }
    }
    lines.join("\n")
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| collect_strings(item, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(body: Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".to_owned(),
            path: "/v1/messages".to_owned(),
            headers: Vec::new(),
            body,
            body_len: 0,
            received_at: std::time::Instant::now(),
        }
    }

    fn turn(n: usize) -> Value {
        let mut messages = Vec::new();
        for i in 0..n {
            messages.push(json!({"role": "user", "content": [{"type": "text", "text": format!("user {i} {}", "x".repeat(400))}]}));
            // (the last message below has the same text when it is at `i`)
            messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("reply {i}")}]}));
        }
        messages.push(json!({"role": "user", "content": [{"type": "text", "text": format!("user {n} {}", "x".repeat(400)), "cache_control": {"type": "ephemeral"}}]}));
        json!({
            "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
            "messages": messages,
        })
    }

    #[test]
    fn a_later_turn_reads_what_an_earlier_one_wrote() {
        let model = ContextModel {
            count_tokens: true,
            ..ContextModel::default()
        };
        let mut cache = Cache::default();
        let Verdict::Script(Some(first)) = judge(&model, &mut cache, &record(turn(0))) else {
            panic!()
        };
        assert_eq!(first.cache_read, 0);
        assert_eq!(first.uncached, 0);
        assert!(first.cache_write > 100);
        let Verdict::Script(Some(second)) = judge(&model, &mut cache, &record(turn(1))) else {
            panic!()
        };
        // The whole first request is read back; only the new turn is written.
        assert_eq!(second.cache_read, first.total());
        assert!(second.cache_write > 100, "{second:?}");
        assert_eq!(second.uncached, 0);
    }

    #[test]
    fn openai_reads_the_prefix_it_saw_from_1024_tokens_in_steps_of_128() {
        let model = ContextModel {
            count_tokens: true,
            ..ContextModel::default()
        };
        let openai = |body: Value| RecordedRequest {
            path: "/v1/chat/completions".to_owned(),
            ..record(body)
        };
        let long = |turns: usize| {
            let mut messages = vec![json!({"role": "system", "content": "s".repeat(6000)})];
            for i in 0..turns {
                messages.push(json!({"role": "user", "content": format!("user {i}")}));
            }
            json!({"messages": messages})
        };
        let mut cache = Cache::default();
        let Verdict::Script(Some(first)) = judge(&model, &mut cache, &openai(long(1))) else {
            panic!()
        };
        assert_eq!(first.cache_read, 0);
        let Verdict::Script(Some(second)) = judge(&model, &mut cache, &openai(long(2))) else {
            panic!()
        };
        assert!(second.cache_read >= 1024, "{second:?}");
        assert_eq!(second.cache_read % 128, 0);
        assert!(second.cache_read <= first.total(), "{second:?}");
        assert_eq!(second.total(), second.uncached + second.cache_read);
        assert_eq!(second.cache_write, 0);
        // A short prompt is never cached.
        let short = json!({"messages": [{"role": "user", "content": "hi"}]});
        judge(&model, &mut cache, &openai(short.clone()));
        let Verdict::Script(Some(again)) = judge(&model, &mut cache, &openai(short)) else {
            panic!()
        };
        assert_eq!(again.cache_read, 0);
    }

    #[test]
    fn the_window_rejects_with_each_providers_error() {
        let model = ContextModel {
            window: Some((50, OverflowStyle::LlamaCpp)),
            ..ContextModel::default()
        };
        let Verdict::Reject(400, body) = judge(&model, &mut Cache::default(), &record(turn(0)))
        else {
            panic!()
        };
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("prompt is too long")
        );
        let mut openai =
            record(json!({"messages": [{"role": "user", "content": "z".repeat(400)}]}));
        openai.path = "/v1/chat/completions".to_owned();
        let Verdict::Reject(400, body) = judge(&model, &mut Cache::default(), &openai) else {
            panic!()
        };
        assert_eq!(body["error"]["type"], "exceed_context_size_error");
        assert_eq!(body["error"]["n_ctx"], 50);
    }
}
