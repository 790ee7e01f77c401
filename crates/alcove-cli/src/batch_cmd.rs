//! `alcove batch tasks.jsonl`: the batch engine without a parent model.
//!
//! Opens a session, queues every task of the file that an earlier run with
//! the same `--out` did not complete, runs them through the chosen runner
//! (`inprocess`, `process`, `slurm`), shows live progress on stderr and a
//! summary table on stdout. Exit status: 0 only when every task completed,
//! 1 otherwise, 2 for bad input, 130/143 when interrupted.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use alcove_core::batch::{
    Batch, BatchBudget, BatchPlan, ChildRunner, Isolation, TaskRunner, parse_tasks_jsonl, summary,
};
use alcove_core::{EventSink, NoApprover};
use anyhow::Context;
use clap::Args;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::output::Trace;
use crate::session::{FrontEnd, Session, SessionEnd};
use crate::task_commands::{self, RunnerKind};
use crate::{CommonArgs, UsageError, batch_progress, exec};
use alcove_protocol::RunStatus;

/// The summary table shows at most this many tasks (results.jsonl has all).
const TABLE_LINES: usize = 200;

/// `alcove batch` arguments.
#[derive(Debug, Args)]
pub(crate) struct BatchArgs {
    /// The tasks: a JSONL file, one {"id"?, "description"?, "prompt"} per line.
    tasks: PathBuf,
    /// The agent type every task runs as (default general-purpose).
    #[arg(long, value_name = "TYPE")]
    agent_type: Option<String>,
    /// How many tasks run at once (default 4).
    #[arg(long, value_name = "N", default_value_t = 4)]
    concurrency: usize,
    /// Where tasks run: in this process, through agents.command, or as Slurm job steps
    /// (default: [batch] runner, else agents.command when set, else in this process).
    #[arg(long, value_enum)]
    runner: Option<RunnerKind>,
    /// The batch folder (results.jsonl); rerunning with the same folder skips
    /// completed tasks. Default: <tasks file>.out next to the file.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Limits: tokens=N,turns=N (whole batch), task_tokens=N,task_turns=N,task_secs=N.
    #[arg(long, value_name = "LIMITS")]
    budget: Option<String>,
}

/// What an earlier run stored in the batch folder, so a rerun keeps the id.
#[derive(Debug, serde::Serialize, Deserialize)]
struct Manifest {
    batch_id: String,
    tasks_file: PathBuf,
}

pub(crate) async fn run(common: &CommonArgs, args: BatchArgs) -> anyhow::Result<u8> {
    let text = std::fs::read_to_string(&args.tasks)
        .map_err(|err| UsageError(format!("{}: {err}", args.tasks.display())))?;
    let tasks = parse_tasks_jsonl(&text)
        .map_err(|reason| UsageError(format!("{}: {reason}", args.tasks.display())))?;
    let budget = match &args.budget {
        Some(text) => {
            BatchBudget::parse(text).map_err(|reason| UsageError(format!("--{reason}")))?
        }
        None => BatchBudget::default(),
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.tasks.with_extension("out"));
    let mut sinks: Vec<Arc<dyn EventSink>> = Vec::new();
    if exec::trace_enabled() {
        sinks.push(Arc::new(Trace));
    }
    if args.concurrency == 0 {
        return Err(UsageError("--concurrency must be at least 1".to_owned()).into());
    }
    // The session's slots are the batch's: every in-process task takes one.
    let mut common = common.clone();
    common
        .overrides
        .push(format!("agents.max_concurrent={}", args.concurrency));
    let common = &common;
    let front_end = FrontEnd {
        sinks,
        approver: Arc::new(NoApprover),
        max_turns: None,
        resume: None,
        extra_mcp: Vec::new(),
        file_source: None,
    };
    let session = Session::open(common, front_end).await?;
    session.ready().await;
    let concurrency = args.concurrency;
    let agent_type = args
        .agent_type
        .clone()
        .unwrap_or_else(|| alcove_core::DEFAULT_AGENT_TYPE.to_owned());
    if session.supervisor.definitions().get(&agent_type).is_none() {
        return Err(UsageError(format!(
            "unknown agent type `{agent_type}`; known: {}",
            session.supervisor.definitions().names()
        ))
        .into());
    }
    let batch_id = batch_id(&out, &args.tasks)?;
    let cancel = CancellationToken::new();
    let runner = runner(common, &session, args.runner, &cancel)?;
    let plan = BatchPlan {
        id: batch_id,
        tasks,
        agent_type,
        concurrency,
        budget,
        isolation: Isolation::Shared,
        dir: out.clone(),
    };
    let batch = Batch::open(plan, cancel.clone()).map_err(anyhow::Error::msg)?;
    let signal = tokio::spawn(crate::exec::watch_signals(cancel.clone()));
    let progress = tokio::spawn(batch_progress::show(
        batch.clone(),
        std::io::stderr().is_terminal(),
    ));
    batch.run(runner, Vec::new()).await;
    progress.abort();
    let _ = progress.await;
    let signal_code = exec::signal_code(cancel.is_cancelled(), signal).await;
    let counts = batch.counts();
    let halt = session.supervisor.provider_halt();
    let status = match (&halt, signal_code) {
        (Some(_), _) => RunStatus::Halted,
        (None, Some(_)) => RunStatus::Aborted,
        (None, None) if counts.all_completed() => RunStatus::Completed,
        (None, None) => RunStatus::Failed,
    };
    session
        .end(SessionEnd {
            reason: "other",
            status,
            turns: 0,
            usage: alcove_protocol::Usage::default(),
            error: halt
                .as_ref()
                .map(|halt| halt.explain())
                .or_else(|| (status == RunStatus::Failed).then(|| summary(&counts))),
            result: None,
        })
        .await;

    eprintln!("{}", batch_progress::line(&batch));
    let (table, left_out) = batch.table(TABLE_LINES);
    println!("{table}");
    if left_out > 0 {
        println!("… {left_out} more tasks in results.jsonl");
    }
    println!("batch {}: {}", batch.id(), summary(&counts));
    println!("results: {}", batch.results_path().display());
    if let Some(err) = batch.write_error() {
        eprintln!("alcove: {err}");
        return Ok(1);
    }
    if let Some(halt) = halt {
        eprintln!(
            "alcove: the model provider refused the session; {} tasks not run. {}",
            counts.not_run,
            halt.explain()
        );
        return Ok(1);
    }
    Ok(match signal_code {
        Some(code) => code,
        None if counts.all_completed() => 0,
        None => 1,
    })
}

/// The batch id stored in `out`, or a new one stored there.
fn batch_id(out: &Path, tasks: &Path) -> anyhow::Result<String> {
    let manifest = out.join("batch.json");
    if let Ok(text) = std::fs::read_to_string(&manifest) {
        let stored: Manifest = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a batch manifest", manifest.display()))?;
        return Ok(stored.batch_id);
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let id = format!("b{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let stored = Manifest {
        batch_id: id.clone(),
        tasks_file: tasks.to_owned(),
    };
    std::fs::write(&manifest, serde_json::to_vec_pretty(&stored)?)
        .with_context(|| format!("cannot write {}", manifest.display()))?;
    Ok(id)
}

fn runner(
    common: &CommonArgs,
    session: &Session,
    flag: Option<RunnerKind>,
    cancel: &CancellationToken,
) -> anyhow::Result<Arc<dyn TaskRunner>> {
    // Without `--runner`, where the model's `spawn_batch` tasks and a
    // workflow's agents go: one rule for every batch of children, read
    // from the session's (trust-filtered) config.
    let kind = match flag {
        Some(kind) => kind,
        None => task_commands::default_kind(&session.config)?,
    };
    // Tasks are children of a main agent that never calls the model; a
    // process or Slurm task is such a child too, run by a command (which
    // gets the rules, the sandbox and its budgets as a ceiling).
    let command = task_commands::task_command(common, &session.config, kind)?;
    Ok(Arc::new(
        ChildRunner::new(
            &session.supervisor,
            session.runtime.clone(),
            session.main_run(cancel.clone()),
        )
        .through(command),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rerun_keeps_the_batch_id() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let first = batch_id(&out, Path::new("t.jsonl")).unwrap();
        assert!(first.starts_with('b') && first.len() == 9, "{first}");
        assert_eq!(batch_id(&out, Path::new("t.jsonl")).unwrap(), first);
    }
}
