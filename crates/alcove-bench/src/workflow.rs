//! The workflow scenario (issue 47's `alcove workflow run`): a generated
//! script runs [`AGENTS`] agents through one `pipeline` stage at the
//! default concurrency ([`CONCURRENCY`]), each agent [`TURNS`] model turns
//! answered at once by the fake server.
//!
//! Wall time is the whole `alcove workflow run FILE --yes --json` process
//! (start-up, plan and result included), as the `alcove batch` row times
//! it. With instant answers the fan-out's ideal (turns × scripted latency)
//! would be zero, so the ideal is the fan-out's bare reference instead:
//! the same number of fake-model round trips at the same concurrency, made
//! by no alcove at all — [`AGENTS`] `alcove-bench __connect` clients, at
//! most [`CONCURRENCY`] alive at once, each making its [`TURNS`] requests
//! in turn (a new one starts as one ends), timed from the first spawn to
//! the last exit. It is what the machine and the fake server cost for the
//! same traffic; the two alternate run by run, so both see the same machine.
//!
//! Peak RSS is the alcove process's, from the `__rusage` wrapper, as every
//! other scenario reads it; per running agent it is (that peak − a plain
//! one-turn session's peak) / [`CONCURRENCY`], the plain session measured
//! in the same run. Its limit is the live-children row's budget spread the
//! same way: (40 MB − the plain session's peak) / 16.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::measure::{self, median, ms};
use crate::scenarios::Bench;

/// Agents the script runs.
pub(crate) const AGENTS: usize = 200;
/// `alcove workflow run`'s default `--concurrency`.
pub(crate) const CONCURRENCY: usize = 16;
/// Model turns per agent: a `Glob`, then the answer.
pub(crate) const TURNS: usize = 2;
/// The live-children row's peak RSS limit for 16 children, in MB.
pub(crate) const CHILDREN_LIMIT_MB: f64 = 40.0;

/// The workflow figures (medians over the runs).
pub(crate) struct WorkflowFigure {
    /// The `alcove workflow run` process, spawn to exit.
    pub(crate) wall_ms: f64,
    /// The bare clients' pool, first spawn to last exit.
    pub(crate) ideal_ms: f64,
    /// The workflow process's peak RSS.
    pub(crate) rss_mib: f64,
    /// A one-turn `alcove exec` session's peak RSS.
    pub(crate) plain_rss_mib: f64,
}

impl WorkflowFigure {
    /// (peak − plain) / concurrency, in MB.
    pub(crate) fn per_agent_mb(&self) -> f64 {
        crate::report::mb(self.rss_mib - self.plain_rss_mib) / CONCURRENCY as f64
    }

    /// (40 MB − plain) / 16, in MB: the live-children limit per child.
    pub(crate) fn per_agent_limit_mb(&self) -> f64 {
        (CHILDREN_LIMIT_MB - crate::report::mb(self.plain_rss_mib)) / 16.0
    }
}

fn script_text(run: usize) -> String {
    format!(
        "export const meta = {{ name: 'bench-pipeline', description: '{AGENTS} agents in one pipeline stage' }}\n\
         const items = Array.from({{ length: {AGENTS} }}, (_, i) => i)\n\
         const answers = await pipeline(items, (i) => agent(`WF r{run} a${{i}}. Check the folder.`, {{ label: `a${{i}}` }}))\n\
         return answers.filter((answer) => answer !== null).length\n"
    )
}

/// A one-turn `alcove exec` session's peak RSS per run (prompt
/// `{tag} r{run}.`, scripted by the caller), median in MiB.
pub(crate) fn plain_session_rss(
    bench: &Bench,
    server: &FakeServer,
    tag: &str,
    run: usize,
) -> anyhow::Result<f64> {
    let env = TestEnv::new();
    let command = bench.exec(&env, server, &[&format!("{tag} r{run}.")]);
    let usage = measure::run_measured(&command, &bench.scratch)?;
    Ok(usage.max_rss_kib as f64 / 1024.0)
}

pub(crate) fn workflow(bench: &Bench) -> anyhow::Result<WorkflowFigure> {
    let mut script = Script::new();
    for run in 0..=bench.runs {
        script = script.conversation(&format!("WFPLAIN r{run}."), vec![Step::text("ok")]);
        for i in 0..AGENTS {
            script = script.conversation(
                &format!("WF r{run} a{i}."),
                vec![
                    Step::tool_call("Glob", json!({"pattern": "*.md"})),
                    Step::text(&format!("a{i} has nothing to report.")),
                ],
            );
            script = script.conversation(
                &format!("WFBARE r{run} a{i}."),
                vec![Step::text("ok"); TURNS],
            );
        }
    }
    let server = FakeServer::start(script);
    let (mut wall, mut ideal, mut rss, mut plain) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for run in 0..=bench.runs {
        let env = TestEnv::new();
        env.write_file("bench.js", &script_text(run));
        env.write_file("README.md", "# a folder\n");
        let mut command = env.command(&bench.alcove, &server);
        command.args(["workflow", "run", "bench.js", "--yes", "--json"]);
        let started = Instant::now();
        let (usage, stdout) = measure::run_measured_output(&command, &bench.scratch)?;
        let elapsed = started.elapsed();
        check_ended(&String::from_utf8_lossy(&stdout))?;
        let bare = bare_pool(&server, run)?;
        let plain_mib = plain_session_rss(bench, &server, "WFPLAIN", run)?;
        if run > 0 {
            wall.push(ms(elapsed));
            ideal.push(bare);
            rss.push(usage.max_rss_kib as f64 / 1024.0);
            plain.push(plain_mib);
        }
    }
    Ok(WorkflowFigure {
        wall_ms: median(&wall),
        ideal_ms: median(&ideal),
        rss_mib: median(&rss),
        plain_rss_mib: median(&plain),
    })
}

/// The run completed and every agent answered.
fn check_ended(stdout: &str) -> anyhow::Result<()> {
    let last = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .next_back()
        .context("the workflow printed no JSON event")?;
    if last["type"] != "workflow_ended"
        || last["status"] != "completed"
        || last["result"] != json!(AGENTS)
    {
        bail!(
            "the workflow did not complete with {AGENTS} answers: {}",
            measure::tail(stdout, 2000)
        );
    }
    Ok(())
}

/// [`AGENTS`] bare clients, at most [`CONCURRENCY`] at once, each making
/// [`TURNS`] requests in turn: first spawn to last exit, in ms.
fn bare_pool(server: &FakeServer, run: usize) -> anyhow::Result<f64> {
    let address = server.url().trim_start_matches("http://").to_owned();
    let me = std::env::current_exe().context("cannot find myself")?;
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..CONCURRENCY)
            .map(|_| {
                scope.spawn(|| -> anyhow::Result<()> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= AGENTS {
                            return Ok(());
                        }
                        let status = std::process::Command::new(&me)
                            .args([
                                "__connect",
                                &address,
                                &TURNS.to_string(),
                                &format!("WFBARE r{run} a{i}."),
                            ])
                            .status()?;
                        if !status.success() {
                            bail!("bare client {i} failed: {status}");
                        }
                    }
                })
            })
            .collect();
        workers.into_iter().try_for_each(|worker| {
            worker
                .join()
                .map_err(|_| anyhow::anyhow!("a bare client thread panicked"))?
        })
    })?;
    Ok(ms(started.elapsed()))
}
