//! The registry of spawned agents and their state machine (seed 001, with
//! the truth recorded where the seed's source bent it).
//!
//! The supervisor's room for spawned agents: their records, `wait`'s
//! wake-ups, closing those below an agent that ended (or all, at the end) and
//! waiting for those still running.
//!
//! States: `running`, `completed`, `errored`, `cancelled`, `closed` (plus
//! `not_found`, reported by `wait` only). A record outlives its submissions: it keeps
//! the child's conversation, so `send_input` to a finished agent continues
//! it. Every transition wakes waiters; `wait` never polls.
//!
//! Records are bounded: at most [`RETAINED_IDLE`] records that are not
//! running are kept; past that the least recently changed are dropped (with
//! their conversations) and answer `not_found`, so a long session that
//! spawns and closes agents does not grow without bound. A running record
//! is never dropped.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use alcove_protocol::{AgentPath, Message};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::child::Child;

/// How many records that are not running a session keeps addressable.
pub(crate) const RETAINED_IDLE: usize = 64;

/// How long closing waits for a running agent's work to stop (its commands
/// get a grace period before they are killed).
pub(crate) const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// An agent's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Running,
    Completed,
    Errored,
    /// Stopped alone by a front end (ACP `session/cancel`, the UI's stop);
    /// `send_input` may continue it.
    Cancelled,
    Closed,
}

impl State {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Completed => "completed",
            State::Errored => "errored",
            State::Cancelled => "cancelled",
            State::Closed => "closed",
        }
    }
}

/// The submission an agent is working on.
pub(crate) struct Submission {
    pub(crate) id: String,
    pub(crate) cancel: CancellationToken,
    /// Set by `send_input` with `interrupt`, so the end is recorded as such.
    pub(crate) interrupted: bool,
    /// Set by [`super::Supervisor::cancel_agent`], so the end is recorded
    /// `cancelled`.
    pub(crate) cancelled: bool,
    pub(crate) task: Option<JoinHandle<()>>,
}

/// One spawned agent.
pub(crate) struct Record {
    pub(crate) id: String,
    pub(crate) created_at: u64,
    pub(crate) updated_at: u64,
    /// Orders every change (one counter that only grows), for eviction.
    pub(crate) sequence: u64,
    pub(crate) status: State,
    pub(crate) status_before_close: State,
    pub(crate) last_message: String,
    pub(crate) last_submission_id: Option<String>,
    pub(crate) last_output: Option<String>,
    /// The harness's evidence footer of the last submission (the same
    /// one `Agent`'s report ends with).
    pub(crate) last_evidence: Option<String>,
    pub(crate) last_error: Option<String>,
    pub(crate) running: Option<Submission>,
    /// The conversation so far (in-process runner).
    pub(crate) history: Vec<Message>,
    /// The session to continue (process runner running alcove).
    pub(crate) remote_session: Option<String>,
    /// Cancelling this (the spawning agent's token) stops every submission.
    pub(crate) parent_cancel: CancellationToken,
    pub(crate) child: std::sync::Arc<Child>,
}

impl Record {
    pub(crate) fn touch(&mut self) {
        self.updated_at = now();
        self.sequence = next_sequence();
    }

    /// Marks it closed, remembering the state it had (`errored` when a
    /// submission was running, which is cancelled and gets `why` as its
    /// error when one is given). Returns that submission's task, to await
    /// once the registry's lock is released.
    pub(crate) fn close(&mut self, why: Option<String>) -> Option<JoinHandle<()>> {
        let task = match &mut self.running {
            Some(submission) => {
                self.status_before_close = State::Errored;
                if why.is_some() {
                    self.last_error = why;
                }
                submission.cancel.cancel();
                submission.task.take()
            }
            None => {
                self.status_before_close = self.status;
                None
            }
        };
        self.status = State::Closed;
        self.touch();
        task
    }

    /// The `details` entry `wait` returns.
    pub(crate) fn details(&self) -> Value {
        json!({
            "status": self.status.as_str(),
            "last_message": self.last_message,
            "last_output": self.last_output,
            "evidence": self.last_evidence,
            "last_error": self.last_error,
            "last_submission_id": self.last_submission_id,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        })
    }

    /// What `spawn_agent` returns: short, and what to do next (`wait` has
    /// the full record).
    pub(crate) fn spawn_view(&self, submission_id: &str, warnings: &[String]) -> Value {
        let mut view = json!({
            "agent_id": self.id,
            "status": self.status.as_str(),
            "submission_id": submission_id,
            "next": format!("call wait with ids [\"{}\"] to collect it", self.id),
        });
        if !warnings.is_empty() {
            view["warnings"] = json!(warnings);
        }
        view
    }
}

/// All spawned agents of a session.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) records: Mutex<BTreeMap<String, Record>>,
    pub(crate) changed: Notify,
}

/// What `wait` found.
pub(crate) struct WaitResult {
    pub(crate) status: BTreeMap<String, &'static str>,
    pub(crate) details: BTreeMap<String, Value>,
    pub(crate) timed_out: bool,
}

impl WaitResult {
    pub(crate) fn to_json(&self) -> Value {
        json!({"status": self.status, "details": self.details, "timed_out": self.timed_out})
    }
}

impl Registry {
    /// Drops the least recently changed records that are not running, past
    /// [`RETAINED_IDLE`] of them.
    pub(crate) fn evict_idle(records: &mut BTreeMap<String, Record>) {
        let mut idle: Vec<(u64, u64, String)> = records
            .values()
            .filter(|record| record.running.is_none())
            .map(|record| (record.updated_at, record.sequence, record.id.clone()))
            .collect();
        if idle.len() <= RETAINED_IDLE {
            return;
        }
        idle.sort();
        let excess = idle.len() - RETAINED_IDLE;
        for (_, _, id) in idle.into_iter().take(excess) {
            records.remove(&id);
        }
    }

    /// How many records are held (running or not).
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.records.lock().map_or(0, |records| records.len())
    }

    /// Returns as soon as at least one of `ids` is final (not running; an
    /// unknown id is final as `not_found`), or when `timeout` passes.
    pub(crate) async fn wait_any(&self, ids: &[String], timeout: Duration) -> WaitResult {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Register interest before looking, so no transition is missed.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(result) = self.final_among(ids) {
                return result;
            }
            tokio::select! {
                () = &mut changed => {}
                () = tokio::time::sleep_until(deadline) => {
                    return self.final_among(ids).unwrap_or(WaitResult {
                        status: BTreeMap::new(),
                        details: BTreeMap::new(),
                        timed_out: true,
                    });
                }
            }
        }
    }

    fn final_among(&self, ids: &[String]) -> Option<WaitResult> {
        let records = self.records.lock().ok()?;
        let mut status = BTreeMap::new();
        let mut details = BTreeMap::new();
        for id in ids {
            match records.get(id) {
                Some(record) if record.status == State::Running => {}
                Some(record) => {
                    status.insert(id.clone(), record.status.as_str());
                    details.insert(id.clone(), record.details());
                }
                None => {
                    status.insert(id.clone(), "not_found");
                    details.insert(
                        id.clone(),
                        json!({"status": "not_found", "last_message": null, "last_output": null,
                               "evidence": null, "last_error": null, "last_submission_id": null, "updated_at": null}),
                    );
                }
            }
        }
        (!status.is_empty()).then_some(WaitResult {
            status,
            details,
            timed_out: false,
        })
    }
}

impl Registry {
    /// The records, or why they cannot be read.
    pub(crate) fn lock(
        &self,
    ) -> Result<std::sync::MutexGuard<'_, BTreeMap<String, Record>>, String> {
        self.records
            .lock()
            .map_err(|_| "the agent registry is unavailable".to_owned())
    }

    /// Closes every agent still running and waits (at most
    /// [`CLOSE_WAIT`]) for their lives to end. Returns their ids.
    pub(crate) async fn close_running(&self) -> Vec<String> {
        let mut tasks = Vec::new();
        let mut closed = Vec::new();
        if let Ok(mut records) = self.records.lock() {
            for record in records.values_mut() {
                if record.running.is_some() {
                    tasks.extend(record.close(None));
                    closed.push(record.id.clone());
                }
            }
        }
        let _ = tokio::time::timeout(CLOSE_WAIT, futures::future::join_all(tasks)).await;
        closed
    }

    /// Closes every spawned agent below `path` (its descendants spawned by
    /// it or by them): what a child does when it ends, unless its
    /// definition leaves them (`leaveSpawned`). Each end is recorded (as
    /// `closed`) and its slot released once its work stops, which this
    /// waits for (at most [`CLOSE_WAIT`]), so no descendant outlives the child.
    pub(crate) async fn close_below(&self, path: &AgentPath) {
        let prefix = format!("{path}/");
        let mut tasks = Vec::new();
        let mut worktrees = Vec::new();
        let mut closed = false;
        if let Ok(mut records) = self.records.lock() {
            for record in records.values_mut() {
                if !record.child.path.as_str().starts_with(&prefix)
                    || record.status == State::Closed
                {
                    continue;
                }
                let idle = record.running.is_none();
                tasks
                    .extend(record.close(Some(format!("closed: {path}, which spawned it, ended"))));
                // An idle one's worktree is finished below, once the lock
                // is released.
                if idle && let Some(worktree) = &record.child.worktree {
                    worktrees.push((worktree.clone(), record.id.clone()));
                }
                closed = true;
            }
        }
        super::worktree_child::finish_closed(worktrees).await;
        if !closed {
            return;
        }
        self.changed.notify_waiters();
        let _ = tokio::time::timeout(CLOSE_WAIT, futures::future::join_all(tasks)).await;
    }

    /// Waits until no agent that is running now still runs, or until
    /// `cancel` fires. Returns what `wait` would say of them, or `None`
    /// when none was running.
    pub(crate) async fn wait_for_running(&self, cancel: &CancellationToken) -> Option<Value> {
        let running: Vec<String> = self
            .lock()
            .ok()?
            .values()
            .filter(|record| record.running.is_some() && record.status != State::Closed)
            .map(|record| record.id.clone())
            .collect();
        if running.is_empty() {
            return None;
        }
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let details: Option<serde_json::Map<String, Value>> = {
                let records = self.lock().ok()?;
                running
                    .iter()
                    .map(|id| match records.get(id) {
                        Some(record) if record.running.is_some() => None,
                        Some(record) => Some((id.clone(), record.details())),
                        None => Some((id.clone(), json!({"status": "not_found"}))),
                    })
                    .collect()
            };
            if let Some(details) = details {
                return Some(Value::Object(details));
            }
            tokio::select! {
                () = &mut changed => {}
                () = cancel.cancelled() => return None,
            }
        }
    }
}

/// A number that grows with every change of any record.
pub(crate) fn next_sequence() -> u64 {
    static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Unix seconds.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0)
}
