//! Input validation as the OpenAI Responses API does it, so a history the
//! real API would refuse fails the tests too.
//!
//! The API checks the `input` items: a message's parts fit its role
//! (`input_text` from the user, `output_text` from the assistant), every
//! `function_call_output` answers a `function_call` earlier in the input
//! and every `function_call` is answered, and — the rule that makes
//! reasoning survive tool calls with `store: false` — a function call the
//! model made after a reasoning item must be sent with that reasoning item
//! before it, its encrypted content unchanged. With `store: false`, a
//! reasoning item without encrypted content cannot be looked up and is
//! refused too. The wording is the real API's.

use std::collections::{HashMap, HashSet};

use hyper::StatusCode;
use serde_json::Value;

use crate::responses::Issued;
use crate::strict::Rejection;

/// What the server issued: call id → (reasoning id, encrypted content).
#[derive(Debug, Default)]
pub(crate) struct IssuedReasoning {
    by_call: HashMap<String, (String, String)>,
}

impl IssuedReasoning {
    /// Remembers the reasoning a reply carried before its calls.
    pub(crate) fn remember(&mut self, issued: Issued) {
        for call_id in issued.call_ids {
            self.by_call.insert(
                call_id,
                (
                    issued.reasoning_id.clone(),
                    issued.encrypted_content.clone(),
                ),
            );
        }
    }
}

fn bad_request(message: String) -> Rejection {
    Rejection {
        status: StatusCode::BAD_REQUEST,
        message,
    }
}

/// Checks a Responses request's input; `Err` says what the API answers.
pub(crate) fn validate(body: &Value, issued: &IssuedReasoning) -> Result<(), Rejection> {
    let items = match &body["input"] {
        Value::String(text) if !text.is_empty() => return Ok(()),
        Value::Array(items) if !items.is_empty() => items,
        _ => {
            return Err(bad_request(
                "Missing required parameter: 'input'.".to_owned(),
            ));
        }
    };
    let stored = body["store"].as_bool().unwrap_or(true);
    // Reasoning items sent so far: id → encrypted content.
    let mut reasoning: HashMap<&str, Option<&str>> = HashMap::new();
    let mut calls: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for (idx, item) in items.iter().enumerate() {
        let kind = item["type"]
            .as_str()
            .unwrap_or(if item.get("role").is_some() {
                "message"
            } else {
                ""
            });
        match kind {
            "message" => message(idx, item)?,
            "reasoning" => {
                let id = item["id"].as_str().unwrap_or_default();
                let sealed = item["encrypted_content"].as_str();
                if id.is_empty() {
                    return Err(bad_request(format!(
                        "Missing required parameter: 'input[{idx}].id'."
                    )));
                }
                if !item["summary"].is_array() {
                    return Err(bad_request(format!(
                        "Missing required parameter: 'input[{idx}].summary'."
                    )));
                }
                if sealed.is_none() && !stored {
                    return Err(Rejection {
                        status: StatusCode::NOT_FOUND,
                        message: format!(
                            "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
                        ),
                    });
                }
                reasoning.insert(id, sealed);
            }
            "function_call" => {
                let call_id = item["call_id"].as_str().unwrap_or_default();
                if call_id.is_empty() || item["name"].as_str().is_none_or(str::is_empty) {
                    return Err(bad_request(format!(
                        "Missing required parameter: 'input[{idx}].call_id' or 'input[{idx}].name'."
                    )));
                }
                if !item["arguments"].is_string() {
                    return Err(bad_request(format!(
                        "Invalid type for 'input[{idx}].arguments': expected a string, but got {} instead.",
                        type_name(&item["arguments"])
                    )));
                }
                if let Some((reasoning_id, sealed)) = issued.by_call.get(call_id) {
                    match reasoning.get(reasoning_id.as_str()) {
                        None => {
                            return Err(bad_request(format!(
                                "Item with call_id '{call_id}' of type 'function_call' was provided without its required 'reasoning' item: '{reasoning_id}'."
                            )));
                        }
                        Some(sent) if *sent != Some(sealed.as_str()) => {
                            return Err(bad_request(format!(
                                "The encrypted content for item {reasoning_id} could not be verified."
                            )));
                        }
                        Some(_) => {}
                    }
                }
                calls.insert(call_id);
            }
            "function_call_output" => {
                let call_id = item["call_id"].as_str().unwrap_or_default();
                if !calls.contains(call_id) {
                    return Err(bad_request(format!(
                        "No tool call found for function call output with call_id {call_id}."
                    )));
                }
                if !item["output"].is_string() && !item["output"].is_array() {
                    return Err(bad_request(format!(
                        "Missing required parameter: 'input[{idx}].output'."
                    )));
                }
                answered.insert(call_id);
            }
            other => {
                return Err(bad_request(format!(
                    "Invalid value: '{other}'. Supported values are: 'message', 'reasoning', 'function_call', 'function_call_output', … (input[{idx}].type)."
                )));
            }
        }
    }
    let mut unanswered: Vec<&&str> = calls.difference(&answered).collect();
    unanswered.sort();
    match unanswered.first() {
        Some(call_id) => Err(bad_request(format!(
            "No tool output found for function call {call_id}."
        ))),
        None => Ok(()),
    }
}

/// A message item: a known role, and parts that fit it.
fn message(idx: usize, item: &Value) -> Result<(), Rejection> {
    let role = item["role"].as_str().unwrap_or_default();
    let allowed: &[&str] = match role {
        "user" | "system" | "developer" => &["input_text", "input_image", "input_file"],
        "assistant" => &["output_text", "refusal"],
        other => {
            return Err(bad_request(format!(
                "Invalid value: '{other}'. Supported values are: 'assistant', 'system', 'developer', and 'user' (input[{idx}].role)."
            )));
        }
    };
    match &item["content"] {
        Value::String(_) => Ok(()),
        Value::Array(parts) => {
            for (part_idx, part) in parts.iter().enumerate() {
                let kind = part["type"].as_str().unwrap_or_default();
                if !allowed.contains(&kind) {
                    return Err(bad_request(format!(
                        "Invalid value: '{kind}'. Supported values are: {} (input[{idx}].content[{part_idx}].type).",
                        allowed
                            .iter()
                            .map(|kind| format!("'{kind}'"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
                if part["text"].as_str().is_none() && kind.ends_with("_text") {
                    return Err(bad_request(format!(
                        "Missing required parameter: 'input[{idx}].content[{part_idx}].text'."
                    )));
                }
            }
            Ok(())
        }
        _ => Err(bad_request(format!(
            "Missing required parameter: 'input[{idx}].content'."
        ))),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn issued() -> IssuedReasoning {
        let mut issued = IssuedReasoning::default();
        issued.remember(Issued {
            reasoning_id: "rs_1".into(),
            encrypted_content: "sealed".into(),
            call_ids: vec!["call_1".into()],
        });
        issued
    }

    fn body(items: Value) -> Value {
        json!({"model": "m", "store": false, "input": items})
    }

    fn turn(reasoning: Option<Value>) -> Value {
        let mut items = vec![
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
        ];
        items.extend(reasoning);
        items.push(json!({"type": "function_call", "call_id": "call_1", "name": "Read", "arguments": "{}"}));
        items.push(json!({"type": "function_call_output", "call_id": "call_1", "output": "x"}));
        body(json!(items))
    }

    #[test]
    fn a_call_needs_the_reasoning_that_preceded_it_unchanged() {
        let good = json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "sealed"});
        assert_eq!(validate(&turn(Some(good)), &issued()), Ok(()));
        let err = validate(&turn(None), &issued()).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        assert!(
            err.message
                .contains("without its required 'reasoning' item: 'rs_1'"),
            "{err:?}"
        );
        let changed = json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "forged"});
        assert!(
            validate(&turn(Some(changed)), &issued())
                .unwrap_err()
                .message
                .contains("could not be verified")
        );
        let unsealed = json!({"type": "reasoning", "id": "rs_1", "summary": []});
        assert_eq!(
            validate(&turn(Some(unsealed)), &issued())
                .unwrap_err()
                .status,
            StatusCode::NOT_FOUND
        );
        // A call the server issued without reasoning needs none.
        assert_eq!(validate(&turn(None), &IssuedReasoning::default()), Ok(()));
    }

    #[test]
    fn outputs_and_calls_must_match() {
        let orphan = body(json!([
            {"type": "message", "role": "user", "content": "go"},
            {"type": "function_call_output", "call_id": "call_9", "output": "x"},
        ]));
        assert!(
            validate(&orphan, &IssuedReasoning::default())
                .unwrap_err()
                .message
                .contains("No tool call found")
        );
        let unanswered = body(json!([
            {"type": "message", "role": "user", "content": "go"},
            {"type": "function_call", "call_id": "call_2", "name": "Read", "arguments": "{}"},
        ]));
        assert!(
            validate(&unanswered, &IssuedReasoning::default())
                .unwrap_err()
                .message
                .contains("No tool output found for function call call_2")
        );
        let wrong_part = body(json!([
            {"type": "message", "role": "assistant", "content": [{"type": "input_text", "text": "hi"}]},
        ]));
        assert!(validate(&wrong_part, &IssuedReasoning::default()).is_err());
    }
}
