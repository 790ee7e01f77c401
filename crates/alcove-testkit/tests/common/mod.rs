//! Shared helpers for the testkit's own tests: a plain HTTP client, request
//! builders for both protocols, and a small SSE parser used to check the
//! exact event sequences the fake server sends.

#![allow(dead_code, unreachable_pub)]

use alcove_testkit::FakeServer;
use serde_json::{Value, json};

/// A plain-HTTP client (no proxy). reqwest's rustls backend needs a crypto
/// provider installed even when no TLS is used.
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    match reqwest::Client::builder().no_proxy().build() {
        Ok(c) => c,
        Err(e) => panic!("cannot build client: {e}"),
    }
}

/// An Anthropic Messages request body with one user message.
pub fn anthropic_body(prompt: &str) -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 1024,
        "stream": true,
        "system": "You are a test.",
        // The tools the scripts call: a strict server refuses a call of any other.
        "tools": [
            {"name": "read_file", "description": "read", "input_schema": {"type": "object"}},
            {"name": "bash", "description": "run", "input_schema": {"type": "object"}}
        ],
        "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}]
    })
}

/// An OpenAI Chat Completions request body with a system and a user message.
pub fn openai_body(prompt: &str, include_usage: bool) -> Value {
    let mut body = json!({
        "model": "gpt-test",
        "stream": true,
        "tools": [
            {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}
        ],
        "messages": [
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": prompt}
        ]
    });
    if include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

pub async fn post(url: String, body: &Value) -> reqwest::Response {
    match client()
        .post(url)
        .header("x-api-key", "test-key")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
    {
        Ok(r) => r,
        Err(e) => panic!("request failed: {e}"),
    }
}

pub async fn post_anthropic(server: &FakeServer, body: &Value) -> reqwest::Response {
    post(format!("{}/v1/messages", server.url()), body).await
}

pub async fn post_openai(server: &FakeServer, body: &Value) -> reqwest::Response {
    post(format!("{}/chat/completions", server.openai_url()), body).await
}

pub async fn text_of(resp: reqwest::Response) -> String {
    match resp.text().await {
        Ok(t) => t,
        Err(e) => panic!("reading body failed: {e}"),
    }
}

/// One SSE event: its `event:` name (if any) and its `data:` text.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: Option<String>,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        match serde_json::from_str(&self.data) {
            Ok(v) => v,
            Err(e) => panic!("event data is not JSON ({e}): {}", self.data),
        }
    }
}

/// Parses an SSE body; every event must end with a blank line.
pub fn parse_sse(text: &str) -> Vec<Event> {
    let mut events = Vec::new();
    for raw in text.split("\n\n").filter(|r| !r.is_empty()) {
        let mut name = None;
        let mut data = Vec::new();
        for line in raw.lines() {
            if let Some(v) = line.strip_prefix("event: ") {
                name = Some(v.to_string());
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push(v);
            } else {
                panic!("unexpected SSE line {line:?} in {raw:?}");
            }
        }
        events.push(Event {
            name,
            data: data.join("\n"),
        });
    }
    events
}

/// Reads a streamed body until it ends, errors, or `ms` pass without the end.
/// Returns the text received and how it stopped.
pub async fn read_until(resp: reqwest::Response, ms: u64) -> (String, Stop) {
    use futures::StreamExt;
    let mut stream = resp.bytes_stream();
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(ms);
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return (text, Stop::TimedOut),
            Ok(None) => return (text, Stop::Ended),
            Ok(Some(Err(_))) => return (text, Stop::Errored),
            Ok(Some(Ok(bytes))) => text.push_str(&String::from_utf8_lossy(&bytes)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Ended,
    Errored,
    TimedOut,
}
