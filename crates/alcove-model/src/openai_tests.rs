//! Fixture tests for the Chat Completions client: request bodies, realistic
//! SSE streams fed through the assembler without HTTP, and local discovery.

use super::*;
use crate::retry::AttemptError;
use crate::serialized::SerializedCache;
use crate::sse::testing::{run, text_of};
use alcove_protocol::ToolSpec;

/// One `data:` line holding a chunk with the given delta and finish reason.
fn chunk(delta: Value, finish: Option<&str>) -> String {
    let v = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {v}\n\n")
}

const USAGE: &str = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":31,\"completion_tokens\":9,\"total_tokens\":40}}\n\n";
const DONE: &str = "data: [DONE]\n\n";

async fn ok(fixture: &str) -> (ModelResponse, Vec<StreamDelta>) {
    for size in [1, 13, 100_000] {
        let (result, _) = run(OpenAiAssembler::default(), fixture, size).await;
        assert!(result.is_ok(), "chunk size {size}: {result:?}");
    }
    let (result, deltas) = run(OpenAiAssembler::default(), fixture, 64).await;
    match result {
        Ok(response) => (response, deltas),
        Err(e) => panic!("{e:?}"),
    }
}

fn text_stream() -> String {
    [
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Hi"}), None),
        chunk(json!({"content": " there ✓"}), None),
        chunk(json!({}), Some("stop")),
        USAGE.to_string(),
        DONE.to_string(),
    ]
    .concat()
}

#[tokio::test]
async fn streams_text_and_usage() {
    let (response, deltas) = ok(&text_stream()).await;
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Text("Hi".into()),
            StreamDelta::Text(" there ✓".into())
        ]
    );
    assert_eq!(response.message, Message::assistant_text("Hi there ✓"));
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 31,
            output_tokens: 9,
            ..Usage::default()
        }
    );
}

#[tokio::test]
async fn reasoning_content_is_thinking_not_the_answer() {
    // llama.cpp and DeepSeek stream `reasoning_content`, vLLM `reasoning`.
    let fixture = [
        chunk(
            json!({"role": "assistant", "content": null, "reasoning_content": "Let me "}),
            None,
        ),
        chunk(
            json!({"content": null, "reasoning_content": "think."}),
            None,
        ),
        chunk(json!({"reasoning": " More."}), None),
        chunk(json!({"content": "Answer."}), None),
        chunk(json!({}), Some("stop")),
        DONE.to_string(),
    ]
    .concat();
    let (response, deltas) = ok(&fixture).await;
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Thinking("Let me ".into()),
            StreamDelta::Thinking("think.".into()),
            StreamDelta::Thinking(" More.".into()),
            StreamDelta::Text("Answer.".into()),
        ]
    );
    assert_eq!(response.message, Message::assistant_text("Answer."));
}

#[test]
fn reasoning_effort_is_sent_only_when_set() {
    let request = ModelRequest {
        system: String::new(),
        messages: vec![Message::user_text("hi")],
        tools: Vec::new().into(),
        max_tokens: 10,
        effort: None,
    };
    let mut body = Body::new("o3", &request, None);
    assert!(
        serde_json::to_value(&body)
            .unwrap()
            .get("reasoning_effort")
            .is_none()
    );
    body.reasoning_effort = Some("high");
    assert_eq!(
        serde_json::to_value(&body).unwrap()["reasoning_effort"],
        "high"
    );
}

#[tokio::test]
async fn assembles_parallel_tool_calls_by_index() {
    let call = |index: u32, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut piece = json!({"index": index, "function": {"arguments": args}});
        if let Some(id) = id {
            piece["id"] = json!(id);
            piece["type"] = json!("function");
        }
        if let Some(name) = name {
            piece["function"]["name"] = json!(name);
        }
        chunk(json!({"tool_calls": [piece]}), None)
    };
    let fixture = [
        chunk(
            json!({"role": "assistant", "content": "Let me look."}),
            None,
        ),
        call(0, Some("call_a"), Some("read_file"), ""),
        call(0, None, None, "{\"path\":"),
        call(1, Some("call_b"), Some("grep"), "{\"pat"),
        call(0, None, None, " \"a.rs\"}"),
        call(1, None, None, "tern\": \"fn\"}"),
        chunk(json!({}), Some("tool_calls")),
        USAGE.to_string(),
        DONE.to_string(),
    ]
    .concat();
    let (response, deltas) = ok(&fixture).await;
    assert_eq!(text_of(&deltas), "Let me look.");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.message.text(), "Let me look.");
    let calls: Vec<_> = response.message.tool_uses().collect();
    assert_eq!(
        calls,
        vec![
            ("call_a", "read_file", &json!({"path": "a.rs"})),
            ("call_b", "grep", &json!({"pattern": "fn"})),
        ]
    );
}

#[tokio::test]
async fn malformed_and_empty_arguments() {
    let fixture = [
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\": ls}"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "function": {"name": "now", "arguments": ""}}]}),
            None,
        ),
        chunk(json!({}), Some("stop")),
        DONE.to_string(),
    ]
    .concat();
    let (response, _) = ok(&fixture).await;
    // "stop" with tool calls still means the model wants its tools.
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = response.message.tool_uses().collect();
    assert_eq!(
        calls,
        vec![
            ("c1", "bash", &Value::String("{\"cmd\": ls}".into())),
            ("call_1", "now", &json!({})),
        ]
    );
}

#[tokio::test]
async fn finish_reasons_map() {
    for (finish, expected) in [
        ("length", StopReason::MaxTokens),
        ("content_filter", StopReason::Other("content_filter".into())),
    ] {
        let fixture = [
            chunk(json!({"content": "x"}), None),
            chunk(json!({}), Some(finish)),
            DONE.to_string(),
        ]
        .concat();
        let (response, _) = ok(&fixture).await;
        assert_eq!(response.stop_reason, expected);
    }
}

#[tokio::test]
async fn a_finish_reason_without_done_is_complete() {
    let fixture = [
        chunk(json!({"content": "x"}), None),
        chunk(json!({}), Some("stop")),
    ]
    .concat();
    let (response, _) = ok(&fixture).await;
    assert_eq!(response.message.text(), "x");
}

#[tokio::test]
async fn truncated_streams_fail() {
    let fixture = [
        chunk(json!({"content": "half an ans"}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "x", "arguments": "{"}}]}),
            None,
        ),
    ]
    .concat();
    let (result, deltas) = run(OpenAiAssembler::default(), &fixture, 40).await;
    assert_eq!(text_of(&deltas), "half an ans");
    match result {
        Err(AttemptError::MidStream(error)) => {
            assert!(error.to_string().contains("[DONE]"), "{error}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn error_objects_and_malformed_data_fail() {
    let fixture = format!(
        "{}data: {{\"error\":{{\"message\":\"model crashed\",\"type\":\"server_error\"}}}}\n\n",
        chunk(json!({"content": "a"}), None)
    );
    let (result, _) = run(OpenAiAssembler::default(), &fixture, 40).await;
    match result {
        Err(AttemptError::MidStream(error)) => {
            assert!(error.to_string().contains("model crashed"), "{error}");
        }
        other => panic!("{other:?}"),
    }

    let fixture = "data: {\"error\":{\"message\":\"upstream busy\",\"code\":502}}\n\n";
    let (result, _) = run(OpenAiAssembler::default(), fixture, 40).await;
    assert!(
        matches!(result, Err(AttemptError::Retryable { shown: false, .. })),
        "{result:?}"
    );

    let fixture = format!("{}data: {{\"choices\": [\n\n", text_stream());
    let (result, _) = run(OpenAiAssembler::default(), &fixture, 40).await;
    // The stream completed at [DONE] before the junk.
    assert!(result.is_ok());
    let fixture = "data: {\"choices\": [\n\ndata: [DONE]\n\n";
    let (result, _) = run(OpenAiAssembler::default(), fixture, 40).await;
    assert!(
        matches!(result, Err(AttemptError::MidStream(_))),
        "{result:?}"
    );
}

#[test]
fn request_body_translates_messages() {
    let request = ModelRequest {
        system: "be brief".into(),
        messages: vec![
            Message::user_text("list files"),
            Message {
                role: Role::Assistant,
                content: vec![
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
                    ContentBlock::Text {
                        text: "and hurry".into(),
                    },
                ],
            },
            Message::assistant_text("done"),
        ],
        tools: vec![ls_tool()].into(),
        max_tokens: 512,
        effort: None,
    };
    let body = request_body("gpt-test", &request);
    assert_eq!(
        body,
        json!({
            "model": "gpt-test",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 512,
            "tools": [{"type": "function", "function": {
                "name": "ls", "description": "list a directory", "parameters": {"type": "object"}}}],
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}},
                    {"id": "t2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                ]},
                {"role": "tool", "tool_call_id": "t1", "content": "a.rs"},
                {"role": "tool", "tool_call_id": "t2", "content": "invalid arguments"},
                {"role": "user", "content": "and hurry"},
                {"role": "assistant", "content": "done"},
            ],
        })
    );

    let bare = ModelRequest {
        system: String::new(),
        tools: Vec::new().into(),
        ..request
    };
    let body = request_body("m", &bare);
    assert!(body.get("tools").is_none());
    assert_eq!(body["messages"][0]["role"], "user");
}

/// Serves `status` to every request on a fresh port; returns its base URL.
async fn answering(status: &'static str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{{\"data\":[]}}"
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn discovery_picks_the_first_server_that_answers() {
    let missing = answering("404 Not Found").await;
    let first = answering("200 OK").await;
    let second = answering("200 OK").await;
    // A port nobody listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1", l.local_addr().unwrap())
    };
    let timeout = Duration::from_secs(2);
    let found = discover_among(&[&closed, &missing, &first, &second], timeout).await;
    assert_eq!(found.map(|server| server.base_url), Some(first));
    assert_eq!(discover_among(&[&closed, &missing], timeout).await, None);
}

fn ls_tool() -> ToolSpec {
    ToolSpec {
        name: "ls".into(),
        description: "list a directory".into(),
        input_schema: json!({"type": "object"}).into(),
    }
}

fn body_bytes(request: &ModelRequest, cache: Option<&SerializedCache>) -> Vec<u8> {
    serde_json::to_vec(&Body::new("gpt-test", request, cache)).unwrap()
}

#[test]
fn cached_messages_give_the_same_bytes_as_fresh_ones() {
    let cache = SerializedCache::default();
    let mut request = ModelRequest {
        system: "be brief".into(),
        messages: vec![Message::user_text("list files")],
        tools: vec![ls_tool()].into(),
        max_tokens: 512,
        effort: None,
    };
    // Turn after turn, earlier messages come from the cache: every body
    // must be exactly what a fresh build sends.
    for turn in 0..4 {
        assert_eq!(
            body_bytes(&request, Some(&cache)),
            body_bytes(&request, None),
            "turn {turn}"
        );
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text {
                    text: format!("looking \"{turn}\""),
                },
                ContentBlock::ToolUse {
                    id: format!("u{turn}"),
                    name: "ls".into(),
                    input: json!({"path": format!("dir{turn}"), "deep": [1, {"x": null}]}),
                },
            ],
        });
        request.messages.push(Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: format!("u{turn}"),
                    content: "same listing\n\ttab".into(),
                    is_error: false,
                },
                ContentBlock::Text {
                    text: "go on".into(),
                },
                ContentBlock::Text {
                    text: "quickly".into(),
                },
            ],
        });
    }
    // A rewritten history (as compaction clears an old result in place)
    // sends the new text, never the cached old one; so do arguments that
    // stopped being an object.
    let ContentBlock::ToolResult { content, .. } = &mut request.messages[2].content[0] else {
        panic!("the third message is a tool result");
    };
    *content = "[cleared]".into();
    let ContentBlock::ToolUse { input, .. } = &mut request.messages[3].content[1] else {
        panic!("the fourth message calls a tool");
    };
    *input = Value::String("{oops".into());
    // And a new tool array (an MCP server's list_changed).
    let mut tools = request.tools.to_vec();
    tools[0].input_schema = json!({"type": "object", "required": ["path"]}).into();
    request.tools = tools.into();
    let bytes = body_bytes(&request, Some(&cache));
    assert_eq!(bytes, body_bytes(&request, None));
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["messages"][3]["content"], "[cleared]");
    assert_eq!(body["messages"][3]["tool_call_id"], "u0");
    assert_eq!(body["messages"][4]["content"], "go on\n\nquickly");
    assert_eq!(
        body["messages"][5]["tool_calls"][0]["function"]["arguments"],
        "{}"
    );
    // Compared as JSON: the keys' order is serde_json's (sorted, or as
    // written when a dependency turns on its `preserve_order`).
    let arguments = body["messages"][8]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(arguments).unwrap(),
        json!({"deep": [1, {"x": null}], "path": "dir2"})
    );
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["required"],
        json!(["path"])
    );
}

#[test]
fn a_tool_results_image_follows_the_tool_messages_as_a_user_message() {
    use alcove_protocol::ContentBlock;
    let request = ModelRequest {
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
    };
    let body = request_body("gpt-test", &request);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "{body}");
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["content"], "Image a.png: PNG, 1x1, 1 KB.");
    assert_eq!(messages[3]["role"], "user");
    assert_eq!(
        messages[3]["content"],
        json!([
            {"type": "text", "text": "The image returned by tool call t1:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
        ])
    );
}
