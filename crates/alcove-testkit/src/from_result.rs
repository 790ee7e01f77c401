//! Tool-call arguments a scripted model takes from what it was sent: a
//! real model calls `wait` with the id the tool it called before returned,
//! and some ids are not known before the test runs (a workflow's `wf_…`).
//!
//! A string argument [`from_last_result`]`("run_id")` is replaced, when the
//! step answers a request, by the field `run_id` of the JSON of that
//! request's last tool result (left as it is when there is no such field).

use serde_json::Value;

use crate::record::RecordedRequest;
use crate::script::{Block, Step, StepKind};

const HEAD: &str = "{{last_result.";
const TAIL: &str = "}}";

/// The argument that becomes `field` of the last tool result's JSON.
pub fn from_last_result(field: &str) -> String {
    format!("{HEAD}{field}{TAIL}")
}

/// `step` with its arguments filled from `request`.
pub(crate) fn filled(mut step: Step, request: &RecordedRequest) -> Step {
    let StepKind::Reply(blocks) = &mut step.kind else {
        return step;
    };
    // Most steps name no result: the request's results are not read then.
    let asks = blocks.iter().any(|block| match block {
        Block::ToolCall { input, .. } => names_a_result(input),
        _ => false,
    });
    if !asks {
        return step;
    }
    let last: Option<Value> = request
        .tool_results()
        .last()
        .and_then(|(_, content, _)| serde_json::from_str(content).ok());
    let Some(last) = last else { return step };
    for block in blocks {
        if let Block::ToolCall { input, .. } = block {
            fill(input, &last);
        }
    }
    step
}

/// Whether `value` holds a [`from_last_result`] argument.
fn names_a_result(value: &Value) -> bool {
    match value {
        Value::String(text) => text.starts_with(HEAD) && text.ends_with(TAIL),
        Value::Array(items) => items.iter().any(names_a_result),
        Value::Object(map) => map.values().any(names_a_result),
        _ => false,
    }
}

fn fill(value: &mut Value, last: &Value) {
    match value {
        Value::String(text) => {
            let field = text
                .strip_prefix(HEAD)
                .and_then(|rest| rest.strip_suffix(TAIL));
            if let Some(found) = field.and_then(|field| last.get(field)) {
                *value = found.clone();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| fill(item, last)),
        Value::Object(map) => map.values_mut().for_each(|item| fill(item, last)),
        _ => {}
    }
}
