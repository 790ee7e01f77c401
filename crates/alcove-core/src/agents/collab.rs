//! Delegation, asynchronous face (seed 001): `spawn_agent`, `send_input`,
//! `wait`, `close_agent`, `resume_agent`.
//!
//! The parent starts a child and goes on working; the child runs as a task
//! (or, with `agents.command`, a process) through the one lifecycle
//! (`lifecycle`). Results are JSON text the model reads; every error is an
//! error result. The tools hold the supervisor weakly and nothing of their
//! caller's: who calls is the scope dispatch lends them.
//!
//! With the process runner, `spawn_agent` is an `Execute` call: it starts a
//! command, so the mode, the rules (`Agent(<type>)`) and the hooks decide it
//! as they decide Bash. Allowing the spawn allows that agent's later
//! submissions (`send_input` continues the same agent in the same kind of
//! process).

use std::sync::{Arc, Weak};
use std::time::Duration;

use alcove_protocol::ToolSpec;
use alcove_tools::{
    Access, Invocation, ScopedTool, Tool, ToolContext, ToolOutput, Workspace, parse_input,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::batch::is_batch_id;
use super::child::ChildRequest;
use super::definitions::DEFAULT_AGENT_TYPE;
use super::leases::{Pool, SlotWait};
use super::life::{ChildLife, Face};
use super::registry::{CLOSE_WAIT, Record, Registry, State, next_sequence, now};
use super::scope::AgentScope;
use super::supervisor::{Supervisor, upgrade};
use crate::isolation::worktree::Worktree;

/// What closing an agent leaves to do once the registry's lock is
/// released: worktrees to finish, the running submission's task to await.
type Closing = (Vec<(Worktree, String)>, Option<tokio::task::JoinHandle<()>>);

#[derive(Deserialize, JsonSchema)]
pub(crate) struct SpawnInput {
    /// The task: goal, scope, what to report.
    message: String,
    /// Agent type (default "general-purpose").
    #[serde(default)]
    agent_type: Option<String>,
    /// Another model, provider/name.
    #[serde(default)]
    model: Option<String>,
    /// "worktree": the agent works in its own git worktree on a new branch
    /// (from your current files, uncommitted ones included); each submission's
    /// changes are committed there for you to merge.
    #[serde(default)]
    isolation: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct SendInput {
    /// The agent id.
    id: String,
    /// The next message for the agent.
    message: String,
    /// Cancel its current work first.
    #[serde(default)]
    interrupt: bool,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct WaitInput {
    /// Agent ids.
    ids: Vec<String>,
    /// Default 30000.
    #[serde(default)]
    timeout_ms: Option<i64>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct IdInput {
    /// The agent id.
    id: String,
}

/// The five tools, in the order they are offered; `runner` says whether
/// spawned agents run as commands (the process runner).
pub(crate) fn collab_tools(
    supervisor: &Weak<Supervisor>,
    runner: bool,
) -> Vec<Arc<dyn Tool<AgentScope>>> {
    [
        Kind::Spawn,
        Kind::Send,
        Kind::Resume,
        Kind::Wait,
        Kind::Close,
    ]
    .into_iter()
    .map(|kind| {
        Arc::new(CollabTool::new(supervisor.clone(), kind, runner)) as Arc<dyn Tool<AgentScope>>
    })
    .collect()
}

#[derive(Clone, Copy)]
enum Kind {
    Spawn,
    Send,
    Resume,
    Wait,
    Close,
}

pub(crate) struct CollabTool {
    supervisor: Weak<Supervisor>,
    kind: Kind,
    runner: bool,
    spec: ToolSpec,
}

impl CollabTool {
    fn new(supervisor: Weak<Supervisor>, kind: Kind, runner: bool) -> CollabTool {
        let spec = match kind {
            Kind::Spawn => alcove_tools::tool_spec!(
                SpawnInput,
                "spawn_agent",
                "Starts a subagent in the background and returns its agent_id at once; collect its \
                 result later with `wait` (you are also notified when it ends).",
            ),
            Kind::Send => alcove_tools::tool_spec!(
                SendInput,
                "send_input",
                "Sends a follow-up message to an agent, which continues its conversation (a running \
                 agent needs interrupt=true).",
            ),
            Kind::Resume => alcove_tools::tool_spec!(
                IdInput,
                "resume_agent",
                "Reopens a closed agent so it can take send_input again.",
            ),
            Kind::Wait => alcove_tools::tool_spec!(
                WaitInput,
                "wait",
                "Waits until one of the agents (or batches) stops running or the timeout passes; \
                 returns each finished agent's status, last output and evidence, or a batch's counts and, once \
                 it ended, one line per task and the path of results.jsonl.",
            ),
            Kind::Close => alcove_tools::tool_spec!(
                IdInput,
                "close_agent",
                "Close an agent (or a batch: its queued and running tasks are cancelled), stopping any \
                 work it is doing.",
            ),
        };
        CollabTool {
            supervisor,
            kind,
            runner,
            spec,
        }
    }
}

/// A checked call of one of the five tools.
pub(crate) enum CollabCall {
    Spawn(SpawnInput),
    Send(SendInput),
    Wait(WaitInput),
    Resume(IdInput),
    Close(IdInput),
}

#[async_trait::async_trait]
impl ScopedTool<AgentScope> for CollabTool {
    /// Five tools, five shapes: the kind picks one.
    type Input = Value;
    type Call = CollabCall;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        match self.kind {
            // Starting a command is gated like Bash.
            Kind::Spawn if self.runner => Access::Execute,
            _ => Access::Delegate,
        }
    }

    fn concurrency_safe(&self) -> bool {
        false
    }

    fn inspect(
        &self,
        input: Value,
        _workspace: &Workspace,
    ) -> Result<(Invocation, CollabCall), String> {
        let name = self.spec.name.as_str();
        let call = match self.kind {
            Kind::Spawn => CollabCall::Spawn(parse_input(name, &input)?),
            Kind::Send => CollabCall::Send(parse_input(name, &input)?),
            Kind::Wait => CollabCall::Wait(parse_input(name, &input)?),
            Kind::Resume => CollabCall::Resume(parse_input(name, &input)?),
            Kind::Close => CollabCall::Close(parse_input(name, &input)?),
        };
        let summary = match &call {
            CollabCall::Spawn(input) => input.message.clone(),
            CollabCall::Send(input) => input.id.clone(),
            CollabCall::Wait(input) => input.ids.join(", "),
            CollabCall::Resume(input) | CollabCall::Close(input) => input.id.clone(),
        };
        let invocation = Invocation {
            summary,
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, call))
    }

    async fn call(
        &self,
        call: CollabCall,
        context: &ToolContext,
        scope: &AgentScope,
    ) -> ToolOutput {
        let name = self.spec.name.as_str();
        let supervisor = match upgrade(&self.supervisor) {
            Ok(supervisor) => supervisor,
            Err(reason) => return ToolOutput::error(format!("{name} failed: {reason}")),
        };
        let result = match call {
            CollabCall::Spawn(input) => supervisor.spawn(context, scope, input).await,
            CollabCall::Send(input) => {
                supervisor
                    .send_input(&input.id, input.message, input.interrupt)
                    .await
            }
            CollabCall::Wait(input) => supervisor.wait(&input.ids, input.timeout_ms).await,
            CollabCall::Resume(input) => supervisor.resume(&input.id),
            CollabCall::Close(input) => {
                if is_batch_id(&input.id) {
                    supervisor.close_batch(&input.id).await
                } else if supervisor.host_runs.knows(&input.id) {
                    supervisor.host_runs.close(&input.id).await
                } else {
                    supervisor.close(&input.id).await
                }
            }
        };
        match result {
            Ok(value) => ToolOutput::ok(serde_json::to_string_pretty(&value).unwrap_or_default()),
            Err(reason) => ToolOutput::error(reason),
        }
    }
}

alcove_tools::scoped_tool!(CollabTool, AgentScope);

impl Supervisor {
    async fn spawn(
        self: &Arc<Self>,
        context: &ToolContext,
        scope: &AgentScope,
        input: SpawnInput,
    ) -> Result<Value, String> {
        let message = input.message.trim().to_owned();
        if message.is_empty() {
            return Err("spawn_agent failed: message must not be empty".to_owned());
        }
        let type_name = input.agent_type.as_deref().unwrap_or(DEFAULT_AGENT_TYPE);
        let mut definition = self.definitions.get(type_name).cloned().ok_or_else(|| {
            format!(
                "spawn_agent failed: unknown agent_type `{type_name}`; known: {}",
                self.definitions.names()
            )
        })?;
        definition.worktree |= super::worktree_child::wants_worktree(input.isolation.as_deref())
            .map_err(|reason| format!("spawn_agent failed: {reason}"))?;
        let request = ChildRequest {
            description: message.clone(),
            tool_names: None,
            model: input.model,
            tokens: None,
            turns: None,
            effort: None,
            wall: None,
            run: None,
            phase: None,
        };
        // Spawned children outlive the call: they hang off the spawning
        // agent's run token, so interrupting that agent stops them.
        let parent_cancel = scope.run.cancel.clone();
        let started = self
            .start_child(
                scope,
                &context.call_id,
                &definition,
                &request,
                (Pool::Spawned, SlotWait::Now),
                parent_cancel.child_token(),
            )
            .await
            .map_err(|reason| format!("spawn_agent failed: {reason}"))?;
        let id = started
            .child()
            .path
            .as_str()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        let warnings = started.child().warnings.clone();
        let created_at = now();
        let record = Record {
            id: id.clone(),
            created_at,
            updated_at: created_at,
            sequence: next_sequence(),
            status: State::Running,
            status_before_close: State::Completed,
            last_message: message.clone(),
            last_submission_id: None,
            last_output: None,
            last_evidence: None,
            last_error: None,
            running: None,
            history: Vec::new(),
            remote_session: None,
            parent_cancel,
            child: started.child().clone(),
        };
        {
            let mut records = self.registry.lock()?;
            records.insert(id.clone(), record);
            Registry::evict_idle(&mut records);
        }
        let submission_id = self.start_submission(&id, message, started)?;
        let records = self.registry.lock()?;
        let record = records
            .get(&id)
            .ok_or_else(|| format!("agent not found: {id}"))?;
        Ok(record.spawn_view(&submission_id, &warnings))
    }

    async fn send_input(
        self: &Arc<Self>,
        id: &str,
        message: String,
        interrupt: bool,
    ) -> Result<Value, String> {
        let previous_task = {
            let mut records = self.registry.lock()?;
            let record = records
                .get_mut(id)
                .ok_or_else(|| format!("agent not found: {id}"))?;
            if message.trim().is_empty() {
                return Err("send_input failed: message must not be empty".to_owned());
            }
            if record.status == State::Closed {
                return Err(format!(
                    "send_input failed: agent {id} is closed; run resume_agent first"
                ));
            }
            match &mut record.running {
                Some(_) if !interrupt => {
                    return Err(format!(
                        "send_input failed: agent {id} is busy; set interrupt=true to cancel current submission"
                    ));
                }
                Some(submission) => {
                    submission.interrupted = true;
                    submission.cancel.cancel();
                    submission.task.take()
                }
                None => None,
            }
        };
        // The interrupted submission records its end (and the conversation so far) first.
        if let Some(task) = previous_task {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
        let child = {
            let records = self.registry.lock()?;
            let record = records
                .get(id)
                .ok_or_else(|| format!("agent not found: {id}"))?;
            record.child.clone()
        };
        let lease = self
            .lease(
                Pool::Spawned,
                child.run.max_turns,
                SlotWait::Now,
                &tokio_util::sync::CancellationToken::new(),
            )
            .await
            .map_err(|reason| format!("send_input failed: {reason}"))?;
        let life = ChildLife::new(child, lease, Face::Once);
        let submission_id = self
            .start_submission(id, message.trim().to_owned(), life)
            .map_err(|reason| format!("send_input failed: {reason}"))?;
        Ok(json!({"agent_id": id, "status": "running", "submission_id": submission_id}))
    }

    async fn wait(&self, ids: &[String], timeout_ms: Option<i64>) -> Result<Value, String> {
        if ids.is_empty() || ids.iter().any(|id| id.trim().is_empty()) {
            return Err("wait failed: ids must list at least one agent id".to_owned());
        }
        let requested = timeout_ms.unwrap_or(30_000);
        if requested <= 0 {
            return Err("wait failed: timeout_ms must be greater than zero".to_owned());
        }
        let (min, max) = (self.limits.wait_min, self.limits.wait_max);
        let timeout =
            Duration::from_millis(u64::try_from(requested).unwrap_or(u64::MAX)).clamp(min, max);
        match ids.iter().filter(|id| self.host_runs.knows(id)).count() {
            0 => {}
            n if n == ids.len() => return Ok(self.host_runs.wait(ids, timeout).await),
            _ => {
                return Err(
                    "wait failed: pass either agent ids or workflow run ids, not both".to_owned(),
                );
            }
        }
        match ids.iter().filter(|id| is_batch_id(id)).count() {
            0 => {}
            n if n == ids.len() => return Ok(self.wait_batches(ids, timeout).await),
            _ => return Err("wait failed: pass either agent ids or batch ids, not both".to_owned()),
        }
        let result = self.registry.wait_any(ids, timeout).await;
        Ok(result.to_json())
    }

    fn resume(&self, id: &str) -> Result<Value, String> {
        let mut records = self.registry.lock()?;
        let record = records
            .get_mut(id)
            .ok_or_else(|| format!("agent not found: {id}"))?;
        if record.status == State::Closed {
            record.status = record.status_before_close;
            record.touch();
        }
        Ok(json!({"agent_id": id, "status": record.status.as_str()}))
    }

    /// Closes `id`: its work is cancelled and, before this returns, has
    /// stopped (within [`CLOSE_WAIT`]) and its life has ended, so what it
    /// held — its slot, its share of the tree budget, its processes — is
    /// free for the caller's next call.
    async fn close(&self, id: &str) -> Result<Value, String> {
        let (finishing, running) = self.mark_closed(id)?;
        super::worktree_child::finish_closed(finishing).await;
        if let Some(task) = running {
            let _ = tokio::time::timeout(CLOSE_WAIT, task).await;
        }
        self.registry.changed.notify_waiters();
        Ok(json!({"agent_id": id, "status": "closed"}))
    }

    /// Marks `id` closed (cancelling its work); returns its worktree to
    /// finish once the registry's lock is released, if it is idle, and the
    /// task of the submission it was running, to wait for.
    fn mark_closed(&self, id: &str) -> Result<Closing, String> {
        let mut finishing = Vec::new();
        let mut running = None;
        let mut records = self.registry.lock()?;
        let record = records
            .get_mut(id)
            .ok_or_else(|| format!("agent not found: {id}"))?;
        if record.status != State::Closed {
            let idle = record.running.is_none();
            running = record.close(Some("closed while running".to_owned()));
            if idle {
                // Nothing writes to its worktree any more: commit and
                // remove the folder, once the lock is released.
                if let Some(worktree) = &record.child.worktree {
                    finishing.push((worktree.clone(), id.to_owned()));
                }
                // Closed and idle: nothing of it is left to cancel.
                self.running.remove(&record.child.path);
            }
        }
        Registry::evict_idle(&mut records);
        Ok((finishing, running))
    }
}
