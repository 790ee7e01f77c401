//! Session and turn plumbing shared by the inline UI and the plain front end:
//! opening a session wired to the UI's channels, running one turn of the
//! main agent with the conversation so far, and closing the session.

use std::sync::Arc;
use std::time::Duration;

use alcove_core::{AgentOutcome, Approver, EventSink, run_agent};
use alcove_protocol::{AgentEvent, AgentPath, EventKind, Message, RunStatus, Usage};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::ChannelSink;
use super::approval::{Ask, ChannelApprover, SessionRules};
use crate::CommonArgs;
use crate::resume::repair_history;
use crate::session::{FrontEnd, Session};

/// How long an interrupted turn may take to wind down when the UI exits.
const EXIT_GRACE: Duration = Duration::from_secs(10);

/// The UI's ends of the event and approval channels.
pub(crate) struct Channels {
    pub(crate) events: mpsc::UnboundedReceiver<AgentEvent>,
    pub(crate) asks: mpsc::UnboundedReceiver<Ask>,
    pub(crate) rules: Arc<SessionRules>,
    sink: Arc<dyn EventSink>,
    approver: Arc<dyn Approver>,
}

impl Channels {
    pub(crate) fn new() -> Channels {
        let (event_tx, events) = mpsc::unbounded_channel();
        let (ask_tx, asks) = mpsc::unbounded_channel();
        Channels {
            events,
            asks,
            sink: Arc::new(ChannelSink(event_tx)),
            approver: Arc::new(ChannelApprover::new(ask_tx)),
            rules: Arc::new(SessionRules::default()),
        }
    }

    /// Opens a session whose events and approvals come to these channels;
    /// `resume` continues an earlier session (same id and transcript).
    pub(crate) async fn open(
        &self,
        common: &CommonArgs,
        extra: Vec<Arc<dyn EventSink>>,
        resume: Option<String>,
    ) -> anyhow::Result<Session> {
        let mut sinks = vec![self.sink.clone()];
        sinks.extend(extra);
        let session = Session::open(
            common,
            FrontEnd {
                sinks,
                approver: self.approver.clone(),
                max_turns: None,
                resume,
                extra_mcp: Vec::new(),
                file_source: None,
            },
        )
        .await?;
        session.ready().await;
        Ok(session)
    }
}

/// A running turn of the main agent.
pub(crate) struct Turn {
    pub(crate) cancel: CancellationToken,
    /// A line per image the prompt attached (`@shot.png`), for the UI.
    pub(crate) attached: Vec<String>,
    handle: JoinHandle<AgentOutcome>,
}

/// Starts a turn: `prompt` after `history`, once the UserPromptSubmit
/// hooks let it through (a refusal ends the turn as failed, with the
/// history unchanged).
pub(crate) fn start_turn(session: &Session, history: Vec<Message>, prompt: String) -> Turn {
    let cancel = CancellationToken::new();
    let run = session.main_run(cancel.clone());
    // `/init`, `/<command> args` and `/<skill> args` become their prompts.
    let (prompt, runtime) = crate::prompt_commands::prepare(session, prompt);
    let (with_images, attached) =
        crate::attachments::prompt_message(&prompt, runtime.workspace.root());
    let images: Vec<_> = with_images.content.into_iter().skip(1).collect();
    let handle = tokio::spawn(async move {
        let prompt = match runtime.hooks.user_prompt_submit(&prompt).await {
            Ok(None) => prompt,
            Ok(Some(context)) => format!("{prompt}\n\n[hook context]\n{context}"),
            Err(reason) => {
                return AgentOutcome {
                    status: RunStatus::Failed,
                    messages: history,
                    turns: 0,
                    usage: Usage::default(),
                    error: Some(format!(
                        "the prompt was blocked by a UserPromptSubmit hook: {reason}"
                    )),
                };
            }
        };
        let mut message = Message::user_text(prompt);
        message.content.extend(images);
        run_agent(&runtime, &run, history, message).await
    });
    Turn {
        cancel,
        attached,
        handle,
    }
}

/// Starts `/compact`: the conversation is compacted like a turn would
/// (PreCompact hooks, a `compacted` event), and the outcome's messages are
/// the compacted history; a failure keeps the history as it was.
pub(crate) fn start_compaction(
    session: &Session,
    history: Vec<Message>,
    focus: Option<String>,
) -> Turn {
    let cancel = CancellationToken::new();
    let run = session.main_run(cancel.clone());
    let runtime = session.runtime.clone();
    let cancelled = cancel.clone();
    let handle = tokio::spawn(async move {
        match alcove_core::compact_history(&runtime, &run, history.clone(), focus.as_deref()).await
        {
            Ok((messages, usage, changed)) => {
                if !changed {
                    runtime.emit(
                        &AgentPath::main(),
                        EventKind::Warning {
                            message: "Nothing to compact yet.".to_owned(),
                        },
                    );
                }
                AgentOutcome {
                    status: RunStatus::Completed,
                    messages,
                    turns: 0,
                    usage,
                    error: None,
                }
            }
            Err(error) => AgentOutcome {
                status: if cancelled.is_cancelled() {
                    RunStatus::Aborted
                } else {
                    RunStatus::Failed
                },
                messages: history,
                turns: 0,
                usage: Usage::default(),
                error: Some(format!("compaction failed: {error}")),
            },
        }
    });
    Turn {
        cancel,
        attached: Vec::new(),
        handle,
    }
}

/// Waits for the running turn, or forever when there is none.
pub(crate) async fn wait(turn: &mut Option<Turn>) -> AgentOutcome {
    match turn {
        Some(turn) => outcome_of((&mut turn.handle).await),
        None => std::future::pending().await,
    }
}

/// Cancels a turn and waits (a bounded time) for it to wind down, so every
/// call gets its result and children's processes are killed.
pub(crate) async fn cancel_and_wait(turn: Turn) -> Option<AgentOutcome> {
    turn.cancel.cancel();
    tokio::time::timeout(EXIT_GRACE, turn.handle)
        .await
        .ok()
        .map(outcome_of)
}

fn outcome_of(joined: Result<AgentOutcome, tokio::task::JoinError>) -> AgentOutcome {
    joined.unwrap_or_else(|err| AgentOutcome {
        status: RunStatus::Failed,
        messages: Vec::new(),
        turns: 0,
        usage: Usage::default(),
        error: Some(format!("the turn stopped unexpectedly: {err}")),
    })
}

/// What the session's turns added up to.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    pub(crate) turns: u32,
    pub(crate) usage: Usage,
    pub(crate) last: Option<RunStatus>,
    /// The error the last turn failed with, if it did.
    pub(crate) last_error: Option<String>,
}

impl Totals {
    /// Takes in a finished turn: the conversation becomes its history, made
    /// valid to continue (the repair is recorded in the transcript).
    pub(crate) fn settle(
        &mut self,
        session: &Session,
        history: &mut Vec<Message>,
        outcome: AgentOutcome,
    ) {
        self.turns += outcome.turns;
        self.usage.add(outcome.usage);
        self.last = Some(outcome.status);
        self.last_error = outcome.error.clone();
        if outcome.messages.is_empty() && outcome.status.is_failure() {
            // The task itself died; keep the conversation as it was.
            return;
        }
        let overflow = outcome
            .error
            .as_deref()
            .is_some_and(crate::resume::ended_by_overflow);
        *history = outcome.messages;
        for message in repair_history(history, overflow) {
            session
                .runtime
                .emit(&AgentPath::main(), EventKind::Message { message });
        }
    }

    /// Records the end of the session (or of one segment of it): closes
    /// background agents still running, runs the SessionEnd hooks with
    /// `reason`, and emits `session_ended`.
    pub(crate) async fn end(&self, session: &Session, status: Option<RunStatus>, reason: &str) {
        session
            .end(crate::session::SessionEnd {
                reason,
                status: status.or(self.last).unwrap_or(RunStatus::Completed),
                turns: self.turns,
                usage: self.usage,
                error: self.last_error.clone(),
                result: None,
            })
            .await;
    }
}
