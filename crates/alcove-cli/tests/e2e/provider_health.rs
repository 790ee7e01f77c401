//! The provider's health is the tree's (issue 49): a provider that refuses
//! the session for good (no quota, a bad key) stops the whole tree at its
//! first answer, and a rate limit pauses the tree instead of failing tasks,
//! with `alcove batch` and the model's `spawn_batch` alike, against each
//! provider's real error bodies.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::batch::{ids_for, needle, results, write_tasks};
use crate::support::{Outcome, alcove, finish, load_deferred, read_jsonl, setup};

const CONCURRENCY: usize = 4;

/// `alcove batch` on the OpenAI wire.
fn run_openai_batch(env: &TestEnv, server: &FakeServer, tasks: &Path, out: &Path) -> Outcome {
    let mut command: Command = env.command_openai(alcove(), server);
    command
        .arg("batch")
        .args([
            tasks.to_str().unwrap(),
            "--concurrency",
            &CONCURRENCY.to_string(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    finish(command.spawn().unwrap())
}

/// Checks a batch the provider refused: few requests, nothing `failed`,
/// the rest `not_run` with the provider's reason.
fn assert_stopped_at_once(server: &FakeServer, lines: &[Value], total: usize, why: &str) {
    let requests = server.requests().len();
    assert!(
        requests <= 2 * CONCURRENCY,
        "{requests} model requests for a provider that refuses the session"
    );
    assert_eq!(lines.len(), total, "every task has its line");
    let state = |line: &Value| line["state"].as_str().unwrap_or("").to_owned();
    assert!(
        lines.iter().all(|line| state(line) != "failed"),
        "{lines:#?}"
    );
    let not_run: Vec<&Value> = lines
        .iter()
        .filter(|line| state(line) == "not_run")
        .collect();
    assert!(not_run.len() >= total - 2 * CONCURRENCY, "{lines:#?}");
    for line in &not_run {
        let text = line["first_line"].as_str().unwrap_or("");
        assert!(text.contains(why), "{line}");
        assert!(line["started_at_ms"].is_null(), "{line}");
    }
    for line in lines.iter().filter(|line| state(line) != "not_run") {
        assert_eq!(state(line), "halted", "{line}");
    }
}

fn refused_batch(step: Step, why: &str, remedy: &str) {
    let ids = ids_for("q", 40);
    let (env, server) = setup(Script::new().conversation("", vec![step; 400]));
    let tasks = write_tasks(&env, "tasks.jsonl", &ids);
    let out_dir = env.path("out");
    let out = run_openai_batch(&env, &server, &tasks, &out_dir);
    assert_ne!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_stopped_at_once(&server, &results(&out_dir), ids.len(), why);
    assert!(out.stderr.contains(remedy), "{}", out.stderr);
    assert!(out.stdout.contains("not run"), "{}", out.stdout);
}

#[test]
fn forty_batch_tasks_against_insufficient_quota_stop_at_the_first_answer() {
    refused_batch(
        Step::openai_insufficient_quota(),
        "insufficient_quota",
        "no quota or credit left",
    );
}

#[test]
fn forty_batch_tasks_against_an_invalid_api_key_stop_at_the_first_answer() {
    refused_batch(
        Step::openai_invalid_api_key(),
        "invalid_api_key",
        "check the API key",
    );
}

#[test]
fn a_rate_limit_that_heals_costs_no_task() {
    // The account's first 22 requests are rate limited, whichever task sends
    // them: more than four tasks' own retries (5 attempts each) could sit out.
    let ids = ids_for("r", 12);
    let mut script = Script::new().throttle(22, Step::openai_rate_limited(100));
    for id in &ids {
        script = script.conversation(&needle(id), vec![Step::text(&format!("{id} done"))]);
    }
    let (env, server) = setup(script);
    let tasks = write_tasks(&env, "tasks.jsonl", &ids);
    let out_dir = env.path("out");
    let out = run_openai_batch(&env, &server, &tasks, &out_dir);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    server.assert_script_finished();
    assert_eq!(server.requests().len(), 22 + ids.len());
    let lines = results(&out_dir);
    assert_eq!(lines.len(), ids.len());
    assert!(
        lines.iter().all(|line| line["state"] == "completed"),
        "{lines:#?}"
    );
}

/// Every results.jsonl under `dir`.
fn results_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(results_files(&path));
        } else if path.file_name().is_some_and(|name| name == "results.jsonl") {
            found.push(path);
        }
    }
    found
}

#[test]
fn spawn_batch_against_insufficient_quota_stops_the_tree_at_once() {
    let tasks: Vec<Value> = ids_for("s", 40)
        .iter()
        .map(|id| json!({"id": id, "prompt": format!("{} go", needle(id))}))
        .collect();
    let script = Script::new()
        .conversation(
            "parent fans out",
            vec![
                load_deferred(),
                Step::tool_call(
                    "spawn_batch",
                    json!({"tasks": tasks, "max_concurrent": CONCURRENCY}),
                ),
                Step::tool_call("wait", json!({"ids": ["batch-1"], "timeout_ms": 60_000})),
                Step::text("never sent"),
            ],
        )
        .conversation("", vec![Step::openai_insufficient_quota(); 400]);
    let (env, server) = setup(script);
    let mut command = env.command_openai(alcove(), &server);
    command
        .args([
            "exec",
            "-c",
            "agents.wait_min_ms=50",
            "-c",
            &format!("agents.max_concurrent={CONCURRENCY}"),
            // A loopback Chat server gets the local profile, which has no
            // spawn_batch: this test is about the deferred batch tool.
            "-c",
            "tool_profile=full",
            "--json",
            "parent fans out",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = finish(command.spawn().unwrap());
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("no quota or credit left"),
        "{}",
        out.stderr
    );
    // The parent's own request after the wait (or, had the tasks' answers
    // come first, the wait's) is not sent either.
    let parent = server.requests_for("parent fans out").len();
    assert!(parent <= 3, "{parent}");
    let children = server.requests().len() - parent;
    assert!(children <= 2 * CONCURRENCY, "{children} child requests");
    let files = results_files(env.home());
    assert_eq!(files.len(), 1, "{files:?}");
    let lines = read_jsonl(&files[0]);
    let state = |line: &Value| line["state"].as_str().unwrap_or("").to_owned();
    assert_eq!(lines.len(), 40);
    assert!(
        lines.iter().all(|line| state(line) != "failed"),
        "{lines:#?}"
    );
    let not_run = lines.iter().filter(|line| state(line) == "not_run").count();
    assert!(not_run >= 40 - 2 * CONCURRENCY, "{lines:#?}");
}
