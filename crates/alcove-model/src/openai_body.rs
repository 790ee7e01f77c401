//! The Chat Completions request body, written straight to bytes.
//!
//! It used to be built as a `serde_json::Value`: every request copied the
//! whole history into a tree and escaped all of it again. Now the body
//! borrows the request, and each wire message's JSON is kept in the
//! client's [`SerializedCache`] between requests, as on the Anthropic wire
//! (`serialized.rs`): only new messages are escaped.

use std::borrow::Cow;

use alcove_protocol::{ContentBlock, Message, Role, Schema, SharedText, ToolSpec};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::ModelRequest;
use crate::serialized::{
    Piece, SerializedCache, hash_value, shared_digest, text_digest, tools_piece,
};

/// The body of one request.
#[derive(Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    messages: Vec<Piece<ChatMessage<'a>>>,
    stream: bool,
    stream_options: StreamOptions,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Piece<Vec<ToolJson<'a>>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f32>,
    /// One session's requests share a cache on servers that key it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) prompt_cache_key: Option<&'a str>,
    /// How hard a reasoning model (o-series, gpt-5) thinks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reasoning_effort: Option<&'a str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

impl<'a> Body<'a> {
    /// The body for `request`; with a `cache`, messages and the tool array
    /// are taken from it (and left in it) as JSON.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) fn new(
        model: &'a str,
        request: &'a ModelRequest,
        cache: Option<&SerializedCache>,
    ) -> Body<'a> {
        Body::with_vision(model, request, cache, true)
    }

    /// [`Body::new`] for a model that takes images (`vision`) or not.
    pub(super) fn with_vision(
        model: &'a str,
        request: &'a ModelRequest,
        cache: Option<&SerializedCache>,
        vision: bool,
    ) -> Body<'a> {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(ChatMessage::text("system", &request.system));
        }
        for message in &request.messages {
            push_message(&mut messages, message, vision);
        }
        let messages = messages
            .into_iter()
            .map(|message| match cache {
                Some(cache) => cache.piece_of(message.fingerprint(), message),
                None => Piece::Fresh(message),
            })
            .collect();
        let tools = tools_piece(cache, &request.tools, || ToolJson::all(&request.tools));
        Body {
            model,
            messages,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            max_tokens: request.max_tokens,
            tools,
            temperature: None,
            prompt_cache_key: None,
            reasoning_effort: None,
        }
    }
}

/// One message on the wire: a neutral message becomes one or more (each
/// tool result is a `tool` message of its own).
#[derive(Serialize)]
pub(super) struct ChatMessage<'a> {
    role: &'static str,
    /// Null for an assistant message that only calls tools.
    content: Option<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<CallJson<'a>>,
}

/// A message's text: a tool result is sent as the shared text itself,
/// which keeps its digest and its JSON (made once, for the transcript
/// first).
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(Cow<'a, str>),
    Result(&'a SharedText),
    /// Text and images: a user message carrying images.
    Parts(Vec<PartJson<'a>>),
}

/// One part of a user message's content list.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum PartJson<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

/// `{"url": "data:image/png;base64,…"}`.
#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct CallJson<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionCall<'a>,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    arguments: Arguments<'a>,
}

/// A call's input as the JSON text the API wants. Strict servers
/// (llama.cpp) reject arguments that are not a JSON object; what the model
/// really wrote stays in the transcript and in the call's error result.
struct Arguments<'a>(&'a Value);

impl Serialize for Arguments<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_object() {
            serializer.serialize_str(&self.0.to_string())
        } else {
            serializer.serialize_str("{}")
        }
    }
}

impl<'a> ChatMessage<'a> {
    fn text(role: &'static str, text: impl Into<Cow<'a, str>>) -> ChatMessage<'a> {
        ChatMessage {
            role,
            content: Some(Content::Text(text.into())),
            tool_call_id: None,
            tool_calls: Vec::new(),
        }
    }

    /// A fingerprint of everything the message's JSON is made of.
    fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut state = crate::serialized::hasher();
        let content = self.content.as_ref().map(|content| match content {
            Content::Text(text) => text_digest(text),
            Content::Result(result) => shared_digest(result),
            Content::Parts(parts) => {
                let mut parts_state = crate::serialized::hasher();
                for part in parts {
                    match part {
                        PartJson::Text { text } => (0u8, text_digest(text)).hash(&mut parts_state),
                        PartJson::ImageUrl { image_url } => {
                            (1u8, text_digest(&image_url.url)).hash(&mut parts_state)
                        }
                    }
                }
                (parts_state.finish(), parts.len())
            }
        });
        (self.role, content, self.tool_call_id).hash(&mut state);
        for call in &self.tool_calls {
            (call.id, call.function.name).hash(&mut state);
            // Arguments that are not an object are all sent as `{}`.
            match call.function.arguments.0 {
                input @ Value::Object(_) => hash_value(input, &mut state),
                _ => 0u8.hash(&mut state),
            }
        }
        state.finish()
    }
}

/// Appends one neutral message as one or more Chat Completions messages.
fn push_message<'a>(out: &mut Vec<ChatMessage<'a>>, message: &'a Message, vision: bool) {
    let mut texts: Vec<&str> = Vec::new();
    match message.role {
        Role::User => {
            // Tool messages hold text only: a result's images (and any
            // other) go in a user message after them, as other agents do.
            let mut images: Vec<PartJson<'a>> = Vec::new();
            let mut last_result: Option<&str> = None;
            for block in &message.content {
                match block {
                    ContentBlock::Image { media_type, data } => {
                        if let Some(id) = last_result {
                            images.push(PartJson::Text {
                                text: Cow::Owned(format!("The image returned by tool call {id}:")),
                            });
                        }
                        images.push(if vision {
                            PartJson::ImageUrl {
                                image_url: ImageUrl {
                                    url: format!("data:{media_type};base64,{data}"),
                                },
                            }
                        } else {
                            PartJson::Text {
                                text: Cow::Owned(crate::no_vision_note(media_type, data)),
                            }
                        });
                    }
                    ContentBlock::ToolResult { tool_use_id, .. } => {
                        last_result = Some(tool_use_id);
                    }
                    _ => last_result = None,
                }
            }
            for block in &message.content {
                match block {
                    ContentBlock::Text { text } => texts.push(text),
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } => out.push(ChatMessage {
                        role: "tool",
                        content: Some(Content::Result(content)),
                        tool_call_id: Some(tool_use_id.as_str()),
                        tool_calls: Vec::new(),
                    }),
                    // Thinking is Anthropic's and reasoning the Responses
                    // wire's; neither is sent on this wire.
                    _ => {}
                }
            }
            if !images.is_empty() {
                let mut parts: Vec<PartJson<'a>> = texts
                    .iter()
                    .filter(|text| !text.is_empty())
                    .map(|text| PartJson::Text {
                        text: Cow::Borrowed(*text),
                    })
                    .collect();
                parts.extend(images);
                out.push(ChatMessage {
                    role: "user",
                    content: Some(Content::Parts(parts)),
                    tool_call_id: None,
                    tool_calls: Vec::new(),
                });
                return;
            }
            match texts.as_slice() {
                [] => {}
                [text] => out.push(ChatMessage::text("user", *text)),
                _ => out.push(ChatMessage::text("user", texts.join("\n\n"))),
            }
        }
        Role::Assistant => {
            let mut calls = Vec::new();
            for block in &message.content {
                match block {
                    ContentBlock::Text { text } => texts.push(text),
                    ContentBlock::ToolUse { id, name, input } => calls.push(CallJson {
                        id,
                        kind: "function",
                        function: FunctionCall {
                            name,
                            arguments: Arguments(input),
                        },
                    }),
                    // Thinking is Anthropic's and reasoning items the
                    // Responses wire's; Chat Completions takes neither back.
                    _ => {}
                }
            }
            let content = match texts.as_slice() {
                [] => None,
                [""] => None,
                [text] => Some(Cow::Borrowed(*text)),
                _ => Some(texts.concat())
                    .filter(|text| !text.is_empty())
                    .map(Cow::Owned),
            };
            out.push(ChatMessage {
                role: "assistant",
                content: content.map(Content::Text),
                tool_call_id: None,
                tool_calls: calls,
            });
        }
    }
}

#[derive(Serialize)]
pub(super) struct ToolJson<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionJson<'a>,
}

#[derive(Serialize)]
struct FunctionJson<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Schema,
}

impl ToolJson<'_> {
    fn all(tools: &[ToolSpec]) -> Vec<ToolJson<'_>> {
        tools
            .iter()
            .map(|tool| ToolJson {
                kind: "function",
                function: FunctionJson {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.input_schema,
                },
            })
            .collect()
    }
}
