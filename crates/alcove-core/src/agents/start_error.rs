//! Why a child could not start, as a type: the caller of
//! `Supervisor::start_child` decides what to tell the model (and a queue
//! what to record) by the kind, never by reading the text. When a child
//! fails to start nothing was announced and nothing is held.

/// Why a child was not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StartError {
    /// The caller is at `agents.max_depth` already.
    #[error("Agent nesting depth exceeded (max {max})")]
    Depth {
        /// `agents.max_depth`.
        max: u32,
    },
    /// Every slot of the pool is taken and the caller may not wait (a
    /// child never waits for a slot while holding one).
    #[error("subagent concurrency limit reached ({limit})")]
    Slots {
        /// The pool's size.
        limit: usize,
    },
    /// The tree's token or turn budget is used up; the text names it.
    #[error("{0}")]
    Budget(String),
    /// The caller was cancelled while it waited for a slot.
    #[error("aborted while waiting for a slot")]
    Cancelled,
    /// The model provider refused the session for good (a bad key, no
    /// quota, an unknown model): the tree starts nothing new.
    #[error("not started: {0}")]
    Halted(String),
    /// The child could not be built (its transcript, worktree, …).
    #[error("{0}")]
    Build(String),
}
