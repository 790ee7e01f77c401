//! The batch engine: a queue in front of the runner, `concurrency` workers
//! taking tasks in order, the batch's budget checked before each start,
//! and every end written to results.jsonl before the next task is counted.
//!
//! Slots: a worker holds, in order, a permit of every semaphore it is given
//! (the session's slots, and for the model's batches the share of them that
//! batches may use) for as long as its task runs, so a batch queues behind
//! interactive children instead of refusing, and never takes their last slot.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use alcove_protocol::RunStatus;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::results::{ResultRecord, ResultsFile, now_ms, read_results};
use super::task::{BatchBudget, TaskSpec, TaskState};
use super::task_runner::{Isolation, TaskJob, TaskOutcome, TaskRunner};
pub use super::views::Counts;

/// Everything a batch is started with.
#[derive(Debug, Clone)]
pub struct BatchPlan {
    /// `batch-1`, or the id stored with a user's batch.
    pub id: String,
    /// The tasks, in queue order.
    pub tasks: Vec<TaskSpec>,
    /// The agent type every task runs as.
    pub agent_type: String,
    /// How many tasks may run at once.
    pub concurrency: usize,
    /// What the batch and each task may use.
    pub budget: BatchBudget,
    /// Where tasks work.
    pub isolation: Isolation,
    /// The batch's folder: results.jsonl (and Slurm job ids).
    pub dir: PathBuf,
}

#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) state: TaskState,
    pub(super) attempt: u32,
    pub(super) first_line: String,
    pub(super) tokens: u64,
}

pub(super) struct Inner {
    pub(super) tasks: Vec<Entry>,
    used_tokens: u64,
    used_turns: u64,
    /// Tasks already completed when this process opened the batch.
    pub(super) skipped: usize,
    pub(super) running: bool,
    pub(super) run_started: Instant,
    pub(super) ended_this_run: usize,
    write_error: Option<String>,
}

/// One batch: its plan, state, results file and cancellation.
pub struct Batch {
    pub(super) plan: BatchPlan,
    results: ResultsFile,
    inner: Mutex<Inner>,
    changed: Notify,
    cancel: CancellationToken,
    opened: Instant,
}

impl Batch {
    /// Opens the batch's folder. Tasks whose last line in an existing
    /// results.jsonl says `completed` are done already; every other task is
    /// queued (its attempt number continues from the file).
    pub fn open(plan: BatchPlan, cancel: CancellationToken) -> Result<Arc<Batch>, String> {
        let results = ResultsFile::open(&plan.dir)
            .map_err(|err| format!("cannot open {}: {err}", plan.dir.display()))?;
        let earlier = read_results(&plan.dir)?;
        let mut skipped = 0;
        let tasks = plan
            .tasks
            .iter()
            .map(|task| match earlier.get(&task.id) {
                Some(record) if record.state == TaskState::Completed => {
                    skipped += 1;
                    Entry {
                        state: TaskState::Completed,
                        attempt: record.attempt,
                        first_line: record.first_line.clone(),
                        tokens: record.usage.budget_tokens(),
                    }
                }
                other => Entry {
                    state: TaskState::Queued,
                    attempt: other.map_or(0, |record| record.attempt),
                    first_line: String::new(),
                    tokens: 0,
                },
            })
            .collect();
        Ok(Arc::new(Batch {
            plan,
            results,
            inner: Mutex::new(Inner {
                tasks,
                used_tokens: 0,
                used_turns: 0,
                skipped,
                running: false,
                run_started: Instant::now(),
                ended_this_run: 0,
                write_error: None,
            }),
            changed: Notify::new(),
            cancel,
            opened: Instant::now(),
        }))
    }

    /// The batch id.
    pub fn id(&self) -> &str {
        &self.plan.id
    }

    /// The plan it was opened with.
    pub fn plan(&self) -> &BatchPlan {
        &self.plan
    }

    /// How long since this process opened the batch.
    pub fn elapsed(&self) -> Duration {
        self.opened.elapsed()
    }

    /// results.jsonl.
    pub fn results_path(&self) -> &Path {
        self.results.path()
    }

    /// Stops the batch: queued tasks are recorded cancelled, running ones are cancelled.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Whether `cancel` was called (or the parent was cancelled).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the engine is working on it.
    pub fn is_running(&self) -> bool {
        self.lock().running
    }

    /// The first error writing results.jsonl, if any.
    pub fn write_error(&self) -> Option<String> {
        self.lock().write_error.clone()
    }

    /// Queues again every task that did not complete; returns how many.
    /// Refused while the batch is running.
    pub fn requeue_unfinished(&self) -> Result<usize, String> {
        let mut inner = self.lock();
        if inner.running {
            return Err(format!("batch {} is still running", self.plan.id));
        }
        let mut count = 0;
        for entry in &mut inner.tasks {
            if entry.state != TaskState::Completed {
                entry.state = TaskState::Queued;
                entry.first_line.clear();
                count += 1;
            }
        }
        Ok(count)
    }

    /// Marks the batch running before its engine task starts, so a `wait`
    /// right after `spawn_batch` does not see it ended.
    pub fn mark_running(&self) {
        self.lock().running = true;
    }

    /// Returns when the engine is not running, or after `timeout`; true when it ended.
    pub async fn wait_end(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if !self.is_running() {
                return true;
            }
            tokio::select! {
                () = &mut changed => {}
                () = tokio::time::sleep_until(deadline) => return !self.is_running(),
            }
        }
    }

    /// Runs every queued task through `runner`, at most `concurrency` at
    /// once, each holding a permit of every semaphore in `shares`.
    pub async fn run(self: &Arc<Self>, runner: Arc<dyn TaskRunner>, shares: Vec<Arc<Semaphore>>) {
        let queue: VecDeque<usize> = {
            let mut inner = self.lock();
            inner.running = true;
            inner.run_started = Instant::now();
            inner.ended_this_run = 0;
            (0..inner.tasks.len())
                .filter(|&index| inner.tasks[index].state == TaskState::Queued)
                .collect()
        };
        let workers = self.plan.concurrency.max(1).min(queue.len());
        let queue = Arc::new(Mutex::new(queue));
        // Each worker is a task of its own, so tasks use every runtime thread.
        let work: Vec<_> = (0..workers)
            .map(|_| {
                let (batch, queue, runner, shares) =
                    (self.clone(), queue.clone(), runner.clone(), shares.clone());
                tokio::spawn(async move { batch.worker(&queue, runner.as_ref(), &shares).await })
            })
            .collect();
        futures::future::join_all(work).await;
        self.lock().running = false;
        self.changed.notify_waiters();
    }

    async fn worker(
        &self,
        queue: &Mutex<VecDeque<usize>>,
        runner: &dyn TaskRunner,
        shares: &[Arc<Semaphore>],
    ) {
        loop {
            let next = queue
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .pop_front();
            let Some(index) = next else { return };
            // The provider refused the session for good: nothing new starts
            // (checked again once a slot is had: it may have come meanwhile).
            let permits = match runner.halted() {
                Some(reason) => Err(reason),
                None => match self.acquire(shares).await {
                    Some(permits) => runner.halted().map_or(Ok(Some(permits)), Err),
                    None => runner.halted().map_or(Ok(None), Err),
                },
            };
            let permits = match permits {
                Ok(Some(permits)) => permits,
                Ok(None) => {
                    self.end_unstarted(index, TaskState::Cancelled, "the batch was cancelled");
                    continue;
                }
                Err(reason) => {
                    self.end_unstarted(index, TaskState::NotRun, &format!("not run: {reason}"));
                    continue;
                }
            };
            let job = match self.admit(index) {
                Ok(job) => job,
                Err((state, reason)) => {
                    self.end_unstarted(index, state, &reason);
                    continue;
                }
            };
            let started_ms = now_ms();
            let started = Instant::now();
            let task = &self.plan.tasks[index];
            let outcome = runner
                .run(TaskJob {
                    batch: &self.plan.id,
                    task,
                    attempt: job.attempt,
                    agent_type: &self.plan.agent_type,
                    tokens: job.tokens,
                    turns: job.turns,
                    wall: self.plan.budget.task_wall(),
                    isolation: self.plan.isolation,
                    cancel: self.cancel.child_token(),
                    dir: &self.plan.dir,
                    model: None,
                    effort: None,
                    phase: None,
                })
                .await;
            drop(permits);
            self.end(index, job.attempt, outcome, started_ms, started.elapsed());
        }
    }

    /// A permit of each share, in order; None when cancelled first.
    async fn acquire(&self, shares: &[Arc<Semaphore>]) -> Option<Vec<OwnedSemaphorePermit>> {
        let mut permits = Vec::with_capacity(shares.len());
        if self.cancel.is_cancelled() {
            return None;
        }
        for share in shares {
            tokio::select! {
                permit = share.clone().acquire_owned() => permits.push(permit.ok()?),
                () = self.cancel.cancelled() => return None,
            }
        }
        Some(permits)
    }

    /// Checks the budget and marks the task running.
    fn admit(&self, index: usize) -> Result<Admitted, (TaskState, String)> {
        let budget = self.plan.budget;
        let mut inner = self.lock();
        if self.cancel.is_cancelled() {
            return Err((TaskState::Cancelled, "the batch was cancelled".to_owned()));
        }
        let tokens_left = budget
            .tokens
            .map(|total| total.saturating_sub(inner.used_tokens));
        let turns_left = budget
            .turns
            .map(|total| total.saturating_sub(inner.used_turns));
        if tokens_left == Some(0) {
            return Err((
                TaskState::Refused,
                format!(
                    "refused: the batch's token budget ({}) is used up",
                    budget.tokens.unwrap_or_default()
                ),
            ));
        }
        if turns_left == Some(0) {
            return Err((
                TaskState::Refused,
                format!(
                    "refused: the batch's turn budget ({}) is used up",
                    budget.turns.unwrap_or_default()
                ),
            ));
        }
        let entry = &mut inner.tasks[index];
        entry.state = TaskState::Running;
        entry.attempt += 1;
        let attempt = entry.attempt;
        drop(inner);
        self.changed.notify_waiters();
        let tokens = match (budget.task_tokens, tokens_left) {
            (Some(own), Some(left)) => Some(own.min(left)),
            (own, left) => own.or(left),
        };
        let turns_left = turns_left.map(|left| u32::try_from(left).unwrap_or(u32::MAX));
        let turns = match (budget.task_turns, turns_left) {
            (Some(own), Some(left)) => Some(own.min(left)),
            (own, left) => own.or(left),
        };
        Ok(Admitted {
            attempt,
            tokens,
            turns,
        })
    }

    fn end_unstarted(&self, index: usize, state: TaskState, reason: &str) {
        let attempt = {
            let inner = self.lock();
            inner.tasks[index].attempt + 1
        };
        let mut outcome = TaskOutcome::failed(reason.to_owned());
        outcome.status = match state {
            TaskState::NotRun => RunStatus::Halted,
            _ => RunStatus::Aborted,
        };
        self.record(index, attempt, state, outcome, None, Duration::ZERO);
    }

    fn end(
        &self,
        index: usize,
        attempt: u32,
        outcome: TaskOutcome,
        started_ms: u64,
        elapsed: Duration,
    ) {
        if outcome.refused.is_some() {
            self.record(index, attempt, TaskState::Refused, outcome, None, elapsed);
            return;
        }
        if outcome.not_run {
            self.record(index, attempt, TaskState::NotRun, outcome, None, elapsed);
            return;
        }
        let state = match outcome.status {
            RunStatus::Completed if !outcome.is_error => TaskState::Completed,
            RunStatus::Completed | RunStatus::Failed => TaskState::Failed,
            RunStatus::MaxTurns | RunStatus::Budget => TaskState::CutShort,
            RunStatus::Aborted => TaskState::Cancelled,
            RunStatus::Halted => TaskState::Halted,
        };
        self.record(index, attempt, state, outcome, Some(started_ms), elapsed);
    }

    fn record(
        &self,
        index: usize,
        attempt: u32,
        state: TaskState,
        outcome: TaskOutcome,
        started_ms: Option<u64>,
        elapsed: Duration,
    ) {
        let task = &self.plan.tasks[index];
        let tokens = outcome.usage.budget_tokens();
        let record = ResultRecord {
            batch: self.plan.id.clone(),
            task: task.id.clone(),
            description: task.description.clone(),
            state,
            status: started_ms.map(|_| outcome.status.as_str().to_owned()),
            attempt,
            first_line: outcome.first_line.clone(),
            report: outcome.report,
            evidence: outcome.evidence,
            usage: outcome.usage,
            turns: outcome.turns,
            started_at_ms: started_ms,
            ended_at_ms: now_ms(),
            elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            transcript: outcome.transcript,
            job_id: outcome.job_id,
            error: outcome.error,
        };
        // Written before the task counts as ended: a kill after this line
        // loses nothing, a kill before it reruns the task.
        let written = self.results.append(&record);
        let mut inner = self.lock();
        if let Err(err) = written {
            inner.write_error.get_or_insert(err);
        }
        inner.used_tokens += tokens;
        inner.used_turns += u64::from(record.turns);
        inner.ended_this_run += 1;
        let entry = &mut inner.tasks[index];
        entry.state = state;
        entry.attempt = attempt;
        entry.first_line = record.first_line;
        entry.tokens = tokens;
        drop(inner);
        self.changed.notify_waiters();
    }
}

struct Admitted {
    attempt: u32,
    tokens: Option<u64>,
    turns: Option<u32>,
}
