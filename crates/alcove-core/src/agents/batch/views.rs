//! What a batch looks like from outside: counts by state, the ETA, and the
//! bounded table `wait` and `alcove batch` show.

use std::time::Duration;

use super::engine::Batch;
use super::task::TaskState;

/// Table lines keep this many chars of a task's first line.
const LINE_CHARS: usize = 100;

/// Counts by state, for progress lines and `wait`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Counts {
    /// All tasks.
    pub total: usize,
    /// Waiting for a slot.
    pub queued: usize,
    /// Working.
    pub running: usize,
    /// Completed (this run or an earlier one).
    pub completed: usize,
    /// Of `completed`, those an earlier run finished.
    pub skipped: usize,
    /// Failed.
    pub failed: usize,
    /// Stopped by a cap or budget.
    pub cut_short: usize,
    /// Refused for the batch's budget.
    pub refused: usize,
    /// Cancelled.
    pub cancelled: usize,
    /// Stopped because the provider refused the session.
    pub halted: usize,
    /// Never started because the provider had refused the session.
    pub not_run: usize,
    /// Tokens used by tasks that ended.
    pub tokens: u64,
}

impl Counts {
    /// Tasks over (any final state).
    pub fn done(&self) -> usize {
        self.total - self.queued - self.running
    }

    /// Whether every task completed.
    pub fn all_completed(&self) -> bool {
        self.completed == self.total
    }
}

impl Batch {
    /// Counts by state.
    pub fn counts(&self) -> Counts {
        let inner = self.lock();
        let mut counts = Counts {
            total: inner.tasks.len(),
            skipped: inner.skipped,
            ..Counts::default()
        };
        for entry in &inner.tasks {
            counts.tokens += entry.tokens;
            match entry.state {
                TaskState::Queued => counts.queued += 1,
                TaskState::Running => counts.running += 1,
                TaskState::Completed => counts.completed += 1,
                TaskState::Failed => counts.failed += 1,
                TaskState::CutShort => counts.cut_short += 1,
                TaskState::Refused => counts.refused += 1,
                TaskState::Cancelled => counts.cancelled += 1,
                TaskState::Halted => counts.halted += 1,
                TaskState::NotRun => counts.not_run += 1,
            }
        }
        counts
    }

    /// How long until the queue drains at the pace of this run so far.
    pub fn eta(&self) -> Option<Duration> {
        let inner = self.lock();
        if inner.ended_this_run == 0 || !inner.running {
            return None;
        }
        let left = inner
            .tasks
            .iter()
            .filter(|entry| !entry.state.is_final())
            .count();
        let per_task = inner.run_started.elapsed() / u32::try_from(inner.ended_this_run).ok()?;
        Some(per_task * u32::try_from(left).ok()?)
    }

    /// One line per task (`id  state  first line`), tasks that did not
    /// complete first, at most `max_lines`; and how many were left out.
    pub fn table(&self, max_lines: usize) -> (String, usize) {
        let inner = self.lock();
        let mut order: Vec<usize> = (0..inner.tasks.len()).collect();
        order.sort_by_key(|&index| inner.tasks[index].state == TaskState::Completed);
        let width = self
            .plan
            .tasks
            .iter()
            .map(|task| task.id.len())
            .max()
            .unwrap_or(0);
        let lines: Vec<String> = order
            .iter()
            .take(max_lines)
            .map(|&index| {
                let entry = &inner.tasks[index];
                let line: String = entry.first_line.chars().take(LINE_CHARS).collect();
                format!(
                    "{:width$}  {:14}  {line}",
                    self.plan.tasks[index].id,
                    entry.state.as_str()
                )
                .trim_end()
                .to_owned()
            })
            .collect();
        (lines.join("\n"), order.len().saturating_sub(max_lines))
    }
}
