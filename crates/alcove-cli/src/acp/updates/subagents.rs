//! Child agents on ACP: with the client's `subagents` capability each
//! child is a subagent session of its own, announced on its parent's
//! session (`subagent_update`, its state kept current) and linked from the
//! parent's `Agent`/`spawn_agent` call; without it a first-level child is
//! its parent's tool call, whose content shows its progress (turns,
//! tokens, time, current tool) and then its end, and its descendants'
//! events fold into that line. A workflow run's agents are linked from
//! the run's own tool call instead (`workflow_calls.rs`).

use std::time::Instant;

use agent_client_protocol::ErrorCode;
use agent_client_protocol::v1::schema::{
    IdleStateUpdate, IdleStopReason, RequiresActionStateUpdate, RunningStateUpdate,
    SessionCancelCapabilities, SessionReference, SessionUpdate, StateUpdate,
    SubagentSessionCapabilities, SubagentUpdate, ToolCallContent, ToolCallUpdate,
    ToolCallUpdateFields,
};
use alcove_protocol::{AgentEvent, AgentPath, EventKind, RunStatus, Usage};

use super::{Routes, Updates};
use crate::acp::tool_calls;

/// A child shown as its parent's tool call (no subagents capability).
pub(super) struct Progress {
    /// The main agent's call that started it.
    call_id: String,
    description: String,
    turns: u32,
    tokens: u64,
    tool: Option<String>,
    started: Instant,
}

impl Progress {
    fn line(&self) -> String {
        let mut line = format!(
            "{}: turn {}, {} tokens, {}s",
            self.description,
            self.turns,
            self.tokens,
            self.started.elapsed().as_secs()
        );
        if let Some(tool) = &self.tool {
            line.push_str(&format!(" · {tool}"));
        }
        line
    }
}

impl Updates {
    /// A child started or stopped waiting for an approval: its subagent
    /// session's state says so.
    pub(crate) fn waiting(&self, agent: &AgentPath, waiting: bool) {
        if !self.subagents || *agent == AgentPath::main() {
            return;
        }
        let Some(parent) = parent_of(agent) else {
            return;
        };
        let (parent_session, _) = self.session_of(&parent);
        let (session, shown) = self.session_of(agent);
        if !shown {
            return;
        }
        let state = if waiting {
            StateUpdate::RequiresAction(RequiresActionStateUpdate::new())
        } else {
            StateUpdate::Running(RunningStateUpdate::new())
        };
        self.send(
            &parent_session,
            SessionUpdate::SubagentUpdate(SubagentUpdate::new(session).state(state)),
        );
    }

    /// The agents this front end shows as their own sessions or as the
    /// first-level child a folded descendant belongs to.
    fn folded_into(&self, routes: &Routes, agent: &AgentPath) -> Option<AgentPath> {
        routes
            .progress
            .keys()
            .find(|child| {
                agent.as_str() == child.as_str()
                    || agent.as_str().starts_with(&format!("{}/", child.as_str()))
            })
            .cloned()
    }

    /// The subagent session `child` gets, with the subagents capability.
    pub(super) fn child_session(&self, child: &AgentPath) -> Option<String> {
        self.subagents.then(|| format!("{}/{}", self.top(), child))
    }

    /// A child started: announced as its subagent session
    /// ([`Self::child_session`]) linked from its parent's call `call_id`,
    /// or without the capability shown in that call's content. Only a call
    /// the client was told of is updated: a workflow's agent (`call_id`
    /// `None`) is linked from its run's call, a batch task's
    /// `<batch>/<task>` names none.
    pub(super) fn child_started(
        &self,
        session: &str,
        parent: &AgentPath,
        child: &AgentPath,
        call_id: Option<&str>,
        description: &str,
        agent_type: &str,
    ) {
        if let Some(child_session) = self.child_session(child) {
            // Its routes, and its link from the parent's call when the
            // client knows that call, under one lock.
            let linked = self.routes.lock().is_ok_and(|mut routes| {
                routes.sessions.insert(child.clone(), child_session.clone());
                routes.paths.insert(child_session.clone(), child.clone());
                match call_id.and_then(|id| routes.calls.get_mut(&(parent.clone(), id.to_owned())))
                {
                    Some(call) => {
                        call.child_session = Some(child_session.clone());
                        true
                    }
                    None => false,
                }
            });
            let call_id = call_id.filter(|_| linked);
            // Announced on the parent's session before any update of its own.
            self.send(
                session,
                SessionUpdate::SubagentUpdate(
                    SubagentUpdate::new(child_session.clone())
                        .title(description.to_owned())
                        .description(format!("{agent_type} agent {child}"))
                        .capabilities(
                            SubagentSessionCapabilities::new()
                                .cancel(SessionCancelCapabilities::new()),
                        )
                        .cwd(self.workspace.clone())
                        .state(StateUpdate::Running(RunningStateUpdate::new())),
                ),
            );
            if let Some(call_id) = call_id {
                self.send(
                    session,
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        call_id.to_owned(),
                        ToolCallUpdateFields::new().content(vec![ToolCallContent::Session(
                            SessionReference::new(child_session),
                        )]),
                    )),
                );
            }
            return;
        }
        if *parent == AgentPath::main()
            && let Some(call_id) = call_id
        {
            let progress = Progress {
                call_id: call_id.to_owned(),
                description: description.to_owned(),
                turns: 0,
                tokens: 0,
                tool: None,
                started: Instant::now(),
            };
            let line = progress.line();
            // Shown only in a call the client was told of.
            let shown = self.routes.lock().is_ok_and(|mut routes| {
                let known = routes
                    .calls
                    .contains_key(&(parent.clone(), call_id.to_owned()));
                if known {
                    routes.progress.insert(child.clone(), progress);
                }
                known
            });
            if shown {
                self.progress_update(call_id, line);
            }
        }
    }

    /// A child ended: its subagent session goes idle with how it ended, or
    /// its parent's call shows its end.
    pub(super) fn child_ended(
        &self,
        session: &str,
        child: &AgentPath,
        status: RunStatus,
        turns: u32,
        usage: Usage,
        description: &str,
    ) {
        let (child_session, child_shown) = self.session_of(child);
        if child_shown {
            self.send(
                session,
                SessionUpdate::SubagentUpdate(SubagentUpdate::new(child_session).state(
                    StateUpdate::Idle(IdleStateUpdate::new().stop_reason(idle_reason(status))),
                )),
            );
        } else if let Some(progress) = self
            .routes
            .lock()
            .ok()
            .and_then(|mut routes| routes.progress.remove(child))
        {
            let line = format!(
                "{description}: {} after {turns} turns, {} tokens, {}s",
                status.as_str(),
                usage.budget_tokens(),
                progress.started.elapsed().as_secs()
            );
            self.progress_update(&progress.call_id, line);
        }
    }

    /// An event of a child folded into its first-level ancestor's tool call.
    pub(super) fn on_folded(&self, event: &AgentEvent) {
        let update = {
            let Ok(mut routes) = self.routes.lock() else {
                return;
            };
            let Some(child) = self.folded_into(&routes, &event.agent) else {
                return;
            };
            let own = child == event.agent;
            let Some(progress) = routes.progress.get_mut(&child) else {
                return;
            };
            match &event.kind {
                EventKind::TurnStarted { turn } if own => progress.turns = *turn,
                EventKind::Usage { usage } => {
                    progress.tokens += usage.budget_tokens();
                    return;
                }
                EventKind::ToolCallStarted { name, input, .. } => {
                    progress.tool = Some(tool_calls::title(name, input));
                }
                _ => return,
            }
            (progress.call_id.clone(), progress.line())
        };
        self.progress_update(&update.0, update.1);
    }

    fn progress_update(&self, call_id: &str, line: String) {
        self.send(
            self.top(),
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call_id.to_owned(),
                ToolCallUpdateFields::new().content(vec![tool_calls::text(line)]),
            )),
        );
    }
}

/// How a child's run ended, as a subagent session's idle state.
fn idle_reason(status: RunStatus) -> IdleStopReason {
    match status {
        RunStatus::Completed => IdleStopReason::EndTurn,
        RunStatus::MaxTurns => IdleStopReason::MaxTurnRequests,
        RunStatus::Aborted => IdleStopReason::Cancelled,
        RunStatus::Budget => IdleStopReason::MaxTokens,
        RunStatus::Failed | RunStatus::Halted => IdleStopReason::Error(
            agent_client_protocol::v1::schema::ErrorStopReason::new().error(
                agent_client_protocol::v1::schema::Error::new(
                    i32::from(ErrorCode::INTERNAL_ERROR),
                    "the child agent failed",
                ),
            ),
        ),
    }
}

/// The path of `agent`'s parent.
fn parent_of(agent: &AgentPath) -> Option<AgentPath> {
    let (parent, _) = agent.as_str().rsplit_once('/')?;
    let mut parts = parent.split('/');
    let mut path = match parts.next() {
        Some("main") => AgentPath::main(),
        _ => return None,
    };
    for part in parts {
        path = path.child(part);
    }
    Some(path)
}
