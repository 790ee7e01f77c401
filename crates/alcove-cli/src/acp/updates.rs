//! The event stream as ACP `session/update` notifications: this front end's
//! [`EventSink`], one per ACP session.
//!
//! Every `AgentEvent` of the session's tree comes here, the main agent's
//! and every descendant's, as it does to the TUI. Each agent's events are
//! routed to one ACP session: the main agent's to the session the client
//! opened; a child's, when the client set `clientCapabilities.subagents`,
//! to a subagent session of its own (announced with `subagent_update` on
//! its parent's session before any of its own updates, its `state` kept
//! current, its parent's `Agent`/`spawn_agent` call carrying `session`
//! content that points at it). Without that capability a child is its
//! parent's tool call, whose content shows its progress (turns, tokens,
//! time, current tool) and then its report.
//!
//! On an agent's session go its text, thinking (`agent_thought_chunk`),
//! tool calls, plan (`plan`, from `TodoWrite`) and context figures
//! (`usage_update`, with the session's cost when config prices the model).
//! Every agent's tokens are also counted here, for the prompt's `usage`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Cost, IdleStateUpdate, IdleStopReason, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, RequiresActionStateUpdate, RunningStateUpdate,
    SessionCancelCapabilities, SessionNotification, SessionReference, SessionUpdate, StateUpdate,
    SubagentSessionCapabilities, SubagentUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, UsageUpdate,
};
use agent_client_protocol::{Client, ErrorCode};
use alcove_core::EventSink;
use alcove_protocol::{AgentEvent, AgentPath, EventKind, RunStatus, Todo, TodoStatus, Usage};
use serde_json::Value;

use super::tool_calls;
use crate::settings::model::Price;

/// A tool call announced and not yet finished.
struct OpenCall {
    name: String,
    input: Value,
    /// The diff a Write or Edit was about to make, kept for its final update.
    diff: Option<ToolCallContent>,
    /// The subagent session it started, for an `Agent`/`spawn_agent` call.
    child_session: Option<String>,
}

/// A child shown as its parent's tool call (no subagents capability).
struct Progress {
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

#[derive(Default)]
struct Routes {
    /// Each child's subagent session id (subagents capability).
    sessions: HashMap<AgentPath, String>,
    /// And the other way round, for `session/cancel` of a child.
    paths: HashMap<String, AgentPath>,
    /// First-level children shown as the main agent's tool calls.
    progress: HashMap<AgentPath, Progress>,
    /// Calls announced and not finished, by agent and call id.
    calls: HashMap<(AgentPath, String), OpenCall>,
    /// Agents whose current message was streamed (so its whole text is not sent again).
    streamed: HashSet<AgentPath>,
    /// Each shown agent's last context figures (used, window).
    context: HashMap<AgentPath, (u64, u64)>,
    /// Tokens of the whole tree in the running prompt, and in the session.
    turn_usage: Usage,
    session_usage: Usage,
}

/// One ACP session's update stream.
pub(crate) struct Updates {
    connection: ConnectionTo<Client>,
    /// The ACP session the main agent's updates go to (the alcove
    /// session's id, known once it is open; nothing is sent before).
    top: std::sync::OnceLock<String>,
    subagents: bool,
    workspace: PathBuf,
    /// The session model's price, when config has one (`[pricing]`).
    price: std::sync::OnceLock<Option<Price>>,
    routes: Mutex<Routes>,
}

impl Updates {
    pub(crate) fn new(
        connection: ConnectionTo<Client>,
        subagents: bool,
        workspace: PathBuf,
    ) -> Updates {
        Updates {
            connection,
            top: std::sync::OnceLock::new(),
            subagents,
            workspace,
            price: std::sync::OnceLock::new(),
            routes: Mutex::default(),
        }
    }

    /// The ACP session id of the main agent.
    pub(crate) fn top(&self) -> &str {
        self.top.get().map_or("", String::as_str)
    }

    /// Names the session once it is open, and the price its tokens cost.
    pub(crate) fn set_top(&self, id: String, price: Option<Price>) {
        let _ = self.top.set(id);
        let _ = self.price.set(price);
    }

    /// The tokens the whole tree used since the last call (one prompt's).
    pub(crate) fn take_turn_usage(&self) -> Usage {
        self.routes
            .lock()
            .map(|mut routes| std::mem::take(&mut routes.turn_usage))
            .unwrap_or_default()
    }

    /// What the session's tokens cost so far, when the model is priced.
    fn cost(&self, routes: &Routes) -> Option<Cost> {
        let price = self.price.get().copied().flatten()?;
        Some(Cost::new(price.cost(&routes.session_usage), "USD"))
    }

    /// Every agent's tokens count for the prompt and the session (a
    /// folded child's too); the main agent's request also updates the
    /// session's cost.
    fn count_usage(&self, agent: &AgentPath, usage: Usage) {
        let update = {
            let Ok(mut routes) = self.routes.lock() else {
                return;
            };
            routes.turn_usage.add(usage);
            routes.session_usage.add(usage);
            if *agent != AgentPath::main() || self.price.get().copied().flatten().is_none() {
                return;
            }
            let Some((used, window)) = routes.context.get(agent).copied() else {
                return;
            };
            UsageUpdate::new(used, window).cost(self.cost(&routes))
        };
        self.send(self.top(), SessionUpdate::UsageUpdate(update));
    }

    /// Sends one update on `session` (a closed connection drops it: the
    /// session's end follows from the closed input).
    pub(crate) fn send(&self, session: &str, update: SessionUpdate) {
        if session.is_empty() {
            return;
        }
        let _ = self
            .connection
            .send_notification(SessionNotification::new(session.to_owned(), update));
    }

    /// The connection, for requests (permission) made on this session's behalf.
    pub(crate) fn connection(&self) -> &ConnectionTo<Client> {
        &self.connection
    }

    /// The child agent a subagent session id names.
    pub(crate) fn child_of_session(&self, session: &str) -> Option<AgentPath> {
        self.routes
            .lock()
            .ok()
            .and_then(|routes| routes.paths.get(session).cloned())
    }

    /// The ACP session `agent`'s own updates go to, and whether they are
    /// shown there as they are (false: a child folded into its parent's call).
    pub(crate) fn session_of(&self, agent: &AgentPath) -> (String, bool) {
        if *agent == AgentPath::main() {
            return (self.top().to_owned(), true);
        }
        let routes = self.routes.lock();
        match routes
            .ok()
            .and_then(|routes| routes.sessions.get(agent).cloned())
        {
            Some(session) => (session, true),
            None => (self.top().to_owned(), false),
        }
    }

    /// The id of the tool call `agent` is asking approval for: the newest
    /// open call of that tool with those arguments.
    pub(crate) fn call_asking(
        &self,
        agent: &AgentPath,
        tool: &str,
        input: &Value,
    ) -> Option<String> {
        let routes = self.routes.lock().ok()?;
        routes
            .calls
            .iter()
            .filter(|((path, _), call)| path == agent && call.name == tool && call.input == *input)
            .map(|((_, id), _)| id.clone())
            .next()
    }

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

    fn on_event(&self, event: &AgentEvent) {
        let agent = &event.agent;
        if let EventKind::Usage { usage } = &event.kind {
            self.count_usage(agent, *usage);
        }
        let (session, shown) = self.session_of(agent);
        if !shown {
            self.on_folded(event);
            return;
        }
        match &event.kind {
            EventKind::TextDelta { text } => {
                if let Ok(mut routes) = self.routes.lock() {
                    routes.streamed.insert(agent.clone());
                }
                self.send(&session, message_chunk(text));
            }
            EventKind::AssistantText { text } => {
                let streamed = self
                    .routes
                    .lock()
                    .map(|mut routes| routes.streamed.remove(agent))
                    .unwrap_or(true);
                if !streamed && !text.is_empty() {
                    self.send(&session, message_chunk(text));
                }
            }
            EventKind::ToolCallStarted { id, name, input } => {
                let diff = tool_calls::diff(name, input, &self.workspace);
                let mut call = ToolCall::new(id.clone(), tool_calls::title(name, input))
                    .kind(tool_calls::kind(name))
                    .status(ToolCallStatus::InProgress)
                    .locations(tool_calls::locations(name, input, &self.workspace))
                    .raw_input(input.clone());
                if let Some(diff) = &diff {
                    call = call.content(vec![diff.clone()]);
                }
                if let Ok(mut routes) = self.routes.lock() {
                    routes.calls.insert(
                        (agent.clone(), id.clone()),
                        OpenCall {
                            name: name.clone(),
                            input: input.clone(),
                            diff,
                            child_session: None,
                        },
                    );
                }
                self.send(&session, SessionUpdate::ToolCall(call));
            }
            EventKind::ToolCallFinished {
                id,
                name,
                content,
                is_error,
                ..
            } => {
                let open = self
                    .routes
                    .lock()
                    .ok()
                    .and_then(|mut routes| routes.calls.remove(&(agent.clone(), id.clone())));
                let mut shown = Vec::new();
                if let Some(open) = &open {
                    shown.extend(
                        open.child_session
                            .clone()
                            .map(|child| ToolCallContent::Session(SessionReference::new(child))),
                    );
                    if !is_error {
                        shown.extend(open.diff.clone());
                    }
                }
                if *is_error || !matches!(name.as_str(), "Write" | "Edit") {
                    shown.push(tool_calls::result(name, content.as_str()));
                }
                let status = if *is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                self.send(
                    &session,
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        id.clone(),
                        ToolCallUpdateFields::new()
                            .status(status)
                            .content(shown)
                            .raw_output(Value::String(content.as_str().to_owned())),
                    )),
                );
            }
            EventKind::AgentStarted {
                child,
                call_id,
                description,
                agent_type,
                ..
            } => self.child_started(&session, agent, child, call_id, description, agent_type),
            EventKind::AgentEnded {
                child,
                status,
                turns,
                usage,
                description,
                ..
            } => {
                let (child_session, child_shown) = self.session_of(child);
                if child_shown {
                    self.send(
                        &session,
                        SessionUpdate::SubagentUpdate(SubagentUpdate::new(child_session).state(
                            StateUpdate::Idle(
                                IdleStateUpdate::new().stop_reason(idle_reason(*status)),
                            ),
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
            EventKind::ThinkingDelta { text } => self.send(&session, thought_chunk(text)),
            EventKind::PlanUpdated { todos } => {
                self.send(&session, SessionUpdate::Plan(plan_update(todos)));
            }
            EventKind::Context { used, window } => {
                let cost = self.routes.lock().ok().and_then(|mut routes| {
                    routes.context.insert(agent.clone(), (*used, *window));
                    self.cost(&routes)
                });
                self.send(
                    &session,
                    SessionUpdate::UsageUpdate(UsageUpdate::new(*used, *window).cost(cost)),
                );
            }
            _ => {}
        }
    }

    fn child_started(
        &self,
        session: &str,
        parent: &AgentPath,
        child: &AgentPath,
        call_id: &str,
        description: &str,
        agent_type: &str,
    ) {
        if self.subagents {
            let child_session = format!("{}/{}", self.top(), child);
            if let Ok(mut routes) = self.routes.lock() {
                routes.sessions.insert(child.clone(), child_session.clone());
                routes.paths.insert(child_session.clone(), child.clone());
                if let Some(call) = routes.calls.get_mut(&(parent.clone(), call_id.to_owned())) {
                    call.child_session = Some(child_session.clone());
                }
            }
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
            self.send(
                session,
                SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id.to_owned(),
                    ToolCallUpdateFields::new().content(vec![ToolCallContent::Session(
                        SessionReference::new(child_session),
                    )]),
                )),
            );
        } else if *parent == AgentPath::main() {
            let progress = Progress {
                call_id: call_id.to_owned(),
                description: description.to_owned(),
                turns: 0,
                tokens: 0,
                tool: None,
                started: Instant::now(),
            };
            let line = progress.line();
            if let Ok(mut routes) = self.routes.lock() {
                routes.progress.insert(child.clone(), progress);
            }
            self.progress_update(call_id, line);
        }
    }

    /// An event of a child folded into its first-level ancestor's tool call.
    fn on_folded(&self, event: &AgentEvent) {
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

impl EventSink for Updates {
    fn emit(&self, event: &AgentEvent) {
        self.on_event(event);
    }
}

/// An `agent_message_chunk` of text.
pub(crate) fn message_chunk(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text.to_owned(),
    ))))
}

/// An `agent_thought_chunk` of thinking.
pub(crate) fn thought_chunk(text: &str) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text.to_owned(),
    ))))
}

/// A `TodoWrite` plan as an ACP plan: one entry per step, in order (the
/// plan tool has no priorities: every entry is `medium`).
fn plan_update(todos: &[Todo]) -> Plan {
    Plan::new(
        todos
            .iter()
            .map(|todo| {
                let status = match todo.status {
                    TodoStatus::Pending => PlanEntryStatus::Pending,
                    TodoStatus::InProgress => PlanEntryStatus::InProgress,
                    TodoStatus::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(todo.content.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
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
