//! Starting and running a child: the lease (a slot and a share of the tree
//! budget), building and announcing it, and running one submission under
//! its budgets on the in-process loop or the process runner. What owns a
//! child from its lease to its one end record is `life` ([`ChildLife`]):
//!
//! ```text
//!             Agent (await)          spawn_agent (register)     send_input (continue)
//!                   \                      |                          |
//!   start_child:  lease ─ slot, then tree budget (nothing held or announced on error)
//!                   │                      |                          |
//!                 build ─ gate narrowed, pool, model, transcript, lineage sinks
//!                   │                      |                          |
//!                 announce ─ agent_started + SubagentStart hook        |
//!                   │                      |                          |
//!   run_submission: run ─ turns, tokens (the lease's share), wall clock;
//!                   │     a panic becomes `failed`; in-process or the process runner
//!                   │     (a layer below: the shares travel with the command as
//!                   │     its charter and are enforced from outside too; its
//!                   │     `stop` — Slurm's `scancel` — runs here, slot still held)
//!                   │                      |                          |
//!   ChildLife::live: close descendants, worktree, settle (the tree charged,
//!                   │     the slot released), then the one end record
//! ```
//!
//! `Supervisor::start_child` and `ChildLife::live` are the API a batch
//! queue builds on: start many children (each takes its lease, so the
//! queue is bounded by the same slots and tree budget), then run each.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alcove_protocol::{EventKind, Message, RunStatus};
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::child::{Child, ChildRequest};
use super::definitions::AgentDefinition;
use super::leases::{Lease, Pool, SlotWait};
use super::life::{ChildLife, Face};
use super::scope::AgentScope;
use super::start_error::StartError;
use super::supervisor::Supervisor;
use crate::{AgentOutcome, HookScope, run_agent};

/// How one submission ended, whichever runner ran it.
pub(crate) struct Ended {
    pub(crate) outcome: AgentOutcome,
    /// The final text (the process runner's output for a command).
    pub(crate) output: Option<String>,
    /// Which budget cut the run short, when one did.
    pub(crate) budget_note: Option<String>,
    /// The alcove session a command ran, to continue next time.
    pub(crate) remote_session: Option<String>,
    pub(crate) elapsed: Duration,
    /// The turn cap the run had (its own, or less when the tree had less left).
    pub(crate) max_turns: u32,
    /// For a run by the process runner, the footer's line about it: the
    /// alcove session it ran, or, for a command that reported no usage,
    /// what bounded it.
    pub(crate) remote_note: Option<String>,
    /// How the process runner ran it, when it did.
    pub(crate) process: Option<alcove_protocol::ProcessRun>,
}

/// What the process runner runs, once its stop is set apart.
struct RemoteCall<'a> {
    command: &'a str,
    session: Option<&'a str>,
}

/// What the runner below the lifecycle returned.
struct Worked {
    outcome: AgentOutcome,
    output: Option<String>,
    remote_session: Option<String>,
    /// Whether the run's usage is known (always, in this process).
    metered: bool,
    /// Which share the process runner killed the command for.
    over_share: Option<String>,
}

/// What runs a submission besides the in-process loop.
pub(crate) struct Remote<'a> {
    pub(crate) command: &'a str,
    pub(crate) session: Option<&'a str>,
    /// What the runner does once the command ended and before the slot is
    /// released (a Slurm job step cancelled with `scancel`).
    pub(crate) stop: Option<BoxFuture<'a, ()>>,
}

impl Supervisor {
    /// A lease for a child whose turn cap is `turns`, within the session's
    /// per-child token limit (`send_input`'s next submission).
    pub(crate) async fn lease(
        &self,
        pool: Pool,
        turns: u32,
        wait: SlotWait,
        cancel: &CancellationToken,
    ) -> Result<Lease, StartError> {
        self.leases
            .lease(pool, self.limits.max_tokens, turns, wait, cancel)
            .await
    }

    /// Starts a child of the agent whose scope is `scope`: lease, build,
    /// announce. When it fails nothing was announced and nothing is held.
    pub(crate) async fn start_child(
        self: &Arc<Self>,
        scope: &AgentScope,
        call_id: &str,
        definition: &AgentDefinition,
        request: &ChildRequest,
        (pool, wait): (Pool, SlotWait),
        cancel: CancellationToken,
    ) -> Result<ChildLife, StartError> {
        if scope.depth() >= self.limits.max_depth {
            return Err(StartError::Depth {
                max: self.limits.max_depth,
            });
        }
        if let Some(halt) = self.provider_halt() {
            return Err(StartError::Halted(halt.explain()));
        }
        let own = definition.max_turns.unwrap_or(self.limits.max_turns);
        let turns = request.turns.map_or(own, |turns| turns.min(own));
        let tokens = match (request.tokens, self.limits.max_tokens) {
            (Some(asked), Some(own)) => Some(asked.min(own)),
            (asked, own) => asked.or(own),
        };
        let lease = self
            .leases
            .lease(pool, tokens, turns, wait, &scope.run.cancel)
            .await?;
        let name = self.next_child_name();
        let mut child = self
            .build_child(scope, &name, definition, request, cancel)
            .await
            .map_err(StartError::Build)?;
        child.call_id = call_id.to_owned();
        self.running
            .insert(child.path.clone(), child.run.cancel.clone());
        child.parent.emit(EventKind::AgentStarted {
            child: child.path.clone(),
            call_id: call_id.to_owned(),
            agent_type: child.agent_type.clone(),
            description: child.label.clone(),
            depth: child.run.depth,
            transcript: child
                .transcript_path()
                .map(|path| path.display().to_string()),
            run: request.run.clone(),
            phase: request.phase.clone(),
        });
        for message in &child.warnings {
            child.runtime.emit(
                &child.path,
                EventKind::Warning {
                    message: message.clone(),
                },
            );
        }
        child
            .runtime
            .hooks
            .subagent_start(HookScope {
                agent: &child.path,
                depth: child.run.depth,
                agent_type: Some(&child.agent_type),
            })
            .await;
        Ok(ChildLife::new(Arc::new(child), lease, Face::Once))
    }

    /// Runs one submission of `child` under its budgets (turns and tokens as
    /// `lease` allows, the wall clock), turning a panic into a failure. The
    /// lease is still held when it returns: the runner's `stop` has run,
    /// and [`ChildLife::live`] settles it.
    pub(crate) async fn run_submission(
        &self,
        child: &Child,
        lease: &Lease,
        history: Vec<Message>,
        message: String,
        cancel: &CancellationToken,
        remote: Option<Remote<'_>>,
    ) -> Ended {
        let started = Instant::now();
        let mut run = child.run.clone();
        run.cancel = cancel.clone();
        run.max_turns = lease.reservation.turns;
        run.token_budget = lease.reservation.tokens;
        // The stop apart: a future is not shared, the rest is borrowed
        // while the run runs.
        let (remote, stop) = match remote {
            Some(Remote {
                command,
                session,
                stop,
            }) => (Some(RemoteCall { command, session }), stop),
            None => (None, None),
        };
        let work = async {
            match &remote {
                Some(remote) => Some(self.run_remote(child, &run, remote, &message).await),
                None => {
                    // A task of its own, so siblings run on every worker
                    // thread, not all inside their parent's task.
                    let runtime = child.runtime.clone();
                    let run = run.clone();
                    let message = Message::user_text(message.clone());
                    let task = ChildTask(tokio::spawn(async move {
                        run_agent(&runtime, &run, history, message).await
                    }));
                    task.join().await.map(|outcome| Worked {
                        outcome,
                        output: None,
                        remote_session: None,
                        metered: true,
                        over_share: None,
                    })
                }
            }
        };
        let work = AssertUnwindSafe(work).catch_unwind();
        tokio::pin!(work);
        let mut budget_note = None;
        let finished = match child.timeout {
            Some(limit) => tokio::select! {
                finished = &mut work => finished,
                () = tokio::time::sleep(limit) => {
                    cancel.cancel();
                    budget_note = Some(format!("wall time over {}s", limit.as_secs_f64()));
                    work.await
                }
            },
            None => work.await,
        };
        // A remote runner's own stop (Slurm: `scancel`, then wait until
        // the job is gone) while the slot is held.
        if let Some(stop) = stop {
            stop.await;
        }
        // The commands it left running in the background end with it (its
        // descendants' end with each of them).
        child
            .runtime
            .background
            .kill_owned_by(&child.path, "its agent ended")
            .await;
        let Worked {
            mut outcome,
            output,
            remote_session,
            metered,
            over_share,
        } = match finished {
            Ok(Some(worked)) => worked,
            Ok(None) | Err(_) => Worked {
                outcome: panicked(),
                output: None,
                remote_session: None,
                metered: true,
                over_share: None,
            },
        };
        if budget_note.is_some() && outcome.error.is_none() {
            outcome.status = RunStatus::Budget;
        } else if outcome.status == RunStatus::Budget {
            budget_note = Some(format!(
                "tokens over {}",
                run.token_budget.unwrap_or_default()
            ));
        }
        if over_share.is_some() {
            budget_note = over_share;
        }
        let remote_note = remote.as_ref().map(|_| {
            let ran = match &remote_session {
                Some(session) => {
                    format!("[alcove evidence] ran by the process runner: session {session}")
                }
                None => "[alcove evidence] ran by the process runner".to_owned(),
            };
            match (metered, child.timeout) {
                (true, _) => ran,
                (false, Some(limit)) => format!(
                    "{ran} | usage: not reported (the command does not speak alcove's events), \
                     so no tokens were charged; it was bounded by its wall time of {}s",
                    limit.as_secs_f64()
                ),
                (false, None) => format!(
                    "{ran} | usage: not reported (the command does not speak alcove's events), \
                     so no tokens were charged; no wall time was set (agents.timeout_secs, a \
                     batch's task_secs), so only cancelling bounded it"
                ),
            }
        });
        let output = output.or_else(|| outcome.last_text());
        let process = remote.as_ref().map(|_| alcove_protocol::ProcessRun {
            session: remote_session.clone(),
            metered,
        });
        Ended {
            outcome,
            output,
            budget_note,
            remote_session,
            elapsed: started.elapsed(),
            max_turns: run.max_turns,
            remote_note,
            process,
        }
    }

    /// The process runner's submission under `run`'s shares, as an
    /// outcome: the charter travels with the command (rules, mode,
    /// sandbox, turns, tokens, wall time) and the runner enforces the
    /// shares from outside.
    async fn run_remote(
        &self,
        child: &Child,
        run: &crate::AgentRun,
        remote: &RemoteCall<'_>,
        message: &str,
    ) -> Worked {
        let charter = crate::Charter {
            max_turns: Some(run.max_turns),
            max_tokens: run.token_budget,
            wall_secs: child.timeout.map(|limit| limit.as_secs().max(1)),
        };
        let policy = crate::ParentPolicy::of(&child.run.gate)
            .with_sandbox(child.run.sandbox)
            .with_charter(charter);
        let ran = super::process_runner::run_process(
            super::process_runner::ProcessCall {
                command: remote.command,
                message,
                resume: remote.session,
                policy: &policy,
                workspace: child.runtime.workspace.root(),
                turns: run.max_turns,
                tokens: run.token_budget,
                env: self
                    .process_env
                    .as_ref()
                    .map(|env| env(&child.parent.path, &child.call_id, &child.path))
                    .unwrap_or_default(),
            },
            &run.cancel,
            &child.path,
            child.runtime.events.as_ref(),
        )
        .await;
        // The remote child's loop ran in its own process, at depth 0 there:
        // the parent's SubagentStop is fired here, by the life that owns
        // the child, as SubagentStart was. Its process has ended, so a
        // hook's block cannot send it back; it is told in the event stream.
        if !run.cancel.is_cancelled() {
            let last_text = ran.output.as_deref().unwrap_or_default();
            if let Some(reason) = child
                .runtime
                .hooks
                .stop(run.hook_scope(), last_text, false)
                .await
            {
                child.parent.emit(EventKind::Warning {
                    message: format!(
                        "a SubagentStop hook asked {} to go on, but it ran as a process that has ended: {reason}",
                        child.path
                    ),
                });
            }
        }
        let outcome = AgentOutcome {
            status: ran.status,
            // The command's last words, as the report reads a child's.
            messages: ran.output.iter().map(Message::assistant_text).collect(),
            turns: ran.turns,
            usage: ran.usage,
            error: ran.error,
        };
        Worked {
            outcome,
            output: ran.output,
            remote_session: ran.session,
            metered: ran.metered,
            over_share: ran.over_share,
        }
    }
}

/// A child's run on a task of its own, aborted if its caller stops
/// waiting (the caller's future dropped), as the run was when it ran
/// inside that future.
struct ChildTask(tokio::task::JoinHandle<AgentOutcome>);

impl ChildTask {
    /// The run's outcome; `None` when it panicked.
    async fn join(mut self) -> Option<AgentOutcome> {
        (&mut self.0).await.ok()
    }
}

impl Drop for ChildTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn panicked() -> AgentOutcome {
    AgentOutcome {
        status: RunStatus::Failed,
        messages: Vec::new(),
        turns: 0,
        usage: Default::default(),
        error: Some("the child agent panicked".to_owned()),
    }
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
