//! The `Agent` tool: delegation, synchronous face (seeds 000 and 004).
//!
//! A call starts a child through the one lifecycle (`lifecycle`: lease,
//! build, announce) and awaits it: the same `run_agent` with exactly one user
//! message (the prompt), the caller's tools minus the delegation tools
//! (narrowed by the definition and `tool_names`), depth + 1, and a
//! cancellation token that is a child of the call's. The caller is whoever
//! dispatch says it is (`scope`); the tool itself holds only its spec and the
//! supervisor, weakly. Only the report (summary + evidence footer) enters the
//! parent's history.

use std::sync::Weak;

use alcove_protocol::ToolSpec;
use alcove_tools::{Access, Invocation, ScopedTool, ToolContext, ToolOutput, Workspace};
use schemars::JsonSchema;
use serde::Deserialize;

use super::child::ChildRequest;
use super::definitions::{AgentDefinition, DEFAULT_AGENT_TYPE, Definitions};
use super::leases::{Pool, SlotWait};
use super::scope::AgentScope;
use super::start_error::StartError;
use super::supervisor::{Supervisor, upgrade};

/// Arguments of an `Agent` call.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct AgentInput {
    /// 3-5 words.
    description: String,
    /// The task: goal, scope, what to report.
    prompt: String,
    /// Only these tools.
    #[serde(default)]
    tool_names: Option<Vec<String>>,
    /// Agent type (default "general-purpose").
    #[serde(default)]
    subagent_type: Option<String>,
    /// Another model, provider/name.
    #[serde(default)]
    model: Option<String>,
    /// "worktree": its own git worktree of your current files; its changes
    /// come back as a branch to merge. For agents writing in parallel.
    #[serde(default)]
    isolation: Option<String>,
    /// How hard it thinks: low, medium, high or max.
    #[serde(default)]
    effort: Option<String>,
}

/// The `Agent` tool.
pub(crate) struct AgentTool {
    supervisor: Weak<Supervisor>,
    spec: ToolSpec,
}

impl AgentTool {
    pub(crate) fn new(supervisor: Weak<Supervisor>, definitions: &Definitions) -> AgentTool {
        let types: Vec<String> = definitions
            .all()
            .iter()
            .map(|definition| format!("- {}: {}", definition.name, definition.description))
            .collect();
        let description = format!(
            "Runs a subagent on a self-contained task in a fresh conversation, keeping its details \
             out of your context; returns its report and harness-written evidence. Several calls in \
             one message run in parallel.\nAgent types:\n{}",
            types.join("\n")
        );
        AgentTool {
            supervisor,
            spec: alcove_tools::tool_spec!(AgentInput, "Agent", &description),
        }
    }

    fn definition(&self, input: &AgentInput) -> Result<AgentDefinition, String> {
        let supervisor = upgrade(&self.supervisor)?;
        let name = input.subagent_type.as_deref().unwrap_or(DEFAULT_AGENT_TYPE);
        supervisor.definitions.get(name).cloned().ok_or_else(|| {
            format!(
                "Unknown subagent_type `{name}`. Known agent types: {}.",
                supervisor.definitions.names()
            )
        })
    }
}

/// A checked `Agent` call: its input and the definition it runs (with
/// the worktree it asked for).
pub(crate) struct AgentCall {
    input: AgentInput,
    definition: AgentDefinition,
}

#[async_trait::async_trait]
impl ScopedTool<AgentScope> for AgentTool {
    type Input = AgentInput;
    type Call = AgentCall;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::Delegate
    }

    fn concurrency_safe(&self) -> bool {
        true
    }

    fn inspect(
        &self,
        input: AgentInput,
        _workspace: &Workspace,
    ) -> Result<(Invocation, AgentCall), String> {
        if input.description.trim().is_empty() {
            return Err("invalid arguments for Agent: `description` must not be empty".to_owned());
        }
        if input.prompt.trim().is_empty() {
            return Err("invalid arguments for Agent: `prompt` must not be empty".to_owned());
        }
        let mut definition = self.definition(&input)?;
        definition.worktree |= super::worktree_child::wants_worktree(input.isolation.as_deref())?;
        if let Some(effort) = &input.effort {
            alcove_model::parse_effort(effort)
                .map_err(|reason| format!("invalid arguments for Agent: {reason}"))?;
        }
        let invocation = Invocation {
            summary: format!(
                "{}: {}",
                definition.name,
                super::child::label(&input.description)
            ),
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, AgentCall { input, definition }))
    }

    async fn call(&self, call: AgentCall, context: &ToolContext, scope: &AgentScope) -> ToolOutput {
        let AgentCall { input, definition } = call;
        let supervisor = match upgrade(&self.supervisor) {
            Ok(supervisor) => supervisor,
            Err(reason) => return ToolOutput::error(format!("Agent failed: {reason}")),
        };
        let request = ChildRequest {
            description: input.description,
            tool_names: input.tool_names,
            model: input.model,
            tokens: None,
            turns: None,
            effort: input
                .effort
                .as_deref()
                .and_then(|effort| alcove_model::parse_effort(effort).ok()),
            wall: None,
            run: None,
            phase: None,
        };
        // The main agent waits for a slot; a child that delegates must not
        // wait while holding one.
        let wait = if scope.depth() == 0 {
            SlotWait::Wait
        } else {
            SlotWait::Now
        };
        let started = supervisor
            .start_child(
                scope,
                &context.call_id,
                &definition,
                &request,
                (Pool::Agent, wait),
                context.cancel.child_token(),
            )
            .await;
        match started {
            Ok(child) => child.run_to_end(&supervisor, input.prompt).await,
            // A limit is named as it is; anything else is the agent failing.
            Err(reason @ (StartError::Depth { .. } | StartError::Slots { .. })) => {
                ToolOutput::error(reason.to_string())
            }
            Err(reason) => ToolOutput::error(format!("Agent failed: {reason}")),
        }
    }
}

alcove_tools::scoped_tool!(AgentTool, AgentScope);
