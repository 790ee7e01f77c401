//! The `Agent` tool: delegation, synchronous face (seeds 000 and 004).
//!
//! A call runs a child — the same `run_agent` — with exactly one user message
//! (the prompt), the parent's tools minus `Agent` and the collab tools
//! (narrowed by the definition and `tool_names`), depth + 1, and a
//! cancellation token that is a child of the parent's. Gate, hooks,
//! workspace and model client are the parent's, shared by reference. Only
//! the report (summary + evidence footer) enters the parent's history; the
//! child's events go to the session's event stream and its own transcript.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use alcove_protocol::{EventKind, Message, RunStatus, ToolSpec};
use alcove_tools::{
    Access, Invocation, Tool, ToolContext, ToolOutput, Workspace, parse_input, spec_for,
};
use futures::FutureExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::child::Parent;
use super::definitions::{AgentDefinition, DEFAULT_AGENT_TYPE};
use super::report::{ReportInput, report};
use super::supervisor::Supervisor;
use crate::{AgentOutcome, AgentRun, PermissionGate, run_agent};

/// Arguments of an `Agent` call.
#[derive(Debug, Deserialize, JsonSchema)]
struct AgentInput {
    /// A short (3-5 word) description of the task.
    description: String,
    /// The task for the agent to perform: the goal, the scope, and what to report back.
    prompt: String,
    /// Optional allowlist of tool names for the subagent.
    #[serde(default)]
    tool_names: Option<Vec<String>>,
    /// The kind of agent to run (default "general-purpose"; "explore" is read-only).
    #[serde(default)]
    subagent_type: Option<String>,
    /// A different model for this agent, written provider/name.
    #[serde(default)]
    model: Option<String>,
}

/// The `Agent` tool of one agent: knows its caller's tool pool.
pub(crate) struct AgentTool {
    supervisor: Arc<Supervisor>,
    pool: Vec<Arc<dyn Tool>>,
    /// The caller's gate, which its children's gates narrow.
    gate: Arc<PermissionGate>,
    spec: ToolSpec,
}

impl AgentTool {
    pub(crate) fn new(
        supervisor: Arc<Supervisor>,
        pool: Vec<Arc<dyn Tool>>,
        gate: Arc<PermissionGate>,
    ) -> AgentTool {
        let types: Vec<String> = supervisor
            .definitions
            .all()
            .iter()
            .map(|definition| format!("- {}: {}", definition.name, definition.description))
            .collect();
        let description = format!(
            "Run a subagent with an isolated, fresh conversation; returns its final report plus an \
             evidence line written by the harness. Use it for bounded subtasks (exploration, focused \
             edits, verification) so their details stay out of your context. Several Agent calls in one \
             message run in parallel. The prompt must be self-contained: the agent sees nothing else.\n\
             Agent types:\n{}",
            types.join("\n")
        );
        AgentTool {
            supervisor,
            pool,
            gate,
            spec: spec_for::<AgentInput>("Agent", &description),
        }
    }

    fn definition(&self, input: &AgentInput) -> Result<&AgentDefinition, String> {
        let name = input.subagent_type.as_deref().unwrap_or(DEFAULT_AGENT_TYPE);
        self.supervisor.definitions.get(name).ok_or_else(|| {
            format!(
                "Unknown subagent_type `{name}`. Known agent types: {}.",
                self.supervisor.definitions.names()
            )
        })
    }
}

#[async_trait::async_trait]
impl Tool for AgentTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::Delegate
    }

    fn concurrency_safe(&self) -> bool {
        true
    }

    fn inspect(&self, input: &Value, _workspace: &Workspace) -> Result<Invocation, String> {
        let input: AgentInput = parse_input("Agent", input)?;
        if input.description.trim().is_empty() {
            return Err("invalid arguments for Agent: `description` must not be empty".to_owned());
        }
        if input.prompt.trim().is_empty() {
            return Err("invalid arguments for Agent: `prompt` must not be empty".to_owned());
        }
        let definition = self.definition(&input)?;
        Ok(Invocation {
            summary: format!("{}: {}", definition.name, input.description),
            paths: Vec::new(),
            command: None,
        })
    }

    async fn call(&self, input: Value, context: &ToolContext) -> ToolOutput {
        let input: AgentInput = match parse_input("Agent", &input) {
            Ok(input) => input,
            Err(reason) => return ToolOutput::error(reason),
        };
        let limits = self.supervisor.limits;
        if context.depth >= limits.max_depth {
            return ToolOutput::error(format!(
                "Agent nesting depth exceeded (max {})",
                limits.max_depth
            ));
        }
        let definition = match self.definition(&input) {
            Ok(definition) => definition.clone(),
            Err(reason) => return ToolOutput::error(reason),
        };
        // The main agent waits for a slot; a child that delegates must not wait
        // while holding one (four parents waiting on four slots would deadlock).
        let slots = self.supervisor.slots.clone();
        let permit = if context.depth == 0 {
            tokio::select! {
                permit = slots.acquire_owned() => permit.ok(),
                () = context.cancel.cancelled() => return ToolOutput::error("Agent aborted"),
            }
        } else {
            slots.try_acquire_owned().ok()
        };
        let Some(_permit) = permit else {
            return ToolOutput::error(format!(
                "subagent concurrency limit reached ({})",
                limits.max_concurrent
            ));
        };
        self.run_child(input, definition, context).await
    }
}

impl AgentTool {
    async fn run_child(
        &self,
        input: AgentInput,
        definition: AgentDefinition,
        context: &ToolContext,
    ) -> ToolOutput {
        let supervisor = &self.supervisor;
        let started = Instant::now();
        let parent = Parent {
            path: &context.agent,
            depth: context.depth,
            pool: &self.pool,
            gate: &self.gate,
            call_id: &context.call_id,
        };
        let name = supervisor.next_child_name();
        let child = match supervisor
            .prepare_child(
                parent,
                &name,
                &definition,
                &input.description,
                input.tool_names.as_deref(),
                input.model.as_deref(),
                context.cancel.child_token(),
            )
            .await
        {
            Ok(child) => child,
            Err(reason) => return ToolOutput::error(format!("Agent failed: {reason}")),
        };
        // A definition's own wall-clock budget overrides `agents.timeout_secs`.
        let timeout = definition.timeout.or(supervisor.limits.timeout);
        let (outcome, budget_note) = self
            .drive(&child.runtime, &child.run, input.prompt, timeout)
            .await;
        let output = report(
            &ReportInput {
                description: &input.description,
                outcome: &outcome,
                max_turns: child.run.max_turns,
                budget_note,
                elapsed: started.elapsed(),
                ignored_tools: &child.ignored_tools,
                transcript: child.transcript_path(),
            },
            &child.evidence,
        );
        supervisor.runtime.emit(
            &context.agent,
            EventKind::AgentEnded {
                child: child.path,
                description: input.description,
                status: outcome.status,
                ok: !output.is_error,
                turns: outcome.turns,
                usage: outcome.usage,
            },
        );
        output
    }

    /// Runs the child to its end, enforcing the wall-clock budget and turning
    /// a panic into a failure.
    async fn drive(
        &self,
        runtime: &crate::Runtime,
        run: &AgentRun,
        prompt: String,
        timeout: Option<std::time::Duration>,
    ) -> (AgentOutcome, Option<String>) {
        let child = AssertUnwindSafe(run_agent(
            runtime,
            run,
            Vec::new(),
            Message::user_text(prompt),
        ))
        .catch_unwind();
        tokio::pin!(child);
        let finished = match timeout {
            Some(limit) => tokio::select! {
                finished = &mut child => finished,
                () = tokio::time::sleep(limit) => {
                    run.cancel.cancel();
                    let finished = child.await;
                    return match finished {
                        Ok(mut outcome) => {
                            outcome.status = RunStatus::Budget;
                            (outcome, Some(format!("wall time over {}s", limit.as_secs_f64())))
                        }
                        Err(_) => (panicked(), None),
                    };
                }
            },
            None => child.await,
        };
        match finished {
            Ok(outcome) => {
                let note = (outcome.status == RunStatus::Budget).then(|| {
                    format!(
                        "tokens over {}",
                        self.supervisor.limits.max_tokens.unwrap_or_default()
                    )
                });
                (outcome, note)
            }
            Err(_) => (panicked(), None),
        }
    }
}

fn panicked() -> AgentOutcome {
    AgentOutcome {
        status: RunStatus::Failed,
        messages: Vec::new(),
        turns: 0,
        usage: Default::default(),
        error: Some("the child agent panicked".to_owned()),
    }
}

#[cfg(test)]
#[path = "agent_tool_tests.rs"]
mod tests;
