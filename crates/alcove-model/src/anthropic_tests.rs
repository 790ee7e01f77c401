//! Fixture tests for the Anthropic client: request bodies, and realistic
//! SSE streams fed through the assembler without any HTTP.

use super::*;
use crate::retry::AttemptError;
use crate::sse::testing::{run, text_of};
use alcove_protocol::{StopReason, ToolSpec, Usage};
use serde_json::json;

const START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":10,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n";

const TEXT: &str = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: ping\ndata: {\"type\": \"ping\"}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\", wörld!\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n";

const END_TURN: &str = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

fn tool_block(index: u32, id: &str, name: &str, pieces: &[&str]) -> String {
    let mut s = format!(
        "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{index},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"{id}\",\"name\":\"{name}\",\"input\":{{}}}}}}\n\n"
    );
    for piece in pieces {
        let delta = json!({
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": piece},
        });
        s.push_str(&format!("event: content_block_delta\ndata: {delta}\n\n"));
    }
    s.push_str(&format!(
        "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{index}}}\n\n"
    ));
    s
}

const TOOL_STOP: &str = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":42}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

async fn ok(fixture: &str) -> (ModelResponse, Vec<StreamDelta>) {
    for chunk in [1, 17, 100_000] {
        let (result, _) = run(AnthropicAssembler::default(), fixture, chunk).await;
        assert!(result.is_ok(), "chunk size {chunk}: {result:?}");
    }
    let (result, deltas) = run(AnthropicAssembler::default(), fixture, 64).await;
    match result {
        Ok(response) => (response, deltas),
        Err(e) => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn streams_text_with_cached_usage() {
    let (response, deltas) = ok(&format!("{START}{TEXT}{END_TURN}")).await;
    assert_eq!(text_of(&deltas), "Hello, wörld!");
    assert_eq!(deltas.len(), 2);
    assert_eq!(response.message, Message::assistant_text("Hello, wörld!"));
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 25,
            output_tokens: 15,
            cache_read_tokens: 5,
            cache_write_tokens: 10,
        }
    );
}

#[tokio::test]
async fn assembles_tool_calls_split_across_deltas() {
    let fixture = format!(
        "{START}{TEXT}{}{}{TOOL_STOP}",
        tool_block(
            1,
            "toolu_1",
            "read_file",
            &["", "{\"pa", "th\": \"src/", "main.rs\"}"]
        ),
        tool_block(2, "toolu_2", "list_dir", &[]),
    );
    let (response, _) = ok(&fixture).await;
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.usage.output_tokens, 42);
    let calls: Vec<_> = response.message.tool_uses().collect();
    assert_eq!(
        calls,
        vec![
            ("toolu_1", "read_file", &json!({"path": "src/main.rs"})),
            ("toolu_2", "list_dir", &json!({})),
        ]
    );
    assert_eq!(response.message.text(), "Hello, wörld!");
}

#[tokio::test]
async fn invalid_tool_json_is_kept_raw() {
    let fixture = format!(
        "{START}{}{TOOL_STOP}",
        tool_block(0, "toolu_9", "bash", &["{\"command\": \"ls", " -la"]),
    );
    let (response, deltas) = ok(&fixture).await;
    assert!(deltas.is_empty());
    let calls: Vec<_> = response.message.tool_uses().collect();
    assert_eq!(
        calls,
        vec![(
            "toolu_9",
            "bash",
            &Value::String("{\"command\": \"ls -la".into())
        )]
    );
}

#[tokio::test]
async fn error_events_fail_and_overload_is_retryable() {
    let overloaded = format!(
        "{START}{TEXT}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n"
    );
    let (result, deltas) = run(AnthropicAssembler::default(), &overloaded, 50).await;
    assert_eq!(text_of(&deltas), "Hello, wörld!");
    match result {
        Err(AttemptError::Retryable { error, shown, .. }) => {
            assert!(shown);
            assert!(error.to_string().contains("overloaded_error: Overloaded"));
        }
        other => panic!("{other:?}"),
    }

    let invalid = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}\n\n";
    let (result, _) = run(AnthropicAssembler::default(), invalid, 50).await;
    assert!(
        matches!(result, Err(AttemptError::MidStream(_))),
        "{result:?}"
    );
}

#[tokio::test]
async fn truncated_and_malformed_streams_fail() {
    let (result, deltas) = run(AnthropicAssembler::default(), &format!("{START}{TEXT}"), 50).await;
    assert_eq!(text_of(&deltas), "Hello, wörld!");
    match result {
        Err(AttemptError::MidStream(error)) => {
            assert!(error.to_string().contains("message_stop"), "{error}");
        }
        other => panic!("{other:?}"),
    }

    let malformed = format!("{START}event: content_block_delta\ndata: {{not json\n\n{END_TURN}");
    let (result, _) = run(AnthropicAssembler::default(), &malformed, 50).await;
    match result {
        Err(AttemptError::MidStream(error)) => {
            assert!(error.to_string().contains("malformed"), "{error}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn unknown_blocks_and_events_are_ignored() {
    let thinking = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"thinking\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: brand_new\ndata: {\"type\":\"brand_new\"}\n\n";
    let text = TEXT.replace("\"index\":0", "\"index\":1");
    let (response, _) = ok(&format!("{START}{thinking}{text}{END_TURN}")).await;
    assert_eq!(response.message, Message::assistant_text("Hello, wörld!"));
}

fn sample_request() -> ModelRequest {
    ModelRequest {
        system: "be brief".into(),
        messages: vec![
            Message::user_text("list files"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text { text: "".into() },
                    ContentBlock::ToolUse {
                        id: "t1".into(),
                        name: "ls".into(),
                        input: json!({"path": "."}),
                    },
                    ContentBlock::ToolUse {
                        id: "t2".into(),
                        name: "ls".into(),
                        input: Value::String("{oops".into()),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult {
                        tool_use_id: "t1".into(),
                        content: "a.rs".into(),
                        is_error: false,
                    },
                    ContentBlock::ToolResult {
                        tool_use_id: "t2".into(),
                        content: "invalid arguments".into(),
                        is_error: true,
                    },
                ],
            },
        ],
        tools: vec![ToolSpec {
            name: "ls".into(),
            description: "list a directory".into(),
            input_schema: json!({"type": "object"}).into(),
        }]
        .into(),
        max_tokens: 1024,
        effort: None,
    }
}

#[test]
fn request_body_translates_blocks() {
    let body = request_body("claude-test", &sample_request());
    assert_eq!(
        body,
        json!({
            "model": "claude-test",
            "max_tokens": 1024,
            "stream": true,
            "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": "ls", "description": "list a directory", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
            "messages": [
                // The previous turn's breakpoint, and the newest message's.
                {"role": "user", "content": [{"type": "text", "text": "list files", "cache_control": {"type": "ephemeral"}}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}},
                    {"type": "tool_use", "id": "t2", "name": "ls", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a.rs", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "invalid arguments", "is_error": true, "cache_control": {"type": "ephemeral"}},
                ]},
            ],
        })
    );
}

#[test]
fn request_body_omits_empty_system_and_tools() {
    let mut request = sample_request();
    request.system.clear();
    request.tools = Vec::new().into();
    let body = request_body("m", &request);
    assert!(body.get("system").is_none());
    assert!(body.get("tools").is_none());
}

/// Found by fuzzing (`sse_anthropic`): token counts whose sum passes
/// u64::MAX overflowed (a panic in debug builds); they saturate instead.
#[tokio::test]
async fn huge_usage_counts_saturate_instead_of_overflowing() {
    let start = START.replace(
        "\"input_tokens\":25",
        "\"input_tokens\":18446744073709551615",
    );
    let (response, _) = ok(&format!("{start}{TEXT}{END_TURN}")).await;
    assert_eq!(response.usage.input_tokens, u64::MAX);
    assert_eq!(response.usage.prompt_tokens(), u64::MAX);
    assert_eq!(response.usage.output_tokens, 15);
}

/// The body as bytes, built with or without the serialized-message cache.
fn body_bytes(request: &ModelRequest, cache: Option<&SerializedCache>) -> Vec<u8> {
    serde_json::to_vec(&Body::new("claude-test", request, cache, true)).unwrap()
}

#[test]
fn cached_messages_give_the_same_bytes_as_fresh_ones() {
    let cache = SerializedCache::default();
    let mut request = sample_request();
    // Turn after turn, breakpoints move forward and earlier messages come
    // from the cache: every body must be exactly what a fresh build sends.
    for turn in 0..4 {
        assert_eq!(
            body_bytes(&request, Some(&cache)),
            body_bytes(&request, None),
            "turn {turn}"
        );
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: format!("u{turn}"),
                name: "ls".into(),
                input: json!({"path": format!("dir{turn}"), "deep": [1, {"x": null}]}),
            }],
        });
        request.messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: format!("u{turn}"),
                content: format!("listing \"{turn}\"\n\ttab").into(),
                is_error: false,
            }],
        });
    }
    // A rewritten history (as compaction clears an old result in place)
    // sends the new text, never the cached old one.
    let ContentBlock::ToolResult { content, .. } = &mut request.messages[2].content[0] else {
        panic!("the sample's third message is a tool result");
    };
    *content = "[cleared]".into();
    // So does a new tool array (an MCP server's list_changed): a schema
    // changed, and a tool added after it (the breakpoint moves to the new
    // last one).
    let mut tools = request.tools.to_vec();
    tools[0].input_schema = json!({"type": "object", "required": ["path"]}).into();
    tools.push(ToolSpec {
        name: "cat".into(),
        description: "print a file".into(),
        input_schema: json!({"type": "object"}).into(),
    });
    request.tools = tools.into();
    let bytes = body_bytes(&request, Some(&cache));
    assert_eq!(bytes, body_bytes(&request, None));
    let text = String::from_utf8(bytes).unwrap();
    assert!(
        text.contains("[cleared]") && !text.contains("\"a.rs\""),
        "{text}"
    );
    assert!(text.contains("\"required\":[\"path\"]"), "{text}");
}

const THINKING: &str = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"First, \"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"read it.\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCgIYAh\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgB\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n";

#[tokio::test]
async fn thinking_is_kept_with_its_signature_and_streamed_apart() {
    let tool = tool_block(2, "toolu_1", "Read", &["{\"file_path\":", "\"a\"}"]);
    let (response, deltas) = ok(&format!("{START}{THINKING}{tool}{TOOL_STOP}")).await;
    let thinking: String = deltas
        .iter()
        .filter_map(|delta| match delta {
            StreamDelta::Thinking(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "First, read it.");
    assert_eq!(text_of(&deltas), "");
    assert_eq!(
        response.message.content[..2],
        [
            ContentBlock::Thinking {
                thinking: "First, read it.".into(),
                signature: "EqQBCgIYAh".into(),
            },
            ContentBlock::RedactedThinking {
                data: "EmwKAhgB".into()
            },
        ]
    );
    assert_eq!(response.message.text(), "");

    // Sent back unchanged, in order, with no cache breakpoint on thinking.
    let request = ModelRequest {
        system: String::new(),
        messages: vec![Message::user_text("go"), response.message],
        tools: Vec::new().into(),
        max_tokens: 100,
        effort: None,
    };
    let body = request_body_thinking("claude-opus-4-6", &request, crate::Thinking::Default);
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(
        body["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "First, read it.", "signature": "EqQBCgIYAh"})
    );
    assert_eq!(
        body["messages"][1]["content"][1],
        json!({"type": "redacted_thinking", "data": "EmwKAhgB"})
    );
}

fn image_request() -> ModelRequest {
    ModelRequest {
        system: String::new(),
        messages: vec![
            Message::user_text("look"),
            Message {
                role: alcove_protocol::Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "a.png"}),
                }],
            },
            Message {
                role: alcove_protocol::Role::User,
                content: vec![
                    ContentBlock::ToolResult {
                        tool_use_id: "t1".into(),
                        content: "Image a.png: PNG, 1x1, 1 KB.".into(),
                        is_error: false,
                    },
                    ContentBlock::Image {
                        media_type: "image/png".into(),
                        data: "iVBORw0K".into(),
                    },
                ],
            },
        ],
        tools: Vec::new().into(),
        max_tokens: 100,
        effort: None,
    }
}

#[test]
fn a_tool_results_image_goes_inside_the_tool_result() {
    let body = request_body("claude-test", &image_request());
    let content = &body["messages"][2]["content"];
    assert_eq!(content.as_array().unwrap().len(), 1, "{content}");
    assert_eq!(
        content[0]["content"],
        json!([
            {"type": "text", "text": "Image a.png: PNG, 1x1, 1 KB."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}},
        ])
    );
    let body = request_body_without_vision("claude-test", &image_request());
    let parts = &body["messages"][2]["content"][0]["content"];
    assert_eq!(parts[1]["type"], "text");
    assert!(
        parts[1]["text"]
            .as_str()
            .unwrap()
            .contains("without vision"),
        "{parts}"
    );
}
