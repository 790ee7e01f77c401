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
//!
//! A reply that is nothing but one call in that shape naming no offered
//! tool (`{"name": "pyproject.toml", "arguments": {"file_path": …}}`: the
//! file's name where the tool's belongs) was a call too, not an answer: it
//! becomes a call of that name, which dispatch answers with an error naming
//! the tools its arguments fit, and the model gets another turn. Once per
//! user message: a second such reply after the correction stays the answer.

use alcove_protocol::{ContentBlock, Message, Role, StopReason, ToolSpec};
use serde_json::Value;

use crate::ModelResponse;

/// How the ids of calls made from text begin.
const TEXT_CALL_ID: &str = "call_text_";
/// How the id of a call made from text naming no offered tool begins: the
/// one correction is found in the history by it.
const UNKNOWN_CALL_ID: &str = "call_text_unknown_";

/// Turns the tool calls written in `response`'s text into real calls, when
/// it has no real one. `history` is the conversation the reply answers.
/// Returns how many it found.
pub(crate) fn recover(
    response: &mut ModelResponse,
    tools: &[ToolSpec],
    history: &[Message],
) -> usize {
    if tools.is_empty() || response.message.tool_uses().next().is_some() {
        return 0;
    }
    let text = response.message.text();
    let (calls, first_start) = find_calls(&text, tools);
    let (calls, first_start, id_prefix) = if !calls.is_empty() {
        (calls, first_start, TEXT_CALL_ID)
    } else if let Some(call) = lone_unknown_call(&text, tools)
        && !corrected_since_the_user_spoke(history)
    {
        (vec![call], 0, UNKNOWN_CALL_ID)
    } else {
        return 0;
    };
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
                id: format!("{id_prefix}{:016x}", fastrand::u64(..)),
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

/// The call `text` is, when it is nothing but one object `{"name": <not an
/// offered tool>, "arguments" | "parameters": {...}}` (in a fence or tag or
/// bare) with no other key: prose quoting such an object is not a call.
fn lone_unknown_call(text: &str, tools: &[ToolSpec]) -> Option<(String, Value)> {
    let mut body = text.trim();
    for (opener, closer) in [
        ("<tool_call>", "</tool_call>"),
        ("```json", "```"),
        ("```JSON", "```"),
        ("```", "```"),
    ] {
        if let Some(inner) = body
            .strip_prefix(opener)
            .and_then(|rest| rest.strip_suffix(closer))
        {
            body = inner.trim();
            break;
        }
    }
    let Ok(Value::Object(mut object)) = serde_json::from_str::<Value>(body) else {
        return None;
    };
    if object.len() != 2 {
        return None;
    }
    let name = object.remove("name")?.as_str()?.trim().to_owned();
    let arguments = object
        .remove("arguments")
        .or_else(|| object.remove("parameters"))?;
    if name.is_empty() || !arguments.is_object() || tools.iter().any(|tool| tool.name == name) {
        return None;
    }
    Some((name, arguments))
}

/// Whether a call from text naming no tool was already corrected since
/// the user's last message.
fn corrected_since_the_user_spoke(history: &[Message]) -> bool {
    history
        .iter()
        .rev()
        .take_while(|message| {
            message.role != Role::User
                || !message
                    .content
                    .iter()
                    .any(|block| matches!(block, ContentBlock::Text { .. }))
        })
        .flat_map(Message::tool_uses)
        .any(|(id, _, _)| id.starts_with(UNKNOWN_CALL_ID))
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
        assert_eq!(recover(&mut response, &tools(), &[]), 1);
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
        assert_eq!(recover(&mut response, &tools(), &[]), 2);
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
    fn a_lone_call_naming_no_tool_becomes_a_call_once_per_user_message() {
        let text =
            "{\"name\": \"pyproject.toml\", \"arguments\": {\"file_path\": \"pyproject.toml\"}}";
        let mut response = reply(text);
        assert_eq!(recover(&mut response, &tools(), &[]), 1);
        assert_eq!(
            calls(&response),
            vec![(
                "pyproject.toml".into(),
                json!({"file_path": "pyproject.toml"})
            )]
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        // After that correction, the same reply is the answer.
        let corrected = vec![
            Message::user_text("read it"),
            response.message.clone(),
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "x".into(),
                    content: "Unknown tool".to_owned().into(),
                    is_error: true,
                }],
            },
        ];
        let mut again = reply(text);
        assert_eq!(recover(&mut again, &tools(), &corrected), 0);
        assert_eq!(again.message.text(), text);
        // A new user message allows another.
        let mut later = corrected.clone();
        later.push(Message::assistant_text("ok"));
        later.push(Message::user_text("and now?"));
        let mut fenced = reply(&format!("```json\n{text}\n```"));
        assert_eq!(recover(&mut fenced, &tools(), &later), 1);
    }

    #[test]
    fn unknown_tools_prose_and_real_calls_are_left_alone() {
        for text in [
            "The config is {\"name\": \"Deploy\", \"arguments\": {}}.",
            "{\"name\": \"Deploy\", \"arguments\": {}, \"id\": 3}",
            "{\"name\": \"Deploy\", \"arguments\": \"now\"}",
            "{\"name\": \"Deploy\", \"version\": \"1.0\"}",
            "Use {braces} and {\"name\": broken",
            "A map {\"a\": 1} and {\"arguments\": {}, \"name\": \"Nope\"}",
            "Plain answer.",
        ] {
            let mut response = reply(text);
            assert_eq!(recover(&mut response, &tools(), &[]), 0, "{text}");
            assert_eq!(response.message.text(), text);
            assert_eq!(response.stop_reason, StopReason::EndTurn);
        }
        let mut response = reply("{\"name\": \"Read\", \"arguments\": {\"path\": \"a\"}}");
        response.message.content.push(ContentBlock::ToolUse {
            id: "real".into(),
            name: "Bash".into(),
            input: json!({"command": "ls"}),
        });
        assert_eq!(recover(&mut response, &tools(), &[]), 0);
        assert_eq!(calls(&response).len(), 1);
        let mut response = reply("{\"name\": \"Read\", \"arguments\": {\"path\": \"a\"}}");
        assert_eq!(recover(&mut response, &[], &[]), 0);
    }
}
