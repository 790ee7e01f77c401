//! What a confined `Bash` call costs alcove beyond the shell itself: a
//! session of 40 turns each running `true` in the default sandbox, against
//! a session of one turn, and against 40 `bash -c true` run directly. The
//! per-turn band of the long session has three such calls in ten turns, so
//! this isolates the part of it that is starting confined commands.

use std::process::{Command, Stdio};

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use anyhow::bail;
use serde_json::json;

use crate::measure::{self, median, ms};
use crate::scenarios::Bench;

/// Bash calls in the long session.
const CALLS: usize = 40;

/// CPU of confined `Bash` calls of `true`.
pub(crate) struct BashCall {
    pub(crate) calls: usize,
    /// CPU per turn with one call, shell included, µs (median over runs).
    pub(crate) turn_us: f64,
    /// CPU of `bash -c true` run directly, µs.
    pub(crate) shell_us: f64,
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
            let results = server.requests_for(&prompt);
            let failed = results
                .last()
                .map(|last| last.tool_results().iter().any(|(_, _, error)| *error));
            let requests = if turns == 1 { 1 } else { turns + 1 };
            if results.len() != requests || failed != Some(false) {
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
    Ok(BashCall {
        calls: CALLS,
        turn_us: median(&per_turn),
        shell_us: median(&shells),
    })
}
