//! `alcove workflow run FILE.js` and `alcove workflow list`: a workflow
//! script run with no parent model.
//!
//! The script is read and checked first (a refused script opens no session
//! and starts no agent), its plan is shown on stderr and approved (a
//! terminal asks; `--yes` approves; with no terminal and no `--yes` the run
//! is refused), then a session opens and every `agent()` is a child of its
//! main agent through `workflow_host.rs`. Progress goes to stderr (or JSON
//! events to stdout with `--json`), the script's return value to stdout.
//! Exit status: 0 only when the script returned; 1 for any other end; 2 for
//! bad input; 130/143 when interrupted.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;

use alcove_core::batch::TaskCommand;
use alcove_core::{EventSink, NoApprover};
use alcove_protocol::RunStatus;
use alcove_workflow::{EndStatus, Limits, RunEnd, RunEvent, RunOptions, Workflow};
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::Dirs;
use crate::output::Trace;
use crate::session::{FrontEnd, Session, SessionEnd};
use crate::task_commands::{self, RunnerKind};
use crate::trust::ProjectSettings;
use crate::workflow_host::{ChildHost, runner_line, saved_folders, saved_workflows};
use crate::workflow_launch::{self, Budget, OpenedRun, RunStart};
use crate::{CommonArgs, UsageError, exec};

/// `alcove workflow …`.
#[derive(Debug, Args)]
pub(crate) struct WorkflowArgs {
    #[command(subcommand)]
    command: WorkflowCommand,
}

#[derive(Debug, Subcommand)]
enum WorkflowCommand {
    /// Run a workflow script: each agent() is a child agent.
    Run(RunArgs),
    /// List the saved workflows (.alcove/workflows, .claude/workflows, ~/.config/alcove/workflows).
    List,
}

/// `alcove workflow run` arguments.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The script (a .js file), or a saved workflow's name. With --resume, the run's own script by default.
    script: Option<String>,
    /// The script's `args`, as JSON.
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    /// The run's budget: tokens=N (every input and output token of its agents) and/or usd=X (at the models' [pricing]).
    #[arg(long, value_name = "LIMITS")]
    budget: Option<String>,
    /// Resume an earlier run: finished agents with unchanged prompts replay, the rest run.
    #[arg(long, value_name = "RUN_ID")]
    resume: Option<String>,
    /// Approve the plan without asking.
    #[arg(long)]
    yes: bool,
    /// JSON events on stdout, one per line (workflow_started first).
    #[arg(long)]
    json: bool,
    /// Agents running at once (default 16).
    #[arg(long, value_name = "N", default_value_t = 16)]
    concurrency: usize,
    /// Where agents run: in this process, through agents.command, or as Slurm job steps (default: [batch] runner).
    #[arg(long, value_enum)]
    runner: Option<RunnerKind>,
}

pub(crate) async fn run(common: &CommonArgs, args: WorkflowArgs) -> anyhow::Result<u8> {
    match args.command {
        WorkflowCommand::Run(run) => run_workflow(common, run).await,
        WorkflowCommand::List => list(common),
    }
}

/// The folders saved workflows are read from: the project's only when the
/// folder is trusted (`trust.rs`), as for its hooks and MCP servers.
fn trusted_folders(common: &CommonArgs, dirs: &Dirs) -> anyhow::Result<Vec<PathBuf>> {
    let workspace = common.workspace()?;
    let project = ProjectSettings::of(common, dirs, workspace.root())?;
    Ok(saved_folders(project.files_root(), &dirs.config))
}

fn list(common: &CommonArgs) -> anyhow::Result<u8> {
    let dirs = Dirs::from_env()?;
    let saved = saved_workflows(&trusted_folders(common, &dirs)?);
    let workspace = common.workspace()?;
    let every = saved_workflows(&saved_folders(Some(workspace.root()), &dirs.config));
    let held_back = every.len().saturating_sub(saved.len());
    if held_back > 0 {
        println!(
            "{held_back} saved workflow(s) of this folder are not listed and cannot run: it is not \
             a trusted folder (trust it with `alcove trust`)"
        );
    }
    if saved.is_empty() {
        println!(
            "no saved workflows (put them in .alcove/workflows/*.js or ~/.config/alcove/workflows/*.js)"
        );
    }
    for entry in saved {
        match entry.workflow {
            Ok(workflow) => {
                let meta = &workflow.meta;
                println!(
                    "{:<24} {}  ({})",
                    meta.name,
                    meta.description,
                    entry.path.display()
                );
                if let Some(when) = &meta.when_to_use {
                    println!("{:<24} when: {when}", "");
                }
            }
            Err(err) => println!("{:<24} not usable: {err}  ({})", "-", entry.path.display()),
        }
    }
    Ok(0)
}

/// The script to run: a file, or a saved workflow's name.
fn find_script(common: &CommonArgs, dirs: &Dirs, name: &str) -> anyhow::Result<(PathBuf, String)> {
    let path = PathBuf::from(name);
    if path.is_file() || name.ends_with(".js") {
        let source = std::fs::read_to_string(&path)
            .map_err(|err| UsageError(format!("{}: {err}", path.display())))?;
        return Ok((path, source));
    }
    crate::workflow_host::saved_workflow(&trusted_folders(common, dirs)?, name)
        .map(|(path, workflow)| (path, workflow.source))
        .ok_or_else(|| UsageError(format!("{name}: no such file or saved workflow")).into())
}

async fn run_workflow(common: &CommonArgs, args: RunArgs) -> anyhow::Result<u8> {
    let dirs = Dirs::from_env()?;
    if args.concurrency == 0 {
        return Err(UsageError("--concurrency must be at least 1".to_owned()).into());
    }
    let earlier = match &args.resume {
        Some(id) => Some(
            workflow_launch::earlier_run(&dirs.data, id)
                .map_err(|err| UsageError(format!("--resume {err}")))?,
        ),
        None => None,
    };
    let (script_path, source) = match (&args.script, &earlier) {
        (Some(name), _) => find_script(common, &dirs, name)?,
        (None, Some((_, dir))) => {
            let path = dir.join("script.js");
            let source = std::fs::read_to_string(&path)
                .map_err(|err| UsageError(format!("{}: {err}", path.display())))?;
            (path, source)
        }
        (None, None) => {
            return Err(UsageError("give a script: alcove workflow run FILE.js".to_owned()).into());
        }
    };
    let workflow = Workflow::parse(&source)
        .map_err(|err| UsageError(format!("{}: {err}", script_path.display())))?;
    let given_args = match &args.args {
        Some(text) => Some(
            serde_json::from_str::<Value>(text)
                .map_err(|err| UsageError(format!("--args is not JSON: {err}")))?,
        ),
        None => None,
    };
    let budget_given = args
        .budget
        .as_deref()
        .map(workflow_launch::parse_budget)
        .transpose()
        .map_err(UsageError)?;
    let (script_args, budget) = match &earlier {
        Some((record, _)) => (
            workflow_launch::resumed_args(record, given_args).map_err(|_| {
                UsageError("--resume runs with the run's own args; leave --args out".to_owned())
            })?,
            budget_given.unwrap_or_else(|| Budget::of(record)),
        ),
        None => (given_args, budget_given.unwrap_or_default()),
    };
    let limits = Limits {
        concurrency: args.concurrency,
        ..Limits::default()
    };
    // The session's slots are the run's: every agent takes one.
    let mut common = common.clone();
    common
        .overrides
        .push(format!("agents.max_concurrent={}", args.concurrency));
    let command = runner_of(&common, &dirs, args.runner)?;
    let saved = trusted_folders(&common, &dirs)?;
    eprint!(
        "{}",
        workflow_launch::plan(
            &workflow,
            &script_path.display().to_string(),
            limits,
            budget,
            earlier.is_some(),
            &runner_line(command.as_ref()),
        )
    );
    if !args.yes {
        approve()?;
    }

    // The run's budget is the engine's ceiling, not the tree's: a tree
    // budget lets the first child reserve all that is left, which would
    // refuse every agent running beside it. Each agent's own ceiling is
    // what the run's budget has left when it starts.
    let mut sinks: Vec<Arc<dyn EventSink>> = Vec::new();
    if exec::trace_enabled() {
        sinks.push(Arc::new(Trace));
    }
    let front_end = FrontEnd {
        sinks,
        approver: Arc::new(NoApprover),
        max_turns: None,
        resume: None,
        extra_mcp: Vec::new(),
        file_source: None,
    };
    let session = Session::open(&common, front_end).await?;
    let prices = workflow_launch::prices(&session.config, &session.model_name);
    if let Some(reason) = workflow_launch::unpriced(budget, prices.as_ref(), &session.model_name) {
        session
            .end(SessionEnd {
                status: RunStatus::Failed,
                error: Some(reason.clone()),
                ..SessionEnd::quiet("other")
            })
            .await;
        return Err(UsageError(format!("--budget: {reason}")).into());
    }
    let opened = workflow_launch::open_run(
        &dirs.data,
        RunStart {
            workflow: &workflow,
            source: &source,
            script_path: Some(&script_path),
            args: script_args.clone(),
            budget,
            earlier,
        },
    );
    // The session is open: a run that cannot start ends it as every
    // session ends (SessionEnd hooks, `session_ended`).
    let OpenedRun {
        run_id,
        dir,
        run_dir,
        replay,
        mut record,
    } = match opened {
        Ok(opened) => opened,
        Err(reason) => {
            session
                .end(SessionEnd {
                    status: RunStatus::Failed,
                    error: Some(reason.clone()),
                    ..SessionEnd::quiet("other")
                })
                .await;
            return Err(anyhow::Error::msg(reason));
        }
    };
    session.ready().await;
    let json_mode = args.json;
    emit(
        json_mode,
        json!({"type": "workflow_started", "run_id": run_id, "name": workflow.meta.name, "dir": dir}),
    );
    if !json_mode {
        eprintln!("workflow {run_id} started ({})", dir.display());
    }

    // An interrupt stops the run; the run also stops itself (the provider
    // halted the tree), which must not read as an interrupt.
    let cancel = CancellationToken::new();
    let run_cancel = cancel.child_token();
    let host = ChildHost {
        supervisor: session.supervisor.clone(),
        runtime: session.runtime.clone(),
        parent: session.main_run(run_cancel.clone()),
        run_id: run_id.clone(),
        dir: dir.clone(),
        saved,
        events: Box::new(move |event| show(json_mode, &event)),
        prices,
        spent_usd: std::sync::Mutex::default(),
        command,
    };
    let signal = tokio::spawn(exec::watch_signals(cancel.clone()));
    let options = RunOptions {
        args: script_args,
        budget: budget.tokens,
        budget_usd: budget.usd,
        limits,
        cancel: run_cancel,
        dir: Some(run_dir),
        replay,
    };
    let end = Arc::new(host).run(&workflow, options).await;
    let signal_code = exec::signal_code(cancel.is_cancelled(), signal).await;
    // The one session end: SessionEnd hooks, background commands stopped,
    // `session_ended` with the whole tree's usage, as every front end ends.
    session
        .end(SessionEnd {
            status: match end.status {
                EndStatus::Completed => RunStatus::Completed,
                EndStatus::Failed => RunStatus::Failed,
                EndStatus::BudgetExhausted => RunStatus::Budget,
                EndStatus::Halted => RunStatus::Halted,
                EndStatus::Cancelled => RunStatus::Aborted,
            },
            error: end.error.clone(),
            ..SessionEnd::quiet("other")
        })
        .await;

    if let Err(err) = workflow_launch::record_end(&dir, &mut record, &end) {
        eprintln!("alcove: {err}");
    }
    report(json_mode, &run_id, &end);
    Ok(match signal_code {
        Some(code) => code,
        None if end.status == EndStatus::Completed => 0,
        None => 1,
    })
}

/// The command the run's agents run as: `--runner`, else the default
/// `spawn_batch` and the `Workflow` tool use (`task_commands::default_kind`);
/// `None` in this process.
fn runner_of(
    common: &CommonArgs,
    dirs: &Dirs,
    flag: Option<RunnerKind>,
) -> anyhow::Result<Option<Arc<dyn TaskCommand>>> {
    let workspace = common.workspace()?;
    let config = ProjectSettings::of(common, dirs, workspace.root())?.config()?;
    let kind = match flag {
        Some(kind) => kind,
        None => task_commands::default_kind(&config)?,
    };
    task_commands::task_command(common, &config, kind)
}

/// Asks on the terminal; with no terminal, refuses (pass --yes).
fn approve() -> Result<(), UsageError> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Err(UsageError(
            "no terminal to approve the plan on: pass --yes to run it".to_owned(),
        ));
    }
    eprint!("Run it? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(UsageError("not approved: nothing ran".to_owned()))
    }
}

fn emit(json_mode: bool, event: Value) {
    if json_mode {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{event}");
        let _ = out.flush();
    }
}

/// A run event as a progress line (stderr) or a JSON event (stdout).
fn show(json_mode: bool, event: &RunEvent) {
    let value = match event {
        RunEvent::Phase(title) => json!({"type": "phase", "title": title}),
        RunEvent::Log(message) => json!({"type": "log", "message": message}),
        RunEvent::AgentStarted {
            index,
            label,
            phase,
        } => {
            json!({"type": "agent_started", "index": index, "label": label, "phase": phase})
        }
        RunEvent::AgentEnded {
            index,
            label,
            status,
            tokens,
        } => {
            json!({"type": "agent_ended", "index": index, "label": label, "status": status, "tokens": tokens})
        }
    };
    if json_mode {
        emit(true, value);
        return;
    }
    match event {
        RunEvent::Phase(title) => eprintln!("── {title}"),
        RunEvent::Log(message) => eprintln!("   {message}"),
        RunEvent::AgentStarted { index, label, .. } => eprintln!("   ▸ #{index} {label}"),
        RunEvent::AgentEnded {
            index,
            label,
            status,
            tokens,
        } => {
            eprintln!("   ◂ #{index} {label}: {status} ({tokens} tokens)");
        }
    }
}

/// The end: the result on stdout, the status and counts on stderr (or one
/// `workflow_ended` event).
fn report(json_mode: bool, run_id: &str, end: &RunEnd) {
    if json_mode {
        emit(
            true,
            json!({
                "type": "workflow_ended",
                "run_id": run_id,
                "status": end.status.as_str(),
                "result": end.result,
                "error": end.error,
                "agents": end.agents,
                "tokens": end.tokens,
                "usd": end.usd,
            }),
        );
        return;
    }
    let dollars = end
        .usd
        .map(|usd| format!(", ${usd:.4}"))
        .unwrap_or_default();
    eprintln!(
        "workflow {run_id}: {} — {}; {} tokens{dollars}",
        end.status.as_str(),
        end.agents.describe(),
        end.tokens
    );
    if let Some(error) = &end.error {
        eprintln!("  {error}");
    }
    if end.status != EndStatus::Completed {
        eprintln!("  resume with: alcove workflow run --resume {run_id}");
    }
    match &end.result {
        Value::Null if end.status != EndStatus::Completed => {}
        Value::String(text) => println!("{text}"),
        other => println!(
            "{}",
            serde_json::to_string_pretty(other).unwrap_or_default()
        ),
    }
}
