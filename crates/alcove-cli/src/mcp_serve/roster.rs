//! `list_agents`: the server's children as a client reads them (id,
//! description, status, turns, tokens), kept from the server's event
//! stream, so a child of any call — `delegate`, `spawn_agent`, a
//! `spawn_batch` task, a `Workflow`'s agent — is listed the same way. A spawned agent's status is
//! the registry's (the one `wait` reports); a delegated child's is how it
//! ended, or `running`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use alcove_core::{EventSink, Supervisor};
use alcove_protocol::{AgentEvent, AgentPath, EventKind, RunStatus};
use serde::Serialize;
use serde_json::{Value, json};

/// How many ended children stay listed; older ones are dropped first.
const RETAINED_ENDED: usize = 256;
/// How many of the top agent's `spawn_agent` calls (and workflow runs) are remembered.
const RETAINED_CALLS: usize = 64;

/// One child of the server's top agent.
struct Entry {
    path: AgentPath,
    agent_type: String,
    description: String,
    started_by: String,
    transcript: Option<String>,
    turns: u32,
    tokens: u64,
    ended: Option<RunStatus>,
}

#[derive(Default)]
struct State {
    entries: Vec<Entry>,
    /// The ids of the top agent's `spawn_agent` calls.
    spawning_calls: VecDeque<String>,
    /// The ids of the top agent's workflow runs (`workflow_started`).
    workflow_runs: VecDeque<String>,
}

/// The server's children, as the events tell them.
#[derive(Default)]
pub(crate) struct Roster {
    state: Mutex<State>,
}

/// One row of `list_agents`.
#[derive(Debug, Serialize)]
struct Row<'a> {
    id: &'a str,
    agent: &'a str,
    agent_type: &'a str,
    description: &'a str,
    status: &'static str,
    started_by: &'a str,
    turns: u32,
    tokens: u64,
    transcript: Option<&'a str>,
}

impl Roster {
    /// The `list_agents` result: every child listed, oldest first.
    pub(crate) fn list(&self, supervisor: &Supervisor) -> Value {
        let Ok(state) = self.state.lock() else {
            return json!({"agents": []});
        };
        let rows: Vec<Row<'_>> = state
            .entries
            .iter()
            .map(|entry| Row {
                id: entry.path.as_str().rsplit('/').next().unwrap_or_default(),
                agent: entry.path.as_str(),
                agent_type: &entry.agent_type,
                description: &entry.description,
                status: supervisor.spawned_state(&entry.path).unwrap_or_else(|| {
                    match entry.ended {
                        Some(status) => super::children::status_name(status),
                        None => "running",
                    }
                }),
                started_by: &entry.started_by,
                turns: entry.turns,
                tokens: entry.tokens,
                transcript: entry.transcript.as_deref(),
            })
            .collect();
        json!({ "agents": rows })
    }
}

impl EventSink for Roster {
    fn emit(&self, event: &AgentEvent) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let top = event.agent == AgentPath::main();
        match &event.kind {
            EventKind::ToolCallStarted { id, name, .. } if top && name == "spawn_agent" => {
                state.spawning_calls.push_back(id.clone());
                if state.spawning_calls.len() > RETAINED_CALLS {
                    state.spawning_calls.pop_front();
                }
            }
            EventKind::WorkflowStarted { run_id, .. } if top => {
                state.workflow_runs.push_back(run_id.clone());
                if state.workflow_runs.len() > RETAINED_CALLS {
                    state.workflow_runs.pop_front();
                }
            }
            EventKind::AgentStarted {
                child,
                call_id,
                agent_type,
                description,
                transcript,
                run,
                ..
            } if top => {
                // A batch's task and a workflow's agent name their run.
                let started_by = match run.as_deref() {
                    Some(run) if state.workflow_runs.iter().any(|known| known == run) => "Workflow",
                    Some(_) => "spawn_batch",
                    None if state.spawning_calls.contains(call_id) => "spawn_agent",
                    None => "delegate",
                };
                state.entries.push(Entry {
                    path: child.clone(),
                    agent_type: agent_type.clone(),
                    description: description.clone(),
                    started_by: started_by.to_owned(),
                    transcript: transcript.clone(),
                    turns: 0,
                    tokens: 0,
                    ended: None,
                });
            }
            EventKind::AgentEnded { child, status, .. } if top => {
                if let Some(entry) = state.entries.iter_mut().find(|entry| entry.path == *child) {
                    entry.ended = Some(*status);
                }
                forget_old(&mut state.entries);
            }
            EventKind::TurnStarted { .. } => {
                if let Some(entry) = state
                    .entries
                    .iter_mut()
                    .find(|entry| entry.path == event.agent)
                {
                    entry.turns += 1;
                }
            }
            EventKind::Usage { usage } => {
                if let Some(entry) = state
                    .entries
                    .iter_mut()
                    .find(|entry| super::progress::is_within(&event.agent, &entry.path))
                {
                    entry.tokens += usage.budget_tokens();
                }
            }
            _ => {}
        }
    }
}

/// Drops the oldest ended entries past [`RETAINED_ENDED`].
fn forget_old(entries: &mut Vec<Entry>) {
    let ended = entries.iter().filter(|entry| entry.ended.is_some()).count();
    let mut excess = ended.saturating_sub(RETAINED_ENDED);
    entries.retain(|entry| {
        if excess > 0 && entry.ended.is_some() {
            excess -= 1;
            false
        } else {
            true
        }
    });
}

/// The `list_agents` tool as the client's model reads it.
pub(crate) fn list_agents_tool() -> rmcp::model::Tool {
    let input = json!({"type": "object", "properties": {}, "additionalProperties": false});
    let row = json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The id `wait`, `send_input` and `close_agent` take (for a spawned agent)."},
            "agent": {"type": "string", "description": "Its path in the server's agent tree."},
            "agent_type": {"type": "string"},
            "description": {"type": "string"},
            "status": {"type": "string", "description": "running, completed, max_turns, budget, failed or cancelled; a spawned agent's: running, completed, errored, cancelled or closed."},
            "started_by": {"type": "string", "enum": ["delegate", "spawn_agent", "spawn_batch", "Workflow"]},
            "turns": {"type": "integer", "description": "Model requests it made so far."},
            "tokens": {"type": "integer", "description": "Tokens it and its descendants used so far (what budgets count)."},
            "transcript": {"type": ["string", "null"]}
        },
        "required": ["id", "agent", "agent_type", "description", "status", "started_by", "turns", "tokens"]
    });
    let output = json!({
        "type": "object",
        "properties": {"agents": {"type": "array", "items": row}},
        "required": ["agents"]
    });
    rmcp::model::Tool::new(
        LIST_AGENTS,
        "Lists the agents this alcove server started for its clients (by delegate, spawn_agent or \
         spawn_batch, or a Workflow's agents), oldest first: id, description, status, turns and tokens so far.",
        Arc::new(as_object(input)),
    )
    .with_raw_output_schema(Arc::new(as_object(output)))
    .with_annotations(rmcp::model::ToolAnnotations::new().read_only(true))
}

/// The name of the listing tool.
pub(crate) const LIST_AGENTS: &str = "list_agents";

fn as_object(value: Value) -> rmcp::model::JsonObject {
    match value {
        Value::Object(map) => map,
        _ => rmcp::model::JsonObject::new(),
    }
}
