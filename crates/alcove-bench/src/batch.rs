//! The batch scenarios (issue 13): 1,000 tasks × 2 model turns × 100 ms at
//! concurrency 64, through the model's `spawn_batch` (in-process children)
//! and through `alcove batch` (results.jsonl checked complete).
//!
//! The ideal is ⌈1000 / 64⌉ waves × 200 ms. Wall time for `spawn_batch` is
//! the parent's request answered with the batch → its request after `wait`
//! returned; for `alcove batch` it is the process's whole life (start-up and
//! results included). Peak RSS is the alcove process's, from the wrapper.
//! One measured run each: a run takes seconds and sends 2,000 requests.
//!
//! `alcove report` (issue 40) is measured on the `spawn_batch` session:
//! its wall time and peak RSS from its process's rusage, and the page's
//! size against the session's transcripts.

use std::collections::HashSet;
use std::time::Instant;

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::measure::{self, ms};
use crate::scenarios::Bench;

pub(crate) const TASKS: usize = 1000;
pub(crate) const CONCURRENCY: usize = 64;
pub(crate) const LATENCY_MS: u64 = 100;
const TURNS: u64 = 2;

/// One batch figure.
pub(crate) struct BatchFigure {
    pub(crate) workload: &'static str,
    pub(crate) wall_ms: f64,
    pub(crate) ideal_ms: f64,
    pub(crate) rss_mib: f64,
}

fn ideal_ms() -> f64 {
    (TASKS.div_ceil(CONCURRENCY) as u64 * TURNS * LATENCY_MS) as f64
}

fn task_steps(tag: &str) -> Vec<Step> {
    vec![
        Step::tool_call("Glob", json!({"pattern": "*.md"})).delay(LATENCY_MS),
        Step::text(&format!("{tag} has nothing to report.")).delay(LATENCY_MS),
    ]
}

fn tasks_file(env: &TestEnv, tag: &str) -> String {
    let lines: Vec<String> = (0..TASKS)
        .map(|i| {
            json!({"id": format!("t{i}"), "prompt": format!("{tag} t{i}. Check the folder.")})
                .to_string()
        })
        .collect();
    env.write_file("tasks.jsonl", &(lines.join("\n") + "\n"));
    env.path("tasks.jsonl").display().to_string()
}

/// `alcove report` of the `spawn_batch` session.
pub(crate) struct ReportFigure {
    pub(crate) wall_ms: f64,
    pub(crate) rss_mib: f64,
    pub(crate) page_bytes: u64,
    /// The session's transcripts (its own and every child's).
    pub(crate) transcript_bytes: u64,
    pub(crate) agents: usize,
}

/// The batch figures (`with_batch`) and the report's (`with_report`).
pub(crate) fn batch(
    bench: &Bench,
    with_batch: bool,
    with_report: bool,
) -> anyhow::Result<(Vec<BatchFigure>, Option<ReportFigure>)> {
    let (figure, env) = spawn_batch(bench)?;
    let report = if with_report {
        Some(report(bench, &env)?)
    } else {
        None
    };
    let figures = if with_batch {
        vec![figure, alcove_batch(bench)?]
    } else {
        Vec::new()
    };
    Ok((figures, report))
}

/// Runs `alcove report --last` in `env` (the batch session's) and sizes the page.
fn report(bench: &Bench, env: &TestEnv) -> anyhow::Result<ReportFigure> {
    let page = bench.scratch.join("report.html");
    let mut command = std::process::Command::new(&bench.alcove);
    command
        .current_dir(env.workspace())
        .env("ALCOVE_HOME", env.home())
        .args(["report", "--last", "--out"])
        .arg(&page)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let started = Instant::now();
    let usage = measure::run_measured(&command, &bench.scratch)?;
    let wall = started.elapsed();
    let page_bytes = std::fs::metadata(&page)
        .context("alcove report wrote no page")?
        .len();
    let text = std::fs::read_to_string(&page).context("cannot read the page")?;
    let agents = text.matches("\"status\":\"completed\"").count();
    let sessions = env.home().join("sessions");
    let mut transcript_bytes = 0;
    let mut folders = vec![sessions];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder)?.flatten() {
            let meta = entry.metadata()?;
            if meta.is_dir() {
                folders.push(entry.path());
            } else {
                transcript_bytes += meta.len();
            }
        }
    }
    if agents < TASKS {
        bail!("the report shows {agents} completed agents, not {TASKS} and more");
    }
    let _ = std::fs::remove_file(&page);
    Ok(ReportFigure {
        wall_ms: ms(wall),
        rss_mib: usage.max_rss_kib as f64 / 1024.0,
        page_bytes,
        transcript_bytes,
        agents,
    })
}

fn spawn_batch(bench: &Bench) -> anyhow::Result<(BatchFigure, TestEnv)> {
    let mut script = Script::new().conversation(
        "BATCH PARENT.",
        vec![
            // The batch tools are deferred: a model loads them first.
            Step::tool_call("ToolSearch", json!({"query": "select:spawn_batch,wait"})),
            Step::tool_call(
                "spawn_batch",
                json!({"tasks_file": "tasks.jsonl", "max_concurrent": CONCURRENCY}),
            ),
            Step::tool_call("wait", json!({"ids": ["batch-1"], "timeout_ms": 600_000})),
            Step::text("Every task reported."),
        ],
    );
    for i in 0..TASKS {
        script = script.conversation(&format!("BT t{i}."), task_steps("BT"));
    }
    let server = FakeServer::start(script);
    let env = TestEnv::new();
    tasks_file(&env, "BT");
    let slots = format!("agents.max_concurrent={}", CONCURRENCY + 1);
    let command = bench.exec(
        &env,
        &server,
        &[
            "-c",
            &slots,
            "-c",
            "agents.wait_max_ms=600000",
            "BATCH PARENT.",
        ],
    );
    let usage = measure::run_measured(&command, &bench.scratch)?;
    let parent = server.requests_for("BATCH PARENT.");
    // Requests: the first (answered with the load), then the one answered
    // with spawn_batch, then wait's, then the one after wait returned.
    if parent.len() != 4 {
        bail!("the batch parent made {} requests, not 4", parent.len());
    }
    let waited = parent[3]
        .tool_results()
        .into_iter()
        .last()
        .map(|(_, content, _)| content)
        .unwrap_or_default();
    let waited: Value = serde_json::from_str(&waited).context("wait returned no JSON")?;
    let completed = waited["batches"]["batch-1"]["counts"]["completed"].as_u64();
    if completed != Some(TASKS as u64) {
        bail!("spawn_batch completed {completed:?} of {TASKS} tasks: {waited}");
    }
    let figure = BatchFigure {
        workload: "`spawn_batch` from the model, in-process children",
        wall_ms: ms(parent[3].received_at.duration_since(parent[1].received_at)),
        ideal_ms: ideal_ms(),
        rss_mib: usage.max_rss_kib as f64 / 1024.0,
    };
    Ok((figure, env))
}

fn alcove_batch(bench: &Bench) -> anyhow::Result<BatchFigure> {
    let mut script = Script::new();
    for i in 0..TASKS {
        script = script.conversation(&format!("AB t{i}."), task_steps("AB"));
    }
    let server = FakeServer::start(script);
    let env = TestEnv::new();
    let tasks = tasks_file(&env, "AB");
    let out = env.path("out");
    let mut command = env.command(&bench.alcove, &server);
    command
        .arg("batch")
        .arg(&tasks)
        .args(["--concurrency", &CONCURRENCY.to_string(), "--out"])
        .arg(&out);
    let started = Instant::now();
    let usage = measure::run_measured(&command, &bench.scratch)?;
    let wall = started.elapsed();
    let text = std::fs::read_to_string(out.join("results.jsonl"))
        .context("alcove batch wrote no results.jsonl")?;
    let mut done = HashSet::new();
    for line in text.lines() {
        let record: Value =
            serde_json::from_str(line).context("a results.jsonl line is not JSON")?;
        if record["state"] == "completed" {
            done.insert(record["task"].as_str().unwrap_or_default().to_owned());
        }
    }
    if done.len() != TASKS {
        bail!(
            "results.jsonl holds {} of {TASKS} completed tasks",
            done.len()
        );
    }
    Ok(BatchFigure {
        workload: "`alcove batch`, whole process; results.jsonl checked complete",
        wall_ms: ms(wall),
        ideal_ms: ideal_ms(),
        rss_mib: usage.max_rss_kib as f64 / 1024.0,
    })
}
