//! History validation as the strictest real servers do it, so a history
//! alcove could not send to a real server fails the tests too.
//!
//! OpenAI wire, as llama.cpp's server and OpenAI check: every tool call's
//! `arguments` is a string holding a JSON object (llama.cpp answers 500
//! "Failed to parse tool call arguments as JSON" otherwise), an assistant
//! message with `tool_calls` is followed by one `tool` message per call
//! before anything else, and a `tool` message answers a call. Anthropic
//! wire: the first message is the user's, roles alternate, text blocks are
//! not empty, a `tool_use` input is an object, and every `tool_use` is
//! answered by a `tool_result` at the start of the next (user) message,
//! which answers nothing else; thinking blocks come back as they were
//! signed, and a tool-use turn's assistant message opens with its thinking
//! when thinking is on (`thinking.rs`). Rejections carry the status and the wording
//! of the real servers. On every wire, a scripted reply may call only the
//! tools its request offered ([`offered_calls`]): a real model is given
//! those and no others.

use std::collections::BTreeSet;

use hyper::StatusCode;
use serde_json::Value;

use crate::record::Protocol;

/// Why a strict server refuses a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    pub(crate) status: StatusCode,
    pub(crate) message: String,
}

pub(crate) fn bad_request(message: String) -> Rejection {
    Rejection {
        status: StatusCode::BAD_REQUEST,
        message,
    }
}

/// The names of the tools a request offers (`tools[].function.name` on
/// Chat Completions, `tools[].name` on the other wires; a Responses
/// namespace's tools as `NAMESPACE::NAME`, the way a script calls them).
pub(crate) fn offered_tools(body: &Value) -> Vec<String> {
    let mut names = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        let name = tool["function"]["name"].as_str().or(tool["name"].as_str());
        match (name, tool["tools"].as_array()) {
            (Some(namespace), Some(inner)) if tool["type"] == "namespace" => names.extend(
                inner
                    .iter()
                    .filter_map(|tool| tool["name"].as_str())
                    .map(|name| format!("{namespace}::{name}")),
            ),
            (Some(name), _) => names.push(name.to_owned()),
            (None, _) => {}
        }
    }
    names
}

/// Refuses a scripted reply that calls a tool `body` did not offer: a real
/// model is given the request's tools and no others, so the fake one may
/// not call any other unless the step says it plays a model inventing one
/// (`Step::unoffered`). The refusal names the test's mistake.
pub(crate) fn offered_calls(step: &crate::Step, body: &Value) -> Result<(), Rejection> {
    if step.unoffered {
        return Ok(());
    }
    let offered = offered_tools(body);
    match step
        .called_tools()
        .into_iter()
        .find(|name| !offered.iter().any(|offered| offered == name))
    {
        None => Ok(()),
        Some(name) => Err(bad_request(format!(
            "fake server: the scripted reply calls `{name}`, which this request does not offer (tools: {}); a real model is only given the request's tools. Load a deferred tool first (ToolSearch), or mark the step `.unoffered()` to play a model that invents a name.",
            offered.join(", ")
        ))),
    }
}

/// Checks a model request's history; `Err` says what a real server answers.
pub(crate) fn validate(protocol: Protocol, body: &Value) -> Result<(), Rejection> {
    let Some(messages) = body["messages"].as_array() else {
        return Err(bad_request("messages: field required".to_owned()));
    };
    if messages.is_empty() {
        return Err(bad_request(
            "messages: at least one message is required".to_owned(),
        ));
    }
    match protocol {
        Protocol::OpenAi => openai(messages),
        Protocol::Anthropic => {
            anthropic(messages)?;
            crate::thinking::check(body, messages).map_err(bad_request)
        }
        // Checked by `responses_strict.rs` (it needs what the server issued);
        // the server never sends a Responses request here.
        Protocol::Responses => Ok(()),
    }
}

fn openai(messages: &[Value]) -> Result<(), Rejection> {
    let mut pending: BTreeSet<String> = BTreeSet::new();
    for (idx, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        if role != "tool" && !pending.is_empty() {
            return Err(bad_request(format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                pending.iter().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
        match role {
            "system" | "user" | "developer" => {}
            "assistant" => {
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    let arguments = &call["function"]["arguments"];
                    let parsed = arguments
                        .as_str()
                        .and_then(|text| serde_json::from_str::<Value>(text).ok());
                    if !parsed.as_ref().is_some_and(Value::is_object) {
                        return Err(Rejection {
                            status: StatusCode::INTERNAL_SERVER_ERROR,
                            message: format!(
                                "Failed to parse tool call arguments as JSON: messages[{idx}] arguments {arguments}"
                            ),
                        });
                    }
                    let id = call["id"].as_str().unwrap_or("").to_owned();
                    if id.is_empty() || !pending.insert(id) {
                        return Err(bad_request(format!(
                            "messages[{idx}]: every tool call needs its own non-empty id"
                        )));
                    }
                }
            }
            "tool" => {
                let id = message["tool_call_id"].as_str().unwrap_or("");
                if !pending.remove(id) {
                    return Err(bad_request(format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[{idx}], tool_call_id {id:?})."
                    )));
                }
            }
            other => {
                return Err(bad_request(format!(
                    "messages[{idx}].role: invalid value {other:?}"
                )));
            }
        }
    }
    if pending.is_empty() {
        Ok(())
    } else {
        Err(bad_request(format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
            pending.into_iter().collect::<Vec<_>>().join(", ")
        )))
    }
}

/// The most base64 bytes Anthropic takes for one image.
const MAX_IMAGE_BASE64: usize = 5 * 1024 * 1024;

/// An image block as Anthropic checks it: a base64 source of one of the
/// four formats, at most 5 MB.
fn image_fits(block: &Value, at: &str) -> Result<(), Rejection> {
    let source = &block["source"];
    if source["type"] != "base64" {
        return Err(bad_request(format!(
            "{at}.image.source: expected a base64 source"
        )));
    }
    let media = source["media_type"].as_str().unwrap_or("");
    if !matches!(
        media,
        "image/png" | "image/jpeg" | "image/gif" | "image/webp"
    ) {
        return Err(bad_request(format!(
            "{at}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
        )));
    }
    let size = source["data"].as_str().map_or(0, str::len);
    if size > MAX_IMAGE_BASE64 {
        return Err(bad_request(format!(
            "{at}.image.source.base64: image exceeds 5 MB maximum: {size} bytes > {MAX_IMAGE_BASE64} bytes"
        )));
    }
    Ok(())
}

fn anthropic(messages: &[Value]) -> Result<(), Rejection> {
    let mut expected_role = "user";
    let mut unanswered: BTreeSet<String> = BTreeSet::new();
    for (idx, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        if role != expected_role {
            let problem = if idx == 0 {
                "the first message must use the \"user\" role".to_owned()
            } else {
                "roles must alternate between \"user\" and \"assistant\"".to_owned()
            };
            return Err(bad_request(format!("messages.{idx}: {problem}")));
        }
        expected_role = if role == "user" { "assistant" } else { "user" };
        let blocks: Vec<Value> = match &message["content"] {
            Value::String(text) => vec![serde_json::json!({"type": "text", "text": text})],
            Value::Array(blocks) => blocks.clone(),
            _ => {
                return Err(bad_request(format!(
                    "messages.{idx}.content: Input should be a valid list"
                )));
            }
        };
        let is_last = idx + 1 == messages.len();
        if blocks.is_empty() && !(is_last && role == "assistant") {
            return Err(bad_request(format!(
                "messages.{idx}: all messages must have non-empty content except for the optional final assistant message"
            )));
        }
        // Results for the previous message's tool_use blocks come first.
        let mut answered = BTreeSet::new();
        let mut results_done = false;
        for (block_idx, block) in blocks.iter().enumerate() {
            let at = format!("messages.{idx}.content.{block_idx}");
            match block["type"].as_str().unwrap_or("") {
                "text" => {
                    results_done = true;
                    if block["text"].as_str().is_none_or(str::is_empty) {
                        return Err(bad_request(format!(
                            "{at}: text content blocks must be non-empty"
                        )));
                    }
                }
                "thinking" | "redacted_thinking" => {
                    results_done = true;
                    if role != "assistant" {
                        return Err(bad_request(format!(
                            "{at}: thinking blocks are only allowed in assistant messages"
                        )));
                    }
                }
                "tool_use" => {
                    results_done = true;
                    if role != "assistant" {
                        return Err(bad_request(format!(
                            "{at}: tool_use blocks are only allowed in assistant messages"
                        )));
                    }
                    if !block["input"].is_object() {
                        return Err(bad_request(format!(
                            "{at}.tool_use.input: Input should be a valid dictionary"
                        )));
                    }
                }
                "image" => {
                    results_done = true;
                    if role != "user" {
                        return Err(bad_request(format!(
                            "{at}: image blocks are only allowed in user messages"
                        )));
                    }
                    image_fits(block, &at)?;
                }
                "tool_result" => {
                    for (part_idx, part) in block["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .enumerate()
                    {
                        let at = format!("{at}.content.{part_idx}");
                        match part["type"].as_str().unwrap_or("") {
                            "image" => image_fits(part, &at)?,
                            "text" if part["text"].as_str().is_some_and(|t| !t.is_empty()) => {}
                            "text" => {
                                return Err(bad_request(format!(
                                    "{at}: text content blocks must be non-empty"
                                )));
                            }
                            other => {
                                return Err(bad_request(format!(
                                    "{at}.type: tool_result content may hold text and image blocks, not {other:?}"
                                )));
                            }
                        }
                    }
                    let id = block["tool_use_id"].as_str().unwrap_or("").to_owned();
                    if role != "user" || results_done || !unanswered.contains(&id) {
                        return Err(bad_request(format!(
                            "{at}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        )));
                    }
                    answered.insert(id);
                }
                other => {
                    return Err(bad_request(format!("{at}.type: unknown type {other:?}")));
                }
            }
        }
        let missing: Vec<&String> = unanswered.difference(&answered).collect();
        if !missing.is_empty() {
            return Err(bad_request(format!(
                "messages.{idx}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                missing.into_iter().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
        unanswered = blocks
            .iter()
            .filter(|block| block["type"] == "tool_use")
            .filter_map(|block| block["id"].as_str().map(str::to_owned))
            .collect();
    }
    if unanswered.is_empty() {
        Ok(())
    } else {
        Err(bad_request(format!(
            "messages: `tool_use` ids were found without `tool_result` blocks immediately after: {}",
            unanswered.into_iter().collect::<Vec<_>>().join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn openai_body(messages: Value) -> Value {
        json!({"model": "m", "messages": messages})
    }

    #[test]
    fn openai_arguments_must_be_an_object() {
        let call = |arguments: Value| {
            openai_body(json!([
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": arguments}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "no"},
            ]))
        };
        assert_eq!(validate(Protocol::OpenAi, &call(json!("{}"))), Ok(()));
        for bad in [json!("{\"path\": "), json!("[1]"), json!({"path": "a"})] {
            let err = validate(Protocol::OpenAi, &call(bad.clone())).unwrap_err();
            assert_eq!(err.status, StatusCode::INTERNAL_SERVER_ERROR, "{bad}");
            assert!(
                err.message
                    .contains("Failed to parse tool call arguments as JSON")
            );
        }
    }

    #[test]
    fn openai_every_call_is_answered_before_anything_else() {
        let unanswered = openai_body(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [
                {"id": "c1", "function": {"name": "Read", "arguments": "{}"}},
                {"id": "c2", "function": {"name": "Read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c2", "content": "ok"},
            {"role": "user", "content": "more"},
        ]));
        let err = validate(Protocol::OpenAi, &unanswered).unwrap_err();
        assert!(
            err.message.contains("did not have response messages: c1"),
            "{err:?}"
        );
        let orphan = openai_body(json!([
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "c9", "content": "ok"},
        ]));
        assert!(validate(Protocol::OpenAi, &orphan).is_err());
    }

    #[test]
    fn anthropic_roles_alternate_and_tool_uses_are_answered_next() {
        let good = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "reading"},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
                {"type": "text", "text": "note"}]},
        ]});
        assert_eq!(validate(Protocol::Anthropic, &good), Ok(()));
        let mut twice = good.clone();
        twice["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "content": "again"}));
        assert!(
            validate(Protocol::Anthropic, &twice)
                .unwrap_err()
                .message
                .contains("alternate")
        );
        let mut raw = good.clone();
        raw["messages"][1]["content"][1]["input"] = json!("{oops");
        assert!(
            validate(Protocol::Anthropic, &raw)
                .unwrap_err()
                .message
                .contains("valid dictionary")
        );
        let mut unanswered = good.clone();
        unanswered["messages"][2]["content"] = json!([{"type": "text", "text": "skip"}]);
        assert!(
            validate(Protocol::Anthropic, &unanswered)
                .unwrap_err()
                .message
                .contains("without `tool_result`")
        );
        let mut late = good;
        late["messages"][2]["content"] = json!([
            {"type": "text", "text": "first"},
            {"type": "tool_result", "tool_use_id": "t1", "content": "x"}]);
        assert!(validate(Protocol::Anthropic, &late).is_err());
    }
}

#[cfg(test)]
mod image_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_image_over_five_megabytes_is_refused() {
        let body = |data: String| {
            json!({"messages": [
                {"role": "user", "content": [{"type": "text", "text": "look"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]},
            ]})
        };
        assert_eq!(validate(Protocol::Anthropic, &body("AAAA".into())), Ok(()));
        let err =
            validate(Protocol::Anthropic, &body("A".repeat(MAX_IMAGE_BASE64 + 4))).unwrap_err();
        assert!(
            err.message.contains("image exceeds 5 MB maximum"),
            "{err:?}"
        );
    }
}
