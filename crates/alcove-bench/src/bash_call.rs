//! What a confined `Bash` call costs alcove beyond the shell itself: a
//! session of 40 turns each running `true` in the default sandbox, against
//! a session of one turn, and against 40 `bash -c true` run directly. The
//! per-turn band of the long session has three such calls in ten turns, so
//! this isolates the part of it that is starting confined commands.
//!
//! The same calls at a model's pace (replies 100 ms apart) measure wall
//! time instead: how long a turn with a `Bash` call takes between the reply
//! and the next request, against a turn with a `Read`. Starting a command
//! can wait on the kernel where CPU shows nothing (a pids cgroup move waits
//! for an RCU grace period when none came just before: bench/notes.md,
//! point 38), and back-to-back calls would hide it.

use std::process::{Command, Stdio};
use std::time::Duration;

use alcove_testkit::{FakeServer, RecordedRequest, Script, Step, TestEnv};
use anyhow::bail;
use serde_json::json;

use crate::measure::{self, median, ms};
use crate::scenarios::Bench;

/// Bash calls in the long session.
const CALLS: usize = 40;

/// Calls in a session at a model's pace, and the reply's delay.
const PACED_CALLS: usize = 8;
const PACE_MS: u64 = 100;

/// CPU of confined `Bash` calls of `true`, and their wall time at a
/// model's pace.
pub(crate) struct BashCall {
    pub(crate) calls: usize,
    /// CPU per turn with one call, shell included, µs (median over runs).
    pub(crate) turn_us: f64,
    /// CPU of `bash -c true` run directly, µs.
    pub(crate) shell_us: f64,
    /// Wall time of a turn with a `Bash` call of `true` at a model's pace,
    /// from the reply to the next request, less the reply's delay, ms.
    pub(crate) paced_bash_ms: f64,
    /// The same for a turn with a `Read` of a small file.
    pub(crate) paced_read_ms: f64,
    pub(crate) paced_calls: usize,
    pub(crate) pace_ms: u64,
}

impl BashCall {
    /// What alcove adds to a turn with a confined call beyond the shell.
    pub(crate) fn beyond_shell_us(&self) -> f64 {
        self.turn_us - self.shell_us
    }
}

pub(crate) fn bash_call(bench: &Bench) -> anyhow::Result<BashCall> {
    let mut script = Script::new();
    for run in 0..=bench.runs {
        script = script.conversation(&format!("BASHCALL 1 run {run}."), vec![Step::text("done")]);
        let mut steps: Vec<Step> = (0..CALLS)
            .map(|_| Step::tool_call("Bash", json!({"command": "true"})))
            .collect();
        steps.push(Step::text("done"));
        script = script.conversation(&format!("BASHCALL {CALLS} run {run}."), steps);
    }
    let server = FakeServer::start(script);
    let mut per_turn = Vec::new();
    for run in 0..=bench.runs {
        let mut cpu = [0.0; 2];
        for (slot, turns) in [1, CALLS].into_iter().enumerate() {
            let env = TestEnv::new();
            let prompt = format!("BASHCALL {turns} run {run}.");
            let command = bench.exec(
                &env,
                &server,
                &["--permission-mode", "bypassPermissions", &prompt],
            );
            cpu[slot] = ms(measure::run_measured(&command, &bench.scratch)?.cpu);
            let requests = if turns == 1 { 1 } else { turns + 1 };
            if !ran_every_call(&server.requests_for(&prompt), requests) {
                bail!("the {turns}-call Bash session did not run every call");
            }
        }
        if run > 0 {
            per_turn.push((cpu[1] - cpu[0]) * 1000.0 / CALLS as f64);
        }
    }
    let mut shells = Vec::new();
    for _ in 0..bench.runs {
        let before = measure::children_cpu()?;
        for _ in 0..CALLS {
            let status = Command::new("bash")
                .args(["-c", "true"])
                .stdout(Stdio::null())
                .status()?;
            if !status.success() {
                bail!("bash -c true failed");
            }
        }
        shells.push(ms(measure::children_cpu()? - before) * 1000.0 / CALLS as f64);
    }
    let (paced_bash_ms, paced_read_ms) = paced(bench)?;
    Ok(BashCall {
        calls: CALLS,
        turn_us: median(&per_turn),
        shell_us: median(&shells),
        paced_bash_ms,
        paced_read_ms,
        paced_calls: PACED_CALLS,
        pace_ms: PACE_MS,
    })
}

/// Median wall time of a turn with a `Bash` call and with a `Read`, at a
/// model's pace: the gap between consecutive requests less the reply's
/// delay, over every turn of every run.
fn paced(bench: &Bench) -> anyhow::Result<(f64, f64)> {
    let calls = [
        ("Bash", json!({"command": "true"})),
        ("Read", json!({"file_path": "notes.md"})),
    ];
    let mut script = Script::new();
    for run in 0..=bench.runs {
        for (tool, input) in &calls {
            let mut steps: Vec<Step> = (0..PACED_CALLS)
                .map(|_| Step::tool_call(tool, input.clone()).delay(PACE_MS))
                .collect();
            steps.push(Step::text("done"));
            script = script.conversation(&format!("PACED {tool} run {run}."), steps);
        }
    }
    let server = FakeServer::start(script);
    let mut turns: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for run in 0..=bench.runs {
        for (slot, (tool, _)) in calls.iter().enumerate() {
            let env = TestEnv::new();
            env.write_file("notes.md", "a small file\n");
            let prompt = format!("PACED {tool} run {run}.");
            let command = bench.exec(
                &env,
                &server,
                &["--permission-mode", "bypassPermissions", &prompt],
            );
            measure::run_measured(&command, &bench.scratch)?;
            let requests = server.requests_for(&prompt);
            if !ran_every_call(&requests, PACED_CALLS + 1) {
                bail!("the paced {tool} session did not run every call");
            }
            if run == 0 {
                continue;
            }
            for pair in requests.windows(2) {
                let gap = pair[1].received_at.duration_since(pair[0].received_at);
                let beyond = gap.saturating_sub(Duration::from_millis(PACE_MS));
                turns[slot].push(beyond.as_secs_f64() * 1000.0);
            }
        }
    }
    Ok((median(&turns[0]), median(&turns[1])))
}

/// Whether a session made `expected` requests and no tool call in it failed.
fn ran_every_call(requests: &[RecordedRequest], expected: usize) -> bool {
    let failed = requests
        .last()
        .map(|last| last.tool_results().iter().any(|(_, _, error)| *error));
    requests.len() == expected && failed == Some(false)
}
