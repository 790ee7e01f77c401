//! The request bodies the three clients really send, checked against the
//! providers' published request schemas (`alcove-testkit/schemas/`,
//! generated from the official SDKs' request types at pinned versions; its
//! README says which and how). A field the real API would refuse, a block
//! of the wrong shape or a value outside its enum fails here, not in a
//! user's session. (The fake server refuses such a body too, so every
//! end-to-end test checks its own; these cases cover every block kind.)
//!
//! Each body is captured by the scripted fake server from a real client
//! run: a first turn with a prompt image and tools, a reply with thinking
//! or reasoning, text and a tool call, then a second turn carrying the
//! tool's result with its image, the reply's thinking or reasoning sent
//! back, effort, cache breakpoints and the settings of the wire.

// Test helpers outside #[test] fns are not covered by clippy.toml's test allowance.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use alcove_model::{ModelRequest, ProviderConfig, RetryPolicy, Thinking, WireProtocol, connect};
use alcove_protocol::{ContentBlock, Message, Role, ToolSpec};
use alcove_testkit::schemas::violations;
use alcove_testkit::{Block, FakeServer, Protocol, Script, Step};
use serde_json::{Value, json};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// The testkit's name of a wire.
fn wire(protocol: WireProtocol) -> Protocol {
    match protocol {
        WireProtocol::Anthropic => Protocol::Anthropic,
        WireProtocol::OpenAiResponses => Protocol::Responses,
        WireProtocol::OpenAi => Protocol::OpenAi,
    }
}

/// What the client is configured with, besides the wire.
struct Setup {
    model: &'static str,
    thinking: Thinking,
    effort: Option<&'static str>,
    /// Whether the model takes an effort on the OpenAI wires.
    reasons: bool,
    reasoning_summary: Option<&'static str>,
    temperature: Option<f32>,
    prompt_cache_key: Option<&'static str>,
    vision: bool,
}

const PLAIN: Setup = Setup {
    model: "fake-model",
    thinking: Thinking::Default,
    effort: None,
    reasons: false,
    reasoning_summary: None,
    temperature: None,
    prompt_cache_key: None,
    vision: true,
};

fn config(protocol: WireProtocol, server: &FakeServer, setup: &Setup) -> ProviderConfig {
    let base_url = match protocol {
        WireProtocol::Anthropic => server.url(),
        WireProtocol::OpenAi | WireProtocol::OpenAiResponses => server.openai_url(),
    };
    ProviderConfig {
        id: "fake".into(),
        protocol,
        base_url,
        api_key: Some("sk-fake".into()),
        model: setup.model.into(),
        retry: RetryPolicy {
            max_retries: 0,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(40),
            first_byte_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(2),
        },
        temperature: setup.temperature,
        text_tool_calls: false,
        prompt_cache_key: setup.prompt_cache_key.map(str::to_owned),
        context_window: None,
        reasons: setup.reasons,
        reasoning_summary: setup.reasoning_summary.map(str::to_owned),
        thinking: setup.thinking,
        effort: setup.effort.map(str::to_owned),
        vision: setup.vision,
        health: None,
    }
}

fn image() -> ContentBlock {
    ContentBlock::Image {
        media_type: "image/png".into(),
        data: PNG.into(),
    }
}

/// Two turns through the real client; returns the bodies the server got.
async fn two_turns(protocol: WireProtocol, setup: &Setup) -> Vec<Value> {
    let prompt = "Look at this screenshot, then read the file.";
    let first_reply = Step::reply(vec![
        Block::text("Reading it."),
        Block::tool_call("read_file", json!({"path": "src/lib.rs"})),
    ])
    .reasoning("The file first.")
    .redacted_thinking();
    let server = FakeServer::start(
        Script::new().conversation(prompt, vec![first_reply, Step::text("Done.")]),
    );
    let model = connect(config(protocol, &server, setup)).unwrap();
    let mut request = ModelRequest {
        system: "You are a test.".into(),
        messages: vec![Message {
            role: Role::User,
            content: vec![
                ContentBlock::Text {
                    text: prompt.into(),
                },
                image(),
            ],
        }],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Reads a file.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            })
            .into(),
        }]
        .into(),
        max_tokens: 4096,
        effort: None,
    };
    let first = model.complete(&request, &|_| {}).await.unwrap();
    let (id, _, _) = first.message.tool_uses().next().expect("a tool call");
    let id = id.to_owned();
    request.messages.push(first.message);
    request.messages.push(Message {
        role: Role::User,
        content: vec![
            ContentBlock::ToolResult {
                tool_use_id: id,
                content: "pub fn main() {}".into(),
                is_error: false,
            },
            image(),
        ],
    });
    model.complete(&request, &|_| {}).await.unwrap();
    server.assert_script_finished();
    server
        .requests()
        .into_iter()
        .map(|sent| sent.body)
        .collect()
}

/// Runs `setup` on `protocol` and checks both bodies against its schema.
async fn check(protocol: WireProtocol, setup: &Setup) -> Vec<Value> {
    let bodies = two_turns(protocol, setup).await;
    assert_eq!(bodies.len(), 2, "{protocol:?} {}", setup.model);
    for (turn, body) in bodies.iter().enumerate() {
        // The schemas take either; alcove always streams.
        assert_eq!(body["stream"], true, "{protocol:?}");
        let broken = violations(wire(protocol), body);
        assert!(
            broken.is_empty(),
            "{protocol:?} {} turn {}: the body breaks the published schema:\n{}\n{body:#}",
            setup.model,
            turn + 1,
            broken.join("\n")
        );
    }
    bodies
}

#[tokio::test]
async fn anthropic_bodies_fit_the_messages_schema() {
    // Adaptive thinking with an effort, and the thinking sent back signed.
    let adaptive = Setup {
        model: "claude-opus-4-6",
        effort: Some("high"),
        temperature: Some(0.5),
        ..PLAIN
    };
    let bodies = check(WireProtocol::Anthropic, &adaptive).await;
    assert_eq!(bodies[0]["thinking"]["type"], "adaptive");
    assert_eq!(bodies[0]["output_config"]["effort"], "high");
    let assistant = &bodies[1]["messages"][1]["content"];
    assert_eq!(assistant[0]["type"], "thinking", "{assistant:#}");
    assert_eq!(assistant[1]["type"], "redacted_thinking", "{assistant:#}");
    let result = &bodies[1]["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["content"][1]["type"], "image", "{result:#}");
    assert!(bodies[1]["tools"][0]["cache_control"].is_object());

    // A thinking budget on a model without adaptive thinking.
    let budget = Setup {
        model: "claude-sonnet-4-5",
        thinking: Thinking::Budget(2048),
        ..PLAIN
    };
    let bodies = check(WireProtocol::Anthropic, &budget).await;
    assert_eq!(bodies[0]["thinking"]["budget_tokens"], 2048);

    // No thinking, a temperature, and images left out as notes.
    let plain = Setup {
        model: "claude-3-5-haiku-latest",
        thinking: Thinking::Off,
        temperature: Some(0.2),
        vision: false,
        ..PLAIN
    };
    let bodies = check(WireProtocol::Anthropic, &plain).await;
    assert!(bodies[0]["thinking"].is_null());
    assert_eq!(bodies[0]["temperature"], 0.2);
}

#[tokio::test]
async fn responses_bodies_fit_the_responses_schema() {
    // A reasoning model: effort, summary, encrypted reasoning sent back.
    let reasoning = Setup {
        model: "gpt-5-codex",
        effort: Some("high"),
        reasons: true,
        reasoning_summary: Some("auto"),
        prompt_cache_key: Some("session-1"),
        ..PLAIN
    };
    let bodies = check(WireProtocol::OpenAiResponses, &reasoning).await;
    assert_eq!(bodies[0]["reasoning"]["effort"], "high");
    let kinds: Vec<&str> = bodies[1]["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap_or("message"))
        .collect();
    assert!(kinds.contains(&"reasoning"), "{kinds:?}");
    assert!(kinds.contains(&"function_call_output"), "{kinds:?}");

    // A model that does not reason, with a temperature and no vision.
    let plain = Setup {
        model: "gpt-4.1",
        temperature: Some(0.2),
        vision: false,
        ..PLAIN
    };
    let bodies = check(WireProtocol::OpenAiResponses, &plain).await;
    assert!(bodies[0]["reasoning"].is_null());
}

#[tokio::test]
async fn chat_bodies_fit_the_chat_completions_schema() {
    let reasoning = Setup {
        model: "o3",
        effort: Some("max"),
        reasons: true,
        prompt_cache_key: Some("session-1"),
        ..PLAIN
    };
    let bodies = check(WireProtocol::OpenAi, &reasoning).await;
    assert_eq!(bodies[0]["reasoning_effort"], "max");
    let plain = Setup {
        model: "gpt-4.1",
        temperature: Some(0.2),
        ..PLAIN
    };
    check(WireProtocol::OpenAi, &plain).await;
}

/// The schemas are strict enough to catch the mistakes they are here for:
/// one wire's field on another, a misspelt field, a block of a kind the
/// API does not have, an effort it does not know.
#[tokio::test]
async fn the_schemas_refuse_what_the_apis_refuse() {
    let bodies = two_turns(WireProtocol::OpenAiResponses, &PLAIN).await;
    let responses = Protocol::Responses;
    let mut body = bodies[1].clone();
    assert!(violations(responses, &body).is_empty());
    body["reasoning_effort"] = json!("high");
    assert!(
        !violations(responses, &body).is_empty(),
        "Chat's field on Responses"
    );
    let mut body = bodies[1].clone();
    body["reasoning"] = json!({"effort": "extreme"});
    assert!(
        !violations(responses, &body).is_empty(),
        "an unknown effort"
    );

    let bodies = two_turns(WireProtocol::OpenAi, &PLAIN).await;
    let chat = Protocol::OpenAi;
    let mut body = bodies[1].clone();
    assert!(violations(chat, &body).is_empty());
    body["max_output_tokens"] = json!(100);
    assert!(
        !violations(chat, &body).is_empty(),
        "Responses' field on Chat"
    );

    let bodies = two_turns(WireProtocol::Anthropic, &PLAIN).await;
    let messages = Protocol::Anthropic;
    let mut body = bodies[1].clone();
    assert!(violations(messages, &body).is_empty());
    body["messages"][0]["content"][0]["cache_control"] = json!({"type": "persistent"});
    assert!(
        !violations(messages, &body).is_empty(),
        "an unknown cache kind"
    );
    let mut body = bodies[1].clone();
    body["messages"][1]["content"][0] = json!({"type": "reasoning", "id": "rs_1", "summary": []});
    assert!(
        !violations(messages, &body).is_empty(),
        "a Responses item on Anthropic"
    );
}
