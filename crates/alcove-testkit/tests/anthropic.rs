//! Checks that the fake server's Anthropic Messages answers have the exact
//! shape of the real API's: the SSE event sequence for text and tool calls,
//! the broken-stream steps, and the non-streamed message.

mod common;

use alcove_testkit::{Block, FakeServer, Script, Step};
use common::{
    Stop, anthropic_body, openai_body, parse_sse, post_anthropic, post_openai, read_until, text_of,
};
use serde_json::json;

fn names(events: &[common::Event]) -> Vec<&str> {
    events.iter().filter_map(|e| e.name.as_deref()).collect()
}

#[tokio::test]
async fn text_reply_has_the_exact_event_sequence() {
    let server = FakeServer::start(Script::new().conversation(
        "hello",
        vec![Step::text("Hello, world! How are you?").usage(42, 7)],
    ));
    let resp = post_anthropic(&server, &anthropic_body("hello there")).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().ok(),
        Some("text/event-stream")
    );
    let events = parse_sse(&text_of(resp).await);
    let names = names(&events);
    assert_eq!(names[..3], ["message_start", "ping", "content_block_start"]);
    let deltas = names
        .iter()
        .filter(|n| **n == "content_block_delta")
        .count();
    assert!(deltas >= 2, "text must come in 2+ deltas: {names:?}");
    assert_eq!(
        names[3 + deltas..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    assert!(
        events
            .iter()
            .all(|e| e.json()["type"] == e.name.as_deref().unwrap_or(""))
    );

    let start = events[0].json();
    assert_eq!(start["message"]["model"], "claude-test");
    assert_eq!(start["message"]["role"], "assistant");
    assert_eq!(start["message"]["content"], json!([]));
    assert_eq!(start["message"]["usage"]["input_tokens"], 42);
    assert!(
        start["message"]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("msg_"))
    );

    assert_eq!(
        events[2].json(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    );
    let text: String = events[3..3 + deltas]
        .iter()
        .map(|e| {
            let v = e.json();
            assert_eq!(v["index"], 0);
            assert_eq!(v["delta"]["type"], "text_delta");
            v["delta"]["text"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    assert_eq!(text, "Hello, world! How are you?");
    assert_eq!(
        events[3 + deltas].json(),
        json!({"type": "content_block_stop", "index": 0})
    );
    assert_eq!(
        events[4 + deltas].json(),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 7}})
    );
    assert_eq!(events[5 + deltas].json(), json!({"type": "message_stop"}));
}

#[tokio::test]
async fn tool_calls_stream_as_tool_use_blocks_with_partial_json() {
    let input = json!({"path": "src/main.rs", "limit": 20});
    let server = FakeServer::start(Script::new().conversation(
        "tools",
        vec![Step::reply(vec![
            Block::text("Let me look."),
            Block::tool_call("read_file", input.clone()),
            Block::raw_tool_call("bash", "{\"command\": \"ls"),
        ])],
    ));
    let events =
        parse_sse(&text_of(post_anthropic(&server, &anthropic_body("use tools")).await).await);
    let mut text = String::new();
    let mut tools: Vec<(String, String, String)> = Vec::new();
    let mut open: Vec<u64> = Vec::new();
    for e in &events {
        let v = e.json();
        match e.name.as_deref() {
            Some("content_block_start") => {
                let index = v["index"].as_u64().unwrap_or(99);
                assert_eq!(index, open.len() as u64, "blocks are indexed in order");
                let block = &v["content_block"];
                if block["type"] == "tool_use" {
                    assert_eq!(block["input"], json!({}));
                    tools.push((
                        block["id"].as_str().unwrap_or_default().to_string(),
                        block["name"].as_str().unwrap_or_default().to_string(),
                        String::new(),
                    ));
                }
                open.push(index);
            }
            Some("content_block_delta") => match v["delta"]["type"].as_str() {
                Some("text_delta") => {
                    text.push_str(v["delta"]["text"].as_str().unwrap_or_default())
                }
                Some("input_json_delta") => {
                    if let Some(t) = tools.last_mut() {
                        t.2.push_str(v["delta"]["partial_json"].as_str().unwrap_or_default());
                    }
                }
                other => panic!("unexpected delta {other:?}"),
            },
            _ => {}
        }
    }
    assert_eq!(open, vec![0, 1, 2]);
    assert_eq!(text, "Let me look.");
    assert_eq!(tools.len(), 2);
    assert!(tools[0].0.starts_with("toolu_") && tools[1].0.starts_with("toolu_"));
    assert_ne!(tools[0].0, tools[1].0);
    assert_eq!(tools[0].1, "read_file");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&tools[0].2).ok(),
        Some(input)
    );
    assert_eq!(
        tools[1],
        (
            tools[1].0.clone(),
            "bash".into(),
            "{\"command\": \"ls".into()
        )
    );
    let json_deltas = events
        .iter()
        .filter(|e| e.json()["delta"]["type"] == "input_json_delta" && e.json()["index"] == 1)
        .count();
    assert!(json_deltas >= 2);
    let delta = events
        .iter()
        .find(|e| e.name.as_deref() == Some("message_delta"));
    assert_eq!(
        delta.map(|e| e.json()["delta"]["stop_reason"].clone()),
        Some(json!("tool_use"))
    );
    assert_eq!(
        events.last().and_then(|e| e.name.clone()).as_deref(),
        Some("message_stop")
    );
}

#[tokio::test]
async fn tool_call_ids_are_unique_across_requests() {
    let step = || Step::tool_call("bash", json!({"command": "true"}));
    let server = FakeServer::start(Script::new().conversation("x", vec![step(), step()]));
    let mut ids = Vec::new();
    for _ in 0..2 {
        let events = parse_sse(&text_of(post_anthropic(&server, &anthropic_body("x")).await).await);
        let start = events
            .iter()
            .find(|e| e.name.as_deref() == Some("content_block_start"));
        ids.push(start.map(|e| e.json()["content_block"]["id"].clone()));
    }
    assert!(ids[0].is_some());
    assert_ne!(ids[0], ids[1]);
}

#[tokio::test]
async fn drop_mid_stream_cuts_the_connection_before_message_stop() {
    let server = FakeServer::start(
        Script::new().conversation("x", vec![Step::drop_mid_stream("partial answer")]),
    );
    let resp = post_anthropic(&server, &anthropic_body("x")).await;
    assert_eq!(resp.status(), 200);
    let (text, stop) = read_until(resp, 5_000).await;
    assert_eq!(stop, Stop::Errored, "body must end with a transport error");
    assert!(text.contains("event: message_start"));
    assert!(text.contains("partial"));
    assert!(!text.contains("message_stop") && !text.contains("message_delta"));
}

#[tokio::test]
async fn stall_after_sends_text_then_nothing() {
    let server =
        FakeServer::start(Script::new().conversation("x", vec![Step::stall_after("so far")]));
    let resp = post_anthropic(&server, &anthropic_body("x")).await;
    let (text, stop) = read_until(resp, 500).await;
    assert_eq!(stop, Stop::TimedOut);
    let events = parse_sse(&text);
    let streamed: String = events
        .iter()
        .filter_map(|e| e.json()["delta"]["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(streamed, "so far");
}

#[tokio::test]
async fn error_event_and_malformed_sse() {
    let server = FakeServer::start(Script::new().conversation(
        "x",
        vec![
            Step::error_event("overloaded_error", "Overloaded"),
            Step::malformed_sse(),
        ],
    ));
    let events = parse_sse(&text_of(post_anthropic(&server, &anthropic_body("x")).await).await);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].name.as_deref(), Some("error"));
    assert_eq!(
        events[0].json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );

    let resp = post_anthropic(&server, &anthropic_body("x")).await;
    assert_eq!(resp.status(), 200);
    let events = parse_sse(&text_of(resp).await);
    assert!(
        events
            .iter()
            .any(|e| serde_json::from_str::<serde_json::Value>(&e.data).is_err())
    );
}

#[tokio::test]
async fn non_streamed_request_gets_a_message() {
    let server = FakeServer::start(Script::new().conversation(
        "x",
        vec![Step::reply(vec![
            Block::text("hi"),
            Block::tool_call("bash", json!({"command": "ls"})),
        ])],
    ));
    let mut body = anthropic_body("x");
    body["stream"] = json!(false);
    let resp = post_anthropic(&server, &body).await;
    let v: serde_json::Value = serde_json::from_str(&text_of(resp).await).unwrap_or_default();
    assert_eq!(v["type"], "message");
    assert_eq!(v["content"][0], json!({"type": "text", "text": "hi"}));
    assert_eq!(v["content"][1]["input"], json!({"command": "ls"}));
    assert_eq!(v["stop_reason"], "tool_use");
}

#[tokio::test]
async fn cache_reads_and_writes_are_reported_apart_from_input_tokens() {
    let server = FakeServer::start(Script::new().conversation(
        "x",
        vec![
            Step::text("a").usage(10, 3).cache_usage(900, 40),
            Step::text("b").usage(10, 3).cache_usage(900, 40),
        ],
    ));
    let events = parse_sse(&text_of(post_anthropic(&server, &anthropic_body("x")).await).await);
    let usage = &events[0].json()["message"]["usage"];
    assert_eq!(usage["input_tokens"], 10, "{usage}");
    assert_eq!(usage["cache_read_input_tokens"], 900, "{usage}");
    assert_eq!(usage["cache_creation_input_tokens"], 40, "{usage}");
    let mut body = anthropic_body("x");
    body["stream"] = json!(false);
    let message: serde_json::Value =
        serde_json::from_str(&text_of(post_anthropic(&server, &body).await).await)
            .unwrap_or_default();
    assert_eq!(
        message["usage"],
        json!({"input_tokens": 10, "cache_creation_input_tokens": 40, "cache_read_input_tokens": 900, "output_tokens": 3})
    );
}

#[tokio::test]
async fn a_scripted_call_of_a_tool_the_request_did_not_offer_is_refused_unless_marked() {
    let call = || Step::tool_call("teleport", json!({"to": "mars"}));
    let server = FakeServer::start(
        Script::new()
            .conversation("anthropic", vec![call(), call().unoffered()])
            .conversation("openai", vec![call()]),
    );
    // A real model is given the request's tools only.
    let refused = post_anthropic(&server, &anthropic_body("anthropic")).await;
    assert_eq!(refused.status(), 400);
    let text = text_of(refused).await;
    assert!(
        text.contains(
            "calls `teleport`, which this request does not offer (tools: read_file, bash)"
        ),
        "{text}"
    );
    let refused = post_openai(&server, &openai_body("openai", false)).await;
    assert_eq!(refused.status(), 400);
    // A step that plays a model inventing a name says so.
    let invented = post_anthropic(&server, &anthropic_body("anthropic")).await;
    assert_eq!(invented.status(), 200);
    assert!(text_of(invented).await.contains("teleport"));
}
