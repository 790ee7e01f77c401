//! The fake server's OpenAI Responses answers: a scripted call of a tool in
//! a namespace (`NAMESPACE::NAME`, how Codex offers an MCP server's tools)
//! comes as a `function_call` item with `namespace` and the bare name.

mod common;

use alcove_testkit::{FakeServer, Script, Step};
use common::{parse_sse, post, text_of};
use serde_json::json;

#[tokio::test]
async fn a_namespaced_call_names_its_namespace() {
    let server = FakeServer::start(Script::new().conversation(
        "hand it over",
        vec![Step::tool_call(
            "mcp__alcove::delegate",
            json!({"prompt": "do it"}),
        )],
    ));
    let body = json!({
        "model": "fake-model",
        "stream": true,
        "tools": [{"type": "namespace", "name": "mcp__alcove", "description": "alcove",
                   "tools": [{"type": "function", "name": "delegate", "parameters": {"type": "object"}}]}],
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hand it over"}]}]
    });
    let resp = post(format!("{}/responses", server.openai_url()), &body).await;
    let status = resp.status();
    let text = text_of(resp).await;
    assert_eq!(status, 200, "{text}");
    let events = parse_sse(&text);
    let done: Vec<_> = events
        .iter()
        .map(|event| event.json())
        .filter(|data| data["type"] == "response.output_item.done")
        .collect();
    let item = &done[0]["item"];
    assert_eq!(item["type"], "function_call", "{item}");
    assert_eq!(item["name"], "delegate");
    assert_eq!(item["namespace"], "mcp__alcove");
    assert_eq!(item["arguments"], json!({"prompt": "do it"}).to_string());
}
