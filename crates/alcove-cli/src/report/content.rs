//! What a transcript's messages and tool results hold, as the page shows
//! it: content blocks (capped, unknown kinds kept as their JSON), a tool
//! call's one-line summary, and the `[alcove evidence]` footers the harness
//! writes under a child's report.

use serde_json::Value;

use super::model::{self, Block, first_line};

/// An `[alcove evidence]` footer (and `[alcove worktree]` line) found in a
/// tool result.
#[derive(Debug)]
pub(super) struct Footer {
    pub(super) agent: String,
    pub(super) call_id: String,
    pub(super) evidence: Option<String>,
    pub(super) transcript: Option<String>,
    pub(super) worktree: Option<String>,
}

/// A message's content blocks, capped; unknown kinds kept as their JSON.
pub(super) fn blocks(content: Option<&Value>) -> Vec<Block> {
    let Some(content) = content else {
        return Vec::new();
    };
    if let Some(text) = content.as_str() {
        return vec![Block::Text {
            text: model::text(text),
        }];
    }
    let str_of = |block: &Value, name: &str| {
        block
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    content
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|block| match block.get("type").and_then(Value::as_str) {
            Some("text") => Block::Text {
                text: model::text(&str_of(block, "text")),
            },
            Some("thinking") => Block::Thinking {
                text: model::text(&str_of(block, "thinking")),
            },
            Some("tool_use") => {
                let name = str_of(block, "name");
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                Block::ToolUse {
                    id: str_of(block, "id"),
                    diff: model::diff(&name, &input),
                    input: model::json_text(&input),
                    name,
                }
            }
            Some("tool_result") => Block::ToolResult {
                id: str_of(block, "tool_use_id"),
                text: match block.get("content") {
                    Some(Value::String(text)) => model::result(text),
                    Some(other) => model::json_text(other),
                    None => String::new(),
                },
                error: block
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            Some("image") => Block::Other {
                kind: "image".to_owned(),
                text: format!(
                    "[an image, {}, {} bytes of base64]",
                    str_of(block, "media_type"),
                    str_of(block, "data").len()
                ),
            },
            Some("redacted_thinking") => Block::Thinking {
                text: "[redacted thinking]".to_owned(),
            },
            other => {
                let mut fields = block.clone();
                // Opaque payloads (encrypted reasoning, …) say only their size.
                if let Some(object) = fields.as_object_mut() {
                    for (_, value) in object.iter_mut() {
                        if let Some(text) = value.as_str()
                            && text.len() > 512
                        {
                            *value = Value::String(format!("[{} characters]", text.len()));
                        }
                    }
                }
                Block::Other {
                    kind: other.unwrap_or("block").to_owned(),
                    text: model::json_text(&fields),
                }
            }
        })
        .collect()
}

/// A short one-line view of a tool call's input: its command, path or
/// pattern when it has one, else its JSON.
pub(super) fn input_summary(input: &Value) -> String {
    for key in [
        "command",
        "file_path",
        "pattern",
        "description",
        "path",
        "url",
    ] {
        if let Some(text) = input.get(key).and_then(Value::as_str) {
            return first_line(text);
        }
    }
    let text = input.to_string();
    if text == "{}" || text == "null" {
        String::new()
    } else {
        first_line(&text)
    }
}

/// The `[alcove evidence]` footers of a tool result: in its text, or in the
/// strings of a JSON result (`wait` returns reports inside JSON).
pub(super) fn footers(agent: &str, call_id: &str, content: &str) -> Vec<Footer> {
    let mut texts = Vec::new();
    match serde_json::from_str::<Value>(content) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => collect_strings(&value, &mut texts),
        _ => texts.push(content.to_owned()),
    }
    let mut found = Vec::new();
    for text in texts {
        let mut footer = Footer {
            agent: agent.to_owned(),
            call_id: call_id.to_owned(),
            evidence: None,
            transcript: None,
            worktree: None,
        };
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("[alcove evidence] ") {
                footer.transcript = rest
                    .rsplit(" | ")
                    .find_map(|part| part.strip_prefix("transcript: "))
                    .map(str::to_owned);
                footer.evidence = Some(model::capped(rest, 2048));
            } else if line.starts_with("[alcove worktree] ") {
                footer.worktree = Some(model::capped(line, 2048));
            }
        }
        if footer.evidence.is_some() || footer.worktree.is_some() {
            found.push(footer);
        }
    }
    found
}

/// Every string of `value` that holds a footer.
fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) if text.contains("[alcove ") => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(fields) => fields.values().for_each(|item| collect_strings(item, out)),
        _ => {}
    }
}
