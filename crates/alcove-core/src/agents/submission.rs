//! Submissions of spawned agents: starting one on a slot, running it with
//! the in-process or the process runner, and recording how it ended.
//!
//! The state machine's transitions live here: `running` on start; on the
//! end `completed`, or `errored` (failed, interrupted, cut short), or — when
//! the agent was closed meanwhile — `closed`, whatever the run said. Every
//! end wakes `wait` and, unless the parent closed the agent itself, leaves a
//! notification for the parent's next model request.

use std::sync::Arc;
use std::time::Duration;

use alcove_protocol::{EventKind, Message, RunStatus};

use super::registry::{Record, State, Submission};
use super::supervisor::Supervisor;

impl Supervisor {
    /// Closes every agent still running and waits (briefly) for their work
    /// to stop, so no task or process outlives the session. Returns the ids
    /// that were still running.
    pub async fn close_all(&self) -> Vec<String> {
        let mut tasks = Vec::new();
        let mut closed = Vec::new();
        if let Ok(mut records) = self.registry.records.lock() {
            for record in records.values_mut() {
                if let Some(submission) = &mut record.running {
                    submission.cancel.cancel();
                    tasks.extend(submission.task.take());
                    record.status_before_close = State::Errored;
                    record.status = State::Closed;
                    record.touch();
                    closed.push(record.id.clone());
                }
            }
        }
        let _ =
            tokio::time::timeout(Duration::from_secs(5), futures::future::join_all(tasks)).await;
        closed
    }

    pub(crate) fn lock_records(
        &self,
    ) -> Result<std::sync::MutexGuard<'_, std::collections::BTreeMap<String, Record>>, String> {
        self.registry
            .records
            .lock()
            .map_err(|_| "the agent registry is unavailable".to_owned())
    }

    /// Starts a submission of `message` on agent `id`: takes a slot, marks it
    /// running and launches the runner.
    pub(crate) fn start_submission(
        self: &Arc<Self>,
        id: &str,
        message: String,
    ) -> Result<String, String> {
        let permit = self.slots.clone().try_acquire_owned().map_err(|_| {
            format!(
                "subagent concurrency limit reached ({})",
                self.limits.max_concurrent
            )
        })?;
        let submission_id = uuid::Uuid::new_v4().to_string();
        let mut records = self.lock_records()?;
        let record = records
            .get_mut(id)
            .ok_or_else(|| format!("agent not found: {id}"))?;
        let cancel = record.parent_cancel.child_token();
        record.status = State::Running;
        record.last_message = message.clone();
        record.last_submission_id = Some(submission_id.clone());
        record.touch();
        let child = record.child.clone();
        let history = std::mem::take(&mut record.history);
        let remote_session = record.remote_session.clone();
        let supervisor = self.clone();
        let (agent_id, sub_id, task_cancel) =
            (id.to_owned(), submission_id.clone(), cancel.clone());
        let task = tokio::spawn(async move {
            let _permit = permit;
            let ended = supervisor
                .run_submission(
                    &child,
                    history,
                    message,
                    remote_session.as_deref(),
                    &task_cancel,
                )
                .await;
            supervisor.finish_submission(&agent_id, &sub_id, ended);
        });
        record.running = Some(Submission {
            id: submission_id.clone(),
            cancel,
            interrupted: false,
            task: Some(task),
        });
        Ok(submission_id)
    }

    async fn run_submission(
        &self,
        child: &super::child::Child,
        history: Vec<Message>,
        message: String,
        remote_session: Option<&str>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Ended {
        if let Some(command) = &self.command {
            let outcome = super::runner::run_process(
                command,
                &message,
                remote_session,
                child.runtime.workspace.root(),
                cancel,
                &child.path,
                child.runtime.events.as_ref(),
            )
            .await;
            return Ended {
                status: outcome.status,
                output: outcome.output,
                error: outcome.error,
                history: Vec::new(),
                remote_session: outcome.session,
                turns: outcome.turns,
                usage: outcome.usage,
            };
        }
        let mut run = child.run.clone();
        run.cancel = cancel.clone();
        let outcome =
            crate::run_agent(&child.runtime, &run, history, Message::user_text(message)).await;
        Ended {
            status: outcome.status,
            output: outcome.last_text(),
            error: outcome.error.clone(),
            turns: outcome.turns,
            usage: outcome.usage,
            history: outcome.messages,
            remote_session: None,
        }
    }

    /// Records how a submission ended, unless a newer one replaced it.
    fn finish_submission(&self, id: &str, submission_id: &str, ended: Ended) {
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
        let interrupted = record
            .running
            .take()
            .is_some_and(|running| running.interrupted);
        record.history = ended.history;
        record.remote_session = ended.remote_session.or(record.remote_session.take());
        record.last_output = ended.output;
        record.touch();
        let (state, error) = if record.status == State::Closed {
            (State::Closed, Some("closed while running".to_owned()))
        } else if interrupted {
            (State::Errored, Some("interrupted".to_owned()))
        } else {
            match ended.status {
                RunStatus::Completed => (State::Completed, None),
                RunStatus::MaxTurns => (
                    State::Errored,
                    Some("incomplete: stopped by the turn cap".to_owned()),
                ),
                RunStatus::Budget => (
                    State::Errored,
                    Some("incomplete: a budget ran out".to_owned()),
                ),
                RunStatus::Aborted => (State::Errored, Some("aborted".to_owned())),
                RunStatus::Failed => (State::Errored, ended.error.or(Some("failed".to_owned()))),
            }
        };
        record.status = state;
        record.last_error = error;
        let parent = record.parent.clone();
        let path = record.child.path.clone();
        let description = record.child.run.description.clone().unwrap_or_default();
        let first_line = record
            .last_output
            .as_deref()
            .or(record.last_error.as_deref())
            .and_then(|text| text.lines().next())
            .unwrap_or("")
            .chars()
            .take(200)
            .collect::<String>();
        let notify = state != State::Closed;
        let transcript = record.child.transcript.clone();
        drop(records);
        // Between submissions the child's transcript needs no open file.
        if let Some(transcript) = transcript {
            transcript.release();
        }
        self.runtime.emit(
            &parent,
            EventKind::AgentEnded {
                child: path,
                description,
                status: ended.status,
                ok: state == State::Completed,
                turns: ended.turns,
                usage: ended.usage,
            },
        );
        if notify {
            self.runtime.inbox.push(
                &parent,
                format!("agent {id} {}: {first_line}", state.as_str()),
            );
        }
        self.registry.changed.notify_waiters();
    }
}

/// How one submission ended, whichever runner ran it.
struct Ended {
    status: RunStatus,
    output: Option<String>,
    error: Option<String>,
    history: Vec<Message>,
    remote_session: Option<String>,
    turns: u32,
    usage: alcove_protocol::Usage,
}
