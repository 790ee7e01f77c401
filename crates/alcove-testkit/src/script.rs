//! What the fake server is told to answer: a [`Script`] of conversations,
//! each a list of [`Step`]s, one step per request.
//!
//! The script is plain data built before the server starts; the server only
//! reads it and advances a cursor per conversation.

use serde_json::Value;

/// Input tokens reported when a step does not set [`Step::usage`].
pub const DEFAULT_INPUT_TOKENS: u64 = 100;
/// Output tokens reported when a step does not set [`Step::usage`].
pub const DEFAULT_OUTPUT_TOKENS: u64 = 20;

/// The model names listed by `GET /v1/models` unless [`Script::models`] says otherwise.
pub const DEFAULT_MODEL: &str = "fake-model";

/// A set of scripted conversations, matched by the text of the first user message.
#[derive(Debug, Clone)]
pub struct Script {
    pub(crate) conversations: Vec<(String, Vec<Step>)>,
    pub(crate) models: Vec<String>,
    pub(crate) strict: bool,
    pub(crate) slots: Option<usize>,
    pub(crate) context: crate::context::ContextModel,
    pub(crate) throttle: Option<(usize, Step)>,
}

impl Default for Script {
    fn default() -> Self {
        Script::new()
    }
}

impl Script {
    /// An empty script: every model request gets a 400 until conversations are added.
    pub fn new() -> Script {
        Script {
            conversations: Vec::new(),
            models: vec![DEFAULT_MODEL.to_string()],
            strict: true,
            slots: None,
            context: Default::default(),
            throttle: None,
        }
    }

    /// Answers the first `requests` model requests, in the order they
    /// arrive and whatever their conversation, with `step` (a rate limit
    /// the whole account meets), without taking their conversations' steps.
    pub fn throttle(mut self, requests: usize, step: Step) -> Script {
        self.throttle = Some((requests, step));
        self
    }

    /// Accepts any history. By default the server validates each request's
    /// history as llama.cpp's server and the Anthropic API do (tool call
    /// arguments are JSON objects, every call is answered in the next
    /// message, roles alternate) and answers a bad one with their error.
    pub fn lenient(mut self) -> Script {
        self.strict = false;
        self
    }

    /// Serves one model request at a time, like a one-slot local server:
    /// the others queue until the one being answered has finished streaming
    /// or its client hung up. The queue wait is not part of any delay.
    pub fn one_slot(mut self) -> Script {
        self.slots = Some(1);
        self
    }

    /// Models a context window of `tokens`: a request counted larger is
    /// rejected with HTTP 400 and the provider's real error (Anthropic
    /// "prompt is too long", OpenAI `context_length_exceeded`) without
    /// taking a step. Implies [`Script::count_tokens`]. Tokens are the JSON
    /// size of each element of the request over four.
    pub fn context_window(mut self, tokens: u64) -> Script {
        self.context.window = Some((tokens, crate::OverflowStyle::OpenAi));
        self.context.count_tokens = true;
        self
    }

    /// Like [`Script::context_window`], rejecting OpenAI-protocol requests
    /// the way llama.cpp's server does (`exceed_context_size_error`), and
    /// reporting the window at `GET /props` as its `n_ctx`.
    pub fn llama_cpp_window(mut self, tokens: u64) -> Script {
        self.context.window = Some((tokens, crate::OverflowStyle::LlamaCpp));
        self.context.count_tokens = true;
        self
    }

    /// Reports input usage counted from each request instead of the
    /// steps' defaults (a step's explicit [`Step::usage`] or
    /// [`Step::cache_usage`] still wins), and models each provider's prompt
    /// cache: Anthropic's `cache_read_input_tokens` for the longest prefix,
    /// up to a `cache_control` breakpoint, that an earlier request of the
    /// same conversation marked, `cache_creation_input_tokens` for the rest
    /// up to the last breakpoint; OpenAI's automatic cache, whose
    /// `prompt_tokens_details.cached_tokens` is the longest prefix an
    /// earlier request of the conversation sent, for prompts of 1,024
    /// tokens or more, in steps of 128.
    pub fn count_tokens(mut self) -> Script {
        self.context.count_tokens = true;
        self
    }

    /// Answers every request whose last user text contains `marker` (a
    /// client's summary request) itself, without taking a step: the reply
    /// is `## Facts` and every distinct line of the request's messages that
    /// contains `keep`, so a test can check what reached the summary.
    pub fn summarizer(mut self, marker: &str, keep: &str) -> Script {
        self.context.summarizer = Some((marker.to_owned(), keep.to_owned()));
        self
    }

    /// Adds a conversation: requests whose FIRST user message text contains
    /// `first_user_contains` (first matching conversation in declaration
    /// order) get these steps in order, one step per request.
    ///
    /// The text matched is all text blocks of the first user message (see
    /// [`crate::RecordedRequest::first_user_message_text`]).
    /// An empty `first_user_contains` matches every request, so declare such a
    /// catch-all last.
    pub fn conversation(mut self, first_user_contains: &str, steps: Vec<Step>) -> Script {
        self.conversations
            .push((first_user_contains.to_string(), steps));
        self
    }

    /// Sets the model ids listed by `GET /v1/models` (default: `["fake-model"]`).
    pub fn models(mut self, ids: &[&str]) -> Script {
        self.models = ids.iter().map(|s| s.to_string()).collect();
        self
    }
}

/// One part of a scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Assistant text.
    Text(String),
    /// A tool call whose arguments are `input`, serialized as JSON.
    ToolCall {
        /// Tool name.
        name: String,
        /// Tool input (normally an object).
        input: Value,
    },
    /// A tool call whose arguments are sent verbatim, possibly invalid JSON.
    RawToolCall {
        /// Tool name.
        name: String,
        /// The argument text, streamed as is.
        arguments: String,
    },
}

impl Block {
    /// A text block.
    pub fn text(text: &str) -> Block {
        Block::Text(text.to_string())
    }

    /// A tool call block.
    pub fn tool_call(name: &str, input: Value) -> Block {
        Block::ToolCall {
            name: name.to_string(),
            input,
        }
    }

    /// A tool call whose arguments text is sent verbatim.
    pub fn raw_tool_call(name: &str, arguments: &str) -> Block {
        Block::RawToolCall {
            name: name.to_string(),
            arguments: arguments.to_string(),
        }
    }

    pub(crate) fn is_tool_call(&self) -> bool {
        !matches!(self, Block::Text(_))
    }
}

/// What kind of answer a step gives.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StepKind {
    /// A normal 200 reply made of blocks.
    Reply(Vec<Block>),
    /// A non-200 answer with this body.
    HttpError { status: u16, body: String },
    /// 200, some text, then the connection is cut.
    DropMidStream(String),
    /// 200, then a `data:` line that is not JSON.
    MalformedSse,
    /// 200, then an in-stream error.
    ErrorEvent { kind: String, message: String },
    /// 200, some text, then silence with the connection held open.
    StallAfter(String),
    /// Never answers.
    Hang,
}

/// One scripted answer to one request. Build it with the constructors below.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub(crate) kind: StepKind,
    pub(crate) delay_ms: u64,
    pub(crate) usage: Option<(u64, u64)>,
    /// `(read, written)`: prompt tokens reported as read from and written
    /// to the provider's cache.
    pub(crate) cache: Option<(u64, u64)>,
    pub(crate) retry_after: Option<u64>,
    pub(crate) truncated: bool,
    pub(crate) piece_chars: usize,
    pub(crate) first_byte_ms: u64,
    /// Responses wire: a reasoning item with this summary comes first.
    pub(crate) reasoning: Option<String>,
    pub(crate) redacted_thinking: bool,
    /// May call tools the request did not offer ([`Step::unoffered`]).
    pub(crate) unoffered: bool,
    /// More response headers (`x-ratelimit-*`, `retry-after-ms`).
    pub(crate) headers: Vec<(String, String)>,
}

impl Step {
    fn of(kind: StepKind) -> Step {
        Step {
            kind,
            delay_ms: 0,
            first_byte_ms: 0,
            usage: None,
            cache: None,
            retry_after: None,
            truncated: false,
            piece_chars: PIECE_CHARS,
            reasoning: None,
            redacted_thinking: false,
            unoffered: false,
            headers: Vec::new(),
        }
    }

    /// A final answer made of one text block.
    pub fn text(text: &str) -> Step {
        Step::reply(vec![Block::text(text)])
    }

    /// A reply with one tool call and no text.
    pub fn tool_call(name: &str, input: Value) -> Step {
        Step::reply(vec![Block::tool_call(name, input)])
    }

    /// A reply made of text and/or several tool calls, in order.
    pub fn reply(blocks: Vec<Block>) -> Step {
        Step::of(StepKind::Reply(blocks))
    }

    /// A reply of `count` calls of one tool with the same input: a runaway
    /// reply (small models have streamed 170 calls at once).
    pub fn many_calls(name: &str, input: Value, count: usize) -> Step {
        Step::reply(vec![Block::tool_call(name, input); count])
    }

    /// A reply whose only content is a tool call written as text in a
    /// fenced JSON block, `{"name": .., "arguments": ..}`, as small models
    /// write them when the server does not parse their calls.
    pub fn text_call(preface: &str, name: &str, arguments: Value) -> Step {
        let call = format!(
            "{{\"name\": {}, \"arguments\": {arguments}}}",
            Value::String(name.to_owned())
        );
        Step::text(&format!("{preface}\n```json\n{call}\n```\n"))
    }

    /// An HTTP error with this status and body (sent as `application/json`
    /// when the body is JSON, else `text/plain`).
    pub fn http_error(status: u16, body: &str) -> Step {
        Step::of(StepKind::HttpError {
            status,
            body: body.to_string(),
        })
    }

    /// Anthropic's 529 "overloaded" answer, with its real body.
    pub fn overloaded() -> Step {
        Step::http_error(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
    }

    /// Anthropic's 429 `rate_limit_error`, with its real body and a
    /// `retry-after` header (Anthropic sends one with every 429).
    pub fn rate_limited(retry_after_seconds: u64) -> Step {
        Step::http_error(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits."}}"#,
        )
        .with_retry_after(retry_after_seconds)
    }

    /// Anthropic's 401 `authentication_error`.
    pub fn anthropic_authentication_error() -> Step {
        Step::http_error(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        )
    }

    /// Anthropic's `billing_error`, with the 400 status its SDKs see for it.
    pub fn anthropic_billing_error() -> Step {
        Step::http_error(
            400,
            r#"{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}"#,
        )
    }

    /// Anthropic's 404 `not_found_error` for a model it does not serve.
    pub fn anthropic_model_not_found(model: &str) -> Step {
        let body = serde_json::json!({
            "type": "error",
            "error": {"type": "not_found_error", "message": format!("model: {model}")}
        });
        Step::http_error(404, &body.to_string())
    }

    /// OpenAI's 429 `insufficient_quota`: no credit left (no `retry-after`;
    /// waiting does not heal it).
    pub fn openai_insufficient_quota() -> Step {
        Step::http_error(
            429,
            r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
        )
    }

    /// OpenAI's 401 `invalid_api_key`.
    pub fn openai_invalid_api_key() -> Step {
        Step::http_error(
            401,
            r#"{"error":{"message":"Incorrect API key provided: sk-fake***************1234. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
        )
    }

    /// OpenAI's 404 `model_not_found`.
    pub fn openai_model_not_found(model: &str) -> Step {
        let body = serde_json::json!({"error": {
            "message": format!("The model `{model}` does not exist or you do not have access to it."),
            "type": "invalid_request_error", "param": null, "code": "model_not_found"
        }});
        Step::http_error(404, &body.to_string())
    }

    /// OpenAI's 429 `rate_limit_exceeded` on requests per minute, with the
    /// `x-ratelimit-*` headers OpenAI sends and a `retry-after-ms` of
    /// `reset_ms` (the header OpenAI's SDKs read first).
    pub fn openai_rate_limited(reset_ms: u64) -> Step {
        let seconds = reset_ms.div_ceil(1000);
        let body = serde_json::json!({"error": {
            "message": format!("Rate limit reached for gpt-4o in organization org-fake on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in {seconds}s. Visit https://platform.openai.com/account/rate-limits to learn more."),
            "type": "requests", "param": null, "code": "rate_limit_exceeded"
        }});
        Step::http_error(429, &body.to_string())
            .with_header("x-ratelimit-limit-requests", "3")
            .with_header("x-ratelimit-remaining-requests", "0")
            .with_header("x-ratelimit-reset-requests", &format!("{reset_ms}ms"))
            .with_header("retry-after-ms", &reset_ms.to_string())
    }

    /// Adds a response header.
    pub fn with_header(mut self, name: &str, value: &str) -> Step {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds a `retry-after: SECONDS` header to the response.
    pub fn with_retry_after(mut self, seconds: u64) -> Step {
        self.retry_after = Some(seconds);
        self
    }

    /// 200, streams `text_before`, then closes the connection abruptly
    /// (no `message_stop` / `[DONE]`, chunked body left unterminated).
    pub fn drop_mid_stream(text_before: &str) -> Step {
        Step::of(StepKind::DropMidStream(text_before.to_string()))
    }

    /// 200, then a `data:` line that is not JSON, then the stream ends.
    pub fn malformed_sse() -> Step {
        Step::of(StepKind::MalformedSse)
    }

    /// 200, then an in-stream error: Anthropic `event: error` with
    /// `{"type":"error","error":{"type":kind,"message":message}}`, OpenAI
    /// `data: {"error":{"message":message,"type":kind,...}}`.
    pub fn error_event(kind: &str, message: &str) -> Step {
        Step::of(StepKind::ErrorEvent {
            kind: kind.to_string(),
            message: message.to_string(),
        })
    }

    /// 200, streams `text_before`, then sends nothing more and never closes.
    pub fn stall_after(text_before: &str) -> Step {
        Step::of(StepKind::StallAfter(text_before.to_string()))
    }

    /// Accepts the request and never answers at all.
    pub fn hang() -> Step {
        Step::of(StepKind::Hang)
    }

    /// Streams text and tool arguments in pieces of at most `chars`
    /// characters instead of [`PIECE_CHARS`]: an enormous reply then takes
    /// fewer events to send (at least 1).
    pub fn piece_chars(mut self, chars: usize) -> Step {
        self.piece_chars = chars.max(1);
        self
    }

    /// Sends the response head at once but the first byte of the body only
    /// after `ms` milliseconds, like a local server reading a long prompt.
    pub fn first_byte_after(mut self, ms: u64) -> Step {
        self.first_byte_ms = ms;
        self
    }

    /// Waits `ms` milliseconds before answering (other connections are not blocked).
    pub fn delay(mut self, ms: u64) -> Step {
        self.delay_ms = ms;
        self
    }

    /// Sets the reported token usage (default: [`DEFAULT_INPUT_TOKENS`], [`DEFAULT_OUTPUT_TOKENS`]).
    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Step {
        self.usage = Some((input_tokens, output_tokens));
        self
    }

    /// Reports `read` prompt tokens read from the provider's cache and
    /// `written` written to it, besides the step's uncached input
    /// ([`Step::usage`]), the way each provider does: Anthropic's
    /// `cache_read_input_tokens` and `cache_creation_input_tokens` apart
    /// from `input_tokens`; OpenAI's `prompt_tokens` counting all of them,
    /// with `prompt_tokens_details.cached_tokens` the part read (OpenAI
    /// reports no cache writes: they are plain prompt tokens there). Wins
    /// over [`Script::count_tokens`] like [`Step::usage`] does.
    pub fn cache_usage(mut self, read: u64, written: u64) -> Step {
        self.cache = Some((read, written));
        self
    }

    /// On the Responses wire, starts the reply with a reasoning item whose
    /// summary is `summary` (streamed as `response.reasoning_summary_text`
    /// deltas) and, when the request asked for it with `include`, its
    /// encrypted content. The server remembers the item: a later request
    /// that sends a function call of this reply without the reasoning item
    /// before it, or with its encrypted content changed, is refused as the
    /// real API refuses it. The other wires leave it out.
    pub fn reasoning(mut self, summary: &str) -> Step {
        self.reasoning = Some(summary.to_string());
        self
    }

    /// When the request asks for thinking (Anthropic), a `redacted_thinking`
    /// block follows the reply's thinking block, as when Anthropic's
    /// safety systems encrypt part of it.
    pub fn redacted_thinking(mut self) -> Step {
        self.redacted_thinking = true;
        self
    }

    /// Lets the reply call tools the request's `tools` did not offer: a
    /// model inventing a name (small local models do) or calling a tool it
    /// only saw named. Without it a strict server refuses such a step
    /// (a real model is only given the tools in the request).
    pub fn unoffered(mut self) -> Step {
        self.unoffered = true;
        self
    }

    /// The tool names this step's reply calls.
    pub(crate) fn called_tools(&self) -> Vec<&str> {
        match &self.kind {
            StepKind::Reply(blocks) => blocks
                .iter()
                .filter_map(|block| match block {
                    Block::ToolCall { name, .. } | Block::RawToolCall { name, .. } => {
                        Some(name.as_str())
                    }
                    Block::Text(_) => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Marks the reply as cut by the output limit: stop reason `max_tokens`
    /// (Anthropic) / finish reason `length` (OpenAI).
    pub fn max_tokens(mut self) -> Step {
        self.truncated = true;
        self
    }

    pub(crate) fn tokens(&self) -> (u64, u64) {
        self.usage
            .unwrap_or((DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS))
    }
}

/// The longest piece of streamed text or arguments unless a step sets
/// [`Step::piece_chars`]: about what real services send per delta.
pub const PIECE_CHARS: usize = 12;

/// Splits `s` into at least two pieces (when it has two characters or more),
/// on character boundaries, each at most `max` characters long.
pub(crate) fn split_pieces(s: &str, max: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() < 2 {
        return vec![s.to_string()];
    }
    let size = chars.len().div_ceil(2).min(max.max(1));
    chars
        .chunks(size)
        .map(|c| c.iter().collect::<String>())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_pieces_reassembles_into_two_or_more() {
        for s in [
            "ab",
            "hello",
            "héllo wörld, this is a longer sentence",
            "{}",
        ] {
            let pieces = split_pieces(s, PIECE_CHARS);
            assert!(pieces.len() >= 2, "{s:?} -> {pieces:?}");
            assert_eq!(pieces.concat(), s);
        }
        assert_eq!(split_pieces("", PIECE_CHARS), vec![String::new()]);
        assert_eq!(split_pieces("x", PIECE_CHARS), vec!["x".to_string()]);
        assert_eq!(split_pieces(&"y".repeat(100), 40).len(), 3);
    }

    #[test]
    fn modifiers_compose() {
        let step = Step::http_error(500, "boom").with_retry_after(3).delay(10);
        assert_eq!(step.retry_after, Some(3));
        assert_eq!(step.delay_ms, 10);
        assert_eq!(step.tokens(), (DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS));
        assert_eq!(Step::text("x").usage(7, 8).tokens(), (7, 8));
    }
}
