//! The clients against a real local HTTP server with byte-exact canned
//! replies: retries, `retry-after`, fatal statuses, dropped and stalled
//! streams, connect errors, and the headers and body actually sent.

// Test helpers outside #[test] fns are not covered by clippy.toml's test allowance.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use alcove_model::{
    ModelError, ModelRequest, ModelResponse, ProviderConfig, RetryPolicy, StreamDelta,
    WireProtocol, connect,
};
use alcove_protocol::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One canned answer, served to one connection.
#[derive(Clone)]
enum Reply {
    /// A complete response.
    Full {
        status: &'static str,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// 200, an SSE body sent in chunked pieces.
    Sse(Vec<String>),
    /// 200, these chunks, then the connection is cut mid-body.
    Drop(String),
    /// 200, these chunks, then silence with the connection held open.
    Stall(String),
    /// Nothing at all until the client closes the connection, holding the
    /// server's one slot meanwhile (a one-slot local server busy with it).
    Silent,
    /// Like `Sse`, after this long without a byte (a long prefill).
    Late(Duration, Vec<String>),
}

fn status(status: &'static str, body: &str) -> Reply {
    Reply::Full {
        status,
        headers: Vec::new(),
        body: body.to_string(),
    }
}

/// A server answering each new connection with the next reply, and
/// recording each request's head and body.
struct Server {
    base: String,
    requests: Arc<Mutex<Vec<String>>>,
}

/// The one slot: a connection answers only while it holds it.
type Slot = Arc<tokio::sync::Mutex<()>>;

impl Server {
    async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        let slot = Slot::default();
        tokio::spawn(async move {
            let mut replies = replies.into_iter();
            while let Ok((socket, _)) = listener.accept().await {
                let reply = replies.next().unwrap_or(status("500 Oops", "script over"));
                let recorded = Arc::clone(&recorded);
                tokio::spawn(serve(socket, reply, recorded, Arc::clone(&slot)));
            }
        });
        Server { base, requests }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(mut socket: TcpStream, reply: Reply, recorded: Arc<Mutex<Vec<String>>>, slot: Slot) {
    // Read the head, then the body by content-length.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.unwrap();
        assert!(n > 0, "client closed before sending a request");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await.unwrap();
        buf.extend_from_slice(&chunk[..n]);
    }
    recorded
        .lock()
        .unwrap()
        .push(String::from_utf8_lossy(&buf).into_owned());
    // Every reply waits for the slot; only a silent one keeps it.
    let held = slot.lock().await;
    if !matches!(reply, Reply::Silent) {
        drop(held);
    }

    let sse_head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    let piece = |s: &str| format!("{:x}\r\n{s}\r\n", s.len());
    let out = match reply {
        Reply::Full {
            status,
            headers,
            body,
        } => {
            let mut out = format!(
                "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                out.push_str(&format!("{name}: {value}\r\n"));
            }
            format!("{out}\r\n{body}")
        }
        Reply::Sse(pieces) => {
            let body: String = pieces.iter().map(|p| piece(p)).collect();
            format!("{sse_head}{body}0\r\n\r\n")
        }
        Reply::Drop(before) => format!("{sse_head}{}", piece(&before)),
        Reply::Silent => {
            // Held until the client hangs up (read gives 0 or fails).
            while let Ok(n) = socket.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
            }
            return;
        }
        Reply::Late(delay, pieces) => {
            tokio::time::sleep(delay).await;
            let body: String = pieces.iter().map(|p| piece(p)).collect();
            format!("{sse_head}{body}0\r\n\r\n")
        }
        Reply::Stall(before) => {
            let out = format!("{sse_head}{}", piece(&before));
            socket.write_all(out.as_bytes()).await.unwrap();
            tokio::time::sleep(Duration::from_secs(30)).await;
            return;
        }
    };
    let _ = socket.write_all(out.as_bytes()).await;
    let _ = socket.shutdown().await;
}

const ANTHROPIC_START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";

fn anthropic_text(text: &str) -> String {
    format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}\n\n"
    )
}

const ANTHROPIC_END: &str = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

/// A whole Anthropic answer, sent as three pieces.
fn anthropic_ok(a: &str, b: &str) -> Reply {
    Reply::Sse(vec![
        format!("{ANTHROPIC_START}{}", anthropic_text(a)),
        anthropic_text(b),
        ANTHROPIC_END.to_string(),
    ])
}

fn openai_ok(text: &str) -> Reply {
    Reply::Sse(vec![
        format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"),
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n".into(),
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n".into(),
    ])
}

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(40),
        first_byte_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(300),
        connect_timeout: Duration::from_secs(2),
    }
}

fn config(protocol: WireProtocol, base_url: String) -> ProviderConfig {
    ProviderConfig {
        id: "test".into(),
        protocol,
        base_url,
        api_key: Some("sk-test".into()),
        model: "test-model".into(),
        retry: policy(),
        temperature: None,
        text_tool_calls: false,
        prompt_cache_key: None,
        context_window: None,
        reasons: false,
        reasoning_summary: None,
        thinking: Default::default(),
        effort: None,
        vision: true,
        health: None,
    }
}

async fn complete(config: ProviderConfig) -> (Result<ModelResponse, ModelError>, Vec<StreamDelta>) {
    let model = connect(config).unwrap();
    let request = ModelRequest {
        system: "sys".into(),
        messages: vec![Message::user_text("hello")],
        tools: Vec::new().into(),
        max_tokens: 100,
        effort: None,
    };
    let deltas = Mutex::new(Vec::new());
    let result = model
        .complete(&request, &|d| deltas.lock().unwrap().push(d))
        .await;
    (result, deltas.into_inner().unwrap())
}

fn retries(deltas: &[StreamDelta]) -> Vec<(u32, Duration)> {
    deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::Retry { attempt, delay, .. } => Some((*attempt, *delay)),
            _ => None,
        })
        .collect()
}

fn restarts(deltas: &[StreamDelta]) -> usize {
    deltas
        .iter()
        .filter(|d| matches!(d, StreamDelta::Restarted { .. }))
        .count()
}

#[tokio::test]
async fn anthropic_retries_a_500_then_succeeds_and_sends_the_right_request() {
    let server = Server::start(vec![
        status("500 Internal Server Error", "boom"),
        anthropic_ok("Hel", "lo"),
    ])
    .await;
    let (result, deltas) = complete(config(WireProtocol::Anthropic, server.base.clone())).await;
    let response = result.unwrap();
    assert_eq!(response.message, Message::assistant_text("Hello"));
    assert_eq!(response.usage.input_tokens, 12);
    assert_eq!(response.usage.output_tokens, 7);
    let retried = retries(&deltas);
    assert_eq!(retried.len(), 1);
    assert_eq!(retried[0].0, 1);
    assert!(retried[0].1 <= Duration::from_millis(5));
    assert_eq!(deltas.last(), Some(&StreamDelta::Text("lo".into())));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let sent = &requests[1];
    assert!(sent.starts_with("POST /v1/messages HTTP/1.1"), "{sent}");
    let lower = sent.to_lowercase();
    assert!(lower.contains("x-api-key: sk-test"));
    assert!(lower.contains("anthropic-version: 2023-06-01"));
    assert!(lower.contains("content-type: application/json"));
    let body: serde_json::Value =
        serde_json::from_str(sent.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["system"][0]["text"], "sys");
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(body["stream"], true);
    assert_eq!(body["messages"][0]["content"][0]["text"], "hello");
}

#[tokio::test]
async fn openai_honours_retry_after_capped_at_max_delay() {
    let limited = |name: &'static str, value: &str| Reply::Full {
        status: "429 Too Many Requests",
        headers: vec![(name, value.to_string())],
        body: "{\"error\":{\"message\":\"slow down\"}}".into(),
    };
    let server = Server::start(vec![
        limited("retry-after", "120"),
        limited("retry-after-ms", "25"),
        openai_ok("fine"),
    ])
    .await;
    let (result, deltas) =
        complete(config(WireProtocol::OpenAi, format!("{}/v1", server.base))).await;
    assert_eq!(result.unwrap().message.text(), "fine");
    assert_eq!(
        retries(&deltas),
        vec![
            (1, Duration::from_millis(40)),
            (2, Duration::from_millis(25))
        ]
    );
    let requests = server.requests();
    assert!(requests[0].starts_with("POST /v1/chat/completions HTTP/1.1"));
    assert!(
        requests[0]
            .to_lowercase()
            .contains("authorization: bearer sk-test")
    );
}

#[tokio::test]
async fn a_400_fails_at_once_with_the_server_text() {
    let server = Server::start(vec![status(
        "400 Bad Request",
        "{\"error\":\"max_tokens too large\"}",
    )])
    .await;
    let (result, deltas) =
        complete(config(WireProtocol::OpenAi, format!("{}/v1", server.base))).await;
    match result {
        Err(ModelError::Http {
            provider,
            status,
            body,
            ..
        }) => {
            assert_eq!(provider, "test");
            assert_eq!(status, 400);
            assert!(body.contains("max_tokens too large"));
        }
        other => panic!("{other:?}"),
    }
    assert!(deltas.is_empty());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn long_error_bodies_are_cut() {
    let server = Server::start(vec![status("401 Unauthorized", &"x".repeat(10_000))]).await;
    let (result, _) = complete(config(WireProtocol::Anthropic, server.base.clone())).await;
    match result {
        Err(ModelError::Http {
            status: 401, body, ..
        }) => {
            assert!(body.len() < 2100 && body.len() > 1000, "{}", body.len());
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn persistent_503_gives_up_after_max_retries() {
    let server = Server::start(vec![status("503 Service Unavailable", "down"); 3]).await;
    let (result, deltas) = complete(config(WireProtocol::Anthropic, server.base.clone())).await;
    assert!(
        matches!(result, Err(ModelError::Http { status: 503, .. })),
        "{result:?}"
    );
    assert_eq!(
        retries(&deltas).iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_dropped_stream_is_restarted_once() {
    let partial = format!("{ANTHROPIC_START}{}", anthropic_text("Hel"));
    let server = Server::start(vec![Reply::Drop(partial), anthropic_ok("Hel", "lo")]).await;
    let (result, deltas) = complete(config(WireProtocol::Anthropic, server.base.clone())).await;
    assert_eq!(result.unwrap().message.text(), "Hello");
    assert_eq!(deltas[0], StreamDelta::Text("Hel".into()));
    assert!(
        matches!(deltas[1], StreamDelta::Restarted { .. }),
        "{deltas:?}"
    );
    assert_eq!(
        &deltas[2..],
        &[
            StreamDelta::Text("Hel".into()),
            StreamDelta::Text("lo".into())
        ]
    );
    assert!(retries(&deltas).is_empty());
}

#[tokio::test]
async fn a_second_mid_stream_failure_is_an_error() {
    let partial =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n".to_string();
    let server = Server::start(vec![
        Reply::Drop(partial.clone()),
        Reply::Drop(partial),
        openai_ok("never"),
    ])
    .await;
    let (result, deltas) =
        complete(config(WireProtocol::OpenAi, format!("{}/v1", server.base))).await;
    assert!(matches!(result, Err(ModelError::Stream(_))), "{result:?}");
    assert_eq!(restarts(&deltas), 1);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn an_idle_stream_times_out_and_is_restarted_once() {
    let partial = format!("{ANTHROPIC_START}{}", anthropic_text("wait"));
    let server = Server::start(vec![Reply::Stall(partial.clone()), anthropic_ok("a", "b")]).await;
    let (result, deltas) = complete(config(WireProtocol::Anthropic, server.base.clone())).await;
    assert_eq!(result.unwrap().message.text(), "ab");
    assert_eq!(restarts(&deltas), 1);

    let server = Server::start(vec![Reply::Stall(partial.clone()), Reply::Stall(partial)]).await;
    let started = std::time::Instant::now();
    let (result, deltas) = complete(config(WireProtocol::Anthropic, server.base.clone())).await;
    assert!(
        matches!(result, Err(ModelError::IdleTimeout(_))),
        "{result:?}"
    );
    assert_eq!(restarts(&deltas), 1);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn an_overloaded_error_event_is_retried_with_backoff() {
    let overloaded = Reply::Sse(vec![format!(
        "{ANTHROPIC_START}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n"
    )]);
    let server = Server::start(vec![overloaded, anthropic_ok("o", "k")]).await;
    let (result, deltas) = complete(config(WireProtocol::Anthropic, server.base.clone())).await;
    assert_eq!(result.unwrap().message.text(), "ok");
    assert_eq!(retries(&deltas).len(), 1);
    // Nothing had been shown, so nothing needs discarding.
    assert_eq!(restarts(&deltas), 0);
}

#[tokio::test]
async fn connect_errors_name_the_url_and_are_retried() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (result, deltas) =
        complete(config(WireProtocol::OpenAi, format!("http://{closed}/v1"))).await;
    match result {
        Err(ModelError::Connect { url, .. }) => {
            assert_eq!(url, format!("http://{closed}/v1/chat/completions"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(retries(&deltas).len(), 2);
}

/// llama.cpp answers a history it cannot parse with a 500; sending the same
/// body again gets the same answer, so it is not retried.
#[tokio::test]
async fn a_content_rejection_with_a_500_is_not_retried() {
    let server = Server::start(vec![
        status(
            "500 Internal Server Error",
            "{\"error\":{\"code\":500,\"message\":\"Failed to parse tool call arguments as JSON: parse error\",\"type\":\"server_error\"}}",
        ),
        openai_ok("never"),
    ])
    .await;
    let (result, deltas) =
        complete(config(WireProtocol::OpenAi, format!("{}/v1", server.base))).await;
    assert!(
        matches!(result, Err(ModelError::Http { status: 500, ref body, .. }) if body.contains("Failed to parse tool call")),
        "{result:?}"
    );
    assert!(retries(&deltas).is_empty(), "{deltas:?}");
    assert_eq!(server.requests().len(), 1);
}

/// A first byte slower than the idle limit but within the first-byte limit
/// is a long prefill, not a dead stream.
#[tokio::test]
async fn a_slow_first_byte_within_its_limit_is_waited_for() {
    let mut config = config(
        WireProtocol::OpenAi,
        format!("{}/v1", server_base_late().await),
    );
    config.retry.idle_timeout = Duration::from_millis(100);
    config.retry.first_byte_timeout = Duration::from_secs(5);
    let (result, deltas) = complete(config).await;
    assert_eq!(result.unwrap().message.text(), "late");
    assert!(retries(&deltas).is_empty(), "{deltas:?}");
}

async fn server_base_late() -> String {
    let late = match openai_ok("late") {
        Reply::Sse(pieces) => Reply::Late(Duration::from_millis(400), pieces),
        other => other,
    };
    let server = Server::start(vec![late]).await;
    // The server task lives on in the runtime; only its address is needed.
    server.base
}

/// A retry after a first-byte timeout closes the abandoned connection
/// first: on a one-slot server the retry is answered only once the first
/// request's connection is gone.
#[tokio::test]
async fn a_retry_closes_the_abandoned_connection_first() {
    let server = Server::start(vec![Reply::Silent, openai_ok("second")]).await;
    let mut config = config(WireProtocol::OpenAi, format!("{}/v1", server.base));
    config.retry.first_byte_timeout = Duration::from_millis(300);
    config.retry.idle_timeout = Duration::from_secs(30);
    // The retry's own first-byte wait: long enough for a busy machine, and
    // it would still fail if the first connection held the slot.
    config.retry.max_retries = 1;
    let (result, deltas) = complete(config).await;
    assert_eq!(result.unwrap().message.text(), "second");
    let retried = retries(&deltas);
    assert_eq!(retried.len(), 1, "{deltas:?}");
    assert_eq!(server.requests().len(), 2);
}
