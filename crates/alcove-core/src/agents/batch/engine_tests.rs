//! The engine with a scripted runner: concurrency, resume, budget, cancel.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use alcove_protocol::{RunStatus, Usage};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::*;

/// Sleeps, counts how many run at once, fails tasks whose prompt says "fail".
#[derive(Default)]
struct Scripted {
    alive: AtomicUsize,
    peak: AtomicUsize,
    runs: AtomicUsize,
}

#[async_trait::async_trait]
impl TaskRunner for Scripted {
    async fn run(&self, job: TaskJob<'_>) -> TaskOutcome {
        let now = self.alive.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        self.runs.fetch_add(1, Ordering::SeqCst);
        let cancelled = tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(20)) => false,
            () = job.cancel.cancelled() => true,
        };
        self.alive.fetch_sub(1, Ordering::SeqCst);
        let status = if cancelled {
            RunStatus::Aborted
        } else if job.task.prompt.contains("fail") {
            RunStatus::Failed
        } else {
            RunStatus::Completed
        };
        TaskOutcome {
            status,
            first_line: format!("did {}", job.task.id),
            report: format!("[Agent]\ndid {}", job.task.id),
            words: None,
            is_error: status != RunStatus::Completed,
            evidence: Value::Null,
            usage: Usage {
                input_tokens: 90,
                output_tokens: 10,
                ..Usage::default()
            },
            turns: 1,
            transcript: None,
            job_id: None,
            error: None,
            refused: None,
            not_run: false,
        }
    }
}

fn plan(dir: &std::path::Path, prompts: &[&str], concurrency: usize) -> BatchPlan {
    BatchPlan {
        id: "b".into(),
        tasks: prompts
            .iter()
            .enumerate()
            .map(|(index, prompt)| TaskSpec {
                id: format!("t{index}"),
                description: format!("task {index}"),
                prompt: (*prompt).to_owned(),
            })
            .collect(),
        agent_type: "general-purpose".into(),
        concurrency,
        budget: BatchBudget::default(),
        isolation: Isolation::Shared,
        dir: dir.to_owned(),
    }
}

#[tokio::test]
async fn never_more_than_the_concurrency_run_and_every_task_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = vec!["ok"; 30];
    let batch = Batch::open(plan(dir.path(), &prompts, 4), CancellationToken::new()).unwrap();
    let runner = Arc::new(Scripted::default());
    batch.run(runner.clone(), Vec::new()).await;
    assert_eq!(runner.peak.load(Ordering::SeqCst), 4);
    let counts = batch.counts();
    assert_eq!(
        (counts.completed, counts.total, counts.tokens),
        (30, 30, 3000)
    );
    assert_eq!(read_results(dir.path()).unwrap().len(), 30);
}

#[tokio::test]
async fn shared_slots_bound_the_batch_too() {
    let dir = tempfile::tempdir().unwrap();
    let batch = Batch::open(plan(dir.path(), &["ok"; 10], 8), CancellationToken::new()).unwrap();
    let runner = Arc::new(Scripted::default());
    let session = Arc::new(Semaphore::new(3));
    batch.run(runner.clone(), vec![session.clone()]).await;
    assert_eq!(runner.peak.load(Ordering::SeqCst), 3);
    assert_eq!(session.available_permits(), 3);
}

#[tokio::test]
async fn a_rerun_skips_completed_tasks_and_retry_reruns_only_the_failed() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = ["ok", "fail", "ok", "fail"];
    let first = Batch::open(plan(dir.path(), &prompts, 2), CancellationToken::new()).unwrap();
    let runner = Arc::new(Scripted::default());
    first.run(runner.clone(), Vec::new()).await;
    assert_eq!(first.counts().failed, 2);
    let (table, left_out) = first.table(3);
    assert_eq!(left_out, 1);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("t1  failed"), "{table}");
    assert!(lines[1].starts_with("t3  failed"), "{table}");

    // A new process on the same folder: the two completed tasks are skipped.
    let second = Batch::open(plan(dir.path(), &prompts, 2), CancellationToken::new()).unwrap();
    assert_eq!(second.counts().skipped, 2);
    let rerun = Arc::new(Scripted::default());
    second.run(rerun.clone(), Vec::new()).await;
    assert_eq!(rerun.runs.load(Ordering::SeqCst), 2);
    let results = read_results(dir.path()).unwrap();
    assert_eq!(results["t1"].attempt, 2);
    assert_eq!(results["t0"].attempt, 1);

    // Retry in the same process: only the failed two run again.
    assert_eq!(second.requeue_unfinished().unwrap(), 2);
    second.run(rerun.clone(), Vec::new()).await;
    assert_eq!(rerun.runs.load(Ordering::SeqCst), 4);
    assert_eq!(read_results(dir.path()).unwrap()["t3"].attempt, 3);
}

#[tokio::test]
async fn a_budget_used_up_refuses_the_rest_without_running_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut plan = plan(dir.path(), &["ok"; 6], 1);
    plan.budget.tokens = Some(250);
    let batch = Batch::open(plan, CancellationToken::new()).unwrap();
    let runner = Arc::new(Scripted::default());
    batch.run(runner.clone(), Vec::new()).await;
    let counts = batch.counts();
    // 100 tokens a task: three fit under 250 (the third overshoots), the rest are refused.
    assert_eq!((counts.completed, counts.refused), (3, 3));
    assert_eq!(runner.runs.load(Ordering::SeqCst), 3);
    let results = read_results(dir.path()).unwrap();
    assert_eq!(results["t5"].state, TaskState::Refused);
    assert!(
        results["t5"]
            .error
            .as_deref()
            .unwrap()
            .contains("token budget (250)")
    );
    assert_eq!(results["t5"].started_at_ms, None);
}

#[tokio::test]
async fn cancelling_records_running_and_queued_tasks_as_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let batch = Batch::open(plan(dir.path(), &["ok"; 20], 4), cancel.clone()).unwrap();
    let runner = Arc::new(Scripted::default());
    let running = batch.clone();
    let task = tokio::spawn(async move { running.run(runner, Vec::new()).await });
    tokio::time::sleep(Duration::from_millis(30)).await;
    batch.cancel();
    task.await.unwrap();
    let counts = batch.counts();
    assert_eq!(counts.running + counts.queued, 0);
    assert!(counts.cancelled >= 12, "{counts:?}");
    assert_eq!(counts.completed + counts.cancelled, 20);
    let results = read_results(dir.path()).unwrap();
    assert_eq!(results.len(), 20);
    assert!(
        results
            .values()
            .all(|record| record.state != TaskState::Running)
    );
}
