//! The one adapter between a workflow's `agent()` and alcove's child
//! lifecycle: each call is a child started, awaited and cancelled through
//! the batch engine's `TaskRunner` seam (`ChildRunner`: slot, tree budget,
//! announce, the parent's rules and mode, sandbox, hooks, agent type,
//! model and effort, worktree, transcript, evidence, one end record).
//!
//! An agent runs where the run's runner says (`task_commands.rs`): in this
//! process, or as a process or Slurm step under the same child life. An
//! agent with a `schema` always runs in this process: its answer comes
//! back through the `StructuredOutput` tool, which only an in-process
//! child has. An agent with `isolation: 'worktree'` under a process or
//! Slurm runner throws (a command works where it starts).
//!
//! Everything alcove-specific a workflow touches is here: how a call
//! becomes a task, how the child's end record becomes `agent()`'s value,
//! where saved workflows are found. Re-point [`ChildHost::agent`] when the
//! child lifecycle changes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use alcove_core::batch::{
    ChildRunner, Isolation, TaskCommand, TaskJob, TaskOutcome, TaskRunner, TaskSpec,
};
use alcove_core::{AgentRun, DynTool, Runtime, Supervisor};
use alcove_protocol::{EventKind, RunStatus};
use alcove_workflow::{
    AgentCall, AgentOutcome, Host, NullReason, RunEnd, RunEvent, RunOptions, Workflow,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::structured_output::{MAX_ATTEMPTS, StructuredOutput, Submission};
use crate::workflow_launch::PriceOf;

/// What every workflow agent is told first: nobody answers it, and its last
/// message goes back to a script as data. Not part of the resume key.
const FRAMING: &str = "You are one agent of a workflow: a script started you, runs you without a person to \
answer questions, and takes your final message verbatim as data. Do the task below, then end \
with a final message that contains exactly what the task asks for.";

/// Runs a workflow's agents as children of the session's main agent.
pub(crate) struct ChildHost {
    pub(crate) supervisor: Arc<Supervisor>,
    pub(crate) runtime: Runtime,
    /// The session's main agent, whose children the agents are.
    pub(crate) parent: AgentRun,
    pub(crate) run_id: String,
    pub(crate) dir: PathBuf,
    /// The folders `workflow(name)` reads saved workflows from.
    pub(crate) saved: Vec<PathBuf>,
    pub(crate) events: Box<dyn Fn(RunEvent) + Send + Sync>,
    /// The session's prices, when its model has one (`workflow_launch::prices`).
    pub(crate) prices: Option<Arc<PriceOf>>,
    /// Dollars the run's agents cost so far, at known prices.
    pub(crate) spent_usd: std::sync::Mutex<f64>,
    /// The command an agent runs as (process, Slurm); `None`: in this process.
    pub(crate) command: Option<Arc<dyn TaskCommand>>,
}

#[async_trait::async_trait]
impl Host for ChildHost {
    async fn agent(&self, call: AgentCall, cancel: CancellationToken) -> AgentOutcome {
        if let Some(effort) = &call.effort
            && let Err(reason) = alcove_model::parse_effort(effort)
        {
            return AgentOutcome::Error {
                message: format!("agent(): effort `{effort}`: {reason}"),
                tokens: 0,
            };
        }
        let worktree = call.isolation.as_deref() == Some("worktree");
        if worktree && call.schema.is_none() && self.command.is_some() {
            return AgentOutcome::Error {
                message: "agent(): isolation 'worktree' needs the in-process runner; this run's \
                          agents run as commands, which work where they start (run it with \
                          --runner inprocess, or leave isolation out)"
                    .to_owned(),
                tokens: 0,
            };
        }
        // With a schema, this child alone gets a StructuredOutput tool, so
        // it runs in this process whatever the runner.
        let mut parent = self.parent.clone();
        let submission = match &call.schema {
            Some(schema) => match StructuredOutput::new(schema) {
                Ok((tool, submission)) => {
                    let tool: Arc<DynTool> = Arc::new(tool);
                    parent.tools.push(tool);
                    Some(submission)
                }
                Err(message) => return AgentOutcome::Error { message, tokens: 0 },
            },
            None => None,
        };
        let command = if submission.is_some() {
            None
        } else {
            self.command.clone()
        };
        let runner =
            ChildRunner::new(&self.supervisor, self.runtime.clone(), parent).through(command);
        let task = TaskSpec {
            id: format!("a{}", call.index),
            description: call
                .label
                .clone()
                .unwrap_or_else(|| call.prompt.chars().take(60).collect()),
            prompt: prompt_of(&call),
        };
        let job = TaskJob {
            batch: &self.run_id,
            task: &task,
            attempt: 1,
            agent_type: call
                .agent_type
                .as_deref()
                .unwrap_or(alcove_core::DEFAULT_AGENT_TYPE),
            tokens: call.tokens,
            turns: None,
            // The session's `agents.timeout_secs`, as every child's.
            wall: None,
            isolation: if worktree {
                Isolation::Worktree
            } else {
                Isolation::Shared
            },
            cancel,
            dir: &self.dir,
            model: call.model.clone(),
            effort: call.effort.clone(),
            phase: call.phase.clone(),
        };
        let outcome = runner.run(job).await;
        if let Some(cost) = self
            .prices
            .as_ref()
            .and_then(|price| price(call.model.as_deref(), &outcome.usage))
        {
            *self
                .spent_usd
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) += cost;
        }
        let submitted = submission.map(|submission| {
            std::mem::take(
                &mut *submission
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            )
        });
        outcome_of(outcome, submitted)
    }

    fn event(&self, event: RunEvent) {
        if let RunEvent::Phase(title) = &event {
            self.announce(EventKind::WorkflowPhase {
                run_id: self.run_id.clone(),
                title: title.clone(),
            });
        }
        (self.events)(event);
    }

    fn spent_usd(&self) -> Option<f64> {
        self.prices.as_ref().map(|_| {
            *self
                .spent_usd
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        })
    }

    fn workflow_source(&self, name_or_path: &str) -> Result<String, String> {
        if name_or_path.ends_with(".js") || name_or_path.contains('/') {
            let path = self.runtime.workspace.root().join(name_or_path);
            let real = path
                .canonicalize()
                .map_err(|err| format!("workflow({name_or_path}): {}: {err}", path.display()))?;
            if !crate::workflow_launch::script_readable(
                &real,
                self.runtime.workspace.root(),
                &self.saved,
            ) {
                return Err(format!(
                    "workflow({name_or_path}): {} is outside the workspace and the saved-workflows folders",
                    real.display()
                ));
            }
            return std::fs::read_to_string(&real)
                .map_err(|err| format!("workflow({name_or_path}): {}: {err}", real.display()));
        }
        saved_workflow(&self.saved, name_or_path)
            .map(|(_, workflow)| workflow.source)
            .ok_or_else(|| format!("workflow(): no saved workflow named `{name_or_path}`"))
    }
}

impl ChildHost {
    /// Runs `workflow` on this host, announced in the session's events by
    /// the agent that started it: `workflow_started` before its first
    /// agent, `workflow_phase` as its script sets one, `workflow_ended`
    /// last (what the UI, ACP, OTel and `alcove report` show of a run).
    pub(crate) async fn run(self: Arc<Self>, workflow: &Workflow, options: RunOptions) -> RunEnd {
        self.announce(EventKind::WorkflowStarted {
            run_id: self.run_id.clone(),
            name: workflow.meta.name.clone(),
            phases: workflow.meta.phases.clone(),
            max_concurrent: u32::try_from(options.limits.concurrency).unwrap_or(u32::MAX),
            budget_tokens: options.budget,
            budget_usd: options.budget_usd,
        });
        let end = alcove_workflow::run(workflow, self.clone(), options).await;
        self.announce(EventKind::WorkflowEnded {
            run_id: self.run_id.clone(),
            status: end.status.as_str().to_owned(),
            agents: end.agents.started,
            nulls: end.agents.nulls(),
            summary: end.agents.describe(),
            tokens: end.tokens,
            usd: end.usd,
            error: end.error.clone(),
        });
        end
    }

    fn announce(&self, kind: EventKind) {
        self.runtime.emit(&self.parent.path, kind);
    }
}

/// Where a run's agents run, as its plan says it.
pub(crate) fn runner_line(command: Option<&Arc<dyn TaskCommand>>) -> String {
    match command {
        None => "in this process".to_owned(),
        Some(command) => format!(
            "{} (an agent with a schema runs in this process: StructuredOutput is an \
             in-process tool)",
            command.describe()
        ),
    }
}

/// The child's one user message: the framing, the prompt, and with a schema
/// the shape its answer must have.
fn prompt_of(call: &AgentCall) -> String {
    let mut prompt = format!("{FRAMING}\n\n{}", call.prompt);
    if call.schema.is_some() {
        prompt.push_str(
            "\n\nGive your answer by calling the StructuredOutput tool: its input is the answer, \
             which must meet the tool's schema.",
        );
    }
    prompt
}

/// A child's end record as `agent()`'s value: its final text, or with a
/// schema what it submitted through StructuredOutput.
fn outcome_of(outcome: TaskOutcome, submitted: Option<Submission>) -> AgentOutcome {
    let tokens = outcome.usage.budget_tokens();
    if let Some(reason) = outcome.refused {
        return AgentOutcome::Null {
            reason: NullReason::Budget,
            detail: reason,
            tokens,
        };
    }
    let detail = || {
        outcome
            .error
            .clone()
            .unwrap_or_else(|| outcome.first_line.clone())
    };
    match outcome.status {
        RunStatus::Completed => {}
        RunStatus::Aborted => {
            return AgentOutcome::Null {
                reason: NullReason::Cancelled,
                detail: detail(),
                tokens,
            };
        }
        RunStatus::Budget => {
            return AgentOutcome::Null {
                reason: NullReason::Budget,
                detail: detail(),
                tokens,
            };
        }
        RunStatus::Halted => {
            return AgentOutcome::Null {
                reason: NullReason::Halted,
                detail: detail(),
                tokens,
            };
        }
        RunStatus::Failed | RunStatus::MaxTurns => {
            return AgentOutcome::Null {
                reason: NullReason::Failed,
                detail: format!("{}: {}", outcome.status.as_str(), detail()),
                tokens,
            };
        }
    }
    if let Some(submitted) = submitted {
        return match (submitted.value, submitted.last_error) {
            (Some(value), _) => AgentOutcome::Answer { value, tokens },
            (None, Some(error)) if submitted.failures >= MAX_ATTEMPTS => AgentOutcome::Error {
                message: format!(
                    "agent(): {MAX_ATTEMPTS} submissions broke the schema; the last: {error}"
                ),
                tokens,
            },
            (None, last) => AgentOutcome::Error {
                message: format!(
                    "agent(): the agent ended without submitting an answer that meets the schema{}",
                    last.map(|error| format!(" (last error: {error})"))
                        .unwrap_or_default()
                ),
                tokens,
            },
        };
    }
    match outcome.words.filter(|words| !words.trim().is_empty()) {
        Some(words) => AgentOutcome::Answer {
            value: Value::String(words),
            tokens,
        },
        None => AgentOutcome::Null {
            reason: NullReason::Failed,
            detail: "the agent ended with no answer".to_owned(),
            tokens,
        },
    }
}

/// A saved workflow file and what reading it gave.
pub(crate) struct Saved {
    pub(crate) path: PathBuf,
    pub(crate) workflow: Result<Workflow, String>,
}

/// The folders saved workflows live in, nearest first: the project's
/// `.alcove/workflows` and `.claude/workflows` when the folder is trusted
/// (`project` is the trusted workspace, `None` in an untrusted one: a
/// cloned repository's scripts would run agents as the user), then the
/// user's.
pub(crate) fn saved_folders(project: Option<&Path>, config_dir: &Path) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = project
        .into_iter()
        .flat_map(|root| {
            [
                root.join(".alcove/workflows"),
                root.join(".claude/workflows"),
            ]
        })
        .collect();
    folders.push(config_dir.join("workflows"));
    folders
}

/// The saved workflow named `name` (its `meta.name`) in `folders`, nearest
/// first, and its file.
pub(crate) fn saved_workflow(folders: &[PathBuf], name: &str) -> Option<(PathBuf, Workflow)> {
    saved_workflows(folders).into_iter().find_map(|saved| {
        let workflow = saved.workflow.ok()?;
        (workflow.meta.name == name).then_some((saved.path, workflow))
    })
}

/// Every `*.js` in `folders`; a name found twice keeps the nearest.
pub(crate) fn saved_workflows(folders: &[PathBuf]) -> Vec<Saved> {
    let mut found: Vec<Saved> = Vec::new();
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "js"))
            .collect();
        paths.sort();
        for path in paths {
            let workflow = std::fs::read_to_string(&path)
                .map_err(|err| err.to_string())
                .and_then(|source| Workflow::parse(&source));
            let name = workflow.as_ref().ok().map(|w| w.meta.name.clone());
            let shadowed = name.as_ref().is_some_and(|name| {
                found
                    .iter()
                    .any(|saved| saved.workflow.as_ref().is_ok_and(|w| &w.meta.name == name))
            });
            if !shadowed {
                found.push(Saved { path, workflow });
            }
        }
    }
    found
}
