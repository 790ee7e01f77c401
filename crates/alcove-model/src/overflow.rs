//! Recognising "the request does not fit the context window" among a
//! provider's error answers.
//!
//! Each provider words it its own way, so the answer is read by status and
//! body structure, not by one string: Anthropic answers 400
//! `invalid_request_error` "prompt is too long: N tokens > M maximum" (or 413
//! `request_too_large`), OpenAI 400 with `code: context_length_exceeded`,
//! llama.cpp 400 with `type: exceed_context_size_error` and the counts as
//! fields, vLLM and other OpenAI-compatible servers 400 "maximum context
//! length is M tokens. However, you requested N tokens". The loop matches the
//! resulting [`ModelError::ContextOverflow`] to compact and try again.

use serde_json::Value;

use crate::ModelError;

/// Returns the context overflow error when `status` and `body` say the
/// request was too long for the model's window; `None` for any other error.
pub fn classify_overflow(provider: &str, status: u16, body: &str) -> Option<ModelError> {
    if !matches!(status, 400 | 413) {
        return None;
    }
    let json: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let error = &json["error"];
    let kind = error["type"].as_str().unwrap_or("");
    let code = error["code"].as_str().unwrap_or("");
    let message = error["message"]
        .as_str()
        .or_else(|| json["message"].as_str())
        .unwrap_or(body)
        .to_owned();
    let lower = message.to_lowercase();
    let overflow = |request_tokens, window| {
        Some(ModelError::ContextOverflow {
            provider: provider.to_owned(),
            message: message.clone(),
            request_tokens,
            window,
        })
    };
    // llama.cpp: the counts are fields of the error object.
    if kind == "exceed_context_size_error" {
        return overflow(error["n_prompt_tokens"].as_u64(), error["n_ctx"].as_u64());
    }
    // Anthropic: "prompt is too long: 208310 tokens > 200000 maximum".
    if lower.contains("prompt is too long") {
        let numbers = numbers(&message);
        return overflow(numbers.first().copied(), numbers.get(1).copied());
    }
    if status == 413 && kind == "request_too_large" {
        return overflow(None, None);
    }
    // OpenAI ("code": "context_length_exceeded") and the servers that copy
    // its wording: "maximum context length is 128000 tokens. However, your
    // messages resulted in 130000 tokens".
    if code == "context_length_exceeded"
        || lower.contains("maximum context length")
        || lower.contains("exceeds the available context size")
        || lower.contains("context window")
    {
        let numbers = numbers(&message);
        return overflow(numbers.get(1).copied(), numbers.first().copied());
    }
    None
}

/// The whole numbers in `text`, in order.
fn numbers(text: &str) -> Vec<u64> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .filter_map(|part| part.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(status: u16, body: &str) -> Option<(Option<u64>, Option<u64>)> {
        match classify_overflow("p", status, body)? {
            ModelError::ContextOverflow {
                request_tokens,
                window,
                ..
            } => Some((request_tokens, window)),
            _ => None,
        }
    }

    #[test]
    fn each_providers_shape_is_recognised() {
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#;
        assert_eq!(counts(400, anthropic), Some((Some(208310), Some(200000))));
        let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(counts(400, openai), Some((Some(130512), Some(128000))));
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
        assert_eq!(counts(400, llama), Some((Some(9000), Some(8192))));
        let too_large = r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#;
        assert_eq!(counts(413, too_large), Some((None, None)));
    }

    #[test]
    fn other_errors_are_not_overflows() {
        let bad = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}"#;
        assert!(classify_overflow("p", 400, bad).is_none());
        let limited = r#"{"error":{"message":"maximum context length is 10 tokens","code":"x"}}"#;
        // A rate limit or server error is never an overflow, whatever it says.
        assert!(classify_overflow("p", 429, limited).is_none());
        assert!(classify_overflow("p", 500, limited).is_none());
        assert!(classify_overflow("p", 400, "").is_none());
    }
}
