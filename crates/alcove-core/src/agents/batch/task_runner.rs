//! The one seam between the batch engine and a child's life: "run this task
//! as a child and tell me how it ended".
//!
//! [`TaskRunner`] is all the engine knows. [`ChildRunner`] runs a task as a
//! child through the supervisor's one child lifecycle (`start_child`,
//! `ChildLife::finish`: slot, tree budget, announce, budgets, panic
//! capture, one end record), in this process or, given a [`TaskCommand`]
//! (`CommandRunner`, `SlurmRunner` in `process.rs`), as a process through
//! the process runner, a layer below the lifecycle.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use alcove_protocol::{RunStatus, Usage};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::super::child::ChildRequest;
use super::super::leases::{Pool, SlotWait};
use super::super::lifecycle::Remote;
use super::super::scope::AgentScope;
use super::super::start_error::StartError;
use super::super::supervisor::{Supervisor, upgrade};
use super::process::TaskCommand;
use super::task::TaskSpec;
use crate::{AgentRun, Runtime};

/// Where a task's child works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// In the session's workspace, shared with every other task.
    #[default]
    Shared,
    /// In a git worktree of its own, on a branch of its own (in-process
    /// tasks; the command and Slurm runners refuse it).
    Worktree,
}

impl Isolation {
    /// `none`/`shared` or `worktree`.
    pub fn parse(text: &str) -> Result<Isolation, String> {
        match text {
            "none" | "shared" => Ok(Isolation::Shared),
            "worktree" => Ok(Isolation::Worktree),
            other => Err(format!(
                "unknown isolation `{other}`; use \"none\" or \"worktree\""
            )),
        }
    }
}

/// What the engine hands a runner.
pub struct TaskJob<'a> {
    /// The batch id.
    pub batch: &'a str,
    /// The task.
    pub task: &'a TaskSpec,
    /// 1 for the first run, 2 for the first retry, …
    pub attempt: u32,
    /// The agent type to run it as.
    pub agent_type: &'a str,
    /// The task's token budget (its own, or what the batch has left).
    pub tokens: Option<u64>,
    /// The task's turn cap, when the batch sets one.
    pub turns: Option<u32>,
    /// The task's wall-clock budget.
    pub wall: Option<Duration>,
    /// Where it works.
    pub isolation: Isolation,
    /// Cancelled when the batch is.
    pub cancel: CancellationToken,
    /// The batch's folder (results.jsonl, job files).
    pub dir: &'a Path,
    /// Another model for this task's child (a workflow's `agent({model})`).
    pub model: Option<String>,
    /// The child's reasoning effort (a workflow's `agent({effort})`).
    pub effort: Option<String>,
    /// The task's workflow phase (a workflow's `agent({phase})`).
    pub phase: Option<String>,
}

impl TaskJob<'_> {
    /// The child's name: `<batch>-<task>`, `-r<n>` from the first retry on.
    pub fn child_name(&self) -> String {
        if self.attempt <= 1 {
            format!("{}-{}", self.batch, self.task.id)
        } else {
            format!("{}-{}-r{}", self.batch, self.task.id, self.attempt)
        }
    }
}

/// How a task's child ended.
#[derive(Debug, Clone)]
pub struct TaskOutcome {
    /// The run status.
    pub status: RunStatus,
    /// The first line of the child's own words (or of the error): the
    /// table's line for this task.
    pub first_line: String,
    /// The full report (summary plus the harness's evidence footer).
    pub report: String,
    /// The child's own final words, without the footer (a workflow's
    /// `agent()` answer).
    pub words: Option<String>,
    /// Whether the report is an error (a failed or aborted run).
    pub is_error: bool,
    /// What the harness saw the child do.
    pub evidence: Value,
    /// Tokens used.
    pub usage: Usage,
    /// Model turns made.
    pub turns: u32,
    /// The child's transcript.
    pub transcript: Option<PathBuf>,
    /// The Slurm job id, when there was one.
    pub job_id: Option<String>,
    /// Why it did not complete.
    pub error: Option<String>,
    /// Set when the task was refused for a budget before it started (the
    /// tree's, from the child lifecycle): recorded `refused_budget`.
    pub refused: Option<String>,
    /// The task never started: the provider had refused the session
    /// (recorded `not_run`, never `failed`).
    pub not_run: bool,
}

impl TaskOutcome {
    /// An outcome for a task that could not start.
    pub fn failed(error: String) -> TaskOutcome {
        TaskOutcome {
            status: RunStatus::Failed,
            first_line: first_line(&error),
            report: String::new(),
            words: None,
            is_error: true,
            evidence: Value::Null,
            usage: Usage::default(),
            turns: 0,
            transcript: None,
            job_id: None,
            error: Some(error),
            refused: None,
            not_run: false,
        }
    }

    /// An outcome for a task refused for a budget before it started.
    pub fn refused(reason: String) -> TaskOutcome {
        let mut outcome = TaskOutcome::failed(reason.clone());
        outcome.refused = Some(reason);
        outcome
    }
}

/// Runs one task as a child, wherever the runner puts it.
#[async_trait::async_trait]
pub trait TaskRunner: Send + Sync {
    /// Runs `job` to its end (cancelled through `job.cancel`).
    async fn run(&self, job: TaskJob<'_>) -> TaskOutcome;

    /// Whether the runner takes a session slot itself (the child lifecycle
    /// does); otherwise the engine holds one for each running task.
    fn takes_slot(&self) -> bool {
        false
    }

    /// Why no task may start any more: the model provider refused the
    /// session for a reason no retry heals.
    fn halted(&self) -> Option<String> {
        None
    }
}

/// Runs tasks as in-process children of one parent agent, each through the
/// supervisor's one child lifecycle (`start_child`: session slot and tree
/// budget, announce; `finish`: budgets, panic capture, one end record).
pub struct ChildRunner {
    supervisor: Weak<Supervisor>,
    scope: AgentScope,
    /// The command each task runs as, when not in this process.
    command: Option<Arc<dyn TaskCommand>>,
}

impl ChildRunner {
    /// Tasks run as children of the agent whose shared parts are `runtime`
    /// and whose run is `run` (its gate, tools, depth and path). `run.cancel`
    /// should be the batch's token: a task waiting for a slot stops with it.
    pub fn new(supervisor: &Arc<Supervisor>, runtime: Runtime, run: AgentRun) -> ChildRunner {
        ChildRunner {
            supervisor: Arc::downgrade(supervisor),
            scope: AgentScope { runtime, run },
            command: None,
        }
    }

    /// The same runner, running each task's child as a process by
    /// `command` (when given) under the same lifecycle.
    pub fn through(mut self, command: Option<Arc<dyn TaskCommand>>) -> ChildRunner {
        self.command = command;
        self
    }
}

#[async_trait::async_trait]
impl TaskRunner for ChildRunner {
    fn takes_slot(&self) -> bool {
        true
    }

    fn halted(&self) -> Option<String> {
        let supervisor = self.supervisor.upgrade()?;
        supervisor.provider_halt().map(|halt| halt.explain())
    }

    async fn run(&self, job: TaskJob<'_>) -> TaskOutcome {
        let supervisor = match upgrade(&self.supervisor) {
            Ok(supervisor) => supervisor,
            Err(reason) => return TaskOutcome::failed(reason),
        };
        if self.command.is_some() && job.isolation == Isolation::Worktree {
            return TaskOutcome::failed(
                "isolation `worktree` works for in-process tasks only; a command runs \
                 where it starts (give it its own checkout, or use the in-process runner)"
                    .to_owned(),
            );
        }
        let command = match &self.command {
            Some(command) => match command.command(&job, self.scope.runtime.workspace.root()) {
                Ok(line) => Some(line),
                Err(reason) => return TaskOutcome::failed(reason),
            },
            None => None,
        };
        let Some(mut definition) = supervisor.definitions.get(job.agent_type).cloned() else {
            return TaskOutcome::failed(format!("unknown agent type `{}`", job.agent_type));
        };
        // Each task in a worktree of its own, as `Agent {isolation}` does:
        // its report ends with the branch, commit and files it changed.
        definition.worktree |= job.isolation == Isolation::Worktree;
        let request = ChildRequest {
            description: job.task.description.clone(),
            tool_names: None,
            model: job.model.clone(),
            tokens: job.tokens,
            turns: job.turns,
            effort: job.effort.clone(),
            wall: job.wall,
            run: Some(job.batch.to_owned()),
            phase: job.phase.clone(),
        };
        let call_id = format!("{}/{}", job.batch, job.task.id);
        let started = supervisor
            .start_child(
                &self.scope,
                &call_id,
                &definition,
                &request,
                // A batch's tasks are asynchronous children: the spawned pool.
                (Pool::Spawned, SlotWait::Wait),
                job.cancel.clone(),
            )
            .await;
        let started = match started {
            Ok(started) => started,
            Err(reason) if job.cancel.is_cancelled() => {
                let mut outcome = TaskOutcome::failed(reason.to_string());
                outcome.status = RunStatus::Aborted;
                return outcome;
            }
            Err(StartError::Budget(reason)) => return TaskOutcome::refused(reason),
            Err(StartError::Halted(reason)) => {
                let mut outcome = TaskOutcome::failed(reason);
                outcome.status = RunStatus::Halted;
                outcome.not_run = true;
                return outcome;
            }
            Err(reason) => return TaskOutcome::failed(reason.to_string()),
        };
        // The runner's stop runs inside the life, before the slot is
        // released (Slurm: `scancel` a cancelled step).
        let remote = command.as_deref().map(|line| Remote {
            command: line,
            session: None,
            stop: self.command.as_ref().map(|runner| runner.stop(&job)),
        });
        let end = started
            .finish(&supervisor, job.task.prompt.clone(), remote)
            .await;
        let outcome = &end.ended.outcome;
        let words = end.ended.output.clone();
        let mut task = TaskOutcome {
            status: outcome.status,
            first_line: first_line(
                words
                    .as_deref()
                    .or(outcome.error.as_deref())
                    .unwrap_or(&end.report.content),
            ),
            report: end.report.content,
            words,
            is_error: end.report.is_error,
            evidence: end.child.evidence.to_json(),
            usage: outcome.usage,
            turns: outcome.turns,
            transcript: end.child.transcript_path().map(Path::to_owned),
            job_id: None,
            error: outcome.error.clone(),
            refused: None,
            not_run: false,
        };
        if let Some(command) = &self.command {
            command.ended(&job, &mut task).await;
        }
        task
    }
}

impl Supervisor {
    /// Where the model's delegated tasks (`spawn_batch`, a `Workflow`'s
    /// agents) run when not in this process: the front end's runner, chosen
    /// by its one rule (`[batch] runner`, else `agents.command`, else in
    /// this process); `None` in this process.
    pub fn task_command(&self) -> Option<Arc<dyn TaskCommand>> {
        self.batch_runner.as_ref().map(|factory| factory())
    }
}

/// The first non-empty line of `text`, trimmed.
pub(crate) fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("")
        .to_owned()
}
