//! A child a front end starts for an outside caller (`alcove mcp serve`'s
//! `delegate`), not for a model's tool call: the same life as an `Agent`
//! call's (`Supervisor::start_child`, `ChildLife::finish`: slot, tree budget,
//! announce, budgets, panic capture, one end record), with the caller's own
//! turn, token and wall-time caps, and the end kept as data beside the
//! report the parent would read.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use alcove_protocol::{AgentPath, RunStatus, Usage};
use alcove_tools::{Access, Invocation};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::child::{ChildRequest, label};
use super::definitions::{AgentDefinition, DEFAULT_AGENT_TYPE};
use super::leases::{Pool, SlotWait};
use super::scope::AgentScope;
use super::supervisor::Supervisor;
use crate::{Approval, ApprovalRequest, Decision, Runtime};

/// What the outside caller asks for: an `Agent` call's arguments plus caps.
#[derive(Debug, Clone, Default)]
pub struct DelegationRequest {
    /// The task.
    pub prompt: String,
    /// A few words (default: the prompt's first line).
    pub description: Option<String>,
    /// The agent type (default `general-purpose`).
    pub agent_type: Option<String>,
    /// Only these of the session's tools.
    pub tool_names: Option<Vec<String>>,
    /// Another model, `provider/name`.
    pub model: Option<String>,
    /// low, medium, high or max.
    pub effort: Option<String>,
    /// `"worktree"`: its own git worktree; its changes come back as a branch.
    pub isolation: Option<String>,
    /// A turn cap within the definition's.
    pub max_turns: Option<u32>,
    /// A token cap within `agents.max_tokens`.
    pub max_tokens: Option<u64>,
    /// A wall-clock cap (over `agents.timeout_secs`).
    pub wall: Option<Duration>,
}

/// A checked request: what [`Supervisor::delegate`] runs.
pub struct CheckedDelegation {
    request: DelegationRequest,
    definition: AgentDefinition,
    effort: Option<String>,
}

/// How a delegated child ended: its report and the same facts as data.
#[derive(Debug, Clone)]
pub struct DelegationEnd {
    /// The child's path (`main/agent-3`).
    pub child: AgentPath,
    pub status: RunStatus,
    /// The report: the child's summary, then the harness's evidence footer.
    pub report: String,
    /// Whether the report is an error (a run that did not complete).
    pub is_error: bool,
    /// Tool calls, files read and written, commands with how they ended.
    pub evidence: Value,
    pub usage: Usage,
    pub turns: u32,
    pub transcript: Option<PathBuf>,
    /// The branch holding a worktree child's changes (none when it changed nothing).
    pub worktree_branch: Option<String>,
    /// Why it did not complete.
    pub error: Option<String>,
}

impl Supervisor {
    /// Checks a request's arguments (agent type, effort, isolation, prompt)
    /// before anything starts; the error names what is wrong.
    pub fn check_delegation(
        &self,
        request: DelegationRequest,
    ) -> Result<CheckedDelegation, String> {
        if request.prompt.trim().is_empty() {
            return Err("`prompt` must not be empty".to_owned());
        }
        let name = request.agent_type.as_deref().unwrap_or(DEFAULT_AGENT_TYPE);
        let mut definition = self.definitions.get(name).cloned().ok_or_else(|| {
            format!(
                "unknown agent_type `{name}`; known agent types: {}",
                self.definitions.names()
            )
        })?;
        definition.worktree |= super::worktree_child::wants_worktree(request.isolation.as_deref())?;
        let effort = request
            .effort
            .as_deref()
            .map(alcove_model::parse_effort)
            .transpose()?;
        if request.max_turns == Some(0) {
            return Err("`max_turns` must be at least 1".to_owned());
        }
        if request.max_tokens == Some(0) {
            return Err("`max_tokens` must be at least 1".to_owned());
        }
        Ok(CheckedDelegation {
            request,
            definition,
            effort,
        })
    }

    /// Runs `checked` as a child of the agent `run` (the front end's own
    /// top agent), to its end, cancelled by `cancel` (and its descendants
    /// with it). The call is gated as an `Agent` call of that agent would
    /// be: a deny rule refuses it, an ask goes to the runtime's approver.
    /// `Err` when it could not start (nothing was announced then).
    pub async fn delegate(
        self: &Arc<Self>,
        runtime: &Runtime,
        run: &crate::AgentRun,
        call_id: &str,
        checked: CheckedDelegation,
        cancel: CancellationToken,
    ) -> Result<DelegationEnd, String> {
        let CheckedDelegation {
            request,
            definition,
            effort,
        } = checked;
        let description = request
            .description
            .clone()
            .filter(|text| !text.trim().is_empty())
            .unwrap_or_else(|| label(&request.prompt));
        self.gate_delegation(runtime, run, &definition, &description)
            .await?;
        let scope = AgentScope::lend(runtime, run);
        let child_request = ChildRequest {
            description,
            tool_names: request.tool_names.clone(),
            model: request.model.clone(),
            tokens: request.max_tokens,
            turns: request.max_turns,
            effort,
            wall: request.wall,
            run: None,
            phase: None,
        };
        let started = self
            .start_child(
                &scope,
                call_id,
                &definition,
                &child_request,
                (Pool::Agent, SlotWait::Wait),
                cancel,
            )
            .await
            .map_err(|reason| reason.to_string())?;
        let branch = started
            .child()
            .worktree
            .as_ref()
            .map(|worktree| worktree.branch().to_owned());
        let end = started.finish(self, request.prompt, None).await;
        let outcome = &end.ended.outcome;
        Ok(DelegationEnd {
            child: end.child.path.clone(),
            status: outcome.status,
            // The branch survives only when the child changed something;
            // the worktree's evidence line names it then.
            worktree_branch: branch.filter(|branch| end.report.content.contains(branch.as_str())),
            report: end.report.content,
            is_error: end.report.is_error,
            evidence: end.child.evidence.to_json(),
            usage: outcome.usage,
            turns: outcome.turns,
            transcript: end.child.transcript_path().map(PathBuf::from),
            error: outcome.error.clone(),
        })
    }

    /// The gate's word on an `Agent` call of `definition` by `run`.
    async fn gate_delegation(
        &self,
        runtime: &Runtime,
        run: &crate::AgentRun,
        definition: &AgentDefinition,
        description: &str,
    ) -> Result<(), String> {
        let invocation = Invocation {
            summary: format!("{}: {}", definition.name, label(description)),
            paths: Vec::new(),
            command: None,
        };
        let input = serde_json::json!({
            "subagent_type": definition.name,
            "description": description,
        });
        let decision = run.gate.check(
            &run.path,
            "Agent",
            Access::Delegate,
            &invocation,
            &input,
            &runtime.workspace,
            run.sandbox,
        );
        match decision {
            Decision::Allow => Ok(()),
            Decision::Deny(reason) => Err(reason),
            Decision::Ask(reason) => {
                let request = ApprovalRequest {
                    agent: run.path.clone(),
                    agent_description: None,
                    tool: "Agent".to_owned(),
                    summary: invocation.summary,
                    input,
                    reason: reason.clone(),
                };
                match runtime.approver.approve(request).await {
                    Approval::AllowOnce | Approval::AllowAlways => Ok(()),
                    Approval::Deny(note) => Err(note.unwrap_or(reason)),
                }
            }
        }
    }
}

impl Supervisor {
    /// The state of the spawned (`spawn_agent`) agent at `path` as `wait`
    /// names it (`running`, `completed`, `errored`, `cancelled`, `closed`),
    /// for a front end listing its children; `None` when no spawned agent
    /// of the registry has that path.
    pub fn spawned_state(&self, path: &AgentPath) -> Option<&'static str> {
        let records = self.registry.records.lock().ok()?;
        records
            .values()
            .find(|record| record.child.path == *path)
            .map(|record| record.status.as_str())
    }
}
