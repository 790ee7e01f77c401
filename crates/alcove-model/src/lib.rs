//! Streaming clients for the language models alcove talks to.
//!
//! One [`Model`] trait, three wire protocols:
//! - Anthropic Messages (`anthropic.rs`),
//! - OpenAI Chat Completions (`openai.rs`), which also serves Ollama, vLLM,
//!   llama.cpp's server and OpenRouter, and
//! - OpenAI Responses (`responses.rs`), the one OpenAI's coding models
//!   (`gpt-5-codex`, `codex-*`) are served on.
//!
//! All stream over SSE, translate to and from the provider-neutral
//! [`alcove_protocol::Message`], retry transient failures with backoff and
//! jitter (honouring `retry-after`), and give up on a stream that goes idle.
//! A stream that breaks half-way is retried from the start of the request,
//! and the caller is told (via [`StreamDelta::Restarted`]) to discard the
//! text it has shown; nothing is ever silently truncated.
//!
//! This crate knows nothing of tools beyond their specs, nor of the agent
//! loop: it turns one request into one assistant message.

use std::sync::Arc;
use std::time::Duration;

use alcove_protocol::{Message, StopReason, ToolSpec, Usage};

mod anthropic;
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod openai;
mod overflow;
mod provider_health;
mod responses;
mod retry;
mod serialized;
mod sse;
mod sse_decode;
mod text_calls;
mod thinking;
mod window;

pub use anthropic::AnthropicModel;
/// A reqwest client builder with alcove's TLS set up (rustls on ring; no
/// certificate store for plain-HTTP URLs): for `WebFetch` too.
pub use http::client_builder as http_client_builder;
pub use openai::OpenAiModel;
pub use overflow::classify_overflow;
pub use provider_health::{Halt, ProviderFault, ProviderHealth};
pub use responses::ResponsesModel;
pub use retry::{LOCAL_FIRST_BYTE_TIMEOUT, RetryPolicy};
pub use window::probe_context_window;

/// One request to a model: the whole conversation so far.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The system prompt.
    pub system: String,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// The tools the model may call: shared, and the same allocation from
    /// request to request while they do not change, so a client can keep
    /// their JSON by identity (`serialized.rs`).
    pub tools: std::sync::Arc<[ToolSpec]>,
    /// The output token limit.
    pub max_tokens: u32,
    /// The reasoning effort this agent asks for (its definition's
    /// `effort:` or its `Agent` call's), over the provider's configured
    /// one; `None` keeps that.
    pub effort: Option<String>,
}

/// The complete answer to one [`ModelRequest`].
#[derive(Debug, Clone)]
pub struct ModelResponse {
    /// The assistant message (text and tool calls, in the order received).
    pub message: Message,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// Tokens used by this request (all attempts' usage is not summed: only
    /// the attempt that succeeded counts).
    pub usage: Usage,
}

/// Progress reported while a request runs.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamDelta {
    /// A piece of assistant text.
    Text(String),
    /// A piece of the model's thinking or reasoning summary.
    Thinking(String),
    /// The stream broke after some output; the request is being sent again
    /// from the start, so text shown so far for this request is void.
    Restarted {
        /// Why.
        reason: String,
    },
    /// An attempt failed and another will follow after `delay`.
    Retry {
        /// 1-based number of the attempt that failed.
        attempt: u32,
        /// The wait before the next attempt.
        delay: Duration,
        /// Why the attempt failed.
        reason: String,
    },
}

/// Why a request failed for good (after retries).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider answered with an HTTP error status.
    #[error("{provider} returned HTTP {status}: {body}")]
    Http {
        /// The provider's name.
        provider: String,
        /// The status code.
        status: u16,
        /// The response body (cut to a readable length).
        body: String,
        /// What kind of failure it is, read once from status and body.
        fault: ProviderFault,
    },
    /// Not sent: the provider refused an earlier request of this session
    /// for a reason no retry heals (see [`ProviderHealth`]).
    #[error("not sent: {}", .0.explain())]
    Halted(Halt),
    /// The server could not be reached.
    #[error("cannot connect to {url}: {reason}")]
    Connect {
        /// The URL tried.
        url: String,
        /// The transport's message.
        reason: String,
    },
    /// Nothing came back within the time-to-first-byte limit.
    #[error(
        "the model sent nothing within {0:?} of the request (time to first byte; a local server may still be reading the prompt: raise first_byte_timeout_ms)"
    )]
    FirstByteTimeout(Duration),
    /// The stream went silent for longer than the idle timeout.
    #[error("the model stream was idle for {0:?}")]
    IdleTimeout(Duration),
    /// The stream broke or carried an error event.
    #[error("model stream failed: {0}")]
    Stream(String),
    /// The provider sent something that is not the protocol.
    #[error("malformed model response: {0}")]
    Protocol(String),
    /// The request was longer than the model's context window (recognised
    /// by status and body: Anthropic's "prompt is too long", OpenAI's
    /// `context_length_exceeded`, llama.cpp's `exceed_context_size_error`).
    /// The loop compacts the history and tries again; it is never retried
    /// as it was.
    #[error("{provider}: the request does not fit the model's context window: {message}")]
    ContextOverflow {
        /// The provider's name.
        provider: String,
        /// The provider's own words.
        message: String,
        /// The request's size in tokens, when the provider said it.
        request_tokens: Option<u64>,
        /// The window in tokens, when the provider said it.
        window: Option<u64>,
    },
}

impl ModelError {
    /// Why the whole tree must stop, when this error says so: a fault that
    /// will not heal (a bad key, no quota, an unknown model) or the halt
    /// an earlier one caused.
    pub fn halt(&self) -> Option<Halt> {
        match self {
            ModelError::Http { fault, .. } if fault.halts_tree() => Some(Halt {
                fault: *fault,
                reason: self.to_string(),
            }),
            ModelError::Halted(halt) => Some(halt.clone()),
            _ => None,
        }
    }
}

/// A model that can answer a conversation, streaming.
///
/// Implementors own retries and timeouts: a call returns either a complete
/// assistant message or the error that remained after retrying. Cancellation
/// is done by dropping the future; implementors must hold no state that a
/// dropped call could leave inconsistent.
#[async_trait::async_trait]
pub trait Model: Send + Sync {
    /// `provider/model`, for logs and events.
    fn name(&self) -> &str;

    /// The model's context window in tokens, when the client was told it.
    fn context_window(&self) -> Option<u64> {
        None
    }

    /// Sends the request and streams the answer, reporting progress to
    /// `on_delta` as it arrives.
    async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<ModelResponse, ModelError>;
}

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireProtocol {
    /// Anthropic Messages (`POST {base}/v1/messages`).
    Anthropic,
    /// OpenAI Chat Completions (`POST {base}/chat/completions`, base includes `/v1`).
    OpenAi,
    /// OpenAI Responses (`POST {base}/responses`, base includes `/v1`).
    OpenAiResponses,
}

/// Everything needed to talk to one provider. Built by the CLI from flags,
/// environment and config; this crate reads no environment itself.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The provider id as the user wrote it (`anthropic`, `openai`, `ollama`, …).
    pub id: String,
    /// Its wire protocol.
    pub protocol: WireProtocol,
    /// The base URL, following the official SDKs: with `/v1` for OpenAI,
    /// without it for Anthropic.
    pub base_url: String,
    /// The API key, when one is needed.
    pub api_key: Option<String>,
    /// The model name sent to the provider.
    pub model: String,
    /// Retry, backoff and timeout settings.
    pub retry: RetryPolicy,
    /// The sampling temperature sent with every request; `None` sends none
    /// (the server's default).
    pub temperature: Option<f32>,
    /// OpenAI wire only: turn tool calls the model wrote as text (a fenced
    /// `{"name": …, "arguments": …}` naming an offered tool) in a reply with
    /// no real call into real calls (`text_calls.rs`).
    pub text_tool_calls: bool,
    /// Sent as `prompt_cache_key` by the OpenAI client (the session id, so
    /// one session's requests share a cache); `None` sends no such field,
    /// for servers that reject fields they do not know.
    pub prompt_cache_key: Option<String>,
    /// The model's context window in tokens, as the caller determined it
    /// (config, server, table); reported back by [`Model::context_window`]
    /// so an agent on this model compacts against its own window.
    pub context_window: Option<u64>,
    /// OpenAI wires: whether the model takes a reasoning effort (the
    /// caller knows its names: o-series, gpt-5, codex, gpt-oss, or a model
    /// an effort was configured for by name). Without, no effort is sent,
    /// neither [`ProviderConfig::effort`] nor a request's. The Anthropic
    /// wire reads the model's name instead (`thinking.rs`).
    pub reasons: bool,
    /// Responses wire only: the reasoning summary asked for (`auto`,
    /// `concise`, `detailed`), streamed as thinking; `None` asks for none.
    pub reasoning_summary: Option<String>,
    /// Anthropic wire: whether and how the model thinks (`thinking.rs`).
    pub thinking: Thinking,
    /// How hard the model thinks (one of [`EFFORTS`]), the one knob all
    /// three wires read: Anthropic's `output_config.effort` (and the
    /// thinking budget it picks), `reasoning.effort` on Responses,
    /// `reasoning_effort` on Chat Completions (these two only where
    /// [`ProviderConfig::reasons`]). A request's own effort wins; `None`
    /// is the model's default.
    pub effort: Option<String>,
    /// Whether the model takes images; without, each image is sent as a
    /// text note saying it was left out (`vision = false`).
    pub vision: bool,
    /// The gate every client of a session shares, so the provider's health
    /// is the tree's (`provider_health.rs`); `None` goes ungated.
    pub health: Option<Arc<ProviderHealth>>,
}

/// Whether and how a model thinks before it answers (Anthropic's extended
/// and adaptive thinking; `thinking` in `[model_options]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Thinking {
    /// Adaptive where the model takes it, else none.
    #[default]
    Default,
    /// No thinking is asked for.
    Off,
    /// The model decides how much to think (`{"type": "adaptive"}`); on a
    /// model without adaptive thinking, a budget chosen from the effort.
    Adaptive,
    /// At most this many thinking tokens (`{"type": "enabled",
    /// "budget_tokens": N}`), on top of the answer's `max_tokens`.
    Budget(u32),
}

/// The efforts a request may ask for, least first: OpenAI's words and
/// Anthropic's (`minimal` is sent to Anthropic as `low`, `xhigh` as `max`).
pub const EFFORTS: [&str; 6] = ["minimal", "low", "medium", "high", "xhigh", "max"];

/// `effort` when it is one of [`EFFORTS`] (any case), else an error naming them.
pub fn parse_effort(effort: &str) -> Result<String, String> {
    let lower = effort.trim().to_ascii_lowercase();
    if EFFORTS.contains(&lower.as_str()) {
        Ok(lower)
    } else {
        Err(format!(
            "unknown effort `{effort}`; use one of {}",
            EFFORTS.join(", ")
        ))
    }
}

/// What a model without vision reads where an image was.
pub(crate) fn no_vision_note(media_type: &str, data: &str) -> String {
    let bytes = data.len() / 4 * 3;
    format!(
        "[An image ({media_type}, about {} KB) was left out: this model is configured without vision (vision = false in [model_options]).]",
        bytes.div_ceil(1024)
    )
}

/// Builds the client for a provider.
pub fn connect(config: ProviderConfig) -> Result<Arc<dyn Model>, ModelError> {
    match config.protocol {
        WireProtocol::Anthropic => Ok(Arc::new(AnthropicModel::new(config)?)),
        WireProtocol::OpenAi => Ok(Arc::new(OpenAiModel::new(config)?)),
        WireProtocol::OpenAiResponses => Ok(Arc::new(ResponsesModel::new(config)?)),
    }
}

/// A local OpenAI-compatible server that answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalServer {
    /// Its base URL, with `/v1`.
    pub base_url: String,
    /// The model ids it lists, in its order.
    pub models: Vec<String>,
}

/// Looks for an OpenAI-compatible server on this machine (Ollama on 11434,
/// llama.cpp on 8080) and returns the first that answers `GET /v1/models`
/// within `timeout`, with the models it lists.
pub async fn discover_local(timeout: Duration) -> Option<LocalServer> {
    openai::discover_local(timeout).await
}
