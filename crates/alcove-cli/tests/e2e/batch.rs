//! Batch fan-out (issue 13): `alcove batch` and the model's `spawn_batch`,
//! `wait` on batch ids, `retry_batch` and `close_agent` on a batch, against
//! the fake server.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{
    Outcome, alcove, exec_command, finish, process_alive, read_jsonl, setup, wait_for_file,
};

mod model;
pub(crate) mod slurm;

/// `[task-07] …` style prompts: the bracket keeps `task-1` from matching `task-10`.
pub(crate) fn needle(id: &str) -> String {
    format!("[{id}]")
}

/// Writes a tasks file of `ids` and returns its path.
pub(crate) fn write_tasks(env: &TestEnv, name: &str, ids: &[String]) -> PathBuf {
    let lines: Vec<String> = ids
        .iter()
        .map(|id| {
            json!({"id": id, "description": format!("audit {id}"), "prompt": format!("{} audit it", needle(id))})
                .to_string()
        })
        .collect();
    env.write_file(name, &(lines.join("\n") + "\n"));
    env.path(name)
}

pub(crate) fn batch_command(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Command {
    let mut command = env.command(alcove(), server);
    command
        .arg("batch")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

pub(crate) fn run_batch(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Outcome {
    finish(batch_command(env, server, args).spawn().unwrap())
}

/// The lines of results.jsonl in `dir`.
pub(crate) fn results(dir: &Path) -> Vec<Value> {
    read_jsonl(&dir.join("results.jsonl"))
}

pub(crate) fn ids_for(prefix: &str, count: usize) -> Vec<String> {
    (1..=count).map(|n| format!("{prefix}-{n:02}")).collect()
}

#[test]
fn forty_tasks_at_concurrency_eight_never_have_more_than_eight_alive() {
    let ids = ids_for("task", 40);
    let mut script = Script::new();
    for id in &ids {
        script = script.conversation(
            &needle(id),
            vec![
                Step::tool_call("Glob", json!({"pattern": "*.md"})).delay(40),
                Step::text(&format!("{id} looks fine\nmore detail")).delay(40),
            ],
        );
    }
    let (env, server) = setup(script);
    let tasks = write_tasks(&env, "tasks.jsonl", &ids);
    let out_dir = env.path("out");
    let out = run_batch(
        &env,
        &server,
        &[
            tasks.to_str().unwrap(),
            "--concurrency",
            "8",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    server.assert_script_finished();

    // A task is alive at least from its first request to its last: count,
    // at every request, the tasks whose span covers it.
    let requests = server.requests();
    let spans: Vec<(Instant, Instant)> = ids
        .iter()
        .map(|id| {
            let times: Vec<Instant> = requests
                .iter()
                .filter(|request| request.first_user_message_text().contains(&needle(id)))
                .map(|request| request.received_at)
                .collect();
            assert_eq!(times.len(), 2, "{id}");
            (times[0], times[1])
        })
        .collect();
    let peak = requests
        .iter()
        .map(|request| {
            spans
                .iter()
                .filter(|(first, last)| {
                    *first <= request.received_at && request.received_at <= *last
                })
                .count()
        })
        .max()
        .unwrap();
    assert!(peak <= 8, "{peak} tasks were alive at once");
    assert!(peak >= 2, "tasks never overlapped (peak {peak})");

    let lines = results(&out_dir);
    assert_eq!(lines.len(), 40);
    for line in &lines {
        assert_eq!(line["state"], "completed", "{line}");
        assert!(line["report"].as_str().unwrap().contains("looks fine"));
        assert!(line["usage"]["input_tokens"].as_u64().unwrap() > 0);
        assert_eq!(line["turns"], 2);
        assert!(line["elapsed_ms"].as_u64().is_some());
        assert!(
            Path::new(line["transcript"].as_str().unwrap()).exists(),
            "{line}"
        );
        assert!(line["evidence"]["commands"].is_array(), "{line}");
    }
    // The summary table: one line per task with its first line, then the totals.
    assert!(
        out.stdout
            .contains("task-17  completed       task-17 looks fine"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("40 of 40 tasks: 40 completed"),
        "{}",
        out.stdout
    );
    // Progress on stderr, with counts and tokens.
    assert!(
        out.stderr
            .contains("40/40 done · 0 running · 0 queued · 0 failed"),
        "{}",
        out.stderr
    );
}

#[test]
fn kill_nine_at_half_then_a_rerun_finishes_the_rest_and_redoes_nothing() {
    let ids = ids_for("k", 20);
    let mut script = Script::new();
    for id in &ids {
        // The second step only serves a task that was in flight at the kill.
        script = script.conversation(
            &needle(id),
            vec![
                Step::text(&format!("{id} done")).delay(120),
                Step::text(&format!("{id} done after the kill")),
            ],
        );
    }
    let (env, server) = setup(script);
    let tasks = write_tasks(&env, "tasks.jsonl", &ids);
    let out_dir = env.path("out");
    let args = [
        tasks.to_str().unwrap(),
        "--concurrency",
        "2",
        "--out",
        out_dir.to_str().unwrap(),
    ];
    let mut first = batch_command(&env, &server, &args).spawn().unwrap();
    let results_file = out_dir.join("results.jsonl");
    wait_for_file(&results_file);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&results_file)
        .unwrap()
        .lines()
        .count()
        < 10
    {
        assert!(Instant::now() < deadline, "half the tasks never ended");
        std::thread::sleep(Duration::from_millis(5));
    }
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    let before: Vec<String> = results(&out_dir)
        .iter()
        .map(|line| line["task"].as_str().unwrap().to_owned())
        .collect();
    assert!(before.len() >= 10 && before.len() < 20, "{before:?}");

    let out = run_batch(&env, &server, &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let lines = results(&out_dir);
    // Nothing lost, nothing redone: one completed line per task.
    assert_eq!(lines.len(), 20, "{lines:?}");
    let mut tasks_done: Vec<&str> = lines
        .iter()
        .map(|line| line["task"].as_str().unwrap())
        .collect();
    tasks_done.sort_unstable();
    tasks_done.dedup();
    assert_eq!(tasks_done.len(), 20);
    assert!(lines.iter().all(|line| line["state"] == "completed"));
    // No task finished before the kill sent its first request again.
    for id in &before {
        assert_eq!(server.requests_for(&needle(id)).len(), 1, "{id} was redone");
    }
    assert!(
        out.stdout.contains("20 of 20 tasks: 20 completed"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_budget_that_runs_out_mid_batch_refuses_the_rest() {
    let ids = ids_for("b", 6);
    let mut script = Script::new();
    for id in &ids {
        script = script.conversation(&needle(id), vec![Step::text("ok").usage(1000, 200)]);
    }
    let (env, server) = setup(script);
    let tasks = write_tasks(&env, "tasks.jsonl", &ids);
    let out_dir = env.path("out");
    let out = run_batch(
        &env,
        &server,
        &[
            tasks.to_str().unwrap(),
            "--concurrency",
            "1",
            "--budget",
            "tokens=2500",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let lines = results(&out_dir);
    let states: Vec<&str> = lines
        .iter()
        .map(|line| line["state"].as_str().unwrap())
        .collect();
    // 1200 tokens a task: after three the batch is over its 2500.
    assert_eq!(
        states,
        [
            "completed",
            "completed",
            "completed",
            "refused_budget",
            "refused_budget",
            "refused_budget"
        ]
    );
    assert!(
        lines[5]["error"]
            .as_str()
            .unwrap()
            .contains("token budget (2500) is used up"),
        "{}",
        lines[5]
    );
    for id in &ids[3..] {
        assert!(server.requests_for(&needle(id)).is_empty(), "{id} ran");
    }
    assert!(
        out.stdout.contains("3 completed, 3 refused for budget"),
        "{}",
        out.stdout
    );
}

#[test]
fn interrupting_a_batch_leaves_no_process_and_no_running_record() {
    let (env, server) = setup(Script::new());
    let ids = ids_for("c", 10);
    let tasks = write_tasks(&env, "tasks.jsonl", &ids);
    let pids = env.path("pids");
    let out_dir = env.path("out");
    let mut command = batch_command(
        &env,
        &server,
        &[
            tasks.to_str().unwrap(),
            "--runner",
            "process",
            "--concurrency",
            "3",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    command.env(
        "ALCOVE_SUBAGENT_COMMAND",
        format!("echo $$ >> {}; sleep 30 & sleep 30", pids.display()),
    );
    let child = command.spawn().unwrap();
    let batch_pid = child.id();
    wait_for_file(&pids);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&pids).unwrap().lines().count() < 3 {
        assert!(Instant::now() < deadline, "three tasks never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(batch_pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = finish(child);
    assert_eq!(out.code, 130, "{}\n{}", out.stdout, out.stderr);
    let started: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|line| line.trim().parse().unwrap())
        .collect();
    assert_eq!(started.len(), 3, "tasks started after the interrupt");
    for pid in started {
        assert!(!process_alive(pid), "task process {pid} outlived the batch");
    }
    // The task shells' `sleep`s went with their process groups.
    let sleeping = Command::new("pgrep")
        .args(["-f", "sleep 30"])
        .output()
        .unwrap();
    let sleepers: Vec<u32> = String::from_utf8_lossy(&sleeping.stdout)
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/environ"))
                .is_ok_and(|environ| environ.contains(&env.home().display().to_string()))
        })
        .collect();
    assert!(sleepers.is_empty(), "left behind: {sleepers:?}");
    let lines = results(&out_dir);
    assert_eq!(lines.len(), 10);
    assert!(
        lines.iter().all(|line| line["state"] == "cancelled"),
        "{lines:?}"
    );
    assert!(out.stdout.contains("10 cancelled"), "{}", out.stdout);
}

#[test]
fn bad_task_files_are_usage_errors() {
    let (env, server) = setup(Script::new());
    env.write_file(
        "bad.jsonl",
        "{\"prompt\": \"ok\"}\n{\"id\": \"x y\", \"prompt\": \"p\"}\n",
    );
    let out = run_batch(&env, &server, &["bad.jsonl"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("bad.jsonl: line 2: task id `x y` must be"),
        "{}",
        out.stderr
    );
    let out = run_batch(&env, &server, &["missing.jsonl"]);
    assert_eq!(out.code, 2);
    env.write_file("ok.jsonl", "{\"prompt\": \"p\"}\n");
    let out = run_batch(&env, &server, &["ok.jsonl", "--budget", "dollars=5"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("unknown key `dollars`"),
        "{}",
        out.stderr
    );
    assert_eq!(server.request_count(), 0);
}

/// Runs `alcove exec --json` as the parent with waits allowed down to 50 ms.
pub(crate) fn run_parent(
    env: &TestEnv,
    server: &FakeServer,
    extra: &[&str],
    prompt: &str,
) -> Outcome {
    let mut args = vec!["-c", "agents.wait_min_ms=50", "--json"];
    args.extend_from_slice(extra);
    args.push(prompt);
    finish(exec_command(env, server, &args).spawn().unwrap())
}

/// Without `--runner`, `alcove batch` runs its tasks where `[batch] runner`
/// says, as the model's `spawn_batch` and a workflow's agents do: one rule
/// for every batch of children (it ran them in this process whatever the
/// config said).
#[test]
fn without_runner_a_batch_runs_where_batch_runner_says() {
    use crate::workflows::runners::{pids, write_remote};
    let ids = ids_for("r", 3);
    let mut script = Script::new();
    for id in &ids {
        script = script.conversation(&needle(id), vec![Step::text(&format!("{id} done"))]);
    }
    let (env, server) = setup(script);
    let remote = write_remote(&env);
    let tasks = write_tasks(&env, "tasks.jsonl", &ids);
    let out = finish(
        batch_command(
            &env,
            &server,
            &[
                "-c",
                "batch.runner=process",
                tasks.to_str().unwrap(),
                "--concurrency",
                "3",
            ],
        )
        .env("ALCOVE_SUBAGENT_COMMAND", &remote)
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    server.assert_script_finished();
    let mut started = pids(&env);
    started.sort_unstable();
    started.dedup();
    assert_eq!(
        started.len(),
        3,
        "each task is its own process: {started:?}"
    );
}
