//! Submissions of spawned agents: starting one on its lease as a
//! [`ChildLife`] (in-process or the process runner), and the registry's
//! record of how it ended.
//!
//! The state machine's transitions live here: `running` on start; on the
//! end `completed`, or `errored` (failed, panicked, interrupted, cut short),
//! `cancelled` (stopped alone by a front end) or — when the agent was
//! closed meanwhile — `closed`, whatever the run said. The life records
//! every end exactly once (`record_submission_end`, unless a newer
//! submission replaced it), then emits `agent_ended` and wakes `wait`;
//! unless the parent closed the agent itself, a notification is left for
//! the parent's next model request.

use std::sync::Arc;

use alcove_protocol::RunStatus;

use super::life::{ChildEnd, ChildLife, Work};
use super::lifecycle::Remote;
use super::registry::{State, Submission};
use super::supervisor::Supervisor;

impl Supervisor {
    /// Closes every agent still running and waits (briefly) for their work
    /// to stop, so no task or process outlives the session. Returns the ids
    /// that were still running.
    pub async fn close_all(&self) -> Vec<String> {
        let mut closed = self.registry.close_running().await;
        closed.extend(self.close_batches().await);
        closed.extend(self.host_runs.close_all().await);
        closed
    }

    /// Waits until no spawned agent that is running now still runs (each
    /// stops within its own budgets), or until `cancel` fires. Returns what
    /// `wait` would say of them, or `None` when none was running.
    pub async fn wait_for_running(
        &self,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<serde_json::Value> {
        self.registry.wait_for_running(cancel).await
    }

    /// Starts a submission of `message` on agent `id` as `life` (which
    /// holds the lease): marks it running and launches the life.
    pub(crate) fn start_submission(
        self: &Arc<Self>,
        id: &str,
        message: String,
        life: ChildLife,
    ) -> Result<String, String> {
        let submission_id = uuid::Uuid::new_v4().to_string();
        let mut records = self.registry.lock()?;
        let record = records
            .get_mut(id)
            .ok_or_else(|| format!("agent not found: {id}"))?;
        let cancel = record.parent_cancel.child_token();
        record.status = State::Running;
        record.last_message = message.clone();
        record.last_submission_id = Some(submission_id.clone());
        record.touch();
        // Each submission's footer reports that submission's calls.
        life.child().evidence.reset();
        let history = std::mem::take(&mut record.history);
        let remote_session = record.remote_session.clone();
        let supervisor = self.clone();
        let life = life.spawned(id, &submission_id);
        let task_cancel = cancel.clone();
        let task = tokio::spawn(async move {
            let remote = supervisor.command.as_deref().map(|command| Remote {
                command,
                session: remote_session.as_deref(),
                stop: None,
            });
            let work = Work {
                history,
                message,
                cancel: task_cancel,
                remote,
            };
            life.live(&supervisor, work).await;
        });
        record.running = Some(Submission {
            id: submission_id.clone(),
            cancel,
            interrupted: false,
            cancelled: false,
            task: Some(task),
        });
        Ok(submission_id)
    }

    /// Records in the registry how a submission ended, unless a newer one
    /// replaced it (its life emits `agent_ended` either way). The
    /// conversation moves from `end` to the record, for the next submission.
    pub(crate) fn record_submission_end(&self, id: &str, submission_id: &str, end: &mut ChildEnd) {
        let Ok(mut records) = self.registry.records.lock() else {
            return;
        };
        let Some(record) = records.get_mut(id) else {
            return;
        };
        if record
            .running
            .as_ref()
            .is_none_or(|running| running.id != submission_id)
        {
            return;
        }
        let (interrupted, cancelled) = record.running.take().map_or((false, false), |running| {
            (running.interrupted, running.cancelled)
        });
        let ended = &mut end.ended;
        let outcome = &mut ended.outcome;
        record.history = std::mem::take(&mut outcome.messages);
        record.remote_session = ended
            .remote_session
            .clone()
            .or(record.remote_session.take());
        record.last_output = ended.output.clone();
        record.last_evidence = Some(end.footer.clone());
        record.touch();
        let (state, error) = if record.status == State::Closed {
            (State::Closed, Some("closed while running".to_owned()))
        } else if interrupted {
            (State::Errored, Some("interrupted".to_owned()))
        } else if cancelled {
            (State::Cancelled, Some("cancelled".to_owned()))
        } else {
            match outcome.status {
                RunStatus::Completed => (State::Completed, None),
                RunStatus::MaxTurns => (
                    State::Errored,
                    Some("incomplete: stopped by the turn cap".to_owned()),
                ),
                RunStatus::Budget => (
                    State::Errored,
                    Some(format!(
                        "incomplete: budget ({})",
                        ended.budget_note.as_deref().unwrap_or("exceeded")
                    )),
                ),
                RunStatus::Aborted => (State::Errored, Some("aborted".to_owned())),
                RunStatus::Failed | RunStatus::Halted => (
                    State::Errored,
                    outcome.error.clone().or(Some("failed".to_owned())),
                ),
            }
        };
        record.status = state;
        record.last_error = error;
        let first_line = record
            .last_output
            .as_deref()
            .or(record.last_error.as_deref())
            .and_then(|text| text.lines().next())
            .unwrap_or("")
            .chars()
            .take(200)
            .collect::<String>();
        let transcript = record.child.transcript.clone();
        // The notice is left while the final state is still locked: a
        // `wait` that sees the state (woken or not) finds the notice too.
        if state != State::Closed {
            let parent = &record.child.parent;
            parent.runtime.inbox.push(
                &parent.path,
                format!("agent {id} {}: {first_line}", state.as_str()),
            );
        }
        drop(records);
        // Between submissions the child's transcript needs no open file.
        if let Some(transcript) = transcript {
            transcript.release();
        }
    }
}
