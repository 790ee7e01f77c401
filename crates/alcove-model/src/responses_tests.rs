//! Fixture tests for the Responses client: request bodies, and event
//! streams shaped as OpenAI sends them fed through the assembler without
//! HTTP, in chunks of every size.

use super::*;
use crate::retry::AttemptError;
use crate::sse::testing::{run, text_of};
use alcove_protocol::{SharedText, ToolSpec};

/// One event, framed as OpenAI frames them: `event:` and a `data:` whose
/// `type` repeats it.
fn event(kind: &str, mut data: Value) -> String {
    data["type"] = json!(kind);
    format!("event: {kind}\ndata: {data}\n\n")
}

fn completed(output: Value, input: u64, cached: u64, out: u64) -> String {
    event(
        "response.completed",
        json!({"response": {"id": "resp_1", "status": "completed", "output": output, "usage": {
            "input_tokens": input,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 3},
            "total_tokens": input + out,
        }}}),
    )
}

/// A reasoning item with a summary, a text answer and a function call.
fn tool_turn() -> String {
    let reasoning_done = json!({"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAA-secret",
        "summary": [{"type": "summary_text", "text": "Look at the file first."}]});
    let call_done = json!({"id": "fc_1", "type": "function_call", "status": "completed",
        "call_id": "call_9", "name": "Read", "arguments": "{\"path\":\"a.txt\"}"});
    [
        event(
            "response.created",
            json!({"response": {"id": "resp_1", "status": "in_progress"}}),
        ),
        event(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        ),
        event(
            "response.reasoning_summary_part.added",
            json!({"item_id": "rs_1", "output_index": 0, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        ),
        event(
            "response.reasoning_summary_text.delta",
            json!({"item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Look at "}),
        ),
        event(
            "response.reasoning_summary_text.delta",
            json!({"item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "the file first."}),
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 0, "item": reasoning_done}),
        ),
        event(
            "response.output_item.added",
            json!({"output_index": 1, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
        ),
        event(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "Reading "}),
        ),
        event(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "it ✓"}),
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 1, "item": {"id": "msg_1", "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "Reading it ✓", "annotations": []}]}}),
        ),
        event(
            "response.output_item.added",
            json!({"output_index": 2, "item": {"id": "fc_1", "type": "function_call", "call_id": "call_9", "name": "Read", "arguments": ""}}),
        ),
        event(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_1", "output_index": 2, "delta": "{\"path\":"}),
        ),
        event(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_1", "output_index": 2, "delta": "\"a.txt\"}"}),
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 2, "item": call_done}),
        ),
        completed(json!([]), 120, 100, 30),
    ]
    .concat()
}

async fn ok(fixture: &str) -> (ModelResponse, Vec<StreamDelta>) {
    for size in [1, 13, 100_000] {
        let (result, _) = run(ResponsesAssembler::new("openai"), fixture, size).await;
        assert!(result.is_ok(), "chunk size {size}: {result:?}");
    }
    let (result, deltas) = run(ResponsesAssembler::new("openai"), fixture, 64).await;
    match result {
        Ok(response) => (response, deltas),
        Err(e) => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn reasoning_text_and_a_call_are_kept_in_order() {
    let (response, deltas) = ok(&tool_turn()).await;
    assert_eq!(text_of(&deltas), "Reading it ✓");
    let thinking: String = deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::Thinking(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "Look at the file first.");
    assert_eq!(
        response.message.content,
        vec![
            ContentBlock::Reasoning {
                id: "rs_1".into(),
                encrypted_content: Some("gAAA-secret".into()),
                summary: vec!["Look at the file first.".into()],
            },
            ContentBlock::Text {
                text: "Reading it ✓".into()
            },
            ContentBlock::ToolUse {
                id: "call_9".into(),
                name: "Read".into(),
                input: json!({"path": "a.txt"}),
            },
        ]
    );
    // The summary is thinking, never the answer's text.
    assert_eq!(response.message.text(), "Reading it ✓");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 20,
            output_tokens: 30,
            cache_read_tokens: 100,
            cache_write_tokens: 0,
        }
    );
}

#[tokio::test]
async fn deltas_without_done_items_still_make_the_answer() {
    // Some servers send only the deltas; `added` then deltas must do.
    let fixture = [
        event(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"type": "function_call", "call_id": "call_1", "name": "Bash", "arguments": ""}}),
        ),
        event(
            "response.function_call_arguments.delta",
            json!({"output_index": 0, "delta": "{\"command\":\"ls\"}"}),
        ),
        event(
            "response.output_text.delta",
            json!({"output_index": 1, "delta": "ok"}),
        ),
        completed(json!([]), 10, 0, 2),
    ]
    .concat();
    let (response, _) = ok(&fixture).await;
    assert_eq!(
        response.message.tool_uses().collect::<Vec<_>>(),
        vec![("call_1", "Bash", &json!({"command": "ls"}))]
    );
    assert_eq!(response.message.text(), "ok");
    assert_eq!(response.usage.input_tokens, 10);
}

/// Found by fuzzing (`sse_responses`): a huge `summary_index` grew the
/// summary to it and panicked on the allocation.
#[tokio::test]
async fn a_summary_index_far_ahead_starts_one_new_part() {
    let fixture = [
        event(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        ),
        event(
            "response.reasoning_summary_text.delta",
            json!({"output_index": 0, "summary_index": u64::MAX / 2, "delta": "far"}),
        ),
        completed(json!([]), 1, 0, 1),
    ]
    .concat();
    let (response, _) = ok(&fixture).await;
    assert_eq!(
        response.message.content,
        vec![ContentBlock::Reasoning {
            id: "rs_1".into(),
            encrypted_content: None,
            summary: vec!["far".into()],
        }]
    );
}

#[tokio::test]
async fn the_output_of_completed_is_used_when_no_item_was_streamed() {
    let output = json!([{"id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": "all at once"}]}]);
    let (response, deltas) = ok(&completed(output, 5, 0, 3)).await;
    assert!(deltas.is_empty());
    assert_eq!(response.message.text(), "all at once");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
}

#[tokio::test]
async fn an_incomplete_response_stopped_by_the_limit_is_max_tokens() {
    let fixture = [
        event(
            "response.output_text.delta",
            json!({"output_index": 0, "delta": "cut"}),
        ),
        event(
            "response.incomplete",
            json!({"response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
                "usage": {"input_tokens": 9, "output_tokens": 50}}}),
        ),
    ]
    .concat();
    let (response, _) = ok(&fixture).await;
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(response.usage.output_tokens, 50);
}

#[tokio::test]
async fn a_stream_without_completed_is_an_error_not_a_short_answer() {
    let fixture = event(
        "response.output_text.delta",
        json!({"output_index": 0, "delta": "half"}),
    );
    let (result, _) = run(ResponsesAssembler::new("openai"), &fixture, 7).await;
    assert!(
        matches!(result, Err(AttemptError::MidStream(ModelError::Stream(ref m))) if m.contains("response.completed")),
        "{result:?}"
    );
}

#[tokio::test]
async fn failures_are_classified_overflow_transient_or_final() {
    let failed = |code: &str, message: &str| {
        event(
            "response.failed",
            json!({"response": {"status": "failed", "error": {"code": code, "message": message}}}),
        )
    };
    let (result, _) = run(
        ResponsesAssembler::new("openai"),
        &failed(
            "context_length_exceeded",
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
        ),
        9,
    )
    .await;
    assert!(
        matches!(
            result,
            Err(AttemptError::Fatal(ModelError::ContextOverflow { ref provider, .. })) if provider == "openai"
        ),
        "{result:?}"
    );
    let (result, _) = run(
        ResponsesAssembler::new("openai"),
        &failed("server_error", "The server had an error"),
        9,
    )
    .await;
    assert!(
        matches!(result, Err(AttemptError::Retryable { .. })),
        "{result:?}"
    );
    let error = event(
        "error",
        json!({"code": "invalid_prompt", "message": "bad prompt", "param": null}),
    );
    let (result, _) = run(ResponsesAssembler::new("openai"), &error, 9).await;
    assert!(
        matches!(result, Err(AttemptError::MidStream(ModelError::Stream(ref m))) if m.contains("bad prompt")),
        "{result:?}"
    );
    let (result, _) = run(ResponsesAssembler::new("openai"), "data: {nope\n\n", 9).await;
    assert!(matches!(result, Err(AttemptError::MidStream(_))));
}

fn history() -> ModelRequest {
    ModelRequest {
        system: "be brief".into(),
        messages: vec![
            Message::user_text("read a.txt"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Reasoning {
                        id: "rs_1".into(),
                        encrypted_content: Some("gAAA-secret".into()),
                        summary: vec!["Look first.".into()],
                    },
                    // Kept only for display: no encrypted content, so it
                    // cannot be sent back with `store: false`.
                    ContentBlock::Reasoning {
                        id: "rs_2".into(),
                        encrypted_content: None,
                        summary: Vec::new(),
                    },
                    ContentBlock::Text {
                        text: "Reading".into(),
                    },
                    ContentBlock::ToolUse {
                        id: "call_9".into(),
                        name: "Read".into(),
                        input: json!({"path": "a.txt"}),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "call_9".into(),
                    content: SharedText::from("hello"),
                    is_error: false,
                }],
            },
        ],
        tools: vec![ToolSpec {
            name: "Read".into(),
            description: "Reads a file".into(),
            input_schema: serde_json::from_value(json!({"type": "object"})).unwrap(),
        }]
        .into(),
        max_tokens: 1000,
        effort: None,
    }
}

#[test]
fn the_body_sends_the_history_as_items_with_the_reasoning_back() {
    let settings = Settings {
        reasoning_effort: Some("high"),
        reasoning_summary: Some("auto"),
        prompt_cache_key: Some("session-1"),
        temperature: None,
        vision: true,
    };
    let body = request_body("gpt-5-codex", &history(), settings);
    assert_eq!(
        body,
        json!({
            "model": "gpt-5-codex",
            "instructions": "be brief",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "read a.txt"}]},
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look first."}],
                 "encrypted_content": "gAAA-secret"},
                {"type": "message", "role": "assistant", "content": "Reading"},
                {"type": "function_call", "call_id": "call_9", "name": "Read", "arguments": "{\"path\":\"a.txt\"}"},
                {"type": "function_call_output", "call_id": "call_9", "output": "hello"},
            ],
            "tools": [{"type": "function", "name": "Read", "description": "Reads a file", "strict": false,
                       "parameters": {"type": "object"}}],
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "reasoning": {"effort": "high", "summary": "auto"},
            "store": false,
            "stream": true,
            "include": ["reasoning.encrypted_content"],
            "prompt_cache_key": "session-1",
            "max_output_tokens": 1000,
        })
    );
}

#[test]
fn without_reasoning_settings_no_reasoning_or_include_is_sent() {
    let body = request_body("gpt-4.1", &history(), Settings::default());
    assert!(body.get("reasoning").is_none(), "{body}");
    assert!(body.get("include").is_none(), "{body}");
    assert!(body.get("prompt_cache_key").is_none(), "{body}");
    assert_eq!(body["store"], json!(false));
}

#[test]
fn a_results_images_follow_the_outputs_in_a_user_message_and_thinking_is_left_out() {
    let image = |data: &str| ContentBlock::Image {
        media_type: "image/png".into(),
        data: data.into(),
    };
    let request = ModelRequest {
        system: String::new(),
        messages: vec![
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::Text {
                        text: "look".into(),
                    },
                    image("AAAA"),
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Thinking {
                        thinking: "hm".into(),
                        signature: "sig".into(),
                    },
                    ContentBlock::ToolUse {
                        id: "call_1".into(),
                        name: "Read".into(),
                        input: json!({"file_path": "a.png"}),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult {
                        tool_use_id: "call_1".into(),
                        content: SharedText::from("Image a.png"),
                        is_error: false,
                    },
                    image("BBBB"),
                ],
            },
        ],
        tools: Vec::new().into(),
        max_tokens: 100,
        effort: None,
    };
    let body = request_body("gpt-5-codex", &request, Settings::default());
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
            ]},
            {"type": "function_call", "call_id": "call_1", "name": "Read", "arguments": "{\"file_path\":\"a.png\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "Image a.png"},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "The image returned by tool call call_1:"},
                {"type": "input_image", "image_url": "data:image/png;base64,BBBB", "detail": "auto"},
            ]},
        ])
    );
    let blind = Settings {
        vision: false,
        ..Settings::default()
    };
    let body = request_body("gpt-5-codex", &request, blind);
    let note = body["input"][0]["content"][1]["text"].as_str().unwrap();
    assert!(note.contains("vision = false"), "{body}");
}

#[test]
fn cached_items_serialize_as_fresh_ones() {
    let request = history();
    let cache = crate::serialized::SerializedCache::default();
    let settings = Settings::default();
    let fresh = serde_json::to_string(&Body::new("m", &request, settings, None)).unwrap();
    for _ in 0..2 {
        let cached =
            serde_json::to_string(&Body::new("m", &request, settings, Some(&cache))).unwrap();
        assert_eq!(cached, fresh);
    }
}
