//! Batch ids in `wait` and `close_agent`: counts while a batch runs, and at
//! its end a bounded table and the path of results.jsonl — never a worker's
//! transcript.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::super::supervisor::Supervisor;
use super::engine::Counts;
use super::tools::{Handle, TABLE_LINES};

impl Supervisor {
    /// `wait` on batch ids: returns when one of them ended or `timeout` passed.
    pub(crate) async fn wait_batches(&self, ids: &[String], timeout: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + timeout;
        let handles: Vec<(String, Option<Arc<Handle>>)> = ids
            .iter()
            .map(|id| (id.clone(), self.batches.get(id)))
            .collect();
        let timed_out = loop {
            let ended = self.batches.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let any_over = handles.iter().any(|(_, handle)| {
                handle
                    .as_ref()
                    .is_none_or(|handle| !handle.batch.is_running())
            });
            if any_over {
                break false;
            }
            tokio::select! {
                () = &mut ended => {}
                () = tokio::time::sleep_until(deadline) => break true,
            }
        };
        let mut status = BTreeMap::new();
        let mut batches = BTreeMap::new();
        for (id, handle) in &handles {
            let Some(handle) = handle else {
                status.insert(id.clone(), "not_found".to_owned());
                continue;
            };
            let batch = &handle.batch;
            let counts = batch.counts();
            let mut view = json!({
                "counts": counts_json(&counts),
                "results": batch.results_path(),
            });
            let state = if batch.is_running() {
                "running"
            } else {
                let (table, left_out) = batch.table(TABLE_LINES);
                view["table"] = json!(table);
                view["lines_left_out"] = json!(left_out);
                if left_out > 0 {
                    view["note"] = json!(format!(
                        "{left_out} more task lines are left out; results.jsonl has every task"
                    ));
                }
                if counts.all_completed() {
                    "completed"
                } else if batch.is_cancelled() {
                    "cancelled"
                } else {
                    "incomplete"
                }
            };
            status.insert(id.clone(), state.to_owned());
            batches.insert(id.clone(), view);
        }
        json!({"status": status, "batches": batches, "timed_out": timed_out})
    }

    /// `close_agent` on a batch id: cancels what is queued and running and
    /// waits (briefly) for the running tasks to record their end.
    pub(crate) async fn close_batch(&self, id: &str) -> Result<Value, String> {
        let handle = self
            .batches
            .get(id)
            .ok_or_else(|| format!("batch not found: {id}"))?;
        handle.batch.cancel();
        handle.batch.wait_end(Duration::from_secs(10)).await;
        let counts = handle.batch.counts();
        Ok(json!({
            "batch_id": id,
            "status": if handle.batch.is_running() { "closing" } else { "closed" },
            "counts": counts_json(&counts),
            "results": handle.batch.results_path(),
        }))
    }

    /// Cancels every batch and waits (briefly) for their tasks; the ids.
    pub(crate) async fn close_batches(&self) -> Vec<String> {
        let handles: Vec<Arc<Handle>> = match self.batches.handles.lock() {
            Ok(handles) => handles.values().cloned().collect(),
            Err(_) => return Vec::new(),
        };
        let mut closed = Vec::new();
        let mut tasks = Vec::new();
        for handle in handles {
            if handle.batch.is_running() {
                handle.batch.cancel();
                closed.push(handle.batch.id().to_owned());
                if let Ok(mut task) = handle.task.lock() {
                    tasks.extend(task.take());
                }
            }
        }
        let _ =
            tokio::time::timeout(Duration::from_secs(10), futures::future::join_all(tasks)).await;
        closed
    }
}

/// `12 completed, 2 failed, …` (states with no task left out).
pub fn summary(counts: &Counts) -> String {
    let parts = [
        (counts.completed, "completed"),
        (counts.failed, "failed"),
        (counts.cut_short, "cut short"),
        (counts.refused, "refused for budget"),
        (counts.cancelled, "cancelled"),
        (counts.halted, "halted by the provider"),
        (counts.not_run, "not run"),
        (counts.running, "running"),
        (counts.queued, "queued"),
    ];
    let text: Vec<String> = parts
        .iter()
        .filter(|(count, _)| *count > 0)
        .map(|(count, name)| format!("{count} {name}"))
        .collect();
    format!(
        "{} of {} tasks: {}",
        counts.done(),
        counts.total,
        text.join(", ")
    )
}

fn counts_json(counts: &Counts) -> Value {
    json!({
        "total": counts.total,
        "queued": counts.queued,
        "running": counts.running,
        "completed": counts.completed,
        "failed": counts.failed,
        "cut_short": counts.cut_short,
        "refused_budget": counts.refused,
        "cancelled": counts.cancelled,
        "halted": counts.halted,
        "not_run": counts.not_run,
        "tokens": counts.tokens,
    })
}
