//! One process-group killer for everything alcove starts: Bash commands,
//! hooks, the process runner and MCP servers.
//!
//! Each of them starts its command as the leader of a new process group
//! (`process_group(0)`). A [`ProcessGroup`] signals the whole group — what
//! the command started in the background included — and kills it when
//! dropped while armed, so a run abandoned mid-way (its future dropped on
//! cancel) leaves nothing behind.

use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::Child;

/// The process group a command leads; killed on drop unless disarmed.
#[derive(Debug)]
pub struct ProcessGroup(Option<Pid>);

impl ProcessGroup {
    /// The group `child` leads (it was spawned with `process_group(0)`).
    pub fn of(child: &Child) -> ProcessGroup {
        ProcessGroup(
            child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .map(Pid::from_raw),
        )
    }

    /// The group whose leader's pid is `leader`, for a command started by
    /// code that hands out only the pid (an MCP server's transport).
    pub fn led_by(leader: i32) -> ProcessGroup {
        ProcessGroup(Some(Pid::from_raw(leader)))
    }

    /// No group: nothing to signal.
    pub fn none() -> ProcessGroup {
        ProcessGroup(None)
    }

    /// SIGKILL to the whole group (a group already gone is the good case).
    pub fn kill(&self) {
        self.signal(Signal::SIGKILL);
    }

    /// SIGTERM to the group; SIGKILL when its leader has not exited after
    /// `grace`. Without a known group, the leader alone is killed.
    pub async fn terminate(&self, child: &mut Child, grace: Duration) {
        if self.0.is_none() {
            let _ = child.kill().await;
            return;
        }
        self.stop(child.wait(), grace).await;
    }

    /// SIGTERM to the group; SIGKILL when `exited` (the leader's end) has
    /// not come after `grace`.
    pub async fn stop<F: std::future::Future>(&self, exited: F, grace: Duration) {
        self.signal(Signal::SIGTERM);
        if tokio::time::timeout(grace, exited).await.is_err() {
            self.kill();
        }
    }

    /// Forgets the group: its leader was reaped (a later reuse of the id must
    /// never be signalled), or what it left running is its own.
    pub fn disarm(&mut self) {
        self.0 = None;
    }

    fn signal(&self, signal: Signal) {
        if let Some(group) = self.0 {
            let _ = killpg(group, signal);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
