//! Checks the fake server's behaviour independent of the wire format:
//! conversation matching and cursors, the 400 for unscripted requests, HTTP
//! errors with retry-after, request recording, concurrency, hangs and shutdown.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use alcove_testkit::{FakeServer, Protocol, Script, Step};
use common::{
    Stop, anthropic_body, client, openai_body, post_anthropic, post_openai, read_until, text_of,
};
use serde_json::{Value, json};

async fn answer_text(resp: reqwest::Response) -> String {
    text_of(resp)
        .await
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v["delta"]["text"]
                .as_str()
                .or_else(|| v["choices"][0]["delta"]["content"].as_str())
                .map(str::to_string)
        })
        .collect()
}

#[tokio::test]
async fn conversations_match_by_first_user_message_and_advance() {
    let server = FakeServer::start(
        Script::new()
            .conversation("alpha", vec![Step::text("a1"), Step::text("a2")])
            .conversation("beta", vec![Step::text("b1")])
            .conversation("", vec![Step::text("catch-all")]),
    );
    assert_eq!(
        answer_text(post_anthropic(&server, &anthropic_body("the alpha task")).await).await,
        "a1"
    );
    assert_eq!(
        answer_text(post_openai(&server, &openai_body("beta please", true)).await).await,
        "b1"
    );

    // A later request of the same conversation: the first user message is the
    // same, later messages differ; it gets the next step.
    let mut body = anthropic_body("the alpha task");
    if let Some(messages) = body["messages"].as_array_mut() {
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": "a1"}]}));
        messages.push(json!({"role": "user", "content": "beta is not the first message"}));
    }
    assert_eq!(
        answer_text(post_anthropic(&server, &body).await).await,
        "a2"
    );
    assert_eq!(
        answer_text(post_anthropic(&server, &anthropic_body("gamma")).await).await,
        "catch-all"
    );

    assert_eq!(server.requests_for("alpha").len(), 2);
    assert_eq!(server.requests_for("beta").len(), 1);
    assert_eq!(server.requests_for("beta")[0].protocol(), Protocol::OpenAi);
    assert_eq!(server.requests_for("alpha")[1].message_count(), 3);
    server.assert_script_finished();
}

#[tokio::test]
async fn the_prompt_may_follow_another_text_block() {
    let server =
        FakeServer::start(Script::new().conversation("the real task", vec![Step::text("ok")]));
    let mut body = anthropic_body("");
    body["messages"][0]["content"] = json!([
        {"type": "text", "text": "<context>cwd: /tmp</context>"},
        {"type": "text", "text": "do the real task"}
    ]);
    assert_eq!(
        answer_text(post_anthropic(&server, &body).await).await,
        "ok"
    );
    let req = &server.requests_for("real task")[0];
    assert_eq!(req.first_user_text(), "<context>cwd: /tmp</context>");
}

#[tokio::test]
async fn unmatched_and_exhausted_requests_get_400_saying_so() {
    let server = FakeServer::start(Script::new().conversation("known", vec![Step::text("ok")]));
    let long_prompt = format!("mystery {}", "x".repeat(300));
    let resp = post_anthropic(&server, &anthropic_body(&long_prompt)).await;
    assert_eq!(resp.status(), 400);
    let v: Value = serde_json::from_str(&text_of(resp).await).unwrap_or_default();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("no scripted conversation matches"),
        "{message}"
    );
    assert!(message.contains(&long_prompt[..200]) && !message.contains(&long_prompt[..201]));

    let resp = post_openai(&server, &openai_body("nothing here", true)).await;
    assert_eq!(resp.status(), 400);
    let v: Value = serde_json::from_str(&text_of(resp).await).unwrap_or_default();
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("nothing here"))
    );

    assert_eq!(
        post_anthropic(&server, &anthropic_body("known"))
            .await
            .status(),
        200
    );
    let resp = post_anthropic(&server, &anthropic_body("known")).await;
    assert_eq!(resp.status(), 400);
    let text = text_of(resp).await;
    assert!(text.contains("no steps left"), "{text}");
    assert_eq!(
        server.requests().len(),
        4,
        "rejected requests are recorded too"
    );
}

#[tokio::test]
async fn http_errors_carry_status_body_and_retry_after() {
    let server = FakeServer::start(Script::new().conversation(
        "x",
        vec![
            Step::overloaded().with_retry_after(2),
            Step::http_error(500, "internal oops"),
            Step::text("recovered"),
        ],
    ));
    let resp = post_anthropic(&server, &anthropic_body("x")).await;
    assert_eq!(resp.status(), 529);
    assert_eq!(resp.headers()["retry-after"].to_str().ok(), Some("2"));
    assert_eq!(
        resp.headers()["content-type"].to_str().ok(),
        Some("application/json")
    );
    let v: Value = serde_json::from_str(&text_of(resp).await).unwrap_or_default();
    assert_eq!(v["error"]["type"], "overloaded_error");

    let resp = post_anthropic(&server, &anthropic_body("x")).await;
    assert_eq!(resp.status(), 500);
    assert!(resp.headers().get("retry-after").is_none());
    assert_eq!(text_of(resp).await, "internal oops");
    assert_eq!(
        answer_text(post_anthropic(&server, &anthropic_body("x")).await).await,
        "recovered"
    );
}

#[tokio::test]
async fn requests_are_recorded_in_order_with_headers_and_body() {
    let server = FakeServer::start(
        Script::new().conversation("rec", vec![Step::text("1"), Step::text("2")]),
    );
    post_anthropic(&server, &anthropic_body("rec one")).await;
    post_openai(&server, &openai_body("rec two", true)).await;
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        (reqs[0].method.as_str(), reqs[0].path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(reqs[1].path, "/v1/chat/completions");
    assert_eq!(reqs[0].header("X-Api-Key").as_deref(), Some("test-key"));
    assert_eq!(reqs[0].protocol(), Protocol::Anthropic);
    assert_eq!(reqs[0].first_user_text(), "rec one");
    assert_eq!(reqs[1].first_user_text(), "rec two");
    assert_eq!(reqs[0].tool_names(), vec!["read_file", "bash"]);
    assert_eq!(reqs[1].tool_names(), vec!["bash", "read_file"]);
    assert_eq!(reqs[0].system_prompt(), "You are a test.");
    assert_eq!(reqs[1].system_prompt(), "You are a test.");
    assert_eq!(reqs[1].message_count(), 1);
    assert_eq!(reqs[0].body["max_tokens"], 1024);
}

#[tokio::test]
async fn a_delayed_conversation_does_not_block_another() {
    let server = FakeServer::start(
        Script::new()
            .conversation("slow", vec![Step::text("slow done").delay(1_500)])
            .conversation("fast", vec![Step::text("fast done")]),
    );
    let started = Instant::now();
    let slow = async {
        let text = answer_text(post_anthropic(&server, &anthropic_body("slow")).await).await;
        (text, started.elapsed())
    };
    let fast = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let text = answer_text(post_openai(&server, &openai_body("fast", true)).await).await;
        (text, started.elapsed())
    };
    let ((slow_text, slow_at), (fast_text, fast_at)) = tokio::join!(slow, fast);
    assert_eq!(
        (slow_text.as_str(), fast_text.as_str()),
        ("slow done", "fast done")
    );
    assert!(slow_at >= Duration::from_millis(1_500), "{slow_at:?}");
    assert!(
        fast_at < Duration::from_millis(1_000),
        "fast answer waited: {fast_at:?}"
    );
}

#[tokio::test]
async fn a_hanging_request_is_recorded_and_blocks_nothing() {
    let server = FakeServer::start(
        Script::new()
            .conversation("hang", vec![Step::hang()])
            .conversation("other", vec![Step::text("fine")]),
    );
    let hung = client()
        .post(format!("{}/v1/messages", server.url()))
        .json(&anthropic_body("hang"))
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    assert!(hung.is_err_and(|e| e.is_timeout()));
    assert_eq!(server.requests_for("hang").len(), 1);
    assert_eq!(
        answer_text(post_anthropic(&server, &anthropic_body("other")).await).await,
        "fine"
    );
}

#[tokio::test]
async fn dropping_the_server_closes_stalled_streams() {
    let server =
        FakeServer::start(Script::new().conversation("x", vec![Step::stall_after("wait")]));
    let resp = post_anthropic(&server, &anthropic_body("x")).await;
    let reader = tokio::spawn(read_until(resp, 10_000));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    drop(server);
    let (text, stop) = match reader.await {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    // Everything before the stall arrived, whole, and nothing after it.
    let streamed: String = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .filter_map(|event| event["delta"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(streamed, "wait", "{text}");
    assert!(!text.contains("message_stop"), "{text}");
    assert_ne!(stop, Stop::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A plain #[test] with no runtime of its own, speaking raw HTTP/1.1.
#[test]
fn works_from_a_plain_test_over_raw_http() {
    let server =
        FakeServer::start(Script::new().conversation("raw", vec![Step::text("raw answer")]));
    let addr = server.url().trim_start_matches("http://").to_string();
    let mut stream = match std::net::TcpStream::connect(&addr) {
        Ok(s) => s,
        Err(e) => panic!("connect: {e}"),
    };
    let body = anthropic_body("raw").to_string();
    let request = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut response = String::new();
    let io = stream
        .write_all(request.as_bytes())
        .and_then(|_| stream.read_to_string(&mut response));
    assert!(io.is_ok(), "{io:?}");
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(
        response
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream")
    );
    assert!(response.contains("event: message_stop"));
    assert_eq!(server.requests().len(), 1);
}
