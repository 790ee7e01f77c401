//! Pieces shared by the two protocol renderers: the per-request context, id
//! generation, and the shape of a rendered event stream (its events and how it
//! ends — normally, cut, or stalled).

use std::sync::atomic::{AtomicU64, Ordering};

/// Hands out numbers unique within one server, for message and tool call ids.
#[derive(Debug, Default)]
pub(crate) struct IdGen(AtomicU64);

impl IdGen {
    pub(crate) fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// Everything a renderer needs besides the step itself.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    /// Model echoed from the request.
    pub(crate) model: String,
    pub(crate) ids: &'a IdGen,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    /// Anthropic `cache_read_input_tokens` / `cache_creation_input_tokens`.
    pub(crate) cache_read: u64,
    pub(crate) cache_write: u64,
    /// OpenAI `stream_options.include_usage`.
    pub(crate) include_usage: bool,
    /// Unix seconds, for OpenAI `created`.
    pub(crate) created: u64,
    /// Stop because of the output limit.
    pub(crate) truncated: bool,
    /// The longest piece of streamed text or arguments.
    pub(crate) piece_chars: usize,
    /// Anthropic: the request asked for thinking, so the reply opens with it.
    pub(crate) thinking: bool,
    /// Anthropic: a redacted thinking block follows the thinking.
    pub(crate) redacted_thinking: bool,
}

/// How a streamed body ends after its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The body ends normally.
    Complete,
    /// The connection is cut: the chunked body is never terminated.
    Abort,
    /// Nothing more is sent and the connection stays open.
    Stall,
}

/// A rendered SSE body: its events, each already framed, and its ending.
#[derive(Debug)]
pub(crate) struct Sse {
    pub(crate) events: Vec<String>,
    pub(crate) ending: Ending,
}

/// The first `n` characters of `s`, for messages quoting a prompt.
pub(crate) fn prefix(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}
