//! The provider-neutral conversation model.
//!
//! The shape follows Anthropic's Messages API (content blocks, tool results
//! carried in user messages) because it is the richer of the two wire
//! protocols; the OpenAI client translates to and from it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Schema, SharedText};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user, or the harness speaking for the user (tool results).
    User,
    /// The model.
    Assistant,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What it holds, in order.
    pub content: Vec<ContentBlock>,
}

/// One block of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call requested by the model.
    ToolUse {
        /// The call id the result must echo.
        id: String,
        /// The tool's name as the model wrote it.
        name: String,
        /// The arguments. When the model's arguments were not valid JSON this
        /// holds them as a JSON string, so nothing the model said is lost.
        input: Value,
    },
    /// The answer to one tool call.
    ToolResult {
        /// The id of the `ToolUse` this answers.
        tool_use_id: String,
        /// The result text the model reads (shared: every request sends it
        /// again, and its digest is kept with it).
        content: SharedText,
        /// Whether the call failed, was denied or was cancelled.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// A reasoning item of the OpenAI Responses wire, kept so it can be
    /// sent back unchanged: with `store: false` the model keeps its
    /// reasoning across tool calls only through the encrypted content, and
    /// the API refuses a function call sent without the reasoning item that
    /// preceded it. Other wires leave it out of their requests.
    Reasoning {
        /// The item id the provider gave it (`rs_…`).
        id: String,
        /// The opaque reasoning state, when the provider returned it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        /// The reasoning summary's parts, as streamed (may be empty).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        summary: Vec<String>,
    },
    /// The model's thinking before it answered (Anthropic extended or
    /// adaptive thinking). Kept with its signature and sent back unchanged:
    /// the API verifies the signature, and refuses a tool-use turn whose
    /// thinking was dropped or altered. Never part of [`Message::text`].
    Thinking {
        /// What the model thought (a summary, on the newest models).
        thinking: String,
        /// The provider's signature over it, opaque.
        signature: String,
    },
    /// Thinking the provider encrypted (flagged by its safety systems):
    /// nothing to show, but sent back unchanged like [`ContentBlock::Thinking`].
    RedactedThinking {
        /// The encrypted thinking, opaque.
        data: String,
    },
    /// An image, base64-encoded. In a user message it follows the text it
    /// goes with; right after a [`ContentBlock::ToolResult`] it belongs to
    /// that result (the Anthropic wire puts it inside the `tool_result`, the
    /// Chat Completions wire in a user message after the tool messages).
    Image {
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        media_type: String,
        /// The image's bytes in standard base64.
        data: String,
    },
}

impl Message {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// An assistant message holding one text block.
    pub fn assistant_text(text: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// The concatenation of the message's text blocks, with no separator.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text: part } = block {
                text.push_str(part);
            }
        }
        text
    }

    /// The concatenation of the message's thinking blocks, with no separator.
    pub fn thinking(&self) -> String {
        let mut thinking = String::new();
        for block in &self.content {
            if let ContentBlock::Thinking { thinking: part, .. } = block {
                thinking.push_str(part);
            }
        }
        thinking
    }

    /// The tool calls of this message, in order: `(id, name, input)`.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does and when to use it, for the model.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: Schema,
}

/// Token counts reported by a provider.
///
/// Input is kept in three parts, as providers bill them: tokens read from
/// the prompt cache, tokens written to it, and the rest (`input_tokens`).
/// Transcripts written before the cache fields existed load with them at 0
/// (their `input_tokens` then holds all input, cached or not).
///
/// Written as JSON, it also carries `budget_tokens`, the figure every
/// budget counts ([`Usage::budget_tokens`]), so a reader of `--json`
/// output, a transcript or `results.jsonl` never adds the parts up itself;
/// it is derived, so reading it back ignores it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Usage {
    /// Prompt tokens neither read from nor written to the cache.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Serialize for Usage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let cached = [self.cache_read_tokens, self.cache_write_tokens]
            .iter()
            .filter(|count| **count > 0)
            .count();
        let mut out = serializer.serialize_struct("Usage", 3 + cached)?;
        out.serialize_field("input_tokens", &self.input_tokens)?;
        out.serialize_field("output_tokens", &self.output_tokens)?;
        if self.cache_read_tokens > 0 {
            out.serialize_field("cache_read_tokens", &self.cache_read_tokens)?;
        }
        if self.cache_write_tokens > 0 {
            out.serialize_field("cache_write_tokens", &self.cache_write_tokens)?;
        }
        out.serialize_field("budget_tokens", &self.budget_tokens())?;
        out.end()
    }
}

impl Usage {
    /// Adds another usage report to this one.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
    }

    /// Every prompt token, cached or not: the size of the request.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }

    /// The one token meter: every input token — uncached, read from the
    /// cache and written to it — plus every output token.
    ///
    /// Every token budget counts this figure (a child's `max_tokens`, the
    /// tree's `agents.tree_max_tokens`, a batch's budget), and every
    /// footer, status line and summary that says "tokens" shows it, so a
    /// budget is never undercounted when most of the prompt is cached.
    /// What the tokens cost in dollars is a separate, cache-aware figure
    /// (a cache read is billed at a tenth of an input token or less).
    pub fn budget_tokens(&self) -> u64 {
        self.prompt_tokens().saturating_add(self.output_tokens)
    }
}

/// Why the model stopped producing a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model asked for tools.
    ToolUse,
    /// The output token limit was hit.
    MaxTokens,
    /// Anything else the provider said, kept verbatim.
    #[serde(untagged)]
    Other(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_token_is_every_input_token_cached_or_not_plus_output() {
        let usage = Usage {
            input_tokens: 100,
            output_tokens: 50,
            cache_read_tokens: 900,
            cache_write_tokens: 25,
        };
        assert_eq!(usage.budget_tokens(), 1075);
        let full = Usage {
            input_tokens: u64::MAX,
            output_tokens: 1,
            ..Usage::default()
        };
        assert_eq!(full.budget_tokens(), u64::MAX);
    }

    #[test]
    fn usage_json_carries_the_meter_and_reads_back_without_it() {
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: 85,
            cache_write_tokens: 0,
        };
        let json = serde_json::to_value(usage).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 85, "budget_tokens": 100})
        );
        let back: Usage = serde_json::from_value(json).unwrap_or_default();
        assert_eq!(back, usage);
        let old: Usage =
            serde_json::from_str(r#"{"input_tokens":3,"output_tokens":4}"#).unwrap_or_default();
        assert_eq!(old.budget_tokens(), 7);
    }
}
