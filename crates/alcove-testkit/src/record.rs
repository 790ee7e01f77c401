//! What the fake server saw: every request it received, kept so tests can
//! assert on what the real client sent (prompt, tools, tool results, headers)
//! in either wire protocol.

use std::time::Instant;

use serde_json::Value;

/// Which wire protocol a request spoke, decided by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// OpenAI Chat Completions (`/v1/chat/completions`, and the OpenAI-style `/v1/models`).
    OpenAi,
    /// OpenAI Responses (`/v1/responses`).
    Responses,
}

/// One HTTP request received by the fake server.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// Path without the query string, e.g. `/v1/messages`.
    pub path: String,
    /// Headers in received order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Null` when empty or not JSON).
    pub body: Value,
    /// The size of the body as received, in bytes.
    pub body_len: usize,
    /// When the server had read the request head (for latency measurements,
    /// e.g. process start to first request in the benchmarks).
    pub received_at: Instant,
}

impl RecordedRequest {
    /// Whether this is a model request (`POST /v1/messages` or `POST
    /// /v1/chat/completions`), not a probe or a listing.
    pub fn is_model_call(&self) -> bool {
        self.method == "POST"
            && matches!(
                self.path.as_str(),
                "/v1/messages" | "/v1/chat/completions" | "/v1/responses"
            )
    }

    /// The protocol, by path: `…/messages` (or a model listing carrying an
    /// `anthropic-version` header) is Anthropic, `…/responses` Responses,
    /// anything else OpenAI.
    pub fn protocol(&self) -> Protocol {
        let anthropic_listing =
            self.path.ends_with("/models") && self.header("anthropic-version").is_some();
        if self.path.ends_with("/messages") || anthropic_listing {
            Protocol::Anthropic
        } else if self.path.ends_with("/responses") {
            Protocol::Responses
        } else {
            Protocol::OpenAi
        }
    }

    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }

    /// The `model` field of the body (empty if absent).
    pub fn model(&self) -> String {
        self.body["model"].as_str().unwrap_or_default().to_string()
    }

    /// Whether the body asked for a streamed answer (`"stream": true`).
    pub fn is_stream(&self) -> bool {
        self.body["stream"].as_bool().unwrap_or(false)
    }

    /// The conversation: `messages`, or a Responses request's `input`
    /// items (messages among function calls, their outputs and reasoning).
    fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .or_else(|| self.body["input"].as_array())
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    fn user_messages(&self) -> impl Iterator<Item = &Value> {
        self.messages().iter().filter(|m| m["role"] == "user")
    }

    /// Text of the first user message: its content string, or its first text
    /// block (Anthropic) / first text part (OpenAI). Empty if there is none.
    pub fn first_user_text(&self) -> String {
        self.user_messages()
            .next()
            .map(|m| first_text(&m["content"]))
            .unwrap_or_default()
    }

    /// All text blocks of the first user message, joined by newlines. This is
    /// what conversations are matched against (so a prompt that a client sends
    /// after some other text block still matches).
    pub fn first_user_message_text(&self) -> String {
        self.user_messages()
            .next()
            .map(|m| all_text(&m["content"]))
            .unwrap_or_default()
    }

    /// All text of the last user message (text blocks joined by newlines);
    /// tool results are not included.
    pub fn last_user_text(&self) -> String {
        self.user_messages()
            .last()
            .map(|m| all_text(&m["content"]))
            .unwrap_or_default()
    }

    /// Names of the offered tools (Anthropic `tools[].name`, OpenAI `tools[].function.name`).
    pub fn tool_names(&self) -> Vec<String> {
        let Some(tools) = self.body["tools"].as_array() else {
            return Vec::new();
        };
        tools
            .iter()
            .filter_map(|t| {
                t["name"]
                    .as_str()
                    .or_else(|| t["function"]["name"].as_str())
            })
            .map(str::to_string)
            .collect()
    }

    /// Number of conversation messages, not counting OpenAI `system` /
    /// `developer` messages (on the Responses wire: input items).
    pub fn message_count(&self) -> usize {
        self.messages()
            .iter()
            .filter(|m| m["role"] != "system" && m["role"] != "developer")
            .count()
    }

    /// The system prompt: Anthropic `system` (a string, or text blocks joined
    /// by newlines) or the OpenAI `system`/`developer` messages joined by newlines.
    pub fn system_prompt(&self) -> String {
        match self.protocol() {
            Protocol::Anthropic => all_text(&self.body["system"]),
            Protocol::Responses => std::iter::once(all_text(&self.body["instructions"]))
                .chain(
                    self.messages()
                        .iter()
                        .filter(|m| m["role"] == "system" || m["role"] == "developer")
                        .map(|m| all_text(&m["content"])),
                )
                .filter(|text| !text.is_empty())
                .collect::<Vec<_>>()
                .join("\n"),
            Protocol::OpenAi => self
                .messages()
                .iter()
                .filter(|m| m["role"] == "system" || m["role"] == "developer")
                .map(|m| all_text(&m["content"]))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// Every tool result in the request, in order: `(tool_use_id, content, is_error)`.
    /// Anthropic `tool_result` blocks (content string or text blocks joined by
    /// newlines); OpenAI `role: "tool"` messages (is_error is always false).
    pub fn tool_results(&self) -> Vec<(String, String, bool)> {
        let mut out = Vec::new();
        for m in self.messages() {
            if m["role"] == "tool" {
                out.push((str_of(&m["tool_call_id"]), all_text(&m["content"]), false));
                continue;
            }
            if m["type"] == "function_call_output" {
                out.push((str_of(&m["call_id"]), all_text(&m["output"]), false));
                continue;
            }
            let Some(blocks) = m["content"].as_array() else {
                continue;
            };
            for b in blocks.iter().filter(|b| b["type"] == "tool_result") {
                out.push((
                    str_of(&b["tool_use_id"]),
                    all_text(&b["content"]),
                    b["is_error"].as_bool().unwrap_or(false),
                ));
            }
        }
        out
    }

    /// Every tool call the client sent back in assistant turns, in order:
    /// `(id, name, input)`. OpenAI arguments that are not valid JSON come back
    /// as a JSON string.
    pub fn assistant_tool_calls(&self) -> Vec<(String, String, Value)> {
        let mut out = Vec::new();
        for m in self
            .messages()
            .iter()
            .filter(|m| m["type"] == "function_call")
        {
            let args = str_of(&m["arguments"]);
            let input = serde_json::from_str(&args).unwrap_or(Value::String(args));
            out.push((str_of(&m["call_id"]), str_of(&m["name"]), input));
        }
        for m in self.messages().iter().filter(|m| m["role"] == "assistant") {
            if let Some(calls) = m["tool_calls"].as_array() {
                for c in calls {
                    let args = str_of(&c["function"]["arguments"]);
                    let input = serde_json::from_str(&args).unwrap_or(Value::String(args));
                    out.push((str_of(&c["id"]), str_of(&c["function"]["name"]), input));
                }
            }
            if let Some(blocks) = m["content"].as_array() {
                for b in blocks.iter().filter(|b| b["type"] == "tool_use") {
                    out.push((str_of(&b["id"]), str_of(&b["name"]), b["input"].clone()));
                }
            }
        }
        out
    }
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn text_parts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| {
                matches!(
                    b["type"].as_str(),
                    Some("text" | "input_text" | "output_text")
                )
            })
            .filter_map(|b| b["text"].as_str())
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

fn first_text(content: &Value) -> String {
    text_parts(content).into_iter().next().unwrap_or_default()
}

fn all_text(content: &Value) -> String {
    text_parts(content).join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(path: &str, body: Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".into(),
            path: path.into(),
            headers: vec![("x-api-key".into(), "k".into())],
            body,
            body_len: 0,
            received_at: Instant::now(),
        }
    }

    #[test]
    fn anthropic_accessors() {
        let r = req(
            "/v1/messages",
            json!({
                "model": "m",
                "system": [{"type": "text", "text": "be nice"}, {"type": "text", "text": "env"}],
                "tools": [{"name": "read_file", "input_schema": {}}],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "hello there"}]},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "data"}], "is_error": true},
                        {"type": "text", "text": "more"}
                    ]}
                ]
            }),
        );
        assert_eq!(r.protocol(), Protocol::Anthropic);
        assert_eq!(r.first_user_text(), "hello there");
        assert_eq!(r.first_user_message_text(), "hello there");
        assert_eq!(r.last_user_text(), "more");
        assert_eq!(r.system_prompt(), "be nice\nenv");
        assert_eq!(r.tool_names(), vec!["read_file"]);
        assert_eq!(r.message_count(), 3);
        assert_eq!(
            r.tool_results(),
            vec![("toolu_1".to_string(), "data".to_string(), true)]
        );
        assert_eq!(r.assistant_tool_calls()[0].2, json!({"path": "a"}));
        assert_eq!(r.header("X-API-KEY").as_deref(), Some("k"));
        assert_eq!(r.header("missing"), None);
    }

    #[test]
    fn openai_accessors() {
        let r = req(
            "/v1/chat/completions",
            json!({
                "model": "m",
                "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "do it"},
                    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "out"}
                ]
            }),
        );
        assert_eq!(r.protocol(), Protocol::OpenAi);
        assert_eq!(r.first_user_text(), "do it");
        assert_eq!(r.system_prompt(), "sys");
        assert_eq!(r.tool_names(), vec!["bash"]);
        assert_eq!(r.message_count(), 3);
        assert_eq!(
            r.tool_results(),
            vec![("call_1".to_string(), "out".to_string(), false)]
        );
        assert_eq!(
            r.assistant_tool_calls(),
            vec![(
                "call_1".to_string(),
                "bash".to_string(),
                json!({"command": "ls"})
            )]
        );
    }
}
