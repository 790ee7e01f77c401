//! One session end (issue 49): every front end ends a session through
//! `Session::end` — SessionEnd hooks, background commands stopped,
//! `session_ended` last in the transcript. `exec`, the UI and `acp` are
//! covered by their own tests; `alcove batch` is here.

use alcove_testkit::{Script, Step};

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
