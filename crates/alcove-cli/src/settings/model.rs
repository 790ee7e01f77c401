//! How the model is reached and asked: `model` (and `ALCOVE_MODEL`),
//! `[providers]`, `max_tokens` (a request's output cap), `temperature`,
//! `effort`, `[model_options]`, `[retry]`, `prompt_cache_key`,
//! `[pricing]` and `[model_aliases]`. Plain values: every layer replaces
//! the one below it key by key. What the options do to a provider is
//! `model_options.rs`; which provider a spec names is `provider.rs`.

use alcove_model::Thinking;
use serde::Deserialize;

use super::{Config, EnvVar, Untrusted};

/// An untrusted project may say how the model is asked and what it
/// costs, never which model or provider (nor where a key is sent).
pub(crate) static UNTRUSTED: [(&str, Untrusted); 7] = [
    ("max_tokens", Untrusted::Kept),
    ("temperature", Untrusted::Kept),
    ("effort", Untrusted::Kept),
    ("model_options", Untrusted::Kept),
    ("retry", Untrusted::Kept),
    ("prompt_cache_key", Untrusted::Kept),
    ("pricing", Untrusted::Kept),
];

/// A request's output cap when `max_tokens` is not set.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The variables of this section.
pub(crate) static ENV: [EnvVar; 1] = [EnvVar {
    var: "ALCOVE_MODEL",
    key: "model",
    parse: super::text,
}];

/// A request's output cap.
pub(crate) fn max_tokens(config: &Config) -> u32 {
    config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)
}

/// The defaults `config show` prints.
pub(crate) fn describe() -> Vec<(String, toml::Value)> {
    let retry = alcove_model::RetryPolicy::default();
    let millis = |duration: std::time::Duration| super::integer(duration.as_millis());
    vec![
        ("max_tokens".to_owned(), super::integer(DEFAULT_MAX_TOKENS)),
        (
            "retry.max_retries".to_owned(),
            super::integer(retry.max_retries),
        ),
        ("retry.base_delay_ms".to_owned(), millis(retry.base_delay)),
        ("retry.max_delay_ms".to_owned(), millis(retry.max_delay)),
        (
            "retry.first_byte_timeout_ms".to_owned(),
            millis(retry.first_byte_timeout),
        ),
        (
            "retry.idle_timeout_ms".to_owned(),
            millis(retry.idle_timeout),
        ),
    ]
}

/// `[model_options."<provider>"]` or `[model_options."<provider>/<model>"]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ModelOptionsEntry {
    /// The sampling temperature sent with each request.
    pub(crate) temperature: Option<f32>,
    /// How long the first byte of an answer may take, in ms.
    pub(crate) first_byte_timeout_ms: Option<u64>,
    /// How long a started stream may stay silent, in ms.
    pub(crate) idle_timeout_ms: Option<u64>,
    /// OpenAI wire: run tool calls the model wrote as text (default: on for
    /// a local server, off otherwise).
    pub(crate) text_tool_calls: Option<bool>,
    /// OpenAI providers: the wire spoken (default: Responses for the
    /// models `openai_wire.rs` lists on the built-in provider, else the
    /// provider's kind).
    pub(crate) wire: Option<Wire>,
    /// Another name for `effort`, kept from when the OpenAI wires had a
    /// key of their own; `effort` wins when both are set.
    #[serde(deserialize_with = "effort_setting")]
    pub(crate) reasoning_effort: Option<String>,
    /// Responses: the reasoning summary (`auto`, `concise`, `detailed`, or
    /// `off` for none), streamed as thinking.
    pub(crate) reasoning_summary: Option<String>,
    /// Anthropic wire: `"adaptive"`, `"off"` or a thinking budget in tokens
    /// (default: adaptive where the model takes it, else off).
    #[serde(deserialize_with = "thinking_setting")]
    pub(crate) thinking: Option<Thinking>,
    /// How hard the model thinks (`minimal`, `low`, `medium`, `high`,
    /// `xhigh`, `max`), read by every wire: Anthropic's
    /// `output_config.effort` and thinking budget, Responses'
    /// `reasoning.effort`, Chat's `reasoning_effort`.
    #[serde(deserialize_with = "effort_setting")]
    pub(crate) effort: Option<String>,
    /// Whether the model takes images (default: yes, but not a local
    /// server on the OpenAI wire, whose models mostly do not); without,
    /// each image is a text note.
    pub(crate) vision: Option<bool>,
}

impl ModelOptionsEntry {
    /// The effort this entry sets, under either of its names.
    pub(crate) fn effort(&self) -> Option<&str> {
        self.effort.as_deref().or(self.reasoning_effort.as_deref())
    }
}

/// `wire = "responses" | "chat"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Wire {
    /// OpenAI Responses (`/v1/responses`).
    Responses,
    /// OpenAI Chat Completions (`/v1/chat/completions`).
    Chat,
}

/// `thinking = "adaptive" | "off" | <budget tokens>`.
fn thinking_setting<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Thinking>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Setting {
        Budget(i64),
        Word(String),
    }
    let invalid = |what: &str| {
        serde::de::Error::custom(format!(
            "thinking must be \"adaptive\", \"off\" or a budget of at least {MIN_THINKING_BUDGET} tokens, not {what}"
        ))
    };
    match Setting::deserialize(deserializer)? {
        Setting::Budget(tokens) => match u32::try_from(tokens) {
            Ok(tokens) if tokens >= MIN_THINKING_BUDGET => Ok(Some(Thinking::Budget(tokens))),
            _ => Err(invalid(&tokens.to_string())),
        },
        Setting::Word(word) => match word.trim().to_ascii_lowercase().as_str() {
            "adaptive" | "on" => Ok(Some(Thinking::Adaptive)),
            "off" | "none" | "disabled" => Ok(Some(Thinking::Off)),
            _ => Err(invalid(&format!("{word:?}"))),
        },
    }
}

/// `effort = "low" | "medium" | "high" | …`.
pub(crate) fn effort_setting<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    let word = String::deserialize(deserializer)?;
    alcove_model::parse_effort(&word)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// The smallest thinking budget Anthropic accepts.
const MIN_THINKING_BUDGET: u32 = 1024;

/// `[providers.<id>]`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ProviderEntry {
    /// `anthropic`, `openai` (Chat Completions) or `openai-responses`.
    pub(crate) kind: String,
    /// The base URL (with `/v1` for OpenAI-compatible servers).
    pub(crate) base_url: String,
    /// The environment variable holding the key, if one is needed.
    pub(crate) api_key_env: Option<String>,
    /// Whether the server accepts `prompt_cache_key` (OpenAI kind only;
    /// default false: some servers reject fields they do not know).
    pub(crate) prompt_cache_key: Option<bool>,
}

/// `[retry]`: how model requests are retried.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RetryEntry {
    /// Retries after the first attempt.
    pub(crate) max_retries: Option<u32>,
    /// The first backoff delay.
    pub(crate) base_delay_ms: Option<u64>,
    /// The longest backoff delay (also caps `retry-after`).
    pub(crate) max_delay_ms: Option<u64>,
    /// How long the first byte of an answer may take (a local server reads
    /// the whole prompt first).
    pub(crate) first_byte_timeout_ms: Option<u64>,
    /// How long a started stream may stay silent.
    pub(crate) idle_timeout_ms: Option<u64>,
}

/// `[pricing."provider/model"]`: what a million tokens of each kind cost.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Price {
    /// Uncached input.
    pub(crate) input: f64,
    /// Output.
    pub(crate) output: f64,
    /// Input read from the cache.
    pub(crate) cache_read: f64,
    /// Input written to the cache.
    pub(crate) cache_write: f64,
}

impl Price {
    /// What `usage` costs at this price, in dollars.
    pub(crate) fn cost(&self, usage: &alcove_protocol::Usage) -> f64 {
        (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_read_tokens as f64 * self.cache_read
            + usage.cache_write_tokens as f64 * self.cache_write)
            / 1_000_000.0
    }
}
