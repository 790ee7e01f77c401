//! Both clients against `alcove-testkit`'s scripted fake server: the wire
//! formats as another implementation writes them, and every failure the
//! fake can stage, each scenario run once per protocol.

// Test helpers outside #[test] fns are not covered by clippy.toml's test allowance.
#![allow(clippy::unwrap_used)]

use std::sync::Mutex;
use std::time::Duration;

use alcove_model::{
    ModelError, ModelRequest, ModelResponse, ProviderConfig, RetryPolicy, StreamDelta,
    WireProtocol, connect,
};
use alcove_protocol::{ContentBlock, Message, Role, StopReason, ToolSpec, Usage};
use alcove_testkit::{Block, FakeServer, Script, Step};
use serde_json::{Value, json};

const PROTOCOLS: [WireProtocol; 3] = [
    WireProtocol::Anthropic,
    WireProtocol::OpenAi,
    WireProtocol::OpenAiResponses,
];

fn config(protocol: WireProtocol, server: &FakeServer) -> ProviderConfig {
    let base_url = match protocol {
        WireProtocol::Anthropic => server.url(),
        WireProtocol::OpenAi | WireProtocol::OpenAiResponses => server.openai_url(),
    };
    ProviderConfig {
        id: "fake".into(),
        protocol,
        base_url,
        api_key: Some("sk-fake".into()),
        model: "fake-model".into(),
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(40),
            first_byte_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(300),
            connect_timeout: Duration::from_secs(2),
        },
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

fn request(prompt: &str) -> ModelRequest {
    ModelRequest {
        system: "You are a test.".into(),
        messages: vec![Message::user_text(prompt)],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Reads a file.".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}})
                .into(),
        }]
        .into(),
        max_tokens: 256,
        effort: None,
    }
}

/// Runs one request for `prompt` against a fresh server scripted with
/// `steps`; returns the result, the deltas, and the server.
async fn run(
    protocol: WireProtocol,
    prompt: &str,
    steps: Vec<Step>,
) -> (
    Result<ModelResponse, ModelError>,
    Vec<StreamDelta>,
    FakeServer,
) {
    let server = FakeServer::start(Script::new().conversation(prompt, steps));
    let model = connect(config(protocol, &server)).unwrap();
    let deltas = Mutex::new(Vec::new());
    let result = model
        .complete(&request(prompt), &|d| deltas.lock().unwrap().push(d))
        .await;
    (result, deltas.into_inner().unwrap(), server)
}

fn count(deltas: &[StreamDelta], restarted: bool) -> usize {
    deltas
        .iter()
        .filter(|d| match d {
            StreamDelta::Restarted { .. } => restarted,
            StreamDelta::Retry { .. } => !restarted,
            StreamDelta::Text(_) | StreamDelta::Thinking(_) => false,
        })
        .count()
}

#[tokio::test]
async fn text_and_tool_calls_round_trip() {
    for protocol in PROTOCOLS {
        let steps = vec![
            Step::reply(vec![
                Block::text("Reading both."),
                Block::tool_call("read_file", json!({"path": "src/lib.rs"})),
                Block::tool_call("read_file", json!({"path": "Cargo.toml"})),
                Block::raw_tool_call("read_file", "{\"path\": \"oops"),
            ])
            .usage(1200, 30),
        ];
        let (result, deltas, server) = run(protocol, "read files", steps).await;
        let response = result.unwrap();
        let text: String = deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Reading both.", "{protocol:?}");
        assert_eq!(response.message.text(), "Reading both.");
        assert_eq!(response.stop_reason, StopReason::ToolUse, "{protocol:?}");
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 1200,
                output_tokens: 30,
                ..Usage::default()
            }
        );
        let inputs: Vec<(&str, Value)> = response
            .message
            .tool_uses()
            .map(|(_, name, input)| (name, input.clone()))
            .collect();
        assert_eq!(
            inputs,
            vec![
                ("read_file", json!({"path": "src/lib.rs"})),
                ("read_file", json!({"path": "Cargo.toml"})),
                ("read_file", Value::String("{\"path\": \"oops".into())),
            ],
            "{protocol:?}"
        );
        let ids: Vec<&str> = response.message.tool_uses().map(|(id, _, _)| id).collect();
        assert!(ids.iter().all(|id| !id.is_empty()));

        let sent = &server.requests()[0];
        assert!(sent.is_stream());
        assert_eq!(sent.model(), "fake-model");
        assert_eq!(sent.system_prompt(), "You are a test.");
        assert_eq!(sent.tool_names(), vec!["read_file".to_string()]);
        let auth = match protocol {
            WireProtocol::Anthropic => sent.header("x-api-key"),
            WireProtocol::OpenAi | WireProtocol::OpenAiResponses => sent.header("authorization"),
        };
        assert!(auth.unwrap().ends_with("sk-fake"));
        server.assert_script_finished();
    }
}

#[tokio::test]
async fn tool_results_are_sent_back_in_order() {
    for protocol in PROTOCOLS {
        let server =
            FakeServer::start(Script::new().conversation("history", vec![Step::text("ok")]));
        let model = connect(config(protocol, &server)).unwrap();
        let mut req = request("history");
        req.messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::ToolUse {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    input: json!({"path": "a"}),
                },
                ContentBlock::ToolUse {
                    id: "call_2".into(),
                    name: "read_file".into(),
                    input: json!({"path": "b"}),
                },
            ],
        });
        req.messages.push(Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: "A".into(),
                    is_error: false,
                },
                ContentBlock::ToolResult {
                    tool_use_id: "call_2".into(),
                    content: "no such file".into(),
                    is_error: true,
                },
            ],
        });
        let response = model.complete(&req, &|_| {}).await.unwrap();
        assert_eq!(response.message.text(), "ok");
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        let sent = &server.requests()[0];
        assert_eq!(
            sent.assistant_tool_calls(),
            vec![
                (
                    "call_1".to_string(),
                    "read_file".to_string(),
                    json!({"path": "a"})
                ),
                (
                    "call_2".to_string(),
                    "read_file".to_string(),
                    json!({"path": "b"})
                ),
            ]
        );
        let results: Vec<(String, String)> = sent
            .tool_results()
            .into_iter()
            .map(|(id, content, _)| (id, content))
            .collect();
        assert_eq!(
            results,
            vec![
                ("call_1".to_string(), "A".to_string()),
                ("call_2".to_string(), "no such file".to_string()),
            ]
        );
    }
}

#[tokio::test]
async fn max_tokens_is_reported() {
    for protocol in PROTOCOLS {
        let (result, _, _) = run(protocol, "long", vec![Step::text("cut sh").max_tokens()]).await;
        assert_eq!(
            result.unwrap().stop_reason,
            StopReason::MaxTokens,
            "{protocol:?}"
        );
    }
}

#[tokio::test]
async fn overload_and_rate_limits_are_retried() {
    for protocol in PROTOCOLS {
        let steps = vec![
            Step::overloaded(),
            Step::rate_limited(1),
            Step::text("finally"),
        ];
        let (result, deltas, server) = run(protocol, "busy", steps).await;
        assert_eq!(result.unwrap().message.text(), "finally", "{protocol:?}");
        let delays: Vec<Duration> = deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::Retry { delay, .. } => Some(*delay),
                _ => None,
            })
            .collect();
        assert_eq!(delays.len(), 2);
        // retry-after: 1 is capped at max_delay.
        assert_eq!(delays[1], Duration::from_millis(40));
        server.assert_script_finished();
    }
}

#[tokio::test]
async fn broken_streams_are_restarted_once() {
    for protocol in PROTOCOLS {
        for broken in [
            Step::drop_mid_stream("Half"),
            Step::malformed_sse(),
            Step::error_event("invalid_request_error", "nope"),
        ] {
            let steps = vec![broken.clone(), Step::text("Whole")];
            let (result, deltas, _) = run(protocol, "flaky", steps).await;
            let response = result.unwrap_or_else(|e| panic!("{protocol:?} {broken:?}: {e}"));
            assert_eq!(response.message.text(), "Whole");
            assert_eq!(
                count(&deltas, true),
                1,
                "{protocol:?} {broken:?}: {deltas:?}"
            );

            let steps = vec![broken.clone(), broken.clone(), Step::text("never")];
            let (result, _, _) = run(protocol, "flaky", steps).await;
            assert!(
                matches!(result, Err(ModelError::Stream(_))),
                "{protocol:?} {broken:?}: {result:?}"
            );
        }
    }
}

#[tokio::test]
async fn stalls_and_hangs_time_out() {
    for protocol in PROTOCOLS {
        let steps = vec![Step::stall_after("Wait"), Step::stall_after("Wait")];
        let (result, deltas, _) = run(protocol, "stall", steps).await;
        assert!(
            matches!(result, Err(ModelError::IdleTimeout(_))),
            "{result:?}"
        );
        assert_eq!(count(&deltas, true), 1);

        let steps = vec![Step::hang(), Step::text("awake")];
        let (result, deltas, _) = run(protocol, "hang", steps).await;
        assert_eq!(result.unwrap().message.text(), "awake");
        assert_eq!(count(&deltas, false), 1);
    }
}

#[tokio::test]
async fn client_errors_fail_at_once() {
    for protocol in PROTOCOLS {
        let steps = vec![
            Step::http_error(
                400,
                r#"{"error":{"message":"messages: roles must alternate"}}"#,
            ),
            Step::text("unused"),
        ];
        let (result, deltas, server) = run(protocol, "bad order", steps).await;
        match result {
            Err(ModelError::Http {
                status: 400, body, ..
            }) => {
                assert!(body.contains("roles must alternate"), "{body}");
            }
            other => panic!("{other:?}"),
        }
        assert!(deltas.is_empty());
        assert_eq!(server.requests().len(), 1);
    }
}

/// A context overflow is its own error kind (the loop compacts on it) and is
/// never retried as it was.
#[tokio::test]
async fn context_overflows_fail_at_once_as_their_own_kind() {
    for protocol in PROTOCOLS {
        let steps = vec![
            Step::http_error(
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 9000 tokens > 8192 maximum"}}"#,
            ),
            Step::text("unused"),
        ];
        let (result, deltas, server) = run(protocol, "too long", steps).await;
        match result {
            Err(ModelError::ContextOverflow {
                request_tokens: Some(9000),
                window: Some(8192),
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        assert!(deltas.is_empty());
        assert_eq!(server.requests().len(), 1);
    }
}

/// The effort each wire sends, from one knob: what the request asks (an
/// agent's definition or `Agent` call) over what is configured, on the
/// OpenAI wires only to a model that takes an effort.
#[tokio::test]
async fn one_effort_knob_reaches_every_wire() {
    let sent_effort = |protocol: WireProtocol, body: &Value| match protocol {
        WireProtocol::Anthropic => body["output_config"]["effort"].clone(),
        WireProtocol::OpenAiResponses => body["reasoning"]["effort"].clone(),
        WireProtocol::OpenAi => body["reasoning_effort"].clone(),
    };
    for protocol in PROTOCOLS {
        for (reasons, asked, expected) in [
            (true, Some("high"), json!("high")),
            (true, None, json!("low")),
            (false, Some("high"), Value::Null),
        ] {
            let server =
                FakeServer::start(Script::new().conversation("think", vec![Step::text("ok")]));
            let mut config = config(protocol, &server);
            // An Anthropic model that takes an effort; the OpenAI wires
            // are told by `reasons`.
            config.model = "claude-opus-4-6".into();
            config.effort = Some("low".into());
            config.reasons = reasons;
            let expected = match protocol {
                WireProtocol::Anthropic => json!(asked.unwrap_or("low")),
                _ => expected.clone(),
            };
            let model = connect(config).unwrap();
            let mut req = request("think");
            req.effort = asked.map(str::to_owned);
            model.complete(&req, &|_| {}).await.unwrap();
            let body = &server.requests()[0].body;
            assert_eq!(
                sent_effort(protocol, body),
                expected,
                "{protocol:?} reasons={reasons} asked={asked:?}: {body}"
            );
        }
    }
}
