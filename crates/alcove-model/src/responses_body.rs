//! The Responses request body (`POST {base}/responses`), written straight
//! to bytes like the Chat Completions one (`openai_body.rs`): the body
//! borrows the request, and each input item's JSON is kept in the client's
//! [`SerializedCache`] between requests, so only new items are escaped.
//!
//! The neutral history becomes a flat list of input items, in block order:
//! a user's text run becomes a `message` item of `input_text` parts, an
//! assistant's text a `message` item whose `content` is the text itself
//! (the form the published request types have for a message without the
//! `id` and `status` of a stored output item), a tool call a `function_call` (its
//! `call_id` is the neutral id), a tool result a `function_call_output`,
//! and a reasoning block the `reasoning` item it was, with its encrypted
//! content. With `store: false` nothing is kept on the server, so a
//! reasoning item without encrypted content cannot be sent back (the API
//! would look its id up and fail): it is left out. An image is an
//! `input_image` part (a data URL), those of tool results in a user
//! message after the outputs; thinking blocks (Anthropic's) are left out.

use alcove_protocol::{ContentBlock, Message, Role, Schema, SharedText, ToolSpec};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::ModelRequest;
use crate::serialized::{
    Piece, SerializedCache, hash_value, shared_digest, text_digest, tools_piece,
};

/// The `include` entry that makes the API return reasoning items'
/// encrypted content.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// The body of one request.
#[derive(Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    instructions: &'a str,
    input: Vec<Piece<Item<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Piece<Vec<ToolJson<'a>>>>,
    tool_choice: &'static str,
    parallel_tool_calls: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningJson<'a>>,
    /// Nothing is kept on the server: the history is sent each time, the
    /// reasoning with it (encrypted).
    store: bool,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    /// One session's requests share a cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

/// `reasoning: {effort, summary}`.
#[derive(Serialize)]
struct ReasoningJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
}

/// The per-client settings a body carries besides the request.
#[derive(Debug, Clone, Copy)]
pub(super) struct Settings<'a> {
    pub(super) temperature: Option<f32>,
    pub(super) prompt_cache_key: Option<&'a str>,
    pub(super) reasoning_effort: Option<&'a str>,
    pub(super) reasoning_summary: Option<&'a str>,
    /// Whether the model takes images; without, each is a text note.
    pub(super) vision: bool,
}

impl Default for Settings<'_> {
    fn default() -> Self {
        Settings {
            temperature: None,
            prompt_cache_key: None,
            reasoning_effort: None,
            reasoning_summary: None,
            vision: true,
        }
    }
}

impl<'a> Body<'a> {
    /// The body for `request`; with a `cache`, input items and the tool
    /// array are taken from it (and left in it) as JSON.
    pub(super) fn new(
        model: &'a str,
        request: &'a ModelRequest,
        settings: Settings<'a>,
        cache: Option<&SerializedCache>,
    ) -> Body<'a> {
        let mut items = Vec::with_capacity(request.messages.len() * 2);
        for message in &request.messages {
            push_items(&mut items, message, settings.vision);
        }
        let input = items
            .into_iter()
            .map(|item| match cache {
                Some(cache) => cache.piece_of(item.fingerprint(), item),
                None => Piece::Fresh(item),
            })
            .collect();
        let tools = tools_piece(cache, &request.tools, || ToolJson::all(&request.tools));
        let reasoning = (settings.reasoning_effort.is_some()
            || settings.reasoning_summary.is_some())
        .then_some(ReasoningJson {
            effort: settings.reasoning_effort,
            summary: settings.reasoning_summary,
        });
        // Only a reasoning model takes `include` for its reasoning (Codex
        // sends it exactly when it sends `reasoning`).
        let include = if reasoning.is_some() {
            vec![ENCRYPTED_REASONING]
        } else {
            Vec::new()
        };
        Body {
            model,
            instructions: &request.system,
            input,
            tools,
            tool_choice: "auto",
            parallel_tool_calls: true,
            reasoning,
            store: false,
            stream: true,
            include,
            prompt_cache_key: settings.prompt_cache_key,
            max_output_tokens: request.max_tokens,
            temperature: settings.temperature,
        }
    }
}

/// One input item.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Item<'a> {
    Message {
        role: &'static str,
        content: Vec<Part<'a>>,
    },
    /// An assistant's text: `{type: "message", role: "assistant",
    /// content: "…"}`. (Parts of `output_text` are an output item's, which
    /// must also carry its `id` and `status`.)
    #[serde(rename = "message")]
    AssistantText {
        role: &'static str,
        content: &'a str,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: Arguments<'a>,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a SharedText,
    },
    Reasoning {
        id: &'a str,
        summary: Vec<SummaryPart<'a>>,
        encrypted_content: &'a str,
    },
}

/// A part of a message item's content.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Part<'a> {
    #[serde(rename = "input_text")]
    Text { text: &'a str },
    /// A text alcove wrote (an image's caption or its no-vision note).
    #[serde(rename = "input_text")]
    Note { text: String },
    /// An image as a data URL.
    #[serde(rename = "input_image")]
    Image {
        image_url: String,
        detail: &'static str,
    },
}

/// A part of a reasoning item's summary.
#[derive(Serialize)]
pub(super) struct SummaryPart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

/// A call's input as the JSON text the API wants: an object, or `{}` for
/// input that is not one (what the model wrote stays in the transcript and
/// in the call's error result).
pub(super) struct Arguments<'a>(&'a Value);

impl Serialize for Arguments<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_object() {
            serializer.serialize_str(&self.0.to_string())
        } else {
            serializer.serialize_str("{}")
        }
    }
}

impl Item<'_> {
    /// A fingerprint of everything the item's JSON is made of.
    fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut state = crate::serialized::hasher();
        match self {
            Item::Message { role, content } => {
                (0u8, role).hash(&mut state);
                for part in content {
                    match part {
                        Part::Text { text } => (0u8, text_digest(text)).hash(&mut state),
                        Part::Note { text } => (2u8, text_digest(text)).hash(&mut state),
                        Part::Image { image_url, detail } => {
                            (3u8, text_digest(image_url), detail).hash(&mut state);
                        }
                    }
                }
            }
            Item::AssistantText { role, content } => {
                (4u8, role, text_digest(content)).hash(&mut state);
            }
            Item::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                (1u8, call_id, name).hash(&mut state);
                match arguments.0 {
                    input @ Value::Object(_) => hash_value(input, &mut state),
                    _ => 0u8.hash(&mut state),
                }
            }
            Item::FunctionCallOutput { call_id, output } => {
                (2u8, call_id, shared_digest(output)).hash(&mut state);
            }
            Item::Reasoning {
                id,
                summary,
                encrypted_content,
            } => {
                (3u8, id, text_digest(encrypted_content)).hash(&mut state);
                for part in summary {
                    text_digest(part.text).hash(&mut state);
                }
            }
        }
        state.finish()
    }
}

/// Appends one neutral message as input items, in block order; a tool
/// result's images (function call outputs hold text only) go in one user
/// message after them, as on Chat Completions.
fn push_items<'a>(out: &mut Vec<Item<'a>>, message: &'a Message, vision: bool) {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let mut texts: Vec<Part<'a>> = Vec::new();
    let mut result_images: Vec<Part<'a>> = Vec::new();
    let mut last_result: Option<&str> = None;
    let flush = |out: &mut Vec<Item<'a>>, texts: &mut Vec<Part<'a>>| {
        if !texts.is_empty() {
            out.push(Item::Message {
                role,
                content: std::mem::take(texts),
            });
        }
    };
    for block in &message.content {
        if let ContentBlock::Image { media_type, data } = block {
            let image = if vision {
                Part::Image {
                    image_url: format!("data:{media_type};base64,{data}"),
                    detail: "auto",
                }
            } else {
                Part::Note {
                    text: crate::no_vision_note(media_type, data),
                }
            };
            match last_result {
                Some(id) => {
                    result_images.push(Part::Note {
                        text: format!("The image returned by tool call {id}:"),
                    });
                    result_images.push(image);
                }
                None => texts.push(image),
            }
            continue;
        }
        last_result = match block {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id),
            _ => None,
        };
        match block {
            ContentBlock::Text { text } if text.is_empty() => {}
            ContentBlock::Text { text } if role == "assistant" => {
                out.push(Item::AssistantText {
                    role,
                    content: text,
                });
            }
            ContentBlock::Text { text } => texts.push(Part::Text { text }),
            ContentBlock::ToolUse { id, name, input } => {
                flush(out, &mut texts);
                out.push(Item::FunctionCall {
                    call_id: id,
                    name,
                    arguments: Arguments(input),
                });
            }
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                ..
            } => {
                flush(out, &mut texts);
                out.push(Item::FunctionCallOutput {
                    call_id: tool_use_id,
                    output: content,
                });
            }
            ContentBlock::Reasoning {
                id,
                encrypted_content: Some(encrypted_content),
                summary,
            } => {
                flush(out, &mut texts);
                out.push(Item::Reasoning {
                    id,
                    summary: summary
                        .iter()
                        .map(|text| SummaryPart {
                            kind: "summary_text",
                            text,
                        })
                        .collect(),
                    encrypted_content,
                });
            }
            // Thinking is Anthropic's; an image was handled above.
            ContentBlock::Reasoning { .. }
            | ContentBlock::Thinking { .. }
            | ContentBlock::RedactedThinking { .. }
            | ContentBlock::Image { .. } => {}
        }
    }
    flush(out, &mut texts);
    if !result_images.is_empty() {
        out.push(Item::Message {
            role: "user",
            content: result_images,
        });
    }
}

/// A function tool: the Responses shape is flat (no `function` wrapper).
#[derive(Serialize)]
pub(super) struct ToolJson<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    /// alcove's schemas are not written for strict mode (optional fields).
    strict: bool,
    parameters: &'a Schema,
}

impl ToolJson<'_> {
    fn all(tools: &[ToolSpec]) -> Vec<ToolJson<'_>> {
        tools
            .iter()
            .map(|tool| ToolJson {
                kind: "function",
                name: &tool.name,
                description: &tool.description,
                strict: false,
                parameters: &tool.input_schema,
            })
            .collect()
    }
}
