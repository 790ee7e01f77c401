//! Each built-in tool through the whole loop, and the permission gate in
//! front of them.

use alcove_testkit::{Block, Script, Step};
use serde_json::json;

use crate::support::{assert_nothing_lost, exec, of_type, setup};

/// The results the model received on its second request.
fn results_of_second_request(server: &alcove_testkit::FakeServer) -> Vec<(String, String, bool)> {
    server.requests()[1].tool_results()
}

#[test]
fn read_returns_numbered_lines() {
    let (env, server) = setup(Script::new().conversation(
        "read",
        vec![
            Step::tool_call(
                "Read",
                json!({"file_path": "src/lib.rs", "offset": 2, "limit": 1}),
            ),
            Step::text("ok"),
        ],
    ));
    env.write_file("src/lib.rs", "one\ntwo\nthree\n");
    assert_eq!(exec(&env, &server, &["read"]).code, 0);
    let results = results_of_second_request(&server);
    assert!(results[0].1.contains("     2\ttwo"), "{:?}", results[0]);
    assert!(!results[0].1.contains("one"));
    assert!(!results[0].2);
}

#[test]
fn write_and_edit_change_files_in_accept_edits_mode() {
    let (env, server) = setup(Script::new().conversation(
        "make changes",
        vec![
            Step::tool_call("Write", json!({"file_path": "deep/new/file.txt", "content": "alpha beta\n"})),
            Step::tool_call("Edit", json!({"file_path": "deep/new/file.txt", "old_string": "beta", "new_string": "gamma"})),
            Step::text("done"),
        ],
    ));
    let out = exec(
        &env,
        &server,
        &["--permission-mode", "acceptEdits", "--json", "make changes"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(env.read_file("deep/new/file.txt"), "alpha gamma\n");
    assert_nothing_lost(&out.events());
}

#[test]
fn edit_reports_how_many_matches_there_were() {
    let (env, server) = setup(Script::new().conversation(
        "ambiguous edit",
        vec![
            // An Edit needs a Read of the file first.
            Step::reply(vec![
                Block::tool_call("Read", json!({"file_path": "a.txt"})),
                Block::tool_call(
                    "Edit",
                    json!({"file_path": "a.txt", "old_string": "x", "new_string": "y"}),
                ),
            ]),
            Step::text("ok"),
        ],
    ));
    env.write_file("a.txt", "x x x\n");
    assert_eq!(
        exec(
            &env,
            &server,
            &["--permission-mode", "acceptEdits", "ambiguous edit"]
        )
        .code,
        0
    );
    let results = results_of_second_request(&server);
    assert!(results[1].2, "an ambiguous edit is an error");
    assert!(results[1].1.contains('3'), "{}", results[1].1);
    assert_eq!(env.read_file("a.txt"), "x x x\n");
}

#[test]
fn default_mode_refuses_writes_and_commands_naming_the_flag() {
    let (env, server) = setup(Script::new().conversation(
        "try to write",
        vec![
            Step::reply(vec![
                Block::tool_call("Write", json!({"file_path": "out.txt", "content": "x"})),
                Block::tool_call("Bash", json!({"command": "touch touched.txt"})),
            ]),
            Step::text("I was not allowed."),
        ],
    ));
    let out = exec(
        &env,
        &server,
        &["-c", "sandbox.auto_allow=false", "try to write"],
    );
    assert_eq!(
        out.code, 0,
        "a denial is a result the model sees, not a failure"
    );
    assert!(!env.path("out.txt").exists());
    assert!(!env.path("touched.txt").exists());
    let results = results_of_second_request(&server);
    assert!(
        results[0].2 && results[0].1.contains("--permission-mode acceptEdits"),
        "{:?}",
        results[0]
    );
    assert!(
        results[1].2 && results[1].1.contains("--permission-mode bypassPermissions"),
        "{:?}",
        results[1]
    );
}

#[test]
fn plan_mode_allows_read_only_tools_only() {
    let (env, server) = setup(Script::new().conversation(
        "plan it",
        vec![
            Step::reply(vec![
                Block::tool_call("Read", json!({"file_path": "a.txt"})),
                Block::tool_call("Write", json!({"file_path": "a.txt", "content": "changed"})),
            ]),
            Step::text("plan"),
        ],
    ));
    env.write_file("a.txt", "original");
    assert_eq!(
        exec(&env, &server, &["--permission-mode", "plan", "plan it"]).code,
        0
    );
    let results = results_of_second_request(&server);
    assert!(!results[0].2);
    assert!(
        results[1].2 && results[1].1.contains("plan mode"),
        "{:?}",
        results[1]
    );
    assert_eq!(env.read_file("a.txt"), "original");
}

#[test]
fn writes_outside_the_workspace_are_refused_even_when_edits_are_accepted() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let (env, server) = setup(Script::new().conversation(
        "escape",
        vec![
            Step::reply(vec![
                Block::tool_call(
                    "Write",
                    json!({"file_path": target.to_str().unwrap(), "content": "x"}),
                ),
                Block::tool_call(
                    "Write",
                    json!({"file_path": "../escaped-too.txt", "content": "x"}),
                ),
            ]),
            Step::text("refused"),
        ],
    ));
    assert_eq!(
        exec(
            &env,
            &server,
            &["--permission-mode", "acceptEdits", "escape"]
        )
        .code,
        0
    );
    assert!(!target.exists());
    assert!(!env.workspace().join("../escaped-too.txt").exists());
    let results = results_of_second_request(&server);
    assert!(
        results
            .iter()
            .all(|(_, content, is_error)| *is_error && content.contains("outside the workspace"))
    );
}

#[test]
fn bash_runs_in_the_workspace_and_reports_exit_codes() {
    let (env, server) = setup(Script::new().conversation(
        "run commands",
        vec![
            Step::tool_call("Bash", json!({"command": "echo hello > made.txt && pwd"})),
            // Interleaved: stdout and stderr share one pipe, in order.
            Step::tool_call(
                "Bash",
                json!({"command": "echo out1; echo failing >&2; echo out2; echo err2 >&2; exit 7"}),
            ),
            Step::text("ran"),
        ],
    ));
    let out = exec(
        &env,
        &server,
        &["--permission-mode", "bypassPermissions", "run commands"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(env.read_file("made.txt"), "hello\n");
    let requests = server.requests();
    let first = &requests[1].tool_results()[0];
    assert!(
        first.1.contains(
            &env.workspace()
                .canonicalize()
                .unwrap()
                .display()
                .to_string()
        ),
        "{first:?}"
    );
    let second = requests[2].tool_results().pop().unwrap();
    assert!(
        second.2
            && second.1.starts_with("out1\nfailing\nout2\nerr2")
            && second.1.contains("Exit code: 7"),
        "{second:?}"
    );
}

#[test]
fn concurrency_safe_calls_run_together_and_results_keep_call_order() {
    let (env, server) = setup(Script::new().conversation(
        "search",
        vec![
            Step::reply(vec![
                Block::tool_call(
                    "Grep",
                    json!({"pattern": "needle", "output_mode": "content"}),
                ),
                Block::tool_call("Glob", json!({"pattern": "**/*.rs"})),
                Block::tool_call("Read", json!({"file_path": "src/a.rs"})),
            ]),
            Step::text("found"),
        ],
    ));
    env.write_file("src/a.rs", "fn needle() {}\n");
    env.write_file("src/b.rs", "fn other() {}\n");
    let out = exec(&env, &server, &["--json", "search"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = results_of_second_request(&server);
    let sent = server.requests()[1].assistant_tool_calls();
    let ids: Vec<&str> = sent.iter().map(|(id, _, _)| id.as_str()).collect();
    let result_ids: Vec<&str> = results.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, result_ids, "results in call order");
    assert!(
        results[0].1.contains("src/a.rs:1:fn needle() {}"),
        "{:?}",
        results[0]
    );
    assert!(results[1].1.contains("src/a.rs") && results[1].1.contains("src/b.rs"));
    assert!(results[2].1.contains("fn needle"));
    // All three started before any finished: they ran as one group.
    let events = out.events();
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|event| match event["type"].as_str() {
            Some(kind @ ("tool_call_started" | "tool_call_finished")) => Some(kind),
            _ => None,
        })
        .collect();
    assert_eq!(&kinds[..3], ["tool_call_started"; 3]);
}

#[test]
fn grep_respects_gitignore() {
    let (env, server) = setup(Script::new().conversation(
        "grep ignored",
        vec![
            Step::tool_call("Grep", json!({"pattern": "secret"})),
            Step::text("ok"),
        ],
    ));
    std::fs::create_dir_all(env.path(".git")).unwrap();
    env.write_file(".gitignore", "target/\n");
    env.write_file("target/out.txt", "secret\n");
    env.write_file("src/keep.txt", "secret\n");
    assert_eq!(exec(&env, &server, &["grep ignored"]).code, 0);
    let results = results_of_second_request(&server);
    assert!(results[0].1.contains("keep.txt"));
    assert!(!results[0].1.contains("target"), "{:?}", results[0]);
}

#[test]
fn huge_results_are_capped_visibly() {
    let (env, server) = setup(Script::new().conversation(
        "big output",
        vec![
            Step::tool_call("Read", json!({"file_path": "big.txt"})),
            Step::text("ok"),
        ],
    ));
    let line = "y".repeat(1500);
    env.write_file("big.txt", &format!("{line}\n").repeat(1000));
    let out = exec(&env, &server, &["--json", "big output"]);
    assert_eq!(out.code, 0);
    let results = results_of_second_request(&server);
    assert!(results[0].1.len() < 70 * 1024, "{}", results[0].1.len());
    // Read fits itself to the cap (or the context's room) by whole lines,
    // head and last lines, and names the call that shows the rest.
    assert!(
        results[0].1.contains("of 1000 are not shown")
            && results[0]
                .1
                .contains("To see them call Read {\"file_path\": \"big.txt\", \"offset\": "),
        "the cut is stated"
    );
    let events = out.events();
    assert_eq!(
        of_type(&events, "tool_call_finished")[0]["content"],
        results[0].1.as_str()
    );
}
