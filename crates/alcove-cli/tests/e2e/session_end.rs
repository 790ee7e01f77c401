//! One session end (issue 49): every front end ends a session through
//! `Session::end` — SessionEnd hooks, background commands stopped,
//! `session_ended` last in the transcript. `exec`, the UI and `acp` are
//! covered by their own tests; `alcove batch` is here.

use alcove_testkit::{Script, Step};
use serde_json::json;

use crate::batch::{ids_for, needle, run_batch, write_tasks};
use crate::support::{setup, transcript};

#[test]
fn alcove_batch_runs_session_end_hooks_and_ends_its_transcript_with_session_ended() {
    let ids = ids_for("e", 2);
    let mut script = Script::new();
    for id in &ids {
        script = script.conversation(&needle(id), vec![Step::text(&format!("{id} done"))]);
    }
    let (env, server) = setup(script);
    env.write_file(
        ".alcove/config.toml",
        "[[hooks.SessionEnd]]\ncommand = \"cat >> session-end.jsonl; echo >> session-end.jsonl\"\n",
    );
    let tasks = write_tasks(&env, "tasks.jsonl", &ids);
    let out_dir = env.path("out");
    let out = run_batch(
        &env,
        &server,
        &[tasks.to_str().unwrap(), "--out", out_dir.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let hook = std::fs::read_to_string(env.path("session-end.jsonl")).unwrap_or_default();
    let payloads: Vec<serde_json::Value> = hook
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(payloads.len(), 1, "{hook}");
    assert_eq!(payloads[0]["hook_event_name"], "SessionEnd");
    assert_eq!(payloads[0]["reason"], "other");
    let events = transcript(&env);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "session_ended", "{last}");
    assert_eq!(last["status"], "completed", "{last}");
}

#[test]
fn the_last_json_line_is_the_result_of_the_whole_tree() {
    use crate::agents::agent;
    use crate::support::{exec, of_type};
    use alcove_protocol::Usage;
    use alcove_testkit::Block;

    let (env, server) = setup(
        Script::new()
            .conversation(
                "RESULT parent",
                vec![
                    Step::reply(vec![
                        Block::tool_call("Agent", agent("good", "RESULT GOOD child")),
                        Block::tool_call("Agent", agent("bad", "RESULT BAD child")),
                    ])
                    .usage(1000, 50),
                    Step::text("All done: one of two.").usage(1500, 30),
                ],
            )
            .conversation(
                "RESULT GOOD",
                vec![
                    Step::tool_call("Glob", json!({"pattern": "*"})).usage(700, 40),
                    Step::text("good: fine").usage(800, 20),
                ],
            )
            .conversation(
                "RESULT BAD",
                vec![Step::http_error(
                    400,
                    r#"{"type":"error","error":{"type":"invalid_request_error","message":"nope"}}"#,
                )],
            ),
    );
    let out = exec(
        &env,
        &server,
        &[
            "--permission-mode",
            "bypassPermissions",
            "--json",
            "RESULT parent",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "session_ended", "{last}");
    let started = of_type(&events, "session_started")[0];
    assert_eq!(last["session_id"], started["session_id"]);
    assert_eq!(last["result"], "All done: one of two.");
    assert_eq!(last["status"], "completed");
    assert_eq!(last["is_error"], false);
    assert_eq!(last["turns"], 2);
    assert!(last["duration_ms"].as_u64().is_some(), "{last}");
    assert_eq!(last["children_incomplete"], 1, "{last}");
    // Its usage is the sum of every agent's usage events, children included.
    let mut sum = Usage::default();
    for event in of_type(&events, "usage") {
        sum.add(serde_json::from_value(event["usage"].clone()).unwrap());
    }
    let usage: Usage = serde_json::from_value(last["usage"].clone()).unwrap();
    assert_eq!(usage, sum);
    assert_eq!(usage.input_tokens, 1000 + 1500 + 700 + 800);
    let agents = last["agents"].as_object().unwrap();
    assert_eq!(agents.len(), 2, "{last}");
    assert_eq!(agents["main"]["input_tokens"], 2500);
}
