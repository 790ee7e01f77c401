//! Tool calls a model wrote as text instead of making them.
//!
//! Small local models behind an OpenAI-compatible server often answer with
//! a call written out — a fenced ```` ```json ```` block, a Hermes-style
//! `<tool_call>` tag or a bare object, `{"name": "Read", "arguments":
//! {...}}` — which the server does not parse when its chat template has no
//! tool-call grammar. Left alone, that text would end the run as the final
//! answer. When a reply has no real tool call, the calls written in its text
//! that name an offered tool are turned into real ones (the provider switch
//! `text_tool_calls` turns this off); the text before the first call stays
//! as the reply's text.

use alcove_protocol::{ContentBlock, Message, StopReason, ToolSpec};
use serde_json::Value;

use crate::ModelResponse;

/// Turns the tool calls written in `response`'s text into real calls, when
/// it has no real one. Returns how many it found.
pub(crate) fn recover(response: &mut ModelResponse, tools: &[ToolSpec]) -> usize {
    if tools.is_empty() || response.message.tool_uses().next().is_some() {
        return 0;
    }
    let text = response.message.text();
    let (calls, first_start) = find_calls(&text, tools);
    if calls.is_empty() {
        return 0;
    }
    let preface = clean_preface(&text[..first_start]);
    let mut content = Vec::with_capacity(calls.len() + 1);
    if !preface.is_empty() {
        content.push(ContentBlock::Text { text: preface });
    }
    let count = calls.len();
    content.extend(
        calls
            .into_iter()
            .map(|(name, input)| ContentBlock::ToolUse {
                id: format!("call_text_{:016x}", fastrand::u64(..)),
                name,
                input,
            }),
    );
    response.message = Message {
        role: response.message.role,
        content,
    };
    response.stop_reason = StopReason::ToolUse;
    count
}

/// The calls (tool name, arguments object) written in `text`, in order, and
/// where the first one starts.
fn find_calls(text: &str, tools: &[ToolSpec]) -> (Vec<(String, Value)>, usize) {
    let mut calls = Vec::new();
    let mut first_start = text.len();
    let mut at = 0;
    while let Some(offset) = text[at..].find('{') {
        let start = at + offset;
        // Only an object with a string key can be a call.
        if !text[start + 1..].trim_start().starts_with('"') {
            at = start + 1;
            continue;
        }
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) => {
                let end = start + values.byte_offset();
                if let Some(call) = as_call(value, tools) {
                    first_start = first_start.min(start);
                    calls.push(call);
                }
                at = end;
            }
            _ => at = start + 1,
        }
    }
    (calls, first_start)
}

/// `{"name": <offered tool>, "arguments" | "parameters": {...}}`; arguments
/// written as a JSON string holding an object are accepted too.
fn as_call(value: Value, tools: &[ToolSpec]) -> Option<(String, Value)> {
    let Value::Object(mut object) = value else {
        return None;
    };
    let name = object.get("name")?.as_str()?.to_owned();
    if !tools.iter().any(|tool| tool.name == name) {
        return None;
    }
    let arguments = object
        .remove("arguments")
        .or_else(|| object.remove("parameters"))
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    let arguments = match arguments {
        Value::String(raw) => serde_json::from_str::<Value>(&raw).ok()?,
        other => other,
    };
    arguments.is_object().then_some((name, arguments))
}

/// The text before the first call, without the fence or tag that opened it.
fn clean_preface(text: &str) -> String {
    let mut preface = text.trim_end();
    for opener in ["<tool_call>", "```json", "```JSON", "```"] {
        if let Some(stripped) = preface.strip_suffix(opener) {
            preface = stripped.trim_end();
            break;
        }
    }
    preface.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alcove_protocol::{Role, Usage};
    use serde_json::json;

    fn tools() -> Vec<ToolSpec> {
        ["Read", "Bash"]
            .iter()
            .map(|name| ToolSpec {
                name: (*name).to_owned(),
                description: String::new(),
                input_schema: json!({"type": "object"}).into(),
            })
            .collect()
    }

    fn reply(text: &str) -> ModelResponse {
        ModelResponse {
            message: Message::assistant_text(text),
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
        }
    }

    fn calls(response: &ModelResponse) -> Vec<(String, Value)> {
        response
            .message
            .tool_uses()
            .map(|(_, name, input)| (name.to_owned(), input.clone()))
            .collect()
    }

    #[test]
    fn a_fenced_call_becomes_a_real_one() {
        let mut response = reply(
            "I will read it.\n```json\n{\"name\": \"Read\", \"arguments\": {\"path\": \"a.txt\"}}\n```\n",
        );
        assert_eq!(recover(&mut response, &tools()), 1);
        assert_eq!(
            calls(&response),
            vec![("Read".into(), json!({"path": "a.txt"}))]
        );
        assert_eq!(response.message.text(), "I will read it.");
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.message.role, Role::Assistant);
    }

    #[test]
    fn tags_bare_objects_string_arguments_and_several_calls() {
        let mut response = reply(
            "<tool_call>\n{\"name\": \"Bash\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}\n</tool_call>\n{\"parameters\":{\"path\":\"b\"},\"name\":\"Read\"}",
        );
        assert_eq!(recover(&mut response, &tools()), 2);
        assert_eq!(
            calls(&response),
            vec![
                ("Bash".into(), json!({"command": "ls"})),
                ("Read".into(), json!({"path": "b"})),
            ]
        );
        assert_eq!(response.message.text(), "");
    }

    #[test]
    fn unknown_tools_prose_and_real_calls_are_left_alone() {
        for text in [
            "The config is {\"name\": \"Deploy\", \"arguments\": {}}.",
            "Use {braces} and {\"name\": broken",
            "A map {\"a\": 1} and {\"arguments\": {}, \"name\": \"Nope\"}",
            "Plain answer.",
        ] {
            let mut response = reply(text);
            assert_eq!(recover(&mut response, &tools()), 0, "{text}");
            assert_eq!(response.message.text(), text);
            assert_eq!(response.stop_reason, StopReason::EndTurn);
        }
        let mut response = reply("{\"name\": \"Read\", \"arguments\": {\"path\": \"a\"}}");
        response.message.content.push(ContentBlock::ToolUse {
            id: "real".into(),
            name: "Bash".into(),
            input: json!({"command": "ls"}),
        });
        assert_eq!(recover(&mut response, &tools()), 0);
        assert_eq!(calls(&response).len(), 1);
        let mut response = reply("{\"name\": \"Read\", \"arguments\": {\"path\": \"a\"}}");
        assert_eq!(recover(&mut response, &[]), 0);
    }
}
