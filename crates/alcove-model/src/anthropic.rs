//! The Anthropic Messages client (`POST {base}/v1/messages`, streamed).
//!
//! The provider-neutral [`Message`] already has Anthropic's shape, so the
//! request translation is nearly one-to-one; most of this file is the SSE
//! state machine that rebuilds the assistant message from
//! `message_start` / `content_block_*` / `message_delta` / `message_stop`.
//!
//! Prompt caching: every request marks `cache_control: ephemeral`
//! breakpoints on the last tool, the system prompt, the newest message and
//! the newest message of the turn before (four, the most the API allows),
//! so each turn reads the prefix the turn before wrote. The prefix is byte
//! stable: the body is a pure function of the request.

use std::borrow::Cow;

use alcove_protocol::{ContentBlock, Message, Role, SharedText, ToolSpec};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::Value;

use crate::http::Http;
use crate::serialized::{
    Piece, SerializedCache, hash_value, shared_digest, text_digest, tools_piece,
};
use crate::thinking::{OutputConfigJson, ThinkingJson};
use crate::{Model, ModelError, ModelRequest, ModelResponse, ProviderConfig, StreamDelta};

/// The API version this client speaks.
const API_VERSION: &str = "2023-06-01";

/// A model served over the Anthropic Messages API.
#[derive(Debug, Clone)]
pub struct AnthropicModel {
    name: String,
    model: String,
    headers: HeaderMap,
    http: Http,
    temperature: Option<f32>,
    context_window: Option<u64>,
    thinking: crate::Thinking,
    effort: Option<String>,
    vision: bool,
    /// Messages already serialized, reused by the next request.
    serialized: std::sync::Arc<SerializedCache>,
}

impl AnthropicModel {
    /// Builds the client. `config.base_url` has no `/v1`.
    pub fn new(config: ProviderConfig) -> Result<AnthropicModel, ModelError> {
        let base = config.base_url.trim_end_matches('/');
        let url = format!("{base}/v1/messages");
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            let mut value = HeaderValue::from_str(key).map_err(|_| ModelError::Connect {
                url: url.clone(),
                reason: "the API key holds characters not allowed in an HTTP header".into(),
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        Ok(AnthropicModel {
            name: format!("{}/{}", config.id, config.model),
            http: Http::new(&config.id, &url, config.retry, config.health.clone())?,
            model: config.model,
            headers,
            temperature: config.temperature,
            context_window: config.context_window,
            thinking: config.thinking,
            effort: config.effort,
            vision: config.vision,
            serialized: Default::default(),
        })
    }
}

#[async_trait::async_trait]
impl Model for AnthropicModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<ModelResponse, ModelError> {
        let mut body = Body::new(&self.model, request, Some(&self.serialized), self.vision);
        body.think(
            self.thinking,
            request.effort.as_deref().or(self.effort.as_deref()),
        );
        // The API refuses a temperature other than 1 with thinking.
        body.temperature = self.temperature.filter(|_| body.thinking.is_none());
        self.http
            .complete(&self.headers, &body, AnthropicAssembler::default, on_delta)
            .await
    }
}

/// The JSON body of a Messages request, as a value (for tests).
#[cfg(test)]
pub(crate) fn request_body(model: &str, request: &ModelRequest) -> Value {
    serde_json::to_value(Body::new(model, request, None, true)).unwrap_or_default()
}

/// The JSON body of a Messages request for a model without vision (for tests).
#[cfg(test)]
pub(crate) fn request_body_without_vision(model: &str, request: &ModelRequest) -> Value {
    serde_json::to_value(Body::new(model, request, None, false)).unwrap_or_default()
}

/// The JSON body of a Messages request with thinking settings (for tests).
#[cfg(test)]
pub(crate) fn request_body_thinking(
    model: &str,
    request: &ModelRequest,
    thinking: crate::Thinking,
) -> Value {
    let mut body = Body::new(model, request, None, true);
    body.think(thinking, request.effort.as_deref());
    serde_json::to_value(body).unwrap_or_default()
}

/// The JSON body of a Messages request, borrowing the request and written
/// straight to bytes. (It used to be built as a `serde_json::Value` first,
/// which copied the whole history, tool schemas included, on every turn and
/// then freed it: two thirds of a long session's instructions, issue 7.)
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    messages: Vec<Piece<MessageJson<'a>>>,
    stream: bool,
    /// The system prompt (an agent sends the same one every turn; escaping
    /// it again was 2 % of a wide fan-out's instructions).
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Piece<[SystemJson<'a>; 1]>>,
    /// The tool array (the same tools go with every turn, and their schemas
    /// were a twelfth of a long session's instructions).
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Piece<Vec<ToolJson<'a>>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<ThinkingJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfigJson>,
}

/// `{"type": "ephemeral"}`: a prompt cache breakpoint.
#[derive(Serialize, Clone, Copy)]
struct Ephemeral {
    #[serde(rename = "type")]
    kind: &'static str,
}

const BREAKPOINT: Option<Ephemeral> = Some(Ephemeral { kind: "ephemeral" });

/// The system prompt as one text block, so it can carry a breakpoint.
#[derive(Serialize)]
struct SystemJson<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: Option<Ephemeral>,
}

impl<'a> Body<'a> {
    /// The body for `request`; with a `cache`, messages are taken from it
    /// (and left in it) as JSON. A message carrying a breakpoint is keyed
    /// apart from the same message without one (its fingerprint counts the
    /// mark), so the newest user message, marked again as the previous one
    /// on the next request, is sent from the cache the second time
    /// (`marked_piece`).
    fn new(
        model: &'a str,
        request: &'a ModelRequest,
        cache: Option<&SerializedCache>,
        vision: bool,
    ) -> Body<'a> {
        // Consecutive messages of one role are joined: the API wants roles
        // to alternate.
        let messages = merged(&request.messages, vision);
        // The newest message, and the newest user message before the last
        // assistant message (where the previous turn put its breakpoint).
        let newest = messages.len().checked_sub(1);
        let previous = messages
            .iter()
            .rposition(|message| message.role == "assistant")
            .and_then(|assistant| {
                messages[..assistant]
                    .iter()
                    .rposition(|message| message.role == "user")
            });
        let marked = |index: usize| Some(index) == newest || Some(index) == previous;
        let messages = messages
            .into_iter()
            .enumerate()
            .map(|(index, mut message)| match cache {
                Some(cache) if marked(index) => marked_piece(cache, message),
                Some(cache) => cache.piece_of(message.fingerprint(), message),
                None => {
                    if marked(index) {
                        message.mark_last();
                    }
                    Piece::Fresh(message)
                }
            })
            .collect();
        let tools = tools_piece(cache, &request.tools, || ToolJson::all(&request.tools));
        Body {
            model,
            max_tokens: request.max_tokens,
            messages,
            stream: true,
            system: (!request.system.is_empty()).then(|| system(&request.system, cache)),
            tools,
            temperature: None,
            thinking: None,
            output_config: None,
        }
    }

    /// Asks for thinking and effort as the model takes them (`thinking.rs`),
    /// raising `max_tokens` to hold a thinking budget.
    fn think(&mut self, thinking: crate::Thinking, effort: Option<&str>) {
        let plan = crate::thinking::plan(self.model, thinking, effort, self.max_tokens);
        self.thinking = plan.thinking;
        self.output_config = plan.output_config;
        self.max_tokens = plan.max_tokens;
    }
}

/// A message whose last block carries a breakpoint, keyed apart from the
/// same message without one. Its JSON is serialized anew rather than made
/// from the unmarked JSON: a tool result's text brings its JSON along
/// (`SharedText` keeps it), so this is a copy, while checking a hand-made
/// JSON text parsed the whole message (~40 K of a long session's 0.87 M
/// instructions a turn; bench/notes.md, point 40).
fn marked_piece<'a>(cache: &SerializedCache, message: MessageJson<'a>) -> Piece<MessageJson<'a>> {
    let mut marked = message.clone();
    if !marked.mark_last() {
        return cache.piece_of(message.fingerprint(), message);
    }
    cache.piece_of(marked.fingerprint(), marked)
}

/// The system block for `text`, from `cache` when an earlier request sent
/// the same prompt.
fn system<'a>(text: &'a str, cache: Option<&SerializedCache>) -> Piece<[SystemJson<'a>; 1]> {
    use std::hash::{Hash, Hasher};
    let fresh = [SystemJson {
        kind: "text",
        text,
        cache_control: BREAKPOINT,
    }];
    let Some(cache) = cache else {
        return Piece::Fresh(fresh);
    };
    // Keyed apart from messages, whose fingerprints start with their role.
    let mut state = crate::serialized::hasher();
    ("system", text).hash(&mut state);
    cache.piece_of(state.finish(), fresh)
}

/// The messages in the API's shape, consecutive messages of one role
/// joined into one: the API wants roles to alternate (a notice or a stop
/// hook's feedback can follow a user message of tool results).
fn merged(messages: &[Message], vision: bool) -> Vec<MessageJson<'_>> {
    let mut out: Vec<MessageJson<'_>> = Vec::with_capacity(messages.len());
    for message in messages {
        let next = MessageJson::new(message, vision);
        match out.last_mut() {
            Some(last) if last.role == next.role => last.content.extend(next.content),
            _ => out.push(next),
        }
    }
    out
}

#[derive(Serialize)]
struct ToolJson<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a alcove_protocol::Schema,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Ephemeral>,
}

impl ToolJson<'_> {
    /// Every tool in the API's shape; the last carries the breakpoint.
    fn all(tools: &[ToolSpec]) -> Vec<ToolJson<'_>> {
        let last = tools.len().saturating_sub(1);
        tools
            .iter()
            .enumerate()
            .map(|(index, tool)| ToolJson {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.input_schema,
                cache_control: if index == last { BREAKPOINT } else { None },
            })
            .collect()
    }
}

/// One message in the Messages API's shape.
#[derive(Serialize, Clone)]
struct MessageJson<'a> {
    role: &'static str,
    content: Vec<BlockJson<'a>>,
}

#[derive(Serialize, Clone)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockJson<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
    },
    Image {
        source: SourceJson<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: InputJson<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ResultJson<'a>,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
    },
    /// Sent back exactly as received (the API checks the signature).
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
}

impl MessageJson<'_> {
    /// Puts a cache breakpoint on the last block; false when there is
    /// none, or when it is thinking (which cannot carry one).
    fn mark_last(&mut self) -> bool {
        self.content.last_mut().is_some_and(BlockJson::mark)
    }
}

impl BlockJson<'_> {
    /// Puts a cache breakpoint on this block; false when it cannot take one.
    fn mark(&mut self) -> bool {
        match self {
            BlockJson::Text { cache_control, .. }
            | BlockJson::Image { cache_control, .. }
            | BlockJson::ToolUse { cache_control, .. }
            | BlockJson::ToolResult { cache_control, .. } => {
                *cache_control = BREAKPOINT;
                true
            }
            BlockJson::Thinking { .. } | BlockJson::RedactedThinking { .. } => false,
        }
    }
}

/// A tool call's input as the API accepts it: an object. Arguments that
/// were not a JSON object (kept raw when the model wrote invalid JSON) are
/// sent as `{}`, as on the OpenAI wire; what the model wrote stays in the
/// transcript and in the call's error result.
#[derive(Serialize, Clone)]
#[serde(untagged)]
enum InputJson<'a> {
    Object(&'a Value),
    Empty {},
}

impl<'a> MessageJson<'a> {
    /// A fingerprint of everything the message's JSON is made of.
    fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut state = crate::serialized::hasher();
        self.role.hash(&mut state);
        for block in &self.content {
            match block {
                BlockJson::Text {
                    text,
                    cache_control,
                } => (0u8, text_digest(text), cache_control.is_some()).hash(&mut state),
                BlockJson::Image {
                    source,
                    cache_control,
                } => (5u8, source.digest(), cache_control.is_some()).hash(&mut state),
                BlockJson::ToolUse {
                    id,
                    name,
                    input,
                    cache_control,
                } => {
                    (1u8, id, name, cache_control.is_some()).hash(&mut state);
                    match input {
                        InputJson::Object(value) => hash_value(value, &mut state),
                        InputJson::Empty {} => 0u8.hash(&mut state),
                    }
                }
                BlockJson::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    cache_control,
                } => {
                    let text = shared_digest(content.text);
                    (2u8, tool_use_id, text, is_error, cache_control.is_some()).hash(&mut state);
                    for part in &content.parts {
                        match part {
                            PartJson::Text { text } => (0u8, text_digest(text)).hash(&mut state),
                            PartJson::Image { source } => (1u8, source.digest()).hash(&mut state),
                        }
                    }
                }
                BlockJson::Thinking {
                    thinking,
                    signature,
                } => (3u8, text_digest(thinking), signature).hash(&mut state),
                BlockJson::RedactedThinking { data } => (4u8, text_digest(data)).hash(&mut state),
            }
        }
        state.finish()
    }

    fn new(message: &'a Message, vision: bool) -> MessageJson<'a> {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let mut content: Vec<BlockJson<'a>> = Vec::with_capacity(message.content.len());
        for block in &message.content {
            let next = match block {
                // The API rejects empty text blocks.
                ContentBlock::Text { text } if text.is_empty() => continue,
                ContentBlock::Text { text } => BlockJson::Text {
                    text: Cow::Borrowed(text),
                    cache_control: None,
                },
                ContentBlock::ToolUse { id, name, input } => BlockJson::ToolUse {
                    id,
                    name,
                    input: if input.is_object() {
                        InputJson::Object(input)
                    } else {
                        InputJson::Empty {}
                    },
                    cache_control: None,
                },
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => BlockJson::ToolResult {
                    tool_use_id,
                    content: ResultJson {
                        text: content,
                        parts: Vec::new(),
                    },
                    is_error: *is_error,
                    cache_control: None,
                },
                ContentBlock::Thinking {
                    thinking,
                    signature,
                } => BlockJson::Thinking {
                    thinking,
                    signature,
                },
                ContentBlock::RedactedThinking { data } => BlockJson::RedactedThinking { data },
                // The Responses wire's own; this API has no such block.
                ContentBlock::Reasoning { .. } => continue,
                ContentBlock::Image { media_type, data } => {
                    let part = image_part(media_type, data, vision);
                    // An image right after a tool result is part of it.
                    if let Some(BlockJson::ToolResult { content, .. }) = content.last_mut() {
                        content.parts.push(part);
                        continue;
                    }
                    match part {
                        PartJson::Image { source } => BlockJson::Image {
                            source,
                            cache_control: None,
                        },
                        PartJson::Text { text } => BlockJson::Text {
                            text,
                            cache_control: None,
                        },
                    }
                }
            };
            content.push(next);
        }
        MessageJson { role, content }
    }
}

/// An image as the API takes it, or, for a model without vision, the
/// note that stands for it.
fn image_part<'a>(media_type: &'a str, data: &'a str, vision: bool) -> PartJson<'a> {
    if vision {
        PartJson::Image {
            source: SourceJson {
                kind: "base64",
                media_type,
                data,
            },
        }
    } else {
        PartJson::Text {
            text: Cow::Owned(crate::no_vision_note(media_type, data)),
        }
    }
}

/// A tool result's content: its text as a string, or, with images, a list
/// of the text and the images.
#[derive(Clone)]
struct ResultJson<'a> {
    text: &'a SharedText,
    parts: Vec<PartJson<'a>>,
}

impl Serialize for ResultJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        if self.parts.is_empty() {
            return self.text.serialize(serializer);
        }
        let mut seq = serializer.serialize_seq(None)?;
        if !self.text.is_empty() {
            seq.serialize_element(&PartJson::Text {
                text: Cow::Borrowed(self.text.as_str()),
            })?;
        }
        for part in &self.parts {
            seq.serialize_element(part)?;
        }
        seq.end()
    }
}

/// One block of a tool result's content list.
#[derive(Serialize, Clone)]
#[serde(tag = "type", rename_all = "snake_case")]
enum PartJson<'a> {
    Text { text: Cow<'a, str> },
    Image { source: SourceJson<'a> },
}

/// `{"type": "base64", "media_type": …, "data": …}`.
#[derive(Serialize, Clone)]
struct SourceJson<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

impl SourceJson<'_> {
    fn digest(&self) -> (&str, (u64, usize)) {
        (self.media_type, text_digest(self.data))
    }
}

#[path = "anthropic_stream.rs"]
mod stream;
pub(crate) use stream::AnthropicAssembler;

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
