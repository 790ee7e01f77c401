//! The model's face: `spawn_batch`, `wait` and `close_agent` on batch ids, `retry_batch`.

use std::path::PathBuf;

use alcove_testkit::{Script, Step};
use serde_json::{Value, json};

use super::{needle, results, run_parent};
use crate::support::{parent_results, setup};

fn wait(id: &str, timeout_ms: i64) -> Step {
    Step::tool_call("wait", json!({"ids": [id], "timeout_ms": timeout_ms}))
}

#[test]
fn a_tasks_file_written_by_the_model_runs_and_wait_returns_a_bounded_table() {
    let ids: Vec<String> = (1..=50).map(|n| format!("w-{n:02}")).collect();
    let lines: Vec<String> = ids
        .iter()
        .map(|id| json!({"id": id, "prompt": format!("{} check it", needle(id))}).to_string())
        .collect();
    let mut script = Script::new().conversation(
        "parent writes tasks",
        vec![
            crate::support::load_deferred(),
            Step::tool_call(
                "Write",
                json!({"file_path": "tasks.jsonl", "content": lines.join("\n")}),
            ),
            Step::tool_call(
                "spawn_batch",
                json!({"tasks_file": "tasks.jsonl", "max_concurrent": 3}),
            ),
            wait("batch-1", 60_000),
            Step::text("all audited"),
        ],
    );
    for id in &ids {
        script = script.conversation(&needle(id), vec![Step::text(&format!("{id}: no issues"))]);
    }
    let (env, server) = setup(script);
    let out = run_parent(
        &env,
        &server,
        &[
            "--permission-mode",
            "acceptEdits",
            "-c",
            "agents.max_concurrent=4",
        ],
        "parent writes tasks",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    server.assert_script_finished();
    let results_of_parent = parent_results(&server, "parent writes tasks");
    let (spawned, raw, is_error) = &results_of_parent[1];
    assert!(!is_error, "{raw}");
    assert_eq!(spawned["batch_id"], "batch-1");
    assert_eq!(spawned["tasks"], 50);
    assert_eq!(spawned["status"], "running");
    assert_eq!(spawned["max_concurrent"], 3);

    let (waited, raw, _) = &results_of_parent[2];
    assert_eq!(waited["timed_out"], false, "{raw}");
    assert_eq!(waited["status"]["batch-1"], "completed");
    let view = &waited["batches"]["batch-1"];
    assert_eq!(view["counts"]["completed"], 50);
    assert_eq!(view["counts"]["running"], 0);
    let table = view["table"].as_str().unwrap();
    assert_eq!(table.lines().count(), 40, "{table}");
    assert!(
        table.contains("w-01  completed       w-01: no issues"),
        "{table}"
    );
    assert_eq!(view["lines_left_out"], 10);
    assert!(
        view["note"]
            .as_str()
            .unwrap()
            .contains("10 more task lines")
    );
    // The parent got the table, never a worker's transcript.
    assert!(!raw.contains("check it"), "{raw}");
    let path = PathBuf::from(view["results"].as_str().unwrap());
    let lines = results(path.parent().unwrap());
    assert_eq!(lines.len(), 50);
    assert!(lines.iter().all(|line| line["state"] == "completed"));
}

#[test]
fn a_failing_subset_is_retried_alone() {
    let mut script = Script::new().conversation(
        "parent retries",
        vec![
                    crate::support::load_deferred(),
            Step::tool_call(
                "spawn_batch",
                json!({"tasks": (1..=5).map(|n| json!({"id": format!("r-{n}"), "prompt": format!("[r-{n}] go")})).collect::<Vec<_>>()}),
            ),
            wait("batch-1", 60_000),
            Step::tool_call("retry_batch", json!({"batch_id": "batch-1", "only": "failed"})),
            wait("batch-1", 60_000),
            Step::text("retried"),
        ],
    );
    for n in 1..=5 {
        let steps = if n % 2 == 0 {
            vec![
                Step::http_error(
                    400,
                    "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"no\"}}",
                ),
                Step::text(&format!("r-{n} fixed on retry")),
            ]
        } else {
            vec![Step::text(&format!("r-{n} fine"))]
        };
        script = script.conversation(&format!("[r-{n}]"), steps);
    }
    let (env, server) = setup(script);
    let out = run_parent(&env, &server, &[], "parent retries");
    assert_eq!(out.code, 0, "{}", out.stderr);
    server.assert_script_finished();
    let got = parent_results(&server, "parent retries");
    let first_wait = &got[1].0;
    assert_eq!(
        first_wait["status"]["batch-1"], "incomplete",
        "{}",
        got[1].1
    );
    assert_eq!(first_wait["batches"]["batch-1"]["counts"]["failed"], 2);
    let table = first_wait["batches"]["batch-1"]["table"].as_str().unwrap();
    assert!(
        table.lines().next().unwrap().starts_with("r-2  failed"),
        "{table}"
    );
    let retried = &got[2].0;
    assert_eq!(retried["tasks"], 2, "{}", got[2].1);
    let second_wait = &got[3].0;
    assert_eq!(
        second_wait["status"]["batch-1"], "completed",
        "{}",
        got[3].1
    );
    // The tasks that completed ran once; the failed ones twice.
    for n in [1, 3, 5] {
        assert_eq!(server.requests_for(&format!("[r-{n}]")).len(), 1);
    }
    for n in [2, 4] {
        assert_eq!(server.requests_for(&format!("[r-{n}]")).len(), 2);
    }
    let path = PathBuf::from(
        second_wait["batches"]["batch-1"]["results"]
            .as_str()
            .unwrap(),
    );
    let lines = results(path.parent().unwrap());
    assert_eq!(lines.len(), 7);
    let retried_lines: Vec<&Value> = lines.iter().filter(|line| line["attempt"] == 2).collect();
    assert_eq!(retried_lines.len(), 2);
    assert!(
        retried_lines
            .iter()
            .all(|line| line["state"] == "completed")
    );
}

#[test]
fn close_agent_cancels_a_running_batch_and_leaves_no_running_record() {
    let mut script = Script::new().conversation(
        "parent closes",
        vec![
                    crate::support::load_deferred(),
            Step::tool_call(
                "spawn_batch",
                json!({"tasks": (1..=6).map(|n| json!({"id": format!("h-{n}"), "prompt": format!("[h-{n}] go")})).collect::<Vec<_>>(), "max_concurrent": 2}),
            ),
            wait("batch-1", 300),
            Step::tool_call("close_agent", json!({"id": "batch-1"})),
            wait("batch-1", 5_000),
            Step::text("closed"),
        ],
    );
    for n in 1..=6 {
        script = script.conversation(&format!("[h-{n}]"), vec![Step::hang()]);
    }
    let (env, server) = setup(script);
    let out = run_parent(&env, &server, &[], "parent closes");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let got = parent_results(&server, "parent closes");
    assert_eq!(got[1].0["timed_out"], true, "{}", got[1].1);
    assert_eq!(got[1].0["status"]["batch-1"], "running");
    assert_eq!(got[1].0["batches"]["batch-1"]["counts"]["running"], 2);
    let closed = &got[2].0;
    assert_eq!(closed["status"], "closed", "{}", got[2].1);
    assert_eq!(closed["counts"]["running"], 0);
    assert_eq!(closed["counts"]["queued"], 0);
    assert_eq!(closed["counts"]["cancelled"], 6);
    assert_eq!(got[3].0["status"]["batch-1"], "cancelled", "{}", got[3].1);
    let path = PathBuf::from(closed["results"].as_str().unwrap());
    let lines = results(path.parent().unwrap());
    assert_eq!(lines.len(), 6);
    assert!(
        lines.iter().all(|line| line["state"] == "cancelled"),
        "{lines:?}"
    );
    // Only the two that were running ever reached the model.
    let reached = (1..=6)
        .filter(|n| !server.requests_for(&format!("[h-{n}]")).is_empty())
        .count();
    assert_eq!(reached, 2);
}

#[test]
fn a_batch_leaves_a_slot_for_the_parents_own_spawn_agent() {
    let mut script = Script::new().conversation(
        "parent shares",
        vec![
                    crate::support::load_deferred(),
            Step::tool_call(
                "spawn_batch",
                json!({"tasks": (1..=4).map(|n| json!({"id": format!("s-{n}"), "prompt": format!("[s-{n}] go")})).collect::<Vec<_>>(), "max_concurrent": 8}),
            ),
            Step::tool_call("spawn_agent", json!({"message": "[interactive] look"})),
            wait("batch-1", 60_000),
            Step::text("shared"),
        ],
    );
    for n in 1..=4 {
        script = script.conversation(&format!("[s-{n}]"), vec![Step::text("slow").delay(1000)]);
    }
    script = script.conversation("[interactive]", vec![Step::text("quick answer")]);
    let (env, server) = setup(script);
    let out = run_parent(
        &env,
        &server,
        &["-c", "agents.max_concurrent=2"],
        "parent shares",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let got = parent_results(&server, "parent shares");
    // Two slots for spawned children: the batch gets one, whatever it asked for.
    assert_eq!(got[0].0["max_concurrent"], 1, "{}", got[0].1);
    // spawn_agent takes a free slot or fails at once: the reserved one was free.
    assert!(!got[1].2, "{}", got[1].1);
    assert_eq!(got[1].0["status"], "running", "{}", got[1].1);
    // Its child reached the model before the batch's first task (1 s) could
    // have freed a slot.
    let interactive = server.requests_for("[interactive]")[0].received_at;
    let first_batch = server.requests_for("[s-1]")[0].received_at;
    assert!(
        interactive < first_batch + std::time::Duration::from_millis(700),
        "the spawned agent waited for a batch slot"
    );
    assert_eq!(got[2].0["status"]["batch-1"], "completed", "{}", got[2].1);
}

#[test]
fn spawn_batch_refuses_bad_input_with_a_clear_error() {
    let script = Script::new().conversation(
        "parent errs",
        vec![
            crate::support::load_deferred(),
            Step::tool_call("spawn_batch", json!({"tasks": [], "tasks_file": "x"})),
            Step::tool_call("spawn_batch", json!({"tasks_file": "missing.jsonl"})),
            Step::tool_call(
                "spawn_batch",
                json!({"tasks": [{"prompt": "p"}], "isolation": "elsewhere"}),
            ),
            Step::tool_call(
                "spawn_batch",
                json!({"tasks": [{"prompt": "p"}], "agent_type": "nope"}),
            ),
            Step::tool_call("retry_batch", json!({"batch_id": "batch-9"})),
            Step::tool_call("wait", json!({"ids": ["batch-1", "agent-1"]})),
            Step::text("ok"),
        ],
    );
    let (env, server) = setup(script);
    let out = run_parent(&env, &server, &[], "parent errs");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let got = parent_results(&server, "parent errs");
    assert!(got.iter().all(|(_, _, is_error)| *is_error), "{got:?}");
    assert!(
        got[0].1.contains("exactly one of `tasks` and `tasks_file`"),
        "{}",
        got[0].1
    );
    assert!(
        got[1].1.contains("tasks_file missing.jsonl"),
        "{}",
        got[1].1
    );
    assert!(
        got[2].1.contains("unknown isolation `elsewhere`"),
        "{}",
        got[2].1
    );
    assert!(
        got[3].1.contains("unknown agent_type `nope`"),
        "{}",
        got[3].1
    );
    assert!(
        got[4].1.contains("batch not found: batch-9"),
        "{}",
        got[4].1
    );
    assert!(got[5].1.contains("not both"), "{}", got[5].1);
}

#[test]
fn batch_runner_process_runs_the_models_tasks_as_alcove_processes() {
    let mut script = Script::new().conversation(
        "parent sends out",
        vec![
                    crate::support::load_deferred(),
            Step::tool_call(
                "spawn_batch",
                json!({"tasks": (1..=3).map(|n| json!({"id": format!("p-{n}"), "prompt": format!("[p-{n}] go")})).collect::<Vec<_>>()}),
            ),
            wait("batch-1", 60_000),
            Step::text("sent"),
        ],
    );
    for n in 1..=3 {
        script = script.conversation(
            &format!("[p-{n}]"),
            vec![Step::text(&format!("p-{n} ran elsewhere"))],
        );
    }
    let (env, server) = setup(script);
    let out = run_parent(
        &env,
        &server,
        &["-c", "batch.runner=process", "--allow", "spawn_batch"],
        "parent sends out",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    server.assert_script_finished();
    let got = parent_results(&server, "parent sends out");
    assert_eq!(got[1].0["status"]["batch-1"], "completed", "{}", got[1].1);
    let path = PathBuf::from(got[1].0["batches"]["batch-1"]["results"].as_str().unwrap());
    let lines = results(path.parent().unwrap());
    assert_eq!(lines.len(), 3);
    for line in &lines {
        // A remote alcove's report: its final text and the session it ran.
        let report = line["report"].as_str().unwrap();
        assert!(report.contains("ran elsewhere"), "{report}");
        assert!(
            report.contains("ran by the process runner: session "),
            "{report}"
        );
    }
    // Each task ran in its own alcove session: one transcript per task besides the parent's.
    let sessions = std::fs::read_dir(env.home().join("sessions"))
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|ext| ext == "jsonl")
        })
        .count();
    assert_eq!(sessions, 4);
}

#[test]
fn the_tree_budget_bounds_a_batch_and_refused_tasks_are_recorded_as_such() {
    let mut script = Script::new().conversation(
        "parent on a budget",
        vec![
                    crate::support::load_deferred(),
            Step::tool_call(
                "spawn_batch",
                json!({"tasks": (1..=6).map(|n| json!({"id": format!("t-{n}"), "prompt": format!("[t-{n}] go")})).collect::<Vec<_>>(), "max_concurrent": 1}),
            ),
            wait("batch-1", 60_000),
            Step::text("over budget"),
        ],
    );
    for n in 1..=6 {
        script = script.conversation(
            &format!("[t-{n}]"),
            vec![Step::text("done").usage(1000, 200)],
        );
    }
    let (env, server) = setup(script);
    let out = run_parent(
        &env,
        &server,
        &["-c", "agents.tree_max_tokens=2500"],
        "parent on a budget",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let got = parent_results(&server, "parent on a budget");
    let view = &got[1].0["batches"]["batch-1"];
    assert_eq!(got[1].0["status"]["batch-1"], "incomplete", "{}", got[1].1);
    // 1200 tokens a task: after three the tree (2500) is used up.
    assert_eq!(view["counts"]["refused_budget"], 3, "{}", got[1].1);
    assert_eq!(view["counts"]["failed"], 0, "{}", got[1].1);
    for n in 4..=6 {
        assert!(
            server.requests_for(&format!("[t-{n}]")).is_empty(),
            "t-{n} ran"
        );
    }
    let path = PathBuf::from(view["results"].as_str().unwrap());
    let lines = results(path.parent().unwrap());
    let refused: Vec<&Value> = lines
        .iter()
        .filter(|line| line["state"] == "refused_budget")
        .collect();
    assert_eq!(refused.len(), 3);
    assert!(
        refused[0]["error"]
            .as_str()
            .unwrap()
            .contains("agents.tree_max_tokens = 2500"),
        "{}",
        refused[0]
    );
}

#[test]
fn each_task_of_a_worktree_batch_writes_on_its_own_branch() {
    let ids = ["wt-1", "wt-2"];
    let tasks: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "prompt": format!("{} edit", needle(id))}))
        .collect();
    let mut script = Script::new().conversation(
        "parent isolates",
        vec![
            crate::support::load_deferred(),
            Step::tool_call(
                "spawn_batch",
                json!({"tasks": tasks, "isolation": "worktree"}),
            ),
            wait("batch-1", 60_000),
            Step::text("both on branches"),
        ],
    );
    for id in ids {
        script = script.conversation(
            &needle(id),
            vec![
                Step::tool_call("Read", json!({"file_path": "shared.txt"})),
                Step::tool_call(
                    "Edit",
                    json!({"file_path": "shared.txt", "old_string": "base", "new_string": id}),
                ),
                Step::text(&format!("{id} edited")),
            ],
        );
    }
    let (env, server) = setup(script);
    env.write_file("shared.txt", "base\n");
    crate::isolation::init_repo(env.workspace());
    let out = run_parent(
        &env,
        &server,
        &["--permission-mode", "acceptEdits"],
        "parent isolates",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let got = parent_results(&server, "parent isolates");
    assert_eq!(
        got[1].0["batches"]["batch-1"]["counts"]["completed"], 2,
        "{}",
        got[1].1
    );
    // The shared checkout is untouched; each task's edit is on its branch.
    assert_eq!(env.read_file("shared.txt"), "base\n");
    let branches = crate::isolation::git(
        env.workspace(),
        &["branch", "--list", "alcove/*", "--format=%(refname:short)"],
    );
    let mut contents: Vec<String> = branches
        .lines()
        .map(|branch| {
            crate::isolation::git(env.workspace(), &["show", &format!("{branch}:shared.txt")])
        })
        .collect();
    contents.sort();
    assert_eq!(contents, ["wt-1\n", "wt-2\n"], "branches: {branches}");
    // Each task's full report in results.jsonl names its branch.
    let path = PathBuf::from(got[1].0["batches"]["batch-1"]["results"].as_str().unwrap());
    let lines = results(path.parent().unwrap());
    assert_eq!(lines.len(), 2);
    for line in &lines {
        let report = line["report"].as_str().unwrap();
        assert!(
            report.contains("[alcove worktree] branch: alcove/"),
            "{report}"
        );
    }
}

#[test]
fn a_command_batch_task_stops_at_its_deadline_and_is_reported_cut_short() {
    let script = Script::new().conversation(
        "parent runs a slow command",
        vec![
            crate::support::load_deferred(),
            Step::tool_call(
                "spawn_batch",
                json!({
                    "tasks": [{"id": "slow", "prompt": "take your time"}],
                    "budget": {"task_secs": 1},
                }),
            ),
            wait("batch-1", 20_000),
            Step::text("seen"),
        ],
    );
    let (env, server) = setup(script);
    let out = crate::support::finish(
        crate::support::exec_command(
            &env,
            &server,
            &[
                "-c",
                "agents.wait_min_ms=50",
                "--allow",
                "spawn_batch",
                "--json",
                "parent runs a slow command",
            ],
        )
        // Not alcove: it reports no usage, so only its deadline bounds it.
        .env(
            "ALCOVE_SUBAGENT_COMMAND",
            "echo started > slow.txt; sleep 30; echo late > slow.txt",
        )
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let got = parent_results(&server, "parent runs a slow command");
    let batch = &got[1].0["batches"]["batch-1"];
    assert_eq!(batch["counts"]["cut_short"], 1, "{}", got[1].1);
    let path = PathBuf::from(batch["results"].as_str().unwrap());
    let lines = results(path.parent().unwrap());
    assert_eq!(lines[0]["state"], "cut_short", "{}", lines[0]);
    let report = lines[0]["report"].as_str().unwrap();
    assert!(report.contains("wall time over 1s"), "{report}");
    assert!(report.contains("usage: not reported"), "{report}");
    assert!(
        report.contains("bounded by its wall time of 1s"),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(env.path("slow.txt")).unwrap(),
        "started\n"
    );
    let started = of_type_count(&out, "agent_started");
    assert_eq!(started, 1, "the task was announced as a child, once");
}

/// How many events of `kind` the run emitted.
fn of_type_count(out: &crate::support::Outcome, kind: &str) -> usize {
    crate::support::of_type(&out.events(), kind).len()
}

#[test]
fn retry_batch_of_command_tasks_is_gated_like_spawn_batch() {
    let script = Script::new().conversation(
        "parent retries commands",
        vec![
            crate::support::load_deferred(),
            Step::tool_call(
                "spawn_batch",
                json!({"tasks": [{"id": "once", "prompt": "fail"}]}),
            ),
            wait("batch-1", 20_000),
            Step::tool_call("retry_batch", json!({"batch_id": "batch-1"})),
            Step::text("stopped"),
        ],
    );
    let (env, server) = setup(script);
    let out = crate::support::finish(
        crate::support::exec_command(
            &env,
            &server,
            &[
                "-c",
                "agents.wait_min_ms=50",
                // The user allowed starting the batch, not starting it again.
                "--allow",
                "spawn_batch",
                "--json",
                "parent retries commands",
            ],
        )
        .env("ALCOVE_SUBAGENT_COMMAND", "echo ran >> runs.txt; exit 1")
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let got = parent_results(&server, "parent retries commands");
    assert_eq!(
        got[1].0["batches"]["batch-1"]["counts"]["failed"], 1,
        "{}",
        got[1].1
    );
    assert!(
        got[2].2,
        "retry_batch ran without a permission decision: {}",
        got[2].1
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        std::fs::read_to_string(env.path("runs.txt")).unwrap(),
        "ran\n"
    );
}
