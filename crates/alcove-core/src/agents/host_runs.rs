//! Runs a front end's tool left going in the background, which `wait` and
//! `close_agent` address by id as they do batches: a workflow run (`wf_…`,
//! started by alcove-cli's `Workflow` tool).
//!
//! The core knows nothing of what such a run does: the tool that starts it
//! registers it here as a [`HostRun`] (is it running, what `wait` shows of
//! it, how to stop it) and calls [`HostRuns::ended`] when it ends, after it
//! left its parent the end notice. Its agents are children like any other,
//! started through the one child lifecycle by the front end's adapter.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A session keeps at most this many ended runs addressable; the oldest go first.
const ENDED_KEPT: usize = 32;

/// One run a tool started in the background.
pub trait HostRun: Send + Sync {
    /// Whether it still runs.
    fn is_running(&self) -> bool;
    /// Its status word (`running`, then how it ended).
    fn status(&self) -> String;
    /// What `wait` returns for it: progress while it runs, its result and
    /// counts once it ended.
    fn view(&self) -> Value;
    /// Stops it; its end is recorded as it stops.
    fn cancel(&self);
}

/// A session's background runs, by id, in the order they started.
#[derive(Default)]
pub struct HostRuns {
    runs: Mutex<Vec<(String, Arc<dyn HostRun>)>>,
    ended: Notify,
}

impl HostRuns {
    /// Makes `run` addressable as `id` (forgetting the oldest ended runs).
    pub fn insert(&self, id: &str, run: Arc<dyn HostRun>) {
        if let Ok(mut runs) = self.runs.lock() {
            runs.push((id.to_owned(), run));
            let ended = runs.iter().filter(|(_, run)| !run.is_running()).count();
            let mut excess = ended.saturating_sub(ENDED_KEPT);
            runs.retain(|(_, run)| {
                let forget = excess > 0 && !run.is_running();
                if forget {
                    excess -= 1;
                }
                !forget
            });
        }
    }

    /// A run ended: wakes every `wait` on runs.
    pub fn ended(&self) {
        self.ended.notify_waiters();
    }

    fn get(&self, id: &str) -> Option<Arc<dyn HostRun>> {
        let runs = self.runs.lock().ok()?;
        runs.iter()
            .find(|(known, _)| known == id)
            .map(|(_, run)| run.clone())
    }

    /// Whether `id` names one of them that is still running.
    pub fn is_running(&self, id: &str) -> bool {
        self.get(id).is_some_and(|run| run.is_running())
    }

    /// Whether `id` names one of them.
    pub(crate) fn knows(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// `wait` on run ids: returns when one of them ended or `timeout` passed.
    pub(crate) async fn wait(&self, ids: &[String], timeout: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + timeout;
        let runs: Vec<(String, Option<Arc<dyn HostRun>>)> =
            ids.iter().map(|id| (id.clone(), self.get(id))).collect();
        let timed_out = loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if runs
                .iter()
                .any(|(_, run)| run.as_ref().is_none_or(|run| !run.is_running()))
            {
                break false;
            }
            tokio::select! {
                () = &mut ended => {}
                () = tokio::time::sleep_until(deadline) => break true,
            }
        };
        let mut status = BTreeMap::new();
        let mut views = BTreeMap::new();
        for (id, run) in &runs {
            match run {
                Some(run) => {
                    status.insert(id.clone(), run.status());
                    views.insert(id.clone(), run.view());
                }
                None => {
                    status.insert(id.clone(), "not_found".to_owned());
                }
            }
        }
        json!({"status": status, "runs": views, "timed_out": timed_out})
    }

    /// Waits until every run going now has ended (or `cancel` fires):
    /// their views by id, or `None` when none was going. `exec` gives the
    /// main agent these when it ended before its runs did, as it does a
    /// spawned agent's results.
    pub async fn wait_running(&self, cancel: &CancellationToken) -> Option<Value> {
        let running: Vec<(String, Arc<dyn HostRun>)> = self
            .runs
            .lock()
            .ok()?
            .iter()
            .filter(|(_, run)| run.is_running())
            .cloned()
            .collect();
        if running.is_empty() {
            return None;
        }
        let runs: Vec<Arc<dyn HostRun>> = running.iter().map(|(_, run)| run.clone()).collect();
        tokio::select! {
            () = self.until_stopped(&runs, None) => {}
            () = cancel.cancelled() => return None,
        }
        let views: serde_json::Map<String, Value> = running
            .iter()
            .map(|(id, run)| (id.clone(), run.view()))
            .collect();
        Some(Value::Object(views))
    }

    /// `close_agent` on a run id: stops it and waits (briefly) for its end.
    pub(crate) async fn close(&self, id: &str) -> Result<Value, String> {
        let run = self.get(id).ok_or_else(|| format!("run not found: {id}"))?;
        run.cancel();
        self.until_stopped(std::slice::from_ref(&run), Some(Duration::from_secs(10)))
            .await;
        Ok(json!({"id": id, "status": run.status(), "run": run.view()}))
    }

    /// Stops every run still going and waits (briefly) for their ends; their ids.
    pub(crate) async fn close_all(&self) -> Vec<String> {
        let running: Vec<(String, Arc<dyn HostRun>)> = match self.runs.lock() {
            Ok(runs) => runs
                .iter()
                .filter(|(_, run)| run.is_running())
                .cloned()
                .collect(),
            Err(_) => return Vec::new(),
        };
        for (_, run) in &running {
            run.cancel();
        }
        let stopping: Vec<Arc<dyn HostRun>> = running.iter().map(|(_, run)| run.clone()).collect();
        self.until_stopped(&stopping, Some(Duration::from_secs(10)))
            .await;
        running.into_iter().map(|(id, _)| id).collect()
    }

    /// Waits until none of `runs` is running, at most `limit` (none: no limit).
    async fn until_stopped(&self, runs: &[Arc<dyn HostRun>], limit: Option<Duration>) {
        let deadline = limit.map(|limit| tokio::time::Instant::now() + limit);
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if runs.iter().all(|run| !run.is_running()) {
                return;
            }
            let timeout = async {
                match deadline {
                    Some(deadline) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = &mut ended => {}
                () = timeout => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Fake(AtomicBool);

    impl HostRun for Fake {
        fn is_running(&self) -> bool {
            self.0.load(Ordering::SeqCst)
        }
        fn status(&self) -> String {
            if self.is_running() {
                "running"
            } else {
                "completed"
            }
            .to_owned()
        }
        fn view(&self) -> Value {
            json!({"result": 1})
        }
        fn cancel(&self) {
            self.0.store(false, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn wait_returns_when_a_run_ends_and_names_unknown_ids() {
        let runs = Arc::new(HostRuns::default());
        let run = Arc::new(Fake(AtomicBool::new(true)));
        runs.insert("wf_a", run.clone());
        assert!(runs.knows("wf_a"));
        let timed = runs
            .wait(&["wf_a".to_owned()], Duration::from_millis(20))
            .await;
        assert_eq!(timed["timed_out"], true);
        assert_eq!(timed["status"]["wf_a"], "running");
        let waiting = {
            let runs = runs.clone();
            tokio::spawn(async move {
                runs.wait(
                    &["wf_a".to_owned(), "wf_b".to_owned()],
                    Duration::from_secs(30),
                )
                .await
            })
        };
        let done = waiting.await.unwrap();
        // wf_b is unknown: `not_found` counts as over, so the wait returns at once.
        assert_eq!(done["status"]["wf_b"], "not_found");
        run.cancel();
        runs.ended();
        let done = runs
            .wait(&["wf_a".to_owned()], Duration::from_secs(30))
            .await;
        assert_eq!(done["timed_out"], false);
        assert_eq!(done["status"]["wf_a"], "completed");
        assert_eq!(done["runs"]["wf_a"]["result"], 1);
    }

    #[test]
    fn only_the_newest_ended_runs_stay_addressable() {
        let runs = HostRuns::default();
        runs.insert("live", Arc::new(Fake(AtomicBool::new(true))));
        for n in 0..40 {
            runs.insert(&format!("wf_{n}"), Arc::new(Fake(AtomicBool::new(false))));
        }
        assert!(runs.knows("live"));
        assert!(!runs.knows("wf_7"));
        assert!(runs.knows("wf_8"));
        assert!(runs.knows("wf_39"));
    }
}
