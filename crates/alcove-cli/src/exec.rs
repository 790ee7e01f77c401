//! `alcove exec`: one prompt, run headless to the end.
//!
//! Exit status: 0 completed, 1 runtime failure, 2 usage or configuration
//! error, 3 stopped by the turn cap, 130 interrupted (SIGINT), 143
//! terminated (SIGTERM).

use std::io::Read as _;
use std::sync::Arc;

use alcove_core::{EventSink, NoApprover, run_agent};
use alcove_protocol::{AgentPath, Message, RunStatus};
use anyhow::Context;
use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::output::{JsonLines, Progress, Trace};
use crate::output_format::OutputFormat;
use crate::session::{FrontEnd, Session};
use crate::{CommonArgs, UsageError};

/// `alcove exec` arguments.
#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// The prompt; `-` or nothing reads it from stdin.
    prompt: Option<String>,
    /// Print every event as a JSON line on stdout (schema: docs/events.md).
    #[arg(long)]
    json: bool,
    /// The most model requests the main agent may make (default 100).
    #[arg(long, value_name = "N")]
    max_turns: Option<u32>,
    /// Continue session ID, or the first characters of it (its transcript
    /// is read back and appended to).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// Continue the last session in this folder.
    #[arg(long = "continue", conflicts_with = "resume")]
    continue_last: bool,
    /// What stdout gets: text (the answer), json (one result object at the
    /// end) or stream-json (the event lines, as --json).
    #[arg(long, value_name = "FORMAT", conflicts_with = "json")]
    output_format: Option<crate::output_format::OutputFormat>,
    /// Text added to the end of the system prompt.
    #[arg(long, value_name = "TEXT")]
    append_system_prompt: Option<String>,
    /// With --resume: compact the session's history first (old tool results
    /// cleared, the rest summarised), optionally with a focus for the
    /// summary; with no prompt, only compact.
    #[arg(long, value_name = "FOCUS", requires = "resume", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    compact: Option<String>,
}

impl ExecArgs {
    /// `alcove -p …`: the top-level flags as `exec`'s.
    pub(crate) fn print(
        prompt: Option<String>,
        flags: crate::familiar_flags::PrintFlags,
    ) -> ExecArgs {
        ExecArgs {
            prompt,
            json: false,
            max_turns: flags.max_turns,
            resume: flags.resume.filter(|id| !id.is_empty()),
            compact: None,
            continue_last: flags.continue_last,
            output_format: flags.output_format,
            append_system_prompt: flags.append_system_prompt,
        }
    }
}

pub(crate) async fn run(common: &CommonArgs, mut args: ExecArgs) -> anyhow::Result<u8> {
    let started = std::time::Instant::now();
    let common =
        &crate::familiar_flags::with_system_prompt(common, args.append_system_prompt.take());
    args.resume =
        crate::familiar_flags::session_to_continue(common, args.resume, args.continue_last)?;
    let format = args.output_format.unwrap_or(if args.json {
        OutputFormat::StreamJson
    } else {
        OutputFormat::Text
    });
    args.json = format != OutputFormat::Text;
    let compact_only = args.compact.is_some() && args.prompt.is_none();
    let prompt = if compact_only {
        String::new()
    } else {
        read_prompt(args.prompt)?
    };
    let mut sinks: Vec<Arc<dyn EventSink>> = vec![if format == OutputFormat::StreamJson {
        Arc::new(JsonLines)
    } else {
        Arc::new(Progress)
    }];
    if trace_enabled() {
        sinks.push(Arc::new(Trace));
    }
    let front_end = FrontEnd {
        sinks,
        approver: Arc::new(NoApprover),
        max_turns: args.max_turns,
        resume: args.resume.clone(),
        extra_mcp: Vec::new(),
        file_source: None,
    };
    let session = Session::open(common, front_end).await?;
    // Without --json the warning event is that line already.
    if args.json
        && let Some(notice) = &session.trust_notice
    {
        eprintln!("alcove: warning: {notice}");
    }
    session.runtime.hooks.session_start().await;
    // A resumed session killed mid-turn ends with tool calls that have no
    // results; they get error results so the conversation stays valid.
    let mut history = crate::resume::continue_history(&session);
    if let Some(focus) = &args.compact {
        let run = session.main_run(CancellationToken::new());
        let focus = Some(focus.as_str()).filter(|focus| !focus.is_empty());
        match alcove_core::compact_history(&session.runtime, &run, history.clone(), focus).await {
            Ok((compacted, usage, changed)) => {
                if !changed {
                    eprintln!("alcove: nothing to compact in this session");
                }
                history = compacted;
                if compact_only {
                    return finish_compaction(&session, usage, None).await;
                }
            }
            Err(error) => {
                let error = format!("compaction failed: {error}");
                eprintln!("alcove: {error}");
                return finish_compaction(&session, Default::default(), Some(error)).await;
            }
        }
    }
    // `/init`, `/<command> args` and `/<skill> args` become their prompts.
    let (prompt, runtime) = crate::prompt_commands::prepare(&session, prompt);
    let prompt = match session.runtime.hooks.user_prompt_submit(&prompt).await {
        Ok(None) => prompt,
        Ok(Some(context)) => format!("{prompt}\n\n[hook context]\n{context}"),
        Err(reason) => return refuse_prompt(&session, &reason).await,
    };

    let cancel = CancellationToken::new();
    let signal = tokio::spawn(watch_signals(cancel.clone()));
    session.ready().await;
    let run = session.main_run(cancel.clone());
    // `@shot.png` attaches the image; stderr says so (stdout is the answer).
    let (message, attached) = crate::attachments::prompt_message(&prompt, runtime.workspace.root());
    for line in attached {
        eprintln!("alcove: {line}");
    }
    // A parent alcove's deadline for this one ends the run like a budget.
    let deadline = session.deadline.map(|limit| {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            cancel.cancel();
        })
    });
    let mut outcome = run_agent(&runtime, &run, history, message).await;
    if let (Some(timer), Some(limit)) = (&deadline, session.deadline) {
        if outcome.status == RunStatus::Aborted && timer.is_finished() {
            outcome.status = RunStatus::Budget;
            outcome.error = Some(format!(
                "wall time over {}s (the parent's deadline)",
                limit.as_secs()
            ));
        }
        timer.abort();
    }
    if outcome.status == RunStatus::Completed && session.supervisor.limits().wait_on_exit {
        outcome = finish_spawned(&session, &runtime, &run, &cancel, outcome).await;
    }
    let signal_code = signal_code(outcome.status == RunStatus::Aborted, signal).await;

    let still_running = session
        .end(crate::session::SessionEnd {
            reason: "other",
            status: outcome.status,
            turns: outcome.turns,
            usage: outcome.usage,
            error: outcome.error.clone(),
            result: outcome.last_text(),
        })
        .await;
    if args.json && !still_running.is_empty() {
        eprintln!(
            "alcove: the session ended while spawned agents were still running; closed: {}",
            still_running.join(", ")
        );
    }
    if let Some(failure) = session.transcript.failure() {
        eprintln!("alcove: warning: {failure}");
    }
    // The answer on stdout goes through the same redaction as every sink.
    if format == OutputFormat::Json {
        let cost = crate::context_setup::cost(&session.config, &session.model_name, &outcome.usage);
        let result =
            crate::output_format::result_object(&session.id, &outcome, cost, started.elapsed());
        println!(
            "{}",
            session.transcript.redactor().redact(&result.to_string())
        );
    }
    let final_text = outcome.last_text().unwrap_or_default();
    let final_text = session.transcript.redactor().redact(&final_text);
    match outcome.status {
        RunStatus::Completed => {
            if !args.json {
                println!("{final_text}");
            }
            Ok(0)
        }
        RunStatus::MaxTurns => {
            if !args.json && !final_text.is_empty() {
                println!("{final_text}");
            }
            eprintln!(
                "alcove: stopped after {} model turns (--max-turns {}) before the task was finished",
                outcome.turns, session.max_turns
            );
            Ok(3)
        }
        RunStatus::Aborted => {
            eprintln!(
                "alcove: interrupted; the transcript is {}",
                session.transcript.path().display()
            );
            Ok(signal_code.unwrap_or(130))
        }
        RunStatus::Failed | RunStatus::Budget | RunStatus::Halted => {
            let error = outcome.error.unwrap_or_default();
            let error = session.explain(&error);
            eprintln!("alcove: the model failed: {error}");
            Ok(1)
        }
    }
}

/// The main agent ended while spawned agents still ran: waits for them
/// (within their own budgets, and at most `agents.wait_max_ms`) and gives it
/// one more run with their results.
async fn finish_spawned(
    session: &Session,
    runtime: &alcove_core::Runtime,
    run: &alcove_core::AgentRun,
    cancel: &CancellationToken,
    outcome: alcove_core::AgentOutcome,
) -> alcove_core::AgentOutcome {
    // Bounded like `wait` (`agents.wait_max_ms`): what still runs after
    // that is closed, as when waiting is off.
    let limit = session.supervisor.limits().wait_max;
    // Workflow runs the main agent started are waited for the same way.
    let waited = tokio::time::timeout(limit, async {
        let agents = session.supervisor.wait_for_running(cancel).await;
        let runs = session.supervisor.host_runs().wait_running(cancel).await;
        (agents, runs)
    })
    .await;
    let results = match waited {
        Ok((Some(agents), None)) => agents,
        Ok((agents, Some(runs))) => {
            serde_json::json!({"agents": agents, "workflow_runs": runs})
        }
        _ => return outcome,
    };
    // Their end notices are in the message below.
    let _ = runtime.inbox.take(&AgentPath::main());
    let text = format!(
        "[alcove] You ended while spawned agents or workflow runs were still running; alcove \
         waited for them. Their results (as `wait` reports them):\n{}\nFinish your answer with them.",
        serde_json::to_string_pretty(&results).unwrap_or_default()
    );
    let mut more = run.clone();
    more.max_turns = run.max_turns.saturating_sub(outcome.turns).max(1);
    let (turns, mut usage) = (outcome.turns, outcome.usage);
    let mut next = run_agent(runtime, &more, outcome.messages, Message::user_text(text)).await;
    usage.add(next.usage);
    next.turns += turns;
    next.usage = usage;
    next
}

/// `exec --resume ID --compact` without a prompt: the compaction was the
/// whole run.
async fn finish_compaction(
    session: &Session,
    usage: alcove_protocol::Usage,
    error: Option<String>,
) -> anyhow::Result<u8> {
    let status = if error.is_some() {
        RunStatus::Failed
    } else {
        RunStatus::Completed
    };
    session
        .end(crate::session::SessionEnd {
            reason: "other",
            status,
            turns: 0,
            usage,
            error,
            result: None,
        })
        .await;
    Ok(if status == RunStatus::Completed { 0 } else { 1 })
}

/// A UserPromptSubmit hook refused the prompt: nothing runs; exit 1.
async fn refuse_prompt(session: &Session, reason: &str) -> anyhow::Result<u8> {
    let error = format!("the prompt was blocked by a UserPromptSubmit hook: {reason}");
    session
        .end(crate::session::SessionEnd {
            reason: "other",
            status: RunStatus::Failed,
            turns: 0,
            usage: Default::default(),
            error: Some(error.clone()),
            result: None,
        })
        .await;
    eprintln!("alcove: {error}");
    Ok(1)
}

pub(crate) fn trace_enabled() -> bool {
    ["TRACE", "ALCOVE_TRACE"]
        .iter()
        .any(|var| std::env::var(var).is_ok_and(|value| value == "1"))
}

fn read_prompt(argument: Option<String>) -> anyhow::Result<String> {
    let prompt = match argument {
        Some(prompt) if prompt != "-" => prompt,
        _ => {
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                eprintln!(
                    "alcove: reading the prompt from stdin; end it with Ctrl-D (or pass it as an argument)"
                );
            }
            let mut prompt = String::new();
            std::io::stdin()
                .read_to_string(&mut prompt)
                .context("cannot read the prompt from stdin")?;
            prompt
        }
    };
    if prompt.trim().is_empty() {
        return Err(UsageError(
            "the prompt is empty; pass it as an argument or on stdin".to_owned(),
        )
        .into());
    }
    Ok(prompt)
}

/// Cancels the run on SIGINT or SIGTERM and returns the exit status that
/// signal calls for.
/// The exit code of the signal that stopped a run, when `stopped`: waits
/// for the watcher to say which; otherwise stops the watcher.
pub(crate) async fn signal_code(
    stopped: bool,
    signal: tokio::task::JoinHandle<Option<u8>>,
) -> Option<u8> {
    if stopped {
        signal.await.ok().flatten()
    } else {
        signal.abort();
        None
    }
}

pub(crate) async fn watch_signals(cancel: CancellationToken) -> Option<u8> {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return None;
    };
    let code = tokio::select! {
        _ = interrupt.recv() => 130,
        _ = terminate.recv() => 143,
    };
    cancel.cancel();
    Some(code)
}
