//! Checks that the fake server's OpenAI Chat Completions answers have the
//! exact shape of the real API's: the chunk sequence for text and indexed
//! tool calls, the usage chunk, `[DONE]`, in-stream errors and model listing.

mod common;

use alcove_testkit::{Block, FakeServer, Script, Step};
use common::{Stop, client, openai_body, parse_sse, post_openai, read_until, text_of};
use serde_json::{Value, json};

fn chunks(text: &str) -> (Vec<Value>, bool) {
    let events = parse_sse(text);
    assert!(
        events.iter().all(|e| e.name.is_none()),
        "OpenAI SSE has no event names"
    );
    let done = events.last().is_some_and(|e| e.data == "[DONE]");
    let values = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| e.json())
        .collect();
    (values, done)
}

#[tokio::test]
async fn text_reply_chunks_with_usage() {
    let server = FakeServer::start(Script::new().conversation(
        "hello",
        vec![Step::text("Hello from the fake model").usage(50, 9)],
    ));
    let resp = post_openai(&server, &openai_body("hello", true)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().ok(),
        Some("text/event-stream")
    );
    let (chunks, done) = chunks(&text_of(resp).await);
    assert!(done, "stream must end with data: [DONE]");
    let id = chunks[0]["id"].clone();
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["model"], "gpt-test");
        assert_eq!(c["id"], id);
    }
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let n = chunks.len();
    let content: Vec<&str> = chunks[..n - 2]
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .filter(|s| !s.is_empty())
        .collect();
    assert!(content.len() >= 2);
    assert_eq!(content.concat(), "Hello from the fake model");
    assert_eq!(chunks[n - 2]["choices"][0]["finish_reason"], "stop");
    assert_eq!(chunks[n - 2]["choices"][0]["delta"], json!({}));
    assert!(
        chunks[..n - 2]
            .iter()
            .all(|c| c["choices"][0]["finish_reason"].is_null())
    );
    assert_eq!(chunks[n - 1]["choices"], json!([]));
    assert_eq!(
        chunks[n - 1]["usage"],
        json!({
            "prompt_tokens": 50,
            "completion_tokens": 9,
            "total_tokens": 59,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}
        })
    );
}

#[tokio::test]
async fn cached_tokens_are_a_part_of_prompt_tokens_as_openai_reports_them() {
    let server = FakeServer::start(Script::new().conversation(
        "hello",
        vec![Step::text("Hello").usage(10, 9).cache_usage(90, 0)],
    ));
    let (chunks, _) =
        chunks(&text_of(post_openai(&server, &openai_body("hello", true)).await).await);
    let usage = &chunks[chunks.len() - 1]["usage"];
    assert_eq!(usage["prompt_tokens"], 100, "{usage}");
    assert_eq!(
        usage["prompt_tokens_details"]["cached_tokens"], 90,
        "{usage}"
    );
    assert_eq!(usage["total_tokens"], 109, "{usage}");
}

#[tokio::test]
async fn no_usage_chunk_unless_asked() {
    let server = FakeServer::start(Script::new().conversation("x", vec![Step::text("hi there")]));
    let (chunks, done) =
        chunks(&text_of(post_openai(&server, &openai_body("x", false)).await).await);
    assert!(done);
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    assert_eq!(
        chunks
            .last()
            .map(|c| c["choices"][0]["finish_reason"].clone()),
        Some(json!("stop"))
    );
}

#[tokio::test]
async fn tool_calls_are_indexed_and_arguments_reassemble() {
    let a = json!({"command": "cargo test --workspace"});
    let b = json!({"path": "README.md"});
    let server = FakeServer::start(Script::new().conversation(
        "x",
        vec![Step::reply(vec![
            Block::tool_call("bash", a.clone()),
            Block::tool_call("read_file", b.clone()),
        ])],
    ));
    let (chunks, done) =
        chunks(&text_of(post_openai(&server, &openai_body("x", true)).await).await);
    assert!(done);
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    // (id, name, arguments) per index; a header chunk must come before arguments.
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut argument_pieces = [0usize; 2];
    for c in &chunks {
        let Some(deltas) = c["choices"][0]["delta"]["tool_calls"].as_array() else {
            continue;
        };
        for d in deltas {
            let index = d["index"].as_u64().unwrap_or(99) as usize;
            if let Some(id) = d["id"].as_str() {
                assert_eq!(index, calls.len(), "a new call gets the next index");
                assert_eq!(d["type"], "function");
                calls.push((
                    id.to_string(),
                    d["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    String::new(),
                ));
            }
            let piece = d["function"]["arguments"].as_str().unwrap_or_default();
            if d["id"].is_null() {
                argument_pieces[index] += 1;
            }
            calls[index].2.push_str(piece);
        }
    }
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c.0.starts_with("call_")));
    assert_ne!(calls[0].0, calls[1].0);
    assert_eq!(
        (calls[0].1.as_str(), calls[1].1.as_str()),
        ("bash", "read_file")
    );
    assert_eq!(serde_json::from_str::<Value>(&calls[0].2).ok(), Some(a));
    assert_eq!(serde_json::from_str::<Value>(&calls[1].2).ok(), Some(b));
    assert!(
        argument_pieces.iter().all(|n| *n >= 2),
        "{argument_pieces:?}"
    );
    let n = chunks.len();
    assert_eq!(chunks[n - 2]["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(chunks[n - 1]["usage"]["total_tokens"], 120);
}

#[tokio::test]
async fn in_stream_error_and_drop() {
    let server = FakeServer::start(Script::new().conversation(
        "x",
        vec![
            Step::error_event("server_error", "boom"),
            Step::drop_mid_stream("half"),
        ],
    ));
    let events = parse_sse(&text_of(post_openai(&server, &openai_body("x", true)).await).await);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].json()["error"]["message"], "boom");
    assert_eq!(events[0].json()["error"]["type"], "server_error");

    let resp = post_openai(&server, &openai_body("x", true)).await;
    let (text, stop) = read_until(resp, 5_000).await;
    assert_eq!(stop, Stop::Errored);
    assert!(text.contains("\"content\":\"ha\""));
    assert!(!text.contains("[DONE]") && !text.contains("finish_reason\":\"stop"));
}

#[tokio::test]
async fn non_streamed_request_gets_a_completion() {
    let server = FakeServer::start(
        Script::new().conversation("x", vec![Step::tool_call("bash", json!({"command": "ls"}))]),
    );
    let mut body = openai_body("x", false);
    body["stream"] = json!(false);
    let v: Value =
        serde_json::from_str(&text_of(post_openai(&server, &body).await).await).unwrap_or_default();
    assert_eq!(v["object"], "chat.completion");
    let message = &v["choices"][0]["message"];
    assert!(message["content"].is_null());
    assert_eq!(
        message["tool_calls"][0]["function"]["arguments"],
        "{\"command\":\"ls\"}"
    );
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn models_are_listed() {
    let server = FakeServer::start(Script::new().models(&["qwen-local", "llama-local"]));
    let resp = client()
        .get(format!("{}/models", server.openai_url()))
        .send()
        .await;
    let text = match resp {
        Ok(r) => text_of(r).await,
        Err(e) => panic!("{e}"),
    };
    let v: Value = serde_json::from_str(&text).unwrap_or_default();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["id"], "qwen-local");
    assert_eq!(v["data"][1]["object"], "model");
    assert_eq!(server.all_requests()[0].method, "GET");
}
