//! Reading a Messages API stream: its SSE events, typed and parsed in
//! place, rebuilt into one [`ModelResponse`].

use std::borrow::Cow;
use std::collections::BTreeMap;

use alcove_protocol::{ContentBlock, Message, Role, StopReason, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ModelResponse;
use crate::sse::{Assembler, EventFailure, Feed, parse_json};
use crate::sse_decode::Event;

/// A content block being streamed.
#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    /// Thinking, kept with its signature to be sent back unchanged.
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Encrypted thinking, likewise.
    RedactedThinking(String),
    /// A kind this client does not keep (server tools, …).
    Other,
}

/// Rebuilds a Messages response from its SSE events.
#[derive(Debug, Default)]
pub(crate) struct AnthropicAssembler {
    blocks: BTreeMap<u64, Block>,
    usage: Usage,
    stop_reason: Option<String>,
}

/// One event's data, typed and parsed in place: strings without escapes
/// are borrowed from the event. (Parsing every event into a `Value` and
/// dropping it was a sixth of a 64-child fan-out's instructions.) Fields
/// of kinds this client does not read are skipped unparsed.
#[derive(Deserialize, Default)]
#[serde(default)]
struct EventJson<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    index: Option<u64>,
    message: Option<MessageStartJson>,
    #[serde(borrow)]
    content_block: Option<BlockStartJson<'a>>,
    #[serde(borrow)]
    delta: Option<DeltaJson<'a>>,
    usage: Option<UsageJson>,
    #[serde(borrow)]
    error: Option<ErrorJson<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MessageStartJson {
    usage: Option<UsageJson>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct UsageJson {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct BlockStartJson<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    input: Option<Value>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(borrow)]
    data: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DeltaJson<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ErrorJson<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
}

impl AnthropicAssembler {
    /// Takes the token counts a usage object carries: uncached input,
    /// cache writes and cache reads, each kept apart, and output.
    fn take_usage(&mut self, usage: Option<UsageJson>) {
        let Some(usage) = usage else { return };
        if let Some(input) = usage.input_tokens {
            self.usage.input_tokens = input;
        }
        if let Some(written) = usage.cache_creation_input_tokens {
            self.usage.cache_write_tokens = written;
        }
        if let Some(read) = usage.cache_read_input_tokens {
            self.usage.cache_read_tokens = read;
        }
        if let Some(output) = usage.output_tokens {
            self.usage.output_tokens = output;
        }
    }
}

impl Assembler for AnthropicAssembler {
    fn feed(&mut self, event: &Event) -> Result<Feed, EventFailure> {
        if event.data.trim().is_empty() {
            return Ok(Feed::Continue);
        }
        let v: EventJson<'_> = parse_json(event)?;
        let kind = v.kind.as_deref().unwrap_or(event.event);
        let index = v.index.unwrap_or(0);
        match kind {
            "message_start" => self.take_usage(v.message.and_then(|message| message.usage)),
            "content_block_start" => {
                let block = v.content_block.unwrap_or_default();
                match block.kind.as_deref() {
                    Some("text") => {
                        let text = block.text.unwrap_or_default().into_owned();
                        self.blocks.insert(index, Block::Text(text.clone()));
                        if !text.is_empty() {
                            return Ok(Feed::Text(text));
                        }
                    }
                    Some("tool_use") => {
                        let tool = Block::ToolUse {
                            id: block.id.unwrap_or_default().into_owned(),
                            name: block.name.unwrap_or_default().into_owned(),
                            json: String::new(),
                            initial: block.input.unwrap_or(Value::Null),
                        };
                        self.blocks.insert(index, tool);
                    }
                    Some("thinking") => {
                        let thinking = block.thinking.unwrap_or_default().into_owned();
                        let signature = block.signature.unwrap_or_default().into_owned();
                        let shown = thinking.clone();
                        self.blocks.insert(
                            index,
                            Block::Thinking {
                                thinking,
                                signature,
                            },
                        );
                        if !shown.is_empty() {
                            return Ok(Feed::Thinking(shown));
                        }
                    }
                    Some("redacted_thinking") => {
                        let data = block.data.unwrap_or_default().into_owned();
                        self.blocks.insert(index, Block::RedactedThinking(data));
                    }
                    _ => {
                        self.blocks.insert(index, Block::Other);
                    }
                }
            }
            "content_block_delta" => {
                let delta = v.delta.unwrap_or_default();
                match delta.kind.as_deref() {
                    Some("text_delta") => {
                        let piece = delta.text.as_deref().unwrap_or("");
                        let block = self
                            .blocks
                            .entry(index)
                            .or_insert_with(|| Block::Text(String::new()));
                        if let Block::Text(text) = block {
                            text.push_str(piece);
                            if !piece.is_empty() {
                                return Ok(Feed::Text(piece.to_string()));
                            }
                        }
                    }
                    Some("input_json_delta") => {
                        if let Some(Block::ToolUse { json, .. }) = self.blocks.get_mut(&index) {
                            json.push_str(delta.partial_json.as_deref().unwrap_or(""));
                        }
                    }
                    Some("thinking_delta") => {
                        let piece = delta.thinking.as_deref().unwrap_or("");
                        if let Some(Block::Thinking { thinking, .. }) = self.blocks.get_mut(&index)
                        {
                            thinking.push_str(piece);
                            if !piece.is_empty() {
                                return Ok(Feed::Thinking(piece.to_string()));
                            }
                        }
                    }
                    Some("signature_delta") => {
                        if let Some(Block::Thinking { signature, .. }) = self.blocks.get_mut(&index)
                        {
                            signature.push_str(delta.signature.as_deref().unwrap_or(""));
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = v.delta.and_then(|delta| delta.stop_reason) {
                    self.stop_reason = Some(reason.into_owned());
                }
                self.take_usage(v.usage);
            }
            "message_stop" => return Ok(Feed::Done),
            "error" => {
                let error = v.error.unwrap_or_default();
                let kind = error.kind.as_deref().unwrap_or("error");
                let message = error.message.as_deref().unwrap_or("");
                return Err(EventFailure {
                    message: format!("{kind}: {message}"),
                    retryable: matches!(kind, "overloaded_error" | "api_error"),
                });
            }
            // ping, content_block_stop, and anything newer.
            _ => {}
        }
        Ok(Feed::Continue)
    }

    fn finish(self, done: bool) -> Result<ModelResponse, String> {
        if !done {
            return Err("the stream ended before message_stop".into());
        }
        let mut content = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(text) if !text.is_empty() => content.push(ContentBlock::Text { text }),
                Block::ToolUse {
                    id,
                    name,
                    json,
                    initial,
                } => {
                    let input = if json.trim().is_empty() {
                        if initial.is_object() {
                            initial
                        } else {
                            json!({})
                        }
                    } else {
                        serde_json::from_str(&json).unwrap_or(Value::String(json))
                    };
                    content.push(ContentBlock::ToolUse { id, name, input });
                }
                Block::Thinking {
                    thinking,
                    signature,
                } => content.push(ContentBlock::Thinking {
                    thinking,
                    signature,
                }),
                Block::RedactedThinking(data) => {
                    content.push(ContentBlock::RedactedThinking { data })
                }
                _ => {}
            }
        }
        let has_tools = content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse { .. }));
        let stop_reason = match self.stop_reason.as_deref() {
            Some("end_turn") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_string()),
            None if has_tools => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        Ok(ModelResponse {
            message: Message {
                role: Role::Assistant,
                content,
            },
            stop_reason,
            usage: self.usage,
        })
    }
}
