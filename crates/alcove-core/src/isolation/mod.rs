//! Workspace isolation for children: a git worktree of their own.
//!
//! Messages, permissions and processes are isolated elsewhere (fresh
//! conversations, narrowed gates, the command sandbox); this is the fourth
//! of seed 004's dimensions, the files. See [`worktree`].

mod git_command;
pub mod worktree;
