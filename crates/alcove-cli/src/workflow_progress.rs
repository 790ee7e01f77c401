//! A workflow run started by the model's `Workflow` tool, as the core's
//! `wait` and `close_agent` see it (`alcove_core::HostRun`): its progress,
//! counted from its events while it runs (phase, agents started and ended,
//! the last `log()` lines), then its end; and how to stop it.

use std::sync::Mutex;

use alcove_core::HostRun;
use alcove_workflow::{RunEnd, RunEvent};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// What a run has done so far, from its events.
#[derive(Default)]
struct Progress {
    phase: Option<String>,
    started: u32,
    ended: u32,
    /// The last few `log()` lines.
    log: Vec<String>,
    end: Option<(RunEnd, Option<String>)>,
}

/// `log()` lines `wait` shows of a running run.
const LOG_LINES: usize = 5;

/// A workflow run as the core's `wait` and `close_agent` see it.
pub(crate) struct WorkflowRun {
    name: String,
    cancel: CancellationToken,
    progress: Mutex<Progress>,
}

impl WorkflowRun {
    /// The run `name`, stopped by `cancel`.
    pub(crate) fn new(name: String, cancel: CancellationToken) -> WorkflowRun {
        WorkflowRun {
            name,
            cancel,
            progress: Mutex::new(Progress::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one of the run's events.
    pub(crate) fn note(&self, event: RunEvent) {
        let mut progress = self.lock();
        match event {
            RunEvent::Phase(title) => progress.phase = Some(title),
            RunEvent::Log(line) => {
                progress.log.push(line);
                let excess = progress.log.len().saturating_sub(LOG_LINES);
                progress.log.drain(..excess);
            }
            RunEvent::AgentStarted { .. } => progress.started += 1,
            RunEvent::AgentEnded { .. } => progress.ended += 1,
        }
    }

    /// The run ended (`journal_error`: why its run.json was not written).
    pub(crate) fn finish(&self, end: RunEnd, journal_error: Option<String>) {
        self.lock().end = Some((end, journal_error));
    }
}

impl HostRun for WorkflowRun {
    fn is_running(&self) -> bool {
        self.lock().end.is_none()
    }

    fn status(&self) -> String {
        match &self.lock().end {
            Some((end, _)) => end.status.as_str().to_owned(),
            None => "running".to_owned(),
        }
    }

    fn view(&self) -> Value {
        let progress = self.lock();
        match &progress.end {
            Some((end, journal_error)) => json!({
                "name": self.name,
                "status": end.status.as_str(),
                "result": end.result,
                "error": end.error,
                "agents": end.agents.describe(),
                "counts": end.agents,
                "tokens": end.tokens,
                "usd": end.usd,
                "run_json_error": journal_error,
            }),
            None => json!({
                "name": self.name,
                "status": "running",
                "phase": progress.phase,
                "agents_started": progress.started,
                "agents_ended": progress.ended,
                "log": progress.log,
            }),
        }
    }

    fn cancel(&self) {
        self.cancel.cancel();
    }
}
