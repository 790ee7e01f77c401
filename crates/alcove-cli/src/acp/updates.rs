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
//! time, current tool) and then its report (`subagents.rs`). A workflow
//! run is one tool call of the agent that started it (`workflow_calls.rs`).
//!
//! On an agent's session go its text, thinking (`agent_thought_chunk`),
//! tool calls, plan (`plan`, from `TodoWrite`) and context figures
//! (`usage_update`, with the session's cost when config prices the model).
//! Every agent's tokens are also counted here, for the prompt's `usage`.

mod subagents;
mod workflow_calls;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Mutex;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Cost, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionNotification, SessionReference, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, UsageUpdate,
};
use alcove_core::EventSink;
use alcove_protocol::{AgentEvent, AgentPath, EventKind, Todo, TodoStatus, Usage};
use serde_json::Value;

use super::tool_calls;
use crate::settings::model::Price;
use subagents::Progress;
use workflow_calls::Runs;

/// A tool call announced and not yet finished.
struct OpenCall {
    name: String,
    input: Value,
    /// The diff a Write or Edit was about to make, kept for its final update.
    diff: Option<ToolCallContent>,
    /// The subagent session it started, for an `Agent`/`spawn_agent` call.
    child_session: Option<String>,
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
    /// Workflow runs shown as tool calls (never locked with `routes`).
    runs: Mutex<Runs>,
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
            runs: Mutex::default(),
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
                run,
                ..
            } => {
                let child_session = self.child_session(child);
                let run_update = run
                    .as_deref()
                    .and_then(|run| self.run_agent_started(run, child, child_session.clone()));
                // A workflow's agent is linked from its run's tool call.
                let call_id = match run_update {
                    Some(_) => None,
                    None => Some(call_id.as_str()),
                };
                self.child_started(&session, agent, child, call_id, description, agent_type);
                if let (Some(run), Some(update)) = (run, run_update) {
                    self.send_run_progress(run, update);
                }
            }
            EventKind::AgentEnded {
                child,
                status,
                turns,
                usage,
                description,
                ..
            } => {
                self.child_ended(&session, child, *status, *turns, *usage, description);
                self.run_agent_ended(child, *usage);
            }
            EventKind::WorkflowStarted { .. }
            | EventKind::WorkflowPhase { .. }
            | EventKind::WorkflowEnded { .. } => self.on_workflow(&session, &event.kind),
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
