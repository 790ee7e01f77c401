//! The interactive session without a terminal: plain lines in, plain lines
//! out, for pipes, scripts and dumb terminals.
//!
//! Prompts come from the argument and then from stdin, one per line; the
//! answer streams to stdout, tool calls and children show as short lines.
//! An approval is asked on stderr and answered by the next stdin line
//! (`y`, `a` for always, `n [reason]`); when stdin ends, it is denied.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use alcove_core::{Approval, EventSink, Rule};
use alcove_protocol::{AgentEvent, EventKind};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use super::Start;
use super::approval::{Ask, SessionRules, rules_for};
use super::cells::{format_tokens, key_argument};
use super::session_turns::{Channels, Totals, Turn, start_compaction, start_turn, wait};
use super::ui_commands::{self, Command};
use crate::CommonArgs;
use crate::resume::continue_history;
use crate::session::Session;

/// Prints the stream as lines.
struct Printer {
    /// Whether the cursor is mid-line (streamed text without a newline yet).
    mid_line: Mutex<bool>,
    workspace: std::path::PathBuf,
}

impl Printer {
    fn line(&self, out: &mut impl Write, text: &str) {
        if let Ok(mut mid_line) = self.mid_line.lock()
            && *mid_line
        {
            let _ = writeln!(out);
            *mid_line = false;
        }
        let _ = writeln!(out, "{text}");
    }
}

impl EventSink for Printer {
    fn emit(&self, event: &AgentEvent) {
        let mut out = std::io::stdout().lock();
        let main = event.agent.as_str() == "main";
        let prefix = if main {
            String::new()
        } else {
            format!("[{}] ", event.agent)
        };
        match &event.kind {
            EventKind::TextDelta { text } if main => {
                let _ = write!(out, "{text}");
                if let Ok(mut mid_line) = self.mid_line.lock() {
                    *mid_line = !text.ends_with('\n');
                }
            }
            EventKind::AssistantText { .. } if main => self.line(&mut out, ""),
            EventKind::StreamRestarted { reason } if main => {
                self.line(
                    &mut out,
                    &format!("[the model stream broke ({reason}); asking again]"),
                );
            }
            EventKind::ToolCallStarted { name, input, .. } => {
                let arg = key_argument(name, input, &self.workspace);
                self.line(&mut out, &format!("{prefix}• {name}({arg})"));
            }
            EventKind::ToolCallFinished {
                name,
                content,
                is_error: true,
                ..
            } => {
                let first = content.lines().next().unwrap_or_default();
                self.line(&mut out, &format!("{prefix}  ✗ {name}: {first}"));
            }
            EventKind::AgentStarted {
                child, description, ..
            } => {
                self.line(&mut out, &format!("[{child}] started: {description}"));
            }
            EventKind::AgentEnded {
                child,
                status,
                turns,
                usage,
                ..
            } => {
                let tokens = format_tokens(usage.budget_tokens());
                self.line(
                    &mut out,
                    &format!(
                        "[{child}] {}: {turns} turns, {tokens} tokens",
                        status.as_str()
                    ),
                );
            }
            EventKind::ModelRetry {
                attempt, reason, ..
            } => {
                eprintln!("{prefix}model request failed (attempt {attempt}): {reason}; retrying");
            }
            EventKind::Warning { message } => eprintln!("{prefix}warning: {message}"),
            EventKind::Compacted {
                trigger,
                tokens_before,
                tokens_after,
                ..
            } => {
                self.line(
                    &mut out,
                    &format!(
                        "{prefix}[context compacted ({trigger}): about {} → {} tokens]",
                        format_tokens(*tokens_before),
                        format_tokens(*tokens_after)
                    ),
                );
            }
            _ => {}
        }
        let _ = out.flush();
    }
}

/// Runs the line-mode session; returns the exit status.
pub(crate) async fn run(common: &CommonArgs, start: Start) -> anyhow::Result<u8> {
    let (first_prompt, resumed) = match start {
        Start::New(prompt) => (prompt, None),
        Start::Resume(info) => (None, Some(info)),
        Start::Pick(_) => (None, None),
    };
    let mut channels = Channels::new();
    let workspace = super::workspace_root(common)?;
    let printer: Arc<dyn EventSink> = Arc::new(Printer {
        mid_line: Mutex::new(false),
        workspace,
    });
    let session = channels
        .open(
            common,
            vec![printer],
            resumed.as_ref().map(|info| info.id.clone()),
        )
        .await?;
    session.runtime.hooks.session_start().await;
    let mut history = continue_history(&session);
    let mut lines = stdin_lines();
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut totals = Totals::default();
    let mut next = first_prompt;
    let mut code = 0;

    'session: loop {
        let prompt = match next.take() {
            Some(prompt) => prompt,
            None => match lines.recv().await {
                Some(line) => line,
                None => break,
            },
        };
        if prompt.trim().is_empty() {
            continue;
        }
        if let Some(note) = ui_commands::memory_note(&prompt) {
            match session.memory.append(note) {
                Ok(()) => println!("Noted in {}", session.memory.path().display()),
                Err(err) => eprintln!("Cannot write {}: {err}", session.memory.path().display()),
            }
            continue;
        }
        let custom = crate::prompt_commands::expand_prompt(&session, &prompt).is_some();
        let mut compact = None;
        match ui_commands::parse(&prompt) {
            _ if custom => {}
            Some(Command::Compact(focus)) => compact = Some(focus),
            Some(Command::Exit) => break,
            Some(Command::Memory) => {
                println!("Agent memory {}", session.memory.path().display());
                print!("{}", session.memory.read());
                continue;
            }
            Some(Command::Unknown(name)) => {
                eprintln!(
                    "Unknown command {name}. Commands: /status, /memory, /init, /compact, /exit."
                );
                continue;
            }
            Some(_) => {
                println!(
                    "session {} · mode {} · {} tokens",
                    session.id,
                    session.gate.mode().as_str(),
                    format_tokens(totals.usage.budget_tokens())
                );
                for shell in session.runtime.background.running() {
                    println!(
                        "background {} ({}): {}",
                        shell.id, shell.owner, shell.command
                    );
                }
                continue;
            }
            None => {}
        }
        let mut turn: Option<Turn> = Some(match compact {
            Some(focus) => start_compaction(&session, history.clone(), focus),
            None => start_turn(&session, history.clone(), prompt),
        });
        let outcome = loop {
            tokio::select! {
                outcome = wait(&mut turn) => break outcome,
                Some(ask) = channels.asks.recv() => answer(ask, &mut lines, &session, &channels.rules).await,
                _ = interrupt.recv() => {
                    cancel(&turn);
                    // As in the inline UI: earlier turns' background commands stop too.
                    let shells = session.runtime.background.clone();
                    tokio::spawn(async move { shells.kill_all("interrupted").await });
                }
                _ = hangup.recv() => { cancel(&turn); next = Some("/exit".to_owned()); }
                _ = terminate.recv() => { cancel(&turn); next = Some("/exit".to_owned()); }
            }
        };
        while channels.events.try_recv().is_ok() {}
        code = match outcome.status {
            alcove_protocol::RunStatus::Failed | alcove_protocol::RunStatus::Halted => {
                eprintln!(
                    "alcove: the model failed: {}",
                    session.explain(&outcome.error.clone().unwrap_or_default())
                );
                1
            }
            alcove_protocol::RunStatus::Aborted => {
                eprintln!("alcove: interrupted; the conversation is kept");
                0
            }
            _ => 0,
        };
        totals.settle(&session, &mut history, outcome);
        if next.as_deref() == Some("/exit") {
            break 'session;
        }
    }
    totals.end(&session, None, "other").await;
    if let Some(failure) = session.transcript.failure() {
        eprintln!("alcove: warning: {failure}");
    }
    Ok(code)
}

fn cancel(turn: &Option<Turn>) {
    if let Some(turn) = turn {
        turn.cancel.cancel();
    }
}

/// Asks on stderr; the next stdin line answers.
async fn answer(
    ask: Ask,
    lines: &mut mpsc::UnboundedReceiver<String>,
    session: &Session,
    granted: &SessionRules,
) {
    let request = &ask.request;
    let rules = rules_for(request, &session.gate, &session.runtime.workspace);
    let texts: Vec<&str> = rules.iter().map(Rule::text).collect();
    eprintln!(
        "? {} wants to run {}: {}",
        request.agent, request.tool, request.summary
    );
    eprintln!(
        "  [y] allow once{}  [n reason] deny",
        if texts.is_empty() {
            String::new()
        } else {
            format!("  [a] always ({})", texts.join(", "))
        }
    );
    let approval = match lines.recv().await {
        None => Approval::Deny(None),
        Some(line) => {
            let line = line.trim();
            match line
                .split_once(' ')
                .map_or((line, ""), |(word, rest)| (word, rest.trim()))
            {
                ("y" | "yes", _) => Approval::AllowOnce,
                ("a" | "always", _) if !rules.is_empty() => {
                    granted.grant(&rules, Some(&session.gate));
                    Approval::AllowAlways
                }
                (_, reason) => Approval::Deny((!reason.is_empty()).then(|| reason.to_owned())),
            }
        }
    };
    let _ = ask.reply.send(approval);
}

/// Stdin, line by line, read on a thread of its own; the channel closes at
/// end of input.
fn stdin_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}
