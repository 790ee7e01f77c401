//! Thinking on the Anthropic wire (issue 36, point 1): what the request
//! asks for (adaptive, a budget, the effort from config, definition and
//! call), thinking blocks kept with their signatures and sent back in a
//! tool-use turn — which the strict fake server checks as Anthropic does
//! —, `thinking_delta` events, and no thinking in a child's report.

use alcove_testkit::{Block, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{exec, exec_command, finish, of_type, setup, transcript};

/// Puts `toml` (top-level keys, then tables) before the test home's `[retry]`.
fn configure(env: &TestEnv, toml: &str) {
    let path = env.home().join("config.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (top, tables) = toml
        .split_once('[')
        .map_or((toml, ""), |(top, rest)| (top, rest));
    let tables = if tables.is_empty() {
        String::new()
    } else {
        format!("[{tables}")
    };
    std::fs::write(path, format!("{top}{text}{tables}")).unwrap();
}

fn blocks_of(message: &Value) -> Vec<&str> {
    message["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .map(|block| block["type"].as_str().unwrap_or(""))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn adaptive_thinking_round_trips_through_a_tool_use_turn() {
    let (env, server) = setup(Script::new().conversation(
        "think then read",
        vec![
            Step::tool_call("Read", json!({"file_path": "notes.txt"})).redacted_thinking(),
            Step::text("The notes say hello."),
        ],
    ));
    env.write_file("notes.txt", "hello\n");
    configure(
        &env,
        "temperature = 0.5\n[model_options.anthropic]\nthinking = \"adaptive\"\n",
    );
    let out = finish(
        exec_command(&env, &server, &["--json", "think then read"])
            .env("ALCOVE_MODEL", "anthropic/claude-opus-4-6")
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("think then read");
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.body["thinking"], json!({"type": "adaptive"}));
        // Anthropic refuses a temperature other than 1 with thinking.
        assert!(
            request.body.get("temperature").is_none(),
            "{}",
            request.body
        );
    }
    // The tool-use turn went back opening with its thinking, signature and
    // redacted block as they came (the strict server checked both).
    let assistant = &requests[1].body["messages"][1];
    assert_eq!(
        blocks_of(assistant),
        ["thinking", "redacted_thinking", "tool_use"]
    );
    let thinking = assistant["content"][0]["thinking"].as_str().unwrap();
    assert!(thinking.starts_with("Let me think"), "{thinking}");
    assert!(
        assistant["content"][0]["signature"]
            .as_str()
            .is_some_and(|s| s.starts_with("EqSig"))
    );

    // --json streams the thinking; the message holds it whole.
    let events = out.events();
    let streamed: String = of_type(&events, "thinking_delta")
        .iter()
        .map(|event| event["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed.split("Let me think").count(), 3, "{streamed}");
    assert!(streamed.starts_with(thinking), "{streamed}");
    // Thinking is never the answer.
    let answers: Vec<&str> = of_type(&events, "assistant_text")
        .iter()
        .map(|event| event["text"].as_str().unwrap())
        .collect();
    assert!(answers.iter().all(|text| !text.contains("Let me think")));
    assert_eq!(answers.last(), Some(&"The notes say hello."));

    // The transcript keeps the whole thinking in the message, no deltas.
    let lines = transcript(&env);
    assert!(of_type(&lines, "thinking_delta").is_empty());
    let kept = of_type(&lines, "message")
        .into_iter()
        .filter(|event| event["message"]["role"] == "assistant")
        .filter(|event| blocks_of(&event["message"]).first() == Some(&"thinking"))
        .count();
    assert_eq!(kept, 2);
    server.assert_script_finished();
}

#[test]
fn a_budget_on_a_model_without_adaptive_thinking_raises_max_tokens() {
    let (env, server) = setup(Script::new().conversation("budgeted", vec![Step::text("done")]));
    configure(
        &env,
        "max_tokens = 4000\n[model_options.\"anthropic/claude-sonnet-4-5\"]\nthinking = 6000\neffort = \"high\"\n",
    );
    let out = finish(
        exec_command(&env, &server, &["budgeted"])
            .env("ALCOVE_MODEL", "anthropic/claude-sonnet-4-5")
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = &server.requests_for("budgeted")[0].body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 6000})
    );
    assert_eq!(body["max_tokens"], 10_000);
    // Sonnet 4.5 takes no effort parameter: none is sent.
    assert!(body.get("output_config").is_none(), "{body}");
}

#[test]
fn no_thinking_is_asked_for_unless_the_model_takes_it_or_config_says() {
    let (env, server) = setup(Script::new().conversation("plain", vec![Step::text("done")]));
    let out = exec(&env, &server, &["plain"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = &server.requests_for("plain")[0].body;
    assert!(body.get("thinking").is_none(), "{body}");
    assert!(body.get("output_config").is_none(), "{body}");
}

#[test]
fn effort_comes_from_config_then_the_definition_then_the_call() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "delegate with effort",
                vec![
                    Step::reply(vec![
                        Block::tool_call(
                            "Agent",
                            json!({"description": "by type", "prompt": "CHILD-DEF task", "subagent_type": "deep"}),
                        ),
                        Block::tool_call(
                            "Agent",
                            json!({"description": "by call", "prompt": "CHILD-CALL task", "subagent_type": "deep", "effort": "max"}),
                        ),
                    ]),
                    Step::text("both done"),
                ],
            )
            .conversation("CHILD-DEF", vec![Step::text("definition child done")])
            .conversation("CHILD-CALL", vec![Step::text("call child done")]),
    );
    env.write_file(
        ".alcove/agents/deep.md",
        "---\nname: deep\ndescription: Thinks hard.\neffort: high\n---\nThink hard.\n",
    );
    configure(&env, "[model_options.anthropic]\neffort = \"low\"\n");
    let out = finish(
        exec_command(&env, &server, &["delegate with effort"])
            .env("ALCOVE_MODEL", "anthropic/claude-opus-4-6")
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let effort = |needle: &str| {
        let requests = server.requests_for(needle);
        assert!(!requests.is_empty(), "no request for {needle}");
        requests
            .iter()
            .map(|r| {
                r.body["output_config"]["effort"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(effort("delegate with effort"), ["low", "low"]);
    assert_eq!(effort("CHILD-DEF"), ["high"]);
    assert_eq!(effort("CHILD-CALL"), ["max"]);

    // The children thought, but their reports carry only their answers.
    let last = server.requests_for("delegate with effort").pop().unwrap();
    let results: Vec<String> = last.body["messages"][2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "tool_result")
        .map(|block| block["content"].to_string())
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results[0].contains("definition child done"), "{results:?}");
    assert!(results.iter().all(|text| !text.contains("Let me think")));
    server.assert_script_finished();
}

#[test]
fn a_bad_effort_is_a_clear_error() {
    let (env, server) = setup(Script::new());
    configure(&env, "effort = \"extreme\"\n");
    let out = exec(&env, &server, &["anything"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("unknown effort `extreme`"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
}
