//! The model's face of batches: `spawn_batch` and `retry_batch`, and the
//! batch side of `wait` and `close_agent` (which take batch ids too).
//!
//! A batch runs as a task hanging off the spawning agent's run. Its tasks
//! are spawned children (the `max_concurrent` pool), but all of a session's
//! batches together use at most `max_concurrent - 1` of those slots: one is
//! always left for the parent's own `spawn_agent` (with `max_concurrent = 1`
//! there is nothing to reserve). Synchronous `Agent` calls have their own
//! pool (`max_parallel`), which batches never take.
//! The parent never sees a worker's transcript: `wait` returns counts and,
//! once the batch ended, a bounded table and the path of results.jsonl.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use alcove_protocol::{AgentPath, ToolSpec};
use alcove_tools::{
    Access, Invocation, ScopedTool, Tool, ToolContext, ToolOutput, Workspace, parse_input,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinHandle;

use super::super::definitions::DEFAULT_AGENT_TYPE;
use super::super::scope::AgentScope;
use super::super::supervisor::{Supervisor, upgrade};
use super::engine::{Batch, BatchPlan};
use super::task::{BatchBudget, TaskInput, parse_tasks_jsonl, tasks_from_list};
use super::task_runner::{ChildRunner, Isolation, TaskRunner};
use super::wait::summary;

/// `wait` shows at most this many task lines of an ended batch.
pub const TABLE_LINES: usize = 40;
/// A tasks_file larger than this is refused.
const TASKS_FILE_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SpawnBatchInput {
    /// The tasks, each {id?, description?, prompt}; or use tasks_file.
    #[serde(default)]
    tasks: Option<Vec<TaskInput>>,
    /// A JSONL file in the workspace, one {id?, description?, prompt} per line.
    #[serde(default)]
    tasks_file: Option<String>,
    /// The kind of agent every task runs as (default "general-purpose").
    #[serde(default)]
    agent_type: Option<String>,
    /// How many tasks may run at once (bounded by the session's slots).
    #[serde(default)]
    max_concurrent: Option<usize>,
    /// "none" (default: the shared workspace) or "worktree".
    #[serde(default)]
    isolation: Option<String>,
    /// Limits for the whole batch and each task.
    #[serde(default)]
    budget: Option<BatchBudget>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RetryBatchInput {
    /// The batch id.
    batch_id: String,
    /// Which tasks to rerun: "failed" (every task that did not complete).
    #[serde(default)]
    only: Option<String>,
}

pub(super) struct Handle {
    pub(super) batch: Arc<Batch>,
    parent: AgentPath,
    /// Where the parent's notices wait for its next model request.
    inbox: Arc<crate::Inbox>,
    runner: Arc<dyn TaskRunner>,
    pub(super) task: Mutex<Option<JoinHandle<()>>>,
}

/// A session's batches.
pub(crate) struct Batches {
    next: AtomicU64,
    /// The share of the session's slots all batches may use together.
    share: Arc<Semaphore>,
    pub(super) handles: Mutex<BTreeMap<String, Arc<Handle>>>,
    pub(super) ended: Notify,
}

impl Batches {
    /// Batches of a session with `max_concurrent` slots.
    pub(crate) fn new(max_concurrent: usize) -> Batches {
        Batches {
            next: AtomicU64::new(1),
            share: Arc::new(Semaphore::new(max_concurrent.saturating_sub(1).max(1))),
            handles: Mutex::new(BTreeMap::new()),
            ended: Notify::new(),
        }
    }

    pub(super) fn get(&self, id: &str) -> Option<Arc<Handle>> {
        self.handles.lock().ok()?.get(id).cloned()
    }
}

/// A session keeps at most this many ended batches addressable (their
/// results.jsonl stay on disk); the oldest go first.
const ENDED_KEPT: usize = 32;

/// Forgets the oldest ended batches beyond [`ENDED_KEPT`].
fn evict_ended(handles: &mut BTreeMap<String, Arc<Handle>>) {
    let mut ended: Vec<(u64, String)> = handles
        .iter()
        .filter(|(_, handle)| !handle.batch.is_running())
        .map(|(id, _)| {
            let number = id
                .strip_prefix("batch-")
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            (number, id.clone())
        })
        .collect();
    ended.sort_unstable();
    let excess = ended.len().saturating_sub(ENDED_KEPT);
    for (_, id) in ended.into_iter().take(excess) {
        handles.remove(&id);
    }
}

/// Whether `id` names a batch (`batch-N`) rather than an agent.
pub(crate) fn is_batch_id(id: &str) -> bool {
    id.strip_prefix("batch-")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// `spawn_batch` and `retry_batch`; `runner` says whether tasks run as
/// commands (then starting a batch is gated like Bash).
pub(crate) fn batch_tools(
    supervisor: &Weak<Supervisor>,
    runner: bool,
) -> Vec<Arc<dyn Tool<AgentScope>>> {
    vec![
        Arc::new(BatchTool::new(supervisor.clone(), false, runner)),
        Arc::new(BatchTool::new(supervisor.clone(), true, runner)),
    ]
}

pub(crate) struct BatchTool {
    supervisor: Weak<Supervisor>,
    retry: bool,
    runner: bool,
    spec: ToolSpec,
}

impl BatchTool {
    fn new(supervisor: Weak<Supervisor>, retry: bool, runner: bool) -> BatchTool {
        let spec = if retry {
            alcove_tools::tool_spec!(
                RetryBatchInput,
                "retry_batch",
                "Rerun, alone, the tasks of an ended batch that did not complete (failed, cut short, \
                 refused for budget, cancelled). Returns at once; collect the result with `wait`.",
            )
        } else {
            alcove_tools::tool_spec!(
                SpawnBatchInput,
                "spawn_batch",
                "Run many independent subagent tasks in one operation: pass `tasks` or a JSONL \
                 `tasks_file` (write it with a script for hundreds of tasks). Tasks beyond the \
                 concurrency queue and start as slots free. Returns at once with a batch_id; `wait` \
                 with the batch_id returns counts and, at the end, one line per task plus the path of \
                 results.jsonl (every task's full report, evidence and usage). `close_agent` with \
                 the batch_id cancels it.",
            )
        };
        BatchTool {
            supervisor,
            retry,
            runner,
            spec,
        }
    }
}

/// A checked `spawn_batch` or `retry_batch` call.
pub(crate) enum BatchCall {
    Spawn(SpawnBatchInput),
    Retry(RetryBatchInput),
}

#[async_trait::async_trait]
impl ScopedTool<AgentScope> for BatchTool {
    /// Two tools, two shapes: `retry` picks one.
    type Input = Value;
    type Call = BatchCall;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        if self.runner {
            // Starting commands is gated like Bash, and so is starting
            // them again.
            Access::Execute
        } else {
            Access::Delegate
        }
    }

    fn concurrency_safe(&self) -> bool {
        false
    }

    fn inspect(
        &self,
        input: Value,
        _workspace: &Workspace,
    ) -> Result<(Invocation, BatchCall), String> {
        let (summary, call) = if self.retry {
            let input = parse_input::<RetryBatchInput>("retry_batch", &input)?;
            (input.batch_id.clone(), BatchCall::Retry(input))
        } else {
            let input = parse_input::<SpawnBatchInput>("spawn_batch", &input)?;
            let summary = match (&input.tasks, &input.tasks_file) {
                (Some(tasks), None) => format!("{} tasks", tasks.len()),
                (None, Some(file)) => format!("tasks from {file}"),
                _ => {
                    return Err(
                        "invalid arguments for spawn_batch: pass exactly one of `tasks` and `tasks_file`"
                            .to_owned(),
                    );
                }
            };
            (summary, BatchCall::Spawn(input))
        };
        let invocation = Invocation {
            summary,
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, call))
    }

    async fn call(&self, call: BatchCall, context: &ToolContext, scope: &AgentScope) -> ToolOutput {
        let supervisor = match upgrade(&self.supervisor) {
            Ok(supervisor) => supervisor,
            Err(reason) => {
                return ToolOutput::error(format!("{} failed: {reason}", self.spec.name));
            }
        };
        let result = match call {
            BatchCall::Retry(input) => {
                supervisor.retry_batch(&input.batch_id, input.only.as_deref())
            }
            BatchCall::Spawn(input) => supervisor.spawn_batch(context, scope, input),
        };
        match result {
            Ok(value) => ToolOutput::ok(serde_json::to_string_pretty(&value).unwrap_or_default()),
            Err(reason) => ToolOutput::error(reason),
        }
    }
}

alcove_tools::scoped_tool!(BatchTool, AgentScope);

impl Supervisor {
    fn spawn_batch(
        self: &Arc<Self>,
        context: &ToolContext,
        scope: &AgentScope,
        input: SpawnBatchInput,
    ) -> Result<Value, String> {
        let fail = |reason: String| format!("spawn_batch failed: {reason}");
        if scope.depth() >= self.limits.max_depth {
            return Err(fail(format!(
                "Agent nesting depth exceeded (max {})",
                self.limits.max_depth
            )));
        }
        let tasks = match (input.tasks, input.tasks_file) {
            (Some(list), None) => tasks_from_list(list),
            (None, Some(file)) => read_tasks_file(context, &file),
            _ => Err("pass exactly one of `tasks` and `tasks_file`".to_owned()),
        }
        .map_err(fail)?;
        let agent_type = input
            .agent_type
            .unwrap_or_else(|| DEFAULT_AGENT_TYPE.to_owned());
        if self.definitions.get(&agent_type).is_none() {
            return Err(fail(format!(
                "unknown agent_type `{agent_type}`; known: {}",
                self.definitions.names()
            )));
        }
        let isolation =
            Isolation::parse(input.isolation.as_deref().unwrap_or("none")).map_err(fail)?;
        if input.max_concurrent == Some(0) {
            return Err(fail("max_concurrent must be at least 1".to_owned()));
        }
        let Some(sessions) = &self.transcripts else {
            return Err(fail(
                "this session keeps no files, so it cannot hold a batch's results".to_owned(),
            ));
        };
        let batches = &self.batches;
        let id = format!("batch-{}", batches.next.fetch_add(1, Ordering::Relaxed));
        let share = self.limits.max_concurrent.saturating_sub(1).max(1);
        let concurrency = input.max_concurrent.unwrap_or(share).min(share);
        let count = tasks.len();
        let mut budget = input.budget.unwrap_or_default();
        if budget.task_tokens.is_none() {
            // A child reserves its own limit or all the tree has left: give
            // each task a fair share, or the first would starve the rest.
            budget.task_tokens = self.tree_share(concurrency);
        }
        let plan = BatchPlan {
            id: id.clone(),
            tasks,
            agent_type,
            concurrency,
            budget,
            isolation,
            dir: sessions.join(&id),
        };
        // The batch hangs off the spawning agent's run: interrupting it stops the batch.
        let cancel = scope.run.cancel.child_token();
        let batch = Batch::open(plan, cancel.clone()).map_err(fail)?;
        // Wherever a task runs, it is a child through the one lifecycle;
        // a command (or a Slurm step) is only the layer below it.
        let command = self.task_command();
        let mut run = scope.run.clone();
        run.cancel = cancel;
        let runner: Arc<dyn TaskRunner> =
            Arc::new(ChildRunner::new(self, scope.runtime.clone(), run).through(command));
        let handle = Arc::new(Handle {
            batch: batch.clone(),
            parent: scope.path().clone(),
            inbox: scope.runtime.inbox.clone(),
            runner,
            task: Mutex::new(None),
        });
        {
            let mut handles = batches
                .handles
                .lock()
                .map_err(|_| fail("the batch registry is unavailable".to_owned()))?;
            handles.insert(id.clone(), handle.clone());
            evict_ended(&mut handles);
        }
        self.start_batch(&handle);
        Ok(json!({
            "batch_id": id,
            "tasks": count,
            "max_concurrent": concurrency,
            "status": "running",
            "results": batch.results_path(),
        }))
    }

    /// What each of `concurrency` tasks may use of what the tree budget
    /// has left, when it has a token limit.
    fn tree_share(&self, concurrency: usize) -> Option<u64> {
        let max = self.limits.tree_max_tokens?;
        let usage = self.leases.tree.usage();
        let left = max
            .saturating_sub(usage.used_tokens)
            .saturating_sub(usage.reserved_tokens);
        Some((left / concurrency.max(1) as u64).max(1))
    }

    fn retry_batch(self: &Arc<Self>, id: &str, only: Option<&str>) -> Result<Value, String> {
        let fail = |reason: String| format!("retry_batch failed: {reason}");
        if let Some(other) = only.filter(|only| *only != "failed") {
            return Err(fail(format!(
                "unknown `only` value `{other}`; use \"failed\""
            )));
        }
        let handle = self
            .batches
            .get(id)
            .ok_or_else(|| fail(format!("batch not found: {id}")))?;
        if handle.batch.is_cancelled() {
            return Err(fail(format!(
                "batch {id} was closed; spawn a new batch instead"
            )));
        }
        let count = handle.batch.requeue_unfinished().map_err(fail)?;
        if count == 0 {
            return Err(fail(format!(
                "every task of {id} completed; nothing to retry"
            )));
        }
        self.start_batch(&handle);
        Ok(json!({"batch_id": id, "tasks": count, "status": "running"}))
    }

    fn start_batch(self: &Arc<Self>, handle: &Arc<Handle>) {
        handle.batch.mark_running();
        let mut shares = vec![self.batches.share.clone()];
        if !handle.runner.takes_slot() {
            shares.push(self.leases.spawned.clone());
        }
        let supervisor = self.clone();
        let running = handle.clone();
        let task = tokio::spawn(async move {
            running.batch.run(running.runner.clone(), shares).await;
            let counts = running.batch.counts();
            running.inbox.push(
                &running.parent,
                format!(
                    "batch {} ended: {}; results: {}",
                    running.batch.id(),
                    summary(&counts),
                    running.batch.results_path().display()
                ),
            );
            supervisor.batches.ended.notify_waiters();
        });
        if let Ok(mut slot) = handle.task.lock() {
            *slot = Some(task);
        }
    }
}

fn read_tasks_file(
    context: &ToolContext,
    file: &str,
) -> Result<Vec<super::task::TaskSpec>, String> {
    let path = context.workspace.resolve(file);
    if context.hidden.hides(&path) {
        return Err(format!("tasks_file {file}: reading it is denied"));
    }
    let size = std::fs::metadata(&path)
        .map_err(|err| format!("tasks_file {file}: {err}"))?
        .len();
    if size > TASKS_FILE_BYTES {
        return Err(format!(
            "tasks_file {file} is {size} bytes; the most is {TASKS_FILE_BYTES}"
        ));
    }
    let text = std::fs::read_to_string(&path).map_err(|err| format!("tasks_file {file}: {err}"))?;
    parse_tasks_jsonl(&text).map_err(|reason| format!("tasks_file {file}: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::super::task::TaskSpec;
    use super::super::task_runner::TaskOutcome;
    use super::*;
    use tokio_util::sync::CancellationToken;

    struct Never;

    #[async_trait::async_trait]
    impl TaskRunner for Never {
        async fn run(&self, _job: super::super::task_runner::TaskJob<'_>) -> TaskOutcome {
            TaskOutcome::failed("not run".to_owned())
        }
    }

    #[test]
    fn only_the_newest_ended_batches_stay_addressable() {
        let dir = tempfile::tempdir().unwrap();
        let mut handles = BTreeMap::new();
        for n in 1..=40 {
            let id = format!("batch-{n}");
            let plan = BatchPlan {
                id: id.clone(),
                tasks: vec![TaskSpec {
                    id: "t".into(),
                    description: "d".into(),
                    prompt: "p".into(),
                }],
                agent_type: "general-purpose".into(),
                concurrency: 1,
                budget: BatchBudget::default(),
                isolation: Isolation::Shared,
                dir: dir.path().join(&id),
            };
            let batch = Batch::open(plan, CancellationToken::new()).unwrap();
            if n == 3 {
                batch.mark_running();
            }
            let handle = Arc::new(Handle {
                batch,
                parent: AgentPath::main(),
                inbox: Arc::default(),
                runner: Arc::new(Never),
                task: Mutex::new(None),
            });
            handles.insert(id, handle);
            evict_ended(&mut handles);
        }
        // 39 ended: the oldest 7 go; the running one stays whatever its age.
        assert_eq!(handles.len(), ENDED_KEPT + 1);
        assert!(handles.contains_key("batch-3"));
        assert!(!handles.contains_key("batch-8"));
        assert!(handles.contains_key("batch-9"));
        assert!(handles.contains_key("batch-40"));
    }
}
