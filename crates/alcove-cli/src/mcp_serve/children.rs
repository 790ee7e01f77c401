//! The one seam between `alcove mcp serve` and the child lifecycle: start a
//! child with options and a cancel token, await its end record, cancel it.
//! The asynchronous face goes the same way: its tools are called as the
//! server's top agent would call them. Everything else in `mcp_serve`
//! talks to children through this module only, so a change of the supervisor's API is a change here.

use std::sync::Arc;

use alcove_core::{AgentRun, DelegationEnd, DelegationRequest, Runtime, Supervisor};
use alcove_protocol::RunStatus;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What a `delegate` call asks of its child (an `Agent` call's arguments
/// plus caps): the core's request, as it is.
pub(crate) type ChildOptions = DelegationRequest;

/// A request whose arguments were checked: ready to start.
pub(crate) struct Checked(alcove_core::CheckedDelegation);

/// How a child ended, as the client reads it (`structuredContent`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct EndRecord {
    /// The child's path in the server's tree (`main/agent-3`).
    pub(crate) agent: String,
    /// completed | max_turns | budget | failed | cancelled.
    pub(crate) status: &'static str,
    pub(crate) usage: UsageRecord,
    /// Model requests made.
    pub(crate) turns: u32,
    pub(crate) tool_calls: u64,
    pub(crate) files_read: Vec<String>,
    pub(crate) files_written: Vec<String>,
    /// Commands run, each with how it ended (`exit 0`, `killed`, `not run`).
    pub(crate) commands: Vec<CommandRecord>,
    pub(crate) transcript: Option<String>,
    /// The branch with a worktree child's changes, when it changed something.
    pub(crate) worktree_branch: Option<String>,
    pub(crate) error: Option<String>,
    /// The report, as in the text content: the child's summary, then the
    /// evidence footer. Here too because some clients (Claude Code) give
    /// their model the structured content instead of the text.
    pub(crate) report: String,
}

/// Tokens a child used.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct UsageRecord {
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) cache_read_tokens: u64,
    pub(crate) cache_write_tokens: u64,
    /// What budgets count: every input token, cached or not, plus output.
    pub(crate) budget_tokens: u64,
}

/// One command a child ran.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CommandRecord {
    pub(crate) command: String,
    pub(crate) result: String,
}

/// A child's end: the report (summary, then the evidence footer) and the record.
pub(crate) struct ChildEnd {
    pub(crate) report: String,
    pub(crate) is_error: bool,
    pub(crate) record: EndRecord,
}

/// The server's children: every call's child hangs off the server's own
/// top agent, so all of them share its slots, tree budget, gate and MCP
/// connections, and its transcript folder.
pub(crate) struct Children {
    supervisor: Arc<Supervisor>,
    runtime: Runtime,
    run: AgentRun,
}

impl Children {
    /// Children of `run` (the server's top agent), which runs on `runtime`.
    pub(crate) fn new(supervisor: Arc<Supervisor>, runtime: Runtime, run: AgentRun) -> Children {
        Children {
            supervisor,
            runtime,
            run,
        }
    }

    /// Checks `options` before anything starts; the error names what is wrong.
    pub(crate) fn check(&self, options: ChildOptions) -> Result<Checked, String> {
        self.supervisor.check_delegation(options).map(Checked)
    }

    /// Runs a checked child to its end. Cancelling `cancel` stops it and
    /// its descendants; it then ends `cancelled` with its record. `Err`
    /// when it could not start (a rule, a limit, the tree budget).
    pub(crate) async fn run_to_end(
        &self,
        call_id: &str,
        checked: Checked,
        cancel: CancellationToken,
    ) -> Result<ChildEnd, String> {
        let end = self
            .supervisor
            .delegate(&self.runtime, &self.run, call_id, checked.0, cancel)
            .await?;
        Ok(child_end(end))
    }

    /// Calls one of the asynchronous delegation tools (`spawn_agent`,
    /// `send_input`, `wait`, `close_agent`, `spawn_batch`, `retry_batch`)
    /// as the server's top agent, on
    /// the one dispatch path: their own semantics, ids and results.
    /// Returns the result's text and whether it is an error.
    pub(crate) async fn call_async_tool(
        &self,
        call_id: &str,
        name: &str,
        arguments: Value,
    ) -> (String, bool) {
        let call = alcove_core::ToolCall::from_use(call_id, name, &arguments);
        alcove_core::front_end_call(&self.runtime, &self.run, call).await
    }

    /// The specs of those of `names` the top agent has (the server's
    /// `agents.collab` and rules decide), in the order of `names`.
    pub(crate) fn async_tool_specs(&self, names: &[&str]) -> Vec<alcove_protocol::ToolSpec> {
        names
            .iter()
            .filter_map(|name| {
                self.run
                    .tools
                    .iter()
                    .find(|tool| tool.spec().name == *name)
                    .map(|tool| tool.spec().clone())
            })
            .collect()
    }

    /// The session's supervisor (what `list_agents` asks a spawned agent's state of).
    pub(crate) fn supervisor(&self) -> &Supervisor {
        &self.supervisor
    }

    /// The token a child of one call runs under: cancelled with the server.
    pub(crate) fn cancel_token(&self) -> CancellationToken {
        self.run.cancel.child_token()
    }

    /// Stops every child still running (the server is ending).
    pub(crate) fn cancel_all(&self) {
        self.run.cancel.cancel();
    }
}

fn child_end(end: DelegationEnd) -> ChildEnd {
    let strings = |key: &str| -> Vec<String> {
        end.evidence
            .get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let commands = end
        .evidence
        .get("commands")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| CommandRecord {
                    command: text_of(item, "command"),
                    result: text_of(item, "result"),
                })
                .collect()
        })
        .unwrap_or_default();
    let record = EndRecord {
        agent: end.child.to_string(),
        status: status_name(end.status),
        usage: UsageRecord {
            input_tokens: end.usage.input_tokens,
            output_tokens: end.usage.output_tokens,
            cache_read_tokens: end.usage.cache_read_tokens,
            cache_write_tokens: end.usage.cache_write_tokens,
            budget_tokens: end.usage.budget_tokens(),
        },
        turns: end.turns,
        tool_calls: end
            .evidence
            .get("tool_calls")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        files_read: strings("files_read"),
        files_written: strings("files_written"),
        commands,
        transcript: end
            .transcript
            .as_ref()
            .map(|path| path.display().to_string()),
        worktree_branch: end.worktree_branch,
        error: end.error,
        report: end.report.clone(),
    };
    ChildEnd {
        report: end.report,
        is_error: end.is_error,
        record,
    }
}

fn text_of(item: &Value, key: &str) -> String {
    item.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A run status as the record names it: an interrupted run was cancelled.
pub(crate) fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Completed => "completed",
        RunStatus::MaxTurns => "max_turns",
        RunStatus::Aborted => "cancelled",
        RunStatus::Failed => "failed",
        RunStatus::Budget => "budget",
        RunStatus::Halted => "halted",
    }
}
