//! A child's life: one object that owns a child from its lease to its one
//! end record, for every face (`Agent`, a spawned agent's submission, a
//! batch task, a front end's delegation) and every runner (in-process, the
//! process runner, a Slurm step).
//!
//! [`ChildLife::live`] is the only way a child's run ends: run the
//! submission (`lifecycle::run_submission`: budgets, panic capture, the
//! runner's own stop while the slot is held), close the agents it spawned,
//! finish or checkpoint its worktree, settle the lease (the tree charged,
//! the slot released), render the footer, record the end in the registry
//! (a spawned agent), and emit `agent_ended` — built here and nowhere else
//! in the core — exactly once.
//!
//! One meaning of success for every face: a child is `ok` when its status
//! is `completed`. A child cut off by its turn cap, a budget, a cancel or
//! an error is not, even when its words reached the parent (the report
//! says it is incomplete, and `wait` says `errored`).

use std::sync::Arc;

use alcove_protocol::{ChildEvidence, EventKind, Message, RunStatus};
use alcove_tools::ToolOutput;
use tokio_util::sync::CancellationToken;

use super::child::Child;
use super::leases::Lease;
use super::lifecycle::{Ended, Remote};
use super::report::{ReportInput, footer, report};
use super::supervisor::Supervisor;

/// Which face a life serves: what happens to its worktree and where its
/// end is recorded besides `agent_ended`.
pub(crate) enum Face {
    /// Run once and awaited (an `Agent` call, a front end's delegation, a
    /// batch task): its worktree is finished (committed, then removed).
    Once,
    /// One submission of the spawned agent `id`: its end is recorded in
    /// the registry (unless a newer submission replaced it) and its
    /// worktree is committed and kept for the next.
    Spawned { id: String, submission: String },
}

/// A child that holds its lease and was announced, with what it will run.
pub(crate) struct ChildLife {
    child: Arc<Child>,
    lease: Lease,
    face: Face,
}

/// What one life runs: the conversation so far, the next message, the
/// token that stops it, and the runner when not in this process.
pub(crate) struct Work<'a> {
    pub(crate) history: Vec<Message>,
    pub(crate) message: String,
    pub(crate) cancel: CancellationToken,
    pub(crate) remote: Option<Remote<'a>>,
}

/// How a life ended: the record and what the faces render from it.
pub(crate) struct ChildEnd {
    /// What an `Agent` call returns: the child's words, then the footer.
    pub(crate) report: ToolOutput,
    /// The harness's lines (warnings, evidence, the process runner's line,
    /// the worktree's): `wait`'s `evidence`.
    pub(crate) footer: String,
    pub(crate) ended: Ended,
    pub(crate) child: Arc<Child>,
}

impl ChildLife {
    pub(crate) fn new(child: Arc<Child>, lease: Lease, face: Face) -> ChildLife {
        ChildLife { child, lease, face }
    }

    /// The child this life runs.
    pub(crate) fn child(&self) -> &Arc<Child> {
        &self.child
    }

    /// The same life, serving spawned agent `id`'s `submission`.
    pub(crate) fn spawned(self, id: &str, submission: &str) -> ChildLife {
        ChildLife {
            face: Face::Spawned {
                id: id.to_owned(),
                submission: submission.to_owned(),
            },
            ..self
        }
    }

    /// The `Agent` face: runs the prompt to the end and returns the report
    /// the parent reads.
    pub(crate) async fn run_to_end(self, supervisor: &Supervisor, prompt: String) -> ToolOutput {
        self.finish(supervisor, prompt, None).await.report
    }

    /// Runs `prompt` in a fresh conversation on the child's own token, by
    /// `remote` (the process runner) when given.
    pub(crate) async fn finish(
        self,
        supervisor: &Supervisor,
        prompt: String,
        remote: Option<Remote<'_>>,
    ) -> ChildEnd {
        let cancel = self.child.run.cancel.clone();
        let work = Work {
            history: Vec::new(),
            message: prompt,
            cancel,
            remote,
        };
        self.live(supervisor, work).await
    }

    /// The whole rest of the life: run, close descendants, worktree,
    /// settle, record, and the one `agent_ended`.
    pub(crate) async fn live(self, supervisor: &Supervisor, work: Work<'_>) -> ChildEnd {
        let ChildLife { child, lease, face } = self;
        let ended = supervisor
            .run_submission(
                &child,
                &lease,
                work.history,
                work.message,
                &work.cancel,
                work.remote,
            )
            .await;
        if !child.leave_spawned {
            supervisor.registry.close_below(&child.path).await;
        }
        let worktree = match (&child.worktree, &face) {
            (Some(worktree), Face::Once) => {
                Some(super::worktree_child::finish(worktree, &child.label).await)
            }
            (Some(worktree), Face::Spawned { .. }) => {
                Some(super::worktree_child::checkpoint(worktree, &child.label).await)
            }
            (None, _) => None,
        };
        lease.settle(ended.outcome.usage.budget_tokens(), ended.outcome.turns);
        let input = report_input(supervisor, &child, &ended);
        let mut lines = footer(&input, &child.evidence);
        for line in ended.remote_note.iter().chain(&worktree) {
            lines.push('\n');
            lines.push_str(line);
        }
        let parent_report = report(&input, &lines);
        let mut evidence = ChildEvidence {
            duration_ms: u64::try_from(ended.elapsed.as_millis()).unwrap_or(u64::MAX),
            budget: ended.budget_note.clone(),
            process: ended.process.clone(),
            worktree,
            warnings: child.warnings.clone(),
            transcript: child
                .transcript_path()
                .map(|path| path.display().to_string()),
            footer: lines.clone(),
            ..ChildEvidence::default()
        };
        child.evidence.fill(&mut evidence);
        let mut end = ChildEnd {
            report: parent_report,
            footer: lines,
            ended,
            child,
        };
        let spawned = matches!(face, Face::Spawned { .. });
        if let Face::Spawned { id, submission } = &face {
            supervisor.record_submission_end(id, submission, &mut end);
        }
        supervisor.running.remove(&end.child.path);
        end.child.parent.emit(end_record(&end, evidence));
        if spawned {
            supervisor.registry.changed.notify_waiters();
        }
        end
    }
}

/// The one `agent_ended` of a life (the only constructor in the core).
fn end_record(end: &ChildEnd, evidence: ChildEvidence) -> EventKind {
    let outcome = &end.ended.outcome;
    EventKind::AgentEnded {
        child: end.child.path.clone(),
        description: end.child.label.clone(),
        status: outcome.status,
        ok: outcome.status == RunStatus::Completed,
        turns: outcome.turns,
        usage: outcome.usage,
        error: outcome.error.clone(),
        evidence: Some(Box::new(evidence)),
    }
}

/// What the report of a run's end is built from, the same for every face
/// (`Agent`'s result, `wait`'s `evidence`, a batch's results).
fn report_input<'a>(
    supervisor: &Supervisor,
    child: &'a Child,
    ended: &'a Ended,
) -> ReportInput<'a> {
    ReportInput {
        description: &child.label,
        outcome: &ended.outcome,
        max_turns: ended.max_turns,
        budget_note: ended.budget_note.clone(),
        elapsed: ended.elapsed,
        ignored_tools: &child.ignored_tools,
        warnings: &child.warnings,
        transcript: child.transcript_path(),
        tree: supervisor
            .leases
            .tree
            .is_bounded()
            .then(|| supervisor.leases.tree.describe()),
    }
}
