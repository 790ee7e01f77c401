//! A workflow run on ACP: one tool call in the session of the agent that
//! started it, whose content says how far the run is.
//!
//! `workflow_started` opens the call (`toolCallId` the run id, title
//! `Workflow <name>`, kind `think` as every delegation tool's, status
//! `in_progress`); each `workflow_phase` and each start and end of one of
//! its agents updates its content with one progress line (current phase,
//! agents started and ended, tokens of the ended ones); `workflow_ended`
//! closes it `completed` when the script returned and `failed` on any other
//! end, with the run's summary line. Updates are not throttled: a run has
//! at most 1,000 agents, so at most about 2,000 short lines, fewer than a
//! streamed answer's chunks.
//!
//! Each agent is a child like any other (`subagents.rs`): with the
//! subagents capability its own subagent session, which the run's call
//! links with `session` content while the agent runs (the running ones
//! only, at most the run's concurrency, so an update stays small); without
//! it, the agents are counted in the run's line and their own events are
//! not shown.

use std::collections::HashMap;

use agent_client_protocol::v1::schema::{
    SessionReference, SessionUpdate, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use alcove_protocol::{AgentPath, EventKind, Usage};
use serde_json::json;

use super::Updates;
use crate::acp::tool_calls;

/// The workflow runs of one ACP session shown as tool calls.
#[derive(Default)]
pub(crate) struct Runs {
    calls: HashMap<String, RunCall>,
    /// Which run each agent is of.
    agents: HashMap<AgentPath, String>,
}

/// One run's tool call and what its progress line says.
struct RunCall {
    /// The ACP session the call is in.
    session: String,
    phase: Option<String>,
    started: u32,
    ended: u32,
    tokens: u64,
    /// The subagent sessions of its running agents, in start order.
    running: Vec<(AgentPath, String)>,
}

impl RunCall {
    /// `phase Check · 5 agents started, 3 ended · 12345 tokens`.
    fn line(&self) -> String {
        let agents = format!(
            "{} agent{} started, {} ended · {} tokens",
            self.started,
            if self.started == 1 { "" } else { "s" },
            self.ended,
            self.tokens
        );
        match &self.phase {
            Some(phase) => format!("phase {phase} · {agents}"),
            None => agents,
        }
    }

    /// The line, then links to the running agents' sessions.
    fn content(&self) -> Vec<ToolCallContent> {
        let mut content = vec![tool_calls::text(self.line())];
        content.extend(
            self.running.iter().map(|(_, session)| {
                ToolCallContent::Session(SessionReference::new(session.clone()))
            }),
        );
        content
    }
}

/// A run's call to update: its session and its new content.
pub(super) type RunUpdate = (String, Vec<ToolCallContent>);

impl Runs {
    /// Changes a run's progress; what to send, when `run` is shown.
    fn change(&mut self, run: &str, change: impl FnOnce(&mut RunCall)) -> Option<RunUpdate> {
        let call = self.calls.get_mut(run)?;
        change(call);
        Some((call.session.clone(), call.content()))
    }
}

impl Updates {
    /// A run's start, phase or end, from the agent whose session is `session`.
    pub(super) fn on_workflow(&self, session: &str, kind: &EventKind) {
        match kind {
            EventKind::WorkflowStarted {
                run_id,
                name,
                phases,
                max_concurrent,
                budget_tokens,
                budget_usd,
            } => {
                let call = RunCall {
                    session: session.to_owned(),
                    phase: None,
                    started: 0,
                    ended: 0,
                    tokens: 0,
                    running: Vec::new(),
                };
                let line = format!("starting · up to {max_concurrent} agents at once");
                if let Ok(mut runs) = self.runs.lock() {
                    runs.calls.insert(run_id.clone(), call);
                }
                let input = json!({
                    "name": name,
                    "phases": phases,
                    "max_concurrent": max_concurrent,
                    "budget_tokens": budget_tokens,
                    "budget_usd": budget_usd,
                });
                self.send(
                    session,
                    SessionUpdate::ToolCall(
                        ToolCall::new(run_id.clone(), format!("Workflow {name}"))
                            .kind(ToolKind::Think)
                            .status(ToolCallStatus::InProgress)
                            .content(vec![tool_calls::text(line)])
                            .raw_input(input),
                    ),
                );
            }
            EventKind::WorkflowPhase { run_id, title } => {
                self.run_progress(run_id, |call| call.phase = Some(title.clone()));
            }
            EventKind::WorkflowEnded {
                run_id,
                status,
                agents,
                nulls,
                summary,
                tokens,
                usd,
                error,
            } => {
                let Some(call) = self.runs.lock().ok().and_then(|mut runs| {
                    runs.agents.retain(|_, run| run != run_id);
                    runs.calls.remove(run_id)
                }) else {
                    return;
                };
                let mut line = format!("{status}: {summary} · {tokens} tokens");
                if let Some(usd) = usd {
                    line.push_str(&format!(" · ${usd:.2}"));
                }
                if let Some(error) = error {
                    line.push_str(&format!("\n{error}"));
                }
                let end = if status == "completed" {
                    ToolCallStatus::Completed
                } else {
                    ToolCallStatus::Failed
                };
                let output = json!({
                    "status": status, "agents": agents, "nulls": nulls, "summary": summary,
                    "tokens": tokens, "usd": usd, "error": error,
                });
                self.send(
                    &call.session,
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        run_id.clone(),
                        ToolCallUpdateFields::new()
                            .status(end)
                            .content(vec![tool_calls::text(line)])
                            .raw_output(output),
                    )),
                );
            }
            _ => {}
        }
    }

    /// An agent of `run` started (`session`: its subagent session): when
    /// `run` is shown as a tool call, the agent counts for it (under one
    /// lock) and the call's update is returned, to send once the agent is
    /// announced; `None` when `run` is no such call.
    pub(super) fn run_agent_started(
        &self,
        run: &str,
        agent: &AgentPath,
        session: Option<String>,
    ) -> Option<RunUpdate> {
        let mut runs = self.runs.lock().ok()?;
        let update = runs.change(run, |call| {
            call.started += 1;
            call.running
                .extend(session.map(|session| (agent.clone(), session)));
        })?;
        runs.agents.insert(agent.clone(), run.to_owned());
        Some(update)
    }

    /// An agent ended: when it is a run's, its spend counts for the run.
    pub(super) fn run_agent_ended(&self, agent: &AgentPath, usage: Usage) {
        let Some(update) = self.runs.lock().ok().and_then(|mut runs| {
            let run = runs.agents.remove(agent)?;
            runs.change(&run, |call| {
                call.ended += 1;
                call.tokens += usage.budget_tokens();
                call.running.retain(|(path, _)| path != agent);
            })
            .map(|update| (run, update))
        }) else {
            return;
        };
        self.send_run_progress(&update.0, update.1);
    }

    /// Changes a run's progress and sends its new line.
    fn run_progress(&self, run: &str, change: impl FnOnce(&mut RunCall)) {
        if let Some(update) = self
            .runs
            .lock()
            .ok()
            .and_then(|mut runs| runs.change(run, change))
        {
            self.send_run_progress(run, update);
        }
    }

    /// Sends a run's call its new content.
    pub(super) fn send_run_progress(&self, run: &str, (session, content): RunUpdate) {
        self.send(
            &session,
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                run.to_owned(),
                ToolCallUpdateFields::new().content(content),
            )),
        );
    }
}
