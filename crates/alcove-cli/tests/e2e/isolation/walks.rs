//! Issue 44: one walk, one policy. Grep's and Glob's walks of the whole
//! workspace judge each entry by the file it really is, as Read does: a
//! symlink into `sandbox.deny_read` and a second hard link of a denied file
//! are skipped, and `spawn_batch {tasks_file}` is held to the same policy.
//! The key's text must appear in no request, transcript or `--json` line.

use std::path::Path;

use alcove_testkit::{Block, FakeServer, Script, Step, TestEnv};
use serde_json::json;

use super::bash;
use crate::support::{Outcome, exec_command, finish, setup, transcripts};

const KEY_TEXT: &str = "FAKE-PRIVATE-KEY-5f1e";

/// A fake home whose `~/.ssh/id_ed25519` holds [`KEY_TEXT`] (as a task
/// line, so a tasks_file read of it would start a child with it).
fn fake_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    std::fs::write(
        home.path().join(".ssh/id_ed25519"),
        format!("{{\"prompt\": \"{KEY_TEXT}\"}}\n"),
    )
    .unwrap();
    home
}

fn key_path(home: &Path) -> String {
    home.join(".ssh/id_ed25519").display().to_string()
}

fn run(env: &TestEnv, server: &FakeServer, home: &Path, args: &[&str]) -> Outcome {
    let mut all = vec!["--json"];
    all.extend(args);
    finish(
        exec_command(env, server, &all)
            .env("HOME", home)
            .spawn()
            .unwrap(),
    )
}

/// The key's text is nowhere: requests, `--json` output, transcripts.
fn assert_key_nowhere(env: &TestEnv, server: &FakeServer, out: &Outcome) {
    for request in server.all_requests() {
        assert!(
            !request.body.to_string().contains(KEY_TEXT),
            "the key reached the model: {}",
            request.body
        );
    }
    assert!(!out.stdout.contains(KEY_TEXT), "the key is in --json");
    assert!(!out.stderr.contains(KEY_TEXT), "the key is on stderr");
    for file in transcripts(env) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(!text.contains(KEY_TEXT), "the key is in {}", file.display());
    }
}

fn searches() -> Vec<Block> {
    vec![
        Block::tool_call("Grep", json!({"pattern": ".", "output_mode": "content"})),
        Block::tool_call("Glob", json!({"pattern": "**/*.txt"})),
    ]
}

#[test]
fn a_whole_workspace_grep_and_glob_skip_a_symlink_a_command_made_into_deny_read() {
    let home = fake_home();
    let (env, server) = setup(Script::new().conversation(
        "link then search",
        vec![
            Step::reply(vec![bash(&format!(
                "ln -s {} notes.txt && echo LINKED",
                key_path(home.path())
            ))]),
            Step::reply(searches()),
            Step::text("done"),
        ],
    ));
    env.write_file("plain.txt", "plain words\n");
    let out = run(&env, &server, home.path(), &["link then search"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests_for("link then search")[2].tool_results();
    assert!(results[0].1.contains("LINKED"), "{:?}", results[0]);
    let (grep, glob) = (&results[1].1, &results[2].1);
    assert!(
        grep.contains("plain.txt") && !grep.contains("notes.txt"),
        "{grep}"
    );
    assert!(
        glob.contains("plain.txt") && !glob.contains("notes.txt"),
        "{glob}"
    );
    assert_key_nowhere(&env, &server, &out);
}

#[test]
fn a_hard_link_of_a_denied_key_is_neither_searched_listed_nor_read() {
    let home = fake_home();
    let (env, server) = setup(Script::new().conversation(
        "search the hard link",
        vec![
            Step::reply(
                searches()
                    .into_iter()
                    .chain([Block::tool_call("Read", json!({"file_path": "hard.txt"}))])
                    .collect(),
            ),
            Step::text("done"),
        ],
    ));
    env.write_file("plain.txt", "plain words\n");
    std::fs::hard_link(home.path().join(".ssh/id_ed25519"), env.path("hard.txt")).unwrap();
    let out = run(&env, &server, home.path(), &["search the hard link"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests_for("search the hard link")[1].tool_results();
    let (grep, glob) = (&results[0].1, &results[1].1);
    assert!(
        grep.contains("plain.txt") && !grep.contains("hard.txt"),
        "{grep}"
    );
    assert!(
        glob.contains("plain.txt") && !glob.contains("hard.txt"),
        "{glob}"
    );
    let (_, read, is_error) = &results[2];
    assert!(*is_error && read.contains("sandbox.deny_read"), "{read}");
    assert_key_nowhere(&env, &server, &out);
}

#[test]
fn a_tasks_file_in_deny_read_or_linked_into_it_is_refused_unread() {
    let home = fake_home();
    let key = key_path(home.path());
    let (env, server) = setup(Script::new().conversation(
        "batch from the key",
        vec![
            crate::support::load("spawn_batch"),
            Step::tool_call("spawn_batch", json!({"tasks_file": key})),
            Step::tool_call("spawn_batch", json!({"tasks_file": "linked.jsonl"})),
            Step::text("done"),
        ],
    ));
    std::os::unix::fs::symlink(&key, env.path("linked.jsonl")).unwrap();
    let out = run(
        &env,
        &server,
        home.path(),
        &[
            "--permission-mode",
            "bypassPermissions",
            "batch from the key",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("batch from the key");
    for request in &requests[2..] {
        let results = crate::support::results_but_loads(request);
        let (_, refused, is_error) = results.last().unwrap();
        assert!(*is_error && refused.contains("denied"), "{refused}");
    }
    assert_key_nowhere(&env, &server, &out);
}
