//! What real servers and small local models do to a session (issue 17),
//! against the strict fake server: malformed arguments, content
//! rejections, slow first bytes and one-slot queueing, runaway replies,
//! repeated failing calls, the temperature sent, and calls written as text.

use alcove_testkit::{Block, Script, Step, TestEnv};
use serde_json::json;

use crate::support::{Wire, exec_on as run, of_type, setup, transcript};

const WIRES: [Wire; 2] = [Wire::Anthropic, Wire::OpenAi];

fn write_config(env: &TestEnv, extra: &str) {
    std::fs::write(
        env.home().join("config.toml"),
        format!("{extra}\n[retry]\nbase_delay_ms = 10\nmax_delay_ms = 3000\nfirst_byte_timeout_ms = 3000\nidle_timeout_ms = 3000\n"),
    )
    .unwrap();
}

/// The strict server refuses a history holding arguments that are not an
/// object (llama.cpp's 500); alcove sends `{}` in their place, keeps what
/// the model wrote in the transcript and the error result, and goes on. A
/// resumed session holding such a call is sent the same way.
#[test]
fn malformed_arguments_keep_the_history_valid_on_both_wires() {
    for wire in WIRES {
        let (env, server) = setup(Script::new().conversation(
            "bad json",
            vec![
                Step::reply(vec![Block::raw_tool_call(
                    "Read",
                    "{\"file_path\": \"a.txt\", \"limit\":",
                )]),
                Step::text("recovered"),
                Step::text("resumed fine"),
            ],
        ));
        let out = run(wire, &env, &server, &["--json", "bad json"]);
        assert_eq!(out.code, 0, "{wire:?}: {}", out.stderr);
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{wire:?}: nothing retried");
        let calls = requests[1].assistant_tool_calls();
        assert_eq!(calls[0].2, json!({}), "{wire:?}");
        let results = requests[1].tool_results();
        assert!(
            results[0].1.contains("not valid JSON") && results[0].1.contains("a.txt"),
            "{wire:?}: {}",
            results[0].1
        );
        // The transcript keeps the raw text the model wrote.
        let lines = transcript(&env);
        let raw_kept = of_type(&lines, "message").iter().any(|line| {
            line["message"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|block| block["input"] == json!("{\"file_path\": \"a.txt\", \"limit\":"))
        });
        assert!(
            raw_kept,
            "{wire:?}: the raw arguments are not in the transcript"
        );

        let session_id = out.events()[0]["session_id"].as_str().unwrap().to_owned();
        let again = run(wire, &env, &server, &["--resume", &session_id, "go on"]);
        assert_eq!(again.code, 0, "{wire:?}: {}", again.stderr);
        assert_eq!(again.stdout, "resumed fine\n");
        assert_eq!(server.requests()[2].assistant_tool_calls()[0].2, json!({}));
        server.assert_script_finished();
    }
}

/// A request rejected for its content is not sent again as if transient.
#[test]
fn a_content_rejection_is_not_retried() {
    let llama = r#"{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON: [json.exception.parse_error.101]","type":"server_error"}}"#;
    let (env, server) = setup(Script::new().conversation(
        "rejected",
        vec![Step::http_error(500, llama), Step::text("never")],
    ));
    let out = run(Wire::OpenAi, &env, &server, &["--json", "rejected"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(server.requests().len(), 1);
    assert!(of_type(&out.events(), "model_retry").is_empty());
    let end = out.events().last().cloned().unwrap();
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("Failed to parse tool call arguments"),
        "{end}"
    );
}

/// A first byte slower than the idle limit is a long prefill: waited for
/// within the first-byte limit, not retried.
#[test]
fn a_slow_first_byte_is_not_an_idle_stream() {
    let (env, server) = setup(
        Script::new().conversation("prefill", vec![Step::text("ready").first_byte_after(1500)]),
    );
    std::fs::write(
        env.home().join("config.toml"),
        "[retry]\nbase_delay_ms = 10\nfirst_byte_timeout_ms = 20000\nidle_timeout_ms = 300\n",
    )
    .unwrap();
    let out = run(Wire::OpenAi, &env, &server, &["--json", "prefill"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(of_type(&out.events(), "model_retry").is_empty());
    assert_eq!(server.requests().len(), 1);
}

/// On a one-slot server, a request that missed its first-byte limit is
/// abandoned — its connection closed — before the retry, so the retry is
/// not queued behind it.
#[test]
fn a_retry_on_a_one_slot_server_is_not_queued_behind_the_abandoned_request() {
    let (env, server) = setup(Script::new().one_slot().conversation(
        "queued",
        vec![
            Step::text("too late").first_byte_after(30_000),
            Step::text("on time"),
        ],
    ));
    std::fs::write(
        env.home().join("config.toml"),
        "[retry]\nbase_delay_ms = 10\nmax_retries = 1\nfirst_byte_timeout_ms = 1500\nidle_timeout_ms = 3000\n",
    )
    .unwrap();
    let out = run(Wire::OpenAi, &env, &server, &["--json", "queued"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let retries = of_type(&out.events(), "model_retry").len();
    assert_eq!(retries, 1, "{}", out.stdout);
    let last = out.events().last().cloned().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    server.assert_script_finished();
}

/// A reply with 150 calls runs the first 32; every other call is answered
/// with an error saying why, and the history stays valid.
#[test]
fn a_runaway_reply_runs_at_most_the_cap() {
    for wire in WIRES {
        let (env, server) = setup(Script::new().conversation(
            "runaway",
            vec![
                Step::many_calls("Read", json!({"file_path": "a.txt"}), 150).piece_chars(4096),
                Step::text("done"),
            ],
        ));
        env.write_file("a.txt", "hi\n");
        let out = run(wire, &env, &server, &["--json", "runaway"]);
        assert_eq!(out.code, 0, "{wire:?}: {}", out.stderr);
        let results = server.requests()[1].tool_results();
        assert_eq!(results.len(), 150, "{wire:?}");
        let (ran, refused): (Vec<_>, Vec<_>) =
            results.iter().partition(|r| !r.1.starts_with("Not run"));
        assert_eq!(ran.len(), 32, "{wire:?}");
        assert!(
            refused[0]
                .1
                .contains("150 tool calls and at most 32 run per reply"),
            "{}",
            refused[0].1
        );
        assert!(ran.iter().all(|r| r.1.contains("hi")));
    }
}

/// The same failing call six turns in a row: the third result tells the
/// model to change course, the sixth stops the run with a clear error.
#[test]
fn the_same_failing_call_is_noted_then_stopped() {
    let edit = json!({"file_path": "a.txt", "old_string": "absent", "new_string": "x"});
    let mut steps = vec![Step::tool_call("Read", json!({"file_path": "a.txt"}))];
    steps.extend(vec![Step::tool_call("Edit", edit); 6]);
    let (env, server) = setup(Script::new().conversation("stuck", steps));
    env.write_file("a.txt", "hi\n");
    let out = run(
        Wire::Anthropic,
        &env,
        &server,
        &["--json", "--permission-mode", "acceptEdits", "stuck"],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let end = out.events().last().cloned().unwrap();
    assert_eq!(end["status"], "failed", "{end}");
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("same failing Edit call 6 turns in a row"),
        "{end}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 7);
    let third = requests[4].tool_results().pop().unwrap().1;
    assert!(
        third.contains("failed the same way 3 turns in a row"),
        "{third}"
    );
    let second = requests[3].tool_results().pop().unwrap().1;
    assert!(!second.contains("[alcove]"), "{second}");
}

/// A local server gets a temperature (llama.cpp's own default is 0.8);
/// configuration sets another.
#[test]
fn a_temperature_is_sent_to_a_local_server() {
    let (env, server) = setup(
        Script::new()
            .conversation("default temperature", vec![Step::text("a")])
            .conversation("configured temperature", vec![Step::text("b")]),
    );
    let out = run(Wire::OpenAi, &env, &server, &["default temperature"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent = server.requests_for("default temperature")[0].body["temperature"].clone();
    assert!((sent.as_f64().unwrap() - 0.2).abs() < 1e-6, "{sent}");
    write_config(
        &env,
        "[model_options.\"openai/fake-model\"]\ntemperature = 0.7",
    );
    let out = run(Wire::OpenAi, &env, &server, &["configured temperature"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent = server.requests_for("configured temperature")[0].body["temperature"].clone();
    assert!((sent.as_f64().unwrap() - 0.7).abs() < 1e-6, "{sent}");
}

/// A call written as text in a fenced block, naming an offered tool, is run
/// on the OpenAI wire; switched off, the text is the answer.
#[test]
fn a_tool_call_written_as_text_is_run() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "text call",
                vec![
                    Step::text_call("Let me read it.", "Read", json!({"file_path": "a.txt"})),
                    Step::text("It says hi."),
                ],
            )
            .conversation(
                "switched off",
                vec![Step::text_call(
                    "Reading.",
                    "Read",
                    json!({"file_path": "a.txt"}),
                )],
            ),
    );
    env.write_file("a.txt", "hi\n");
    let out = run(Wire::OpenAi, &env, &server, &["text call"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "It says hi.\n");
    let second = &server.requests_for("text call")[1];
    let calls = second.assistant_tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].1, "Read");
    assert_eq!(calls[0].2, json!({"file_path": "a.txt"}));
    assert!(second.tool_results()[0].1.contains("hi"));

    write_config(&env, "[model_options.openai]\ntext_tool_calls = false");
    let out = run(Wire::OpenAi, &env, &server, &["switched off"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("\"name\": \"Read\""), "{}", out.stdout);
    assert_eq!(server.requests_for("switched off").len(), 1);
}

/// The lean tool profile leaves out the five background-delegation tools
/// unless `agents.collab` asks for them.
#[test]
fn the_lean_profile_leaves_out_background_delegation() {
    let (env, server) = setup(
        Script::new()
            .conversation("lean", vec![Step::text("a")])
            .conversation("asked", vec![Step::text("b")]),
    );
    let out = run(
        Wire::OpenAi,
        &env,
        &server,
        &["-c", "tool_profile=lean", "lean"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lean = server.requests_for("lean")[0].tool_names();
    assert_eq!(
        lean,
        ["Read", "Glob", "Grep", "Write", "Edit", "Bash", "Agent"]
    );
    let out = run(
        Wire::OpenAi,
        &env,
        &server,
        &[
            "-c",
            "tool_profile=lean",
            "-c",
            "agents.collab=true",
            "asked",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Asked for, the collab tools are offered as everywhere: by name, in
    // ToolSearch's description (docs/tools.md, "Deferred tools").
    let asked = &server.requests_for("asked")[0];
    assert!(asked.tool_names().contains(&"ToolSearch".to_owned()));
    assert!(asked.body["tools"].to_string().contains("spawn_agent"));
    let out = run(
        Wire::OpenAi,
        &env,
        &server,
        &["-c", "tool_profile=tiny", "x"],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("tool_profile"), "{}", out.stderr);
}
