//! Anthropic's thinking as the fake server does it: when a request asks
//! for thinking (`thinking.type` `enabled` or `adaptive`), each reply
//! opens with a `thinking` block whose signature the server can check, and
//! a strict server refuses, as Anthropic does, a request carrying a
//! thinking block whose text or signature changed, and a tool-use turn
//! whose thinking was dropped (`strict.rs` calls [`check`]).

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

/// Whether a Messages request body asks for thinking.
pub(crate) fn requested(body: &Value) -> bool {
    matches!(
        body["thinking"]["type"].as_str(),
        Some("enabled" | "adaptive")
    )
}

/// The signature the server gives `text` (opaque to clients, like the
/// real one; only this server can tell a right one from a changed one).
pub(crate) fn sign(text: &str) -> String {
    let mut hasher = DefaultHasher::new();
    ("alcove-testkit thinking", text).hash(&mut hasher);
    format!("EqSig{:016x}", hasher.finish())
}

/// A redacted block's data: a payload and its own check.
pub(crate) fn redacted(n: u64) -> String {
    let payload = format!("EnCrYpTeD{n:06}");
    format!("{payload}.{}", sign(&payload))
}

fn redacted_ok(data: &str) -> bool {
    data.rsplit_once('.')
        .is_some_and(|(payload, sig)| sign(payload) == sig)
}

/// What a strict Anthropic server says about the thinking in `messages`.
pub(crate) fn check(body: &Value, messages: &[Value]) -> Result<(), String> {
    for (idx, message) in messages.iter().enumerate() {
        let blocks = message["content"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (block_idx, block) in blocks.iter().enumerate() {
            let at = format!("messages.{idx}.content.{block_idx}");
            match block["type"].as_str() {
                Some("thinking") => {
                    if message["role"] != "assistant" {
                        return Err(format!(
                            "{at}: thinking blocks are only allowed in assistant messages"
                        ));
                    }
                    let text = block["thinking"].as_str().unwrap_or("");
                    let signature = block["signature"].as_str().unwrap_or("");
                    if sign(text) != signature {
                        return Err(format!("{at}: Invalid `signature` in `thinking` block"));
                    }
                    if block.get("cache_control").is_some() {
                        return Err(format!(
                            "{at}.thinking.cache_control: Extra inputs are not permitted"
                        ));
                    }
                }
                Some("redacted_thinking") if !block["data"].as_str().is_some_and(redacted_ok) => {
                    return Err(format!("{at}: Invalid `data` in `redacted_thinking` block"));
                }
                _ => {}
            }
        }
    }
    if !requested(body) {
        return Ok(());
    }
    if let Some(budget) = body["thinking"]["budget_tokens"].as_u64() {
        let max_tokens = body["max_tokens"].as_u64().unwrap_or(0);
        if budget < 1024 {
            return Err(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                    .into(),
            );
        }
        if budget >= max_tokens {
            return Err("`max_tokens` must be greater than `thinking.budget_tokens`".into());
        }
    }
    if body["temperature"].as_f64().is_some_and(|t| t != 1.0) {
        return Err(
            "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode"
                .into(),
        );
    }
    // A tool-use turn in progress: its assistant message must open with
    // its thinking.
    let last = messages.len().saturating_sub(1);
    let carries_results = messages.last().is_some_and(|message| {
        message["role"] == "user"
            && message["content"]
                .as_array()
                .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
    });
    if carries_results && last >= 1 {
        let first = &messages[last - 1]["content"][0]["type"];
        let first = first.as_str().unwrap_or("nothing");
        if first != "thinking" && first != "redacted_thinking" {
            return Err(format!(
                "messages.{}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`.",
                last - 1
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(assistant: Value) -> Value {
        json!({"model": "m", "max_tokens": 2000, "thinking": {"type": "adaptive"}, "messages": [
            {"role": "user", "content": "go"},
            assistant,
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
        ]})
    }

    fn check_body(body: &Value) -> Result<(), String> {
        check(body, body["messages"].as_array().unwrap())
    }

    #[test]
    fn a_tool_use_turn_needs_its_thinking_unchanged() {
        let text = "I will read it.";
        let tool = json!({"type": "tool_use", "id": "t1", "name": "Read", "input": {}});
        let thinking = json!({"type": "thinking", "thinking": text, "signature": sign(text)});
        let intact = body(json!({"role": "assistant", "content": [thinking, tool]}));
        assert_eq!(check_body(&intact), Ok(()));

        let dropped = body(json!({"role": "assistant", "content": [tool]}));
        let err = check_body(&dropped).unwrap_err();
        assert!(
            err.contains("Expected `thinking` or `redacted_thinking`"),
            "{err}"
        );

        let mut altered = intact.clone();
        altered["messages"][1]["content"][0]["thinking"] = json!("I will read it!");
        let err = check_body(&altered).unwrap_err();
        assert!(err.contains("Invalid `signature`"), "{err}");

        let mut resigned = intact;
        resigned["messages"][1]["content"][0]["signature"] = json!("EqSig0000");
        assert!(check_body(&resigned).is_err());

        let redacted = body(json!({"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": redacted(7)}, tool]}));
        assert_eq!(check_body(&redacted), Ok(()));
        let forged = body(json!({"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": "EnCrYpTeD000007.EqSig1"}, tool]}));
        assert!(check_body(&forged).is_err());

        // Without thinking asked for, a turn without it is fine.
        let mut off = dropped;
        off.as_object_mut().unwrap().remove("thinking");
        assert_eq!(check_body(&off), Ok(()));
    }
}
