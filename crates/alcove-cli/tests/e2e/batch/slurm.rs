//! The Slurm runner on a real single-node cluster (`tests/slurm/up.sh`).
//!
//! These tests need a running cluster: `.ci/run` brings one up. They are
//! skipped only when `ALCOVE_SKIP_SLURM=1` says so; without a cluster and
//! without that variable they fail.

use std::process::Command;
use std::time::{Duration, Instant};

use alcove_testkit::{Script, Step};

use super::{batch_command, ids_for, needle, results, run_batch, write_tasks};
use crate::support::{finish, setup, wait_for_file};

/// False (after saying so) when the tests are explicitly skipped; panics
/// when no cluster answers.
pub(crate) fn cluster() -> bool {
    if std::env::var("ALCOVE_SKIP_SLURM").is_ok_and(|value| value == "1") {
        eprintln!("ALCOVE_SKIP_SLURM=1: skipping the Slurm tests");
        return false;
    }
    let sinfo = Command::new("sinfo").args(["-h", "-o", "%T"]).output();
    match sinfo {
        Ok(output) if output.status.success() && !output.stdout.is_empty() => true,
        other => panic!(
            "no Slurm cluster answers (`sinfo`: {other:?}); run tests/slurm/up.sh as root, \
             or set ALCOVE_SKIP_SLURM=1 to skip these tests"
        ),
    }
}

/// `squeue`'s jobs whose names start with `prefix`, as `name state`.
fn queued_jobs(prefix: &str) -> Vec<String> {
    let out = Command::new("squeue")
        .args(["-h", "-o", "%j %T"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|line| line.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

/// Asserts that no job of `prefix` is pending or running any more, and that
/// the ones Slurm still lists as COMPLETING (its own clean-up after the step
/// ended, slow on a loaded machine) leave `squeue` within half a minute.
pub(crate) fn assert_no_job_left(prefix: &str) {
    let active: Vec<String> = queued_jobs(prefix)
        .into_iter()
        .filter(|line| !line.ends_with(" COMPLETING"))
        .collect();
    assert_eq!(active, Vec::<String>::new(), "jobs still active");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed = queued_jobs(prefix);
        if listed.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "jobs still listed after 30 s: {listed:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn eight_tasks_run_as_srun_job_steps_with_their_job_ids_recorded() {
    if !cluster() {
        return;
    }
    let ids = ids_for("slurm", 8);
    let mut script = Script::new();
    for id in &ids {
        script = script.conversation(
            &needle(id),
            vec![Step::text(&format!("{id} ran on the cluster"))],
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
            "--runner",
            "slurm",
            "--concurrency",
            "4",
            "--budget",
            "task_secs=120",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    server.assert_script_finished();
    let lines = results(&out_dir);
    assert_eq!(lines.len(), 8);
    let mut job_ids: Vec<u64> = lines
        .iter()
        .map(|line| {
            assert_eq!(line["state"], "completed", "{line}");
            assert!(
                line["report"]
                    .as_str()
                    .unwrap()
                    .contains("ran on the cluster"),
                "{line}"
            );
            line["job_id"].as_str().unwrap().parse().unwrap()
        })
        .collect();
    job_ids.sort_unstable();
    job_ids.dedup();
    assert_eq!(job_ids.len(), 8, "every task is its own job");
    // No job of the batch is left behind.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("batch.json")).unwrap())
            .unwrap();
    let batch = manifest["batch_id"].as_str().unwrap();
    assert_no_job_left(&format!("alcove-{batch}-"));
}

#[test]
fn a_cancelled_slurm_batch_leaves_no_job_in_squeue() {
    if !cluster() {
        return;
    }
    let ids = ids_for("scancel", 4);
    let mut script = Script::new();
    for id in &ids {
        script = script.conversation(&needle(id), vec![Step::hang()]);
    }
    let (env, server) = setup(script);
    let tasks = write_tasks(&env, "tasks.jsonl", &ids);
    let out_dir = env.path("out");
    let child = batch_command(
        &env,
        &server,
        &[
            tasks.to_str().unwrap(),
            "--runner",
            "slurm",
            "--concurrency",
            "2",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    )
    .spawn()
    .unwrap();
    let pid = child.id();
    wait_for_file(&out_dir.join("batch.json"));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("batch.json")).unwrap())
            .unwrap();
    let prefix = format!("alcove-{}-", manifest["batch_id"].as_str().unwrap());
    // Both running tasks reached the model (so their jobs are running).
    let deadline = Instant::now() + Duration::from_secs(60);
    while ids
        .iter()
        .filter(|id| !server.requests_for(&needle(id)).is_empty())
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "the jobs never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(queued_jobs(&prefix).len(), 2);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = finish(child);
    assert_eq!(out.code, 143, "{}\n{}", out.stdout, out.stderr);
    assert_no_job_left(&prefix);
    let lines = results(&out_dir);
    assert!(
        lines.iter().all(|line| line["state"] == "cancelled"),
        "{lines:?}"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|line| line["job_id"].is_string())
            .count(),
        2,
        "{lines:?}"
    );
}

#[test]
fn the_models_batches_run_on_slurm_with_batch_runner_slurm() {
    if !cluster() {
        return;
    }
    let mut script = Script::new().conversation(
        "parent uses the cluster",
        vec![
                    crate::support::load_deferred(),
            Step::tool_call(
                "spawn_batch",
                serde_json::json!({"tasks": [{"id": "m-1", "prompt": "[m-1] go"}, {"id": "m-2", "prompt": "[m-2] go"}]}),
            ),
            Step::tool_call("wait", serde_json::json!({"ids": ["batch-1"], "timeout_ms": 60_000})),
            Step::text("done"),
        ],
    );
    for id in ["m-1", "m-2"] {
        script = script.conversation(
            &format!("[{id}]"),
            vec![Step::text(&format!("{id} on a node"))],
        );
    }
    let (env, server) = setup(script);
    let out = super::run_parent(
        &env,
        &server,
        &["-c", "batch.runner=slurm", "--allow", "spawn_batch"],
        "parent uses the cluster",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    server.assert_script_finished();
    let dir = std::fs::read_dir(env.home().join("sessions"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.join("batch-1").is_dir())
        .unwrap()
        .join("batch-1");
    let lines = results(&dir);
    assert_eq!(lines.len(), 2);
    for line in &lines {
        assert_eq!(line["state"], "completed", "{line}");
        assert!(
            line["job_id"].as_str().unwrap().parse::<u64>().is_ok(),
            "{line}"
        );
    }
}

/// Shims for `srun` and `scancel` first on PATH, each logging to `log` and
/// then running the real one: `srun` logs the step's job name and what
/// `squeue` lists as it starts; `scancel` logs its start, takes two seconds
/// (widening the window a wrong order would show in), runs, and logs its
/// end with the wall clock in milliseconds (the transcript's `ts` clock).
fn slurm_shims(env: &alcove_testkit::TestEnv, log: &std::path::Path) -> std::path::PathBuf {
    let which = |name: &str| {
        let out = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let (srun, scancel) = (which("srun"), which("scancel"));
    let log = log.display();
    env.write_file(
        "shims/srun",
        &format!(
            "#!/bin/sh\nname=''\nfor arg in \"$@\"; do case \"$arg\" in --job-name=*) name=\"${{arg#--job-name=}}\";; esac; done\n\
             echo \"srun $name queued=[$(squeue -h -o %j | tr '\\n' ' ')]\" >> '{log}'\nexec '{srun}' \"$@\"\n"
        ),
    );
    env.write_file(
        "shims/scancel",
        &format!(
            "#!/bin/sh\necho \"scancel-begin $*\" >> '{log}'\nsleep 2\n'{scancel}' \"$@\"\nrc=$?\n\
             echo \"scancel-end $(date +%s%3N) $*\" >> '{log}'\nexit $rc\n"
        ),
    );
    let dir = env.path("shims");
    for name in ["srun", "scancel"] {
        Command::new("chmod")
            .args(["+x", dir.join(name).to_str().unwrap()])
            .status()
            .unwrap();
    }
    dir
}

/// Issue 49: a cancelled task's job step is `scancel`'d and gone from
/// `squeue` inside the child's life, before its slot is released and its
/// one end record (`agent_ended`, emitted right after the slot is settled)
/// is written. At concurrency 1 the first task's step hangs until its wall
/// time (`task_secs`) cancels it. The child's `agent_ended` must come after
/// its `scancel` ended (this fails when the stop runs after the life, as
/// before issue 49); the second task's `srun` must come after it too, and
/// `squeue` must no longer list the first step when the second starts.
#[test]
fn a_cancelled_slurm_step_is_gone_from_squeue_before_the_next_task_starts() {
    if !cluster() {
        return;
    }
    let script = Script::new()
        .conversation(&needle("order-1"), vec![Step::hang()])
        .conversation(&needle("order-2"), vec![Step::text("order-2 ran")]);
    let (env, server) = setup(script);
    let ids = vec!["order-1".to_owned(), "order-2".to_owned()];
    let tasks = write_tasks(&env, "tasks.jsonl", &ids);
    let out_dir = env.path("out");
    let log = env.path("slurm.log");
    let shims = slurm_shims(&env, &log);
    let path = format!(
        "{}:{}",
        shims.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = finish(
        batch_command(
            &env,
            &server,
            &[
                tasks.to_str().unwrap(),
                "--runner",
                "slurm",
                "--concurrency",
                "1",
                "--budget",
                "task_secs=8",
                "--out",
                out_dir.to_str().unwrap(),
            ],
        )
        .env("PATH", path)
        .spawn()
        .unwrap(),
    );
    // The first task did not complete: the batch says so.
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let lines = results(&out_dir);
    let state = |id: &str| {
        lines
            .iter()
            .find(|line| line["task"] == id)
            .unwrap_or_else(|| panic!("no result for {id}: {lines:?}"))["state"]
            .clone()
    };
    assert_ne!(state("order-1"), "completed", "{lines:?}");
    assert_eq!(state("order-2"), "completed", "{lines:?}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("batch.json")).unwrap())
            .unwrap();
    let batch = manifest["batch_id"].as_str().unwrap();
    let (first, second) = (
        format!("alcove-{batch}-order-1"),
        format!("alcove-{batch}-order-2"),
    );
    let log = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let position = |what: &dyn Fn(&str) -> bool| lines.iter().rposition(|line| what(line));
    let first_started = lines
        .iter()
        .position(|line| line.starts_with(&format!("srun {first} ")))
        .unwrap_or_else(|| panic!("the first step never started:\n{log}"));
    let scancel_ended = position(&|line| {
        line.starts_with("scancel-end") && line.contains(&format!("--name={first}"))
    })
    .unwrap_or_else(|| panic!("the first step was never scancel'd:\n{log}"));
    let second_started = lines
        .iter()
        .position(|line| line.starts_with(&format!("srun {second} ")))
        .unwrap_or_else(|| panic!("the second step never started:\n{log}"));
    assert!(
        first_started < scancel_ended && scancel_ended < second_started,
        "the second step started before the first was scancel'd:\n{log}"
    );
    assert!(
        !lines[second_started].contains(&first),
        "squeue still listed the first step when the second started:\n{log}"
    );
    // The first child's one end record came after its step was scancel'd.
    let scancel_ms: u64 = lines[scancel_ended]
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let cut: Vec<serde_json::Value> = crate::support::transcripts(&env)
        .iter()
        .flat_map(|path| crate::support::read_jsonl(path))
        .filter(|event| event["type"] == "agent_ended" && event["status"] != "completed")
        .collect();
    assert_eq!(cut.len(), 1, "{cut:?}");
    let ended_ms = cut[0]["ts"].as_u64().unwrap();
    assert!(
        ended_ms >= scancel_ms,
        "agent_ended (ts {ended_ms}) was written before scancel ended (ts {scancel_ms}):\n{log}"
    );
    assert_no_job_left(&format!("alcove-{batch}-"));
}
