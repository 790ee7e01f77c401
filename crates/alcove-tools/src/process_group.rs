//! One process-group killer for everything alcove starts: Bash commands,
//! hooks, the process runner and MCP servers.
//!
//! Each of them starts its command as the leader of a new process group
//! (`process_group(0)`). A [`ProcessGroup`] signals the whole group — what
//! the command started in the background included — and kills it when
//! dropped while armed, so a run abandoned mid-way (its future dropped on
//! cancel) leaves nothing behind.
//!
//! A process that leaves its group (`setsid`, a double fork under `set
//! -m`) escapes that. So alcove makes itself its descendants' subreaper
//! ([`adopt_orphans`]): such a process, once its parent ends, becomes
//! alcove's child instead of init's, and [`end_children`], as alcove exits,
//! kills every child it still has, and so everything a command left
//! running, in every sandbox mode.

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

/// Makes alcove the subreaper of everything it starts: a process orphaned
/// below it (a command's `setsid` or double-forked child) becomes alcove's
/// child, so [`end_children`] finds it. Not inherited by children.
pub fn adopt_orphans() {
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

/// How long [`end_children`] waits for killed children to be reaped.
const END_WAIT: Duration = Duration::from_secs(2);

/// Kills every child alcove still has (and its process group), and the
/// orphans that their ends hand to alcove in turn, reaping them; for the
/// moment alcove exits, after its own shutdown. Returns how many it
/// killed.
pub fn end_children() -> usize {
    let me = std::process::id();
    let deadline = std::time::Instant::now() + END_WAIT;
    let mut killed = 0;
    loop {
        let children = children_of(me);
        if children.is_empty() || std::time::Instant::now() > deadline {
            return killed;
        }
        for child in &children {
            let pid = Pid::from_raw(*child);
            let _ = killpg(pid, Signal::SIGKILL);
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        }
        for child in &children {
            let pid = Pid::from_raw(*child);
            while std::time::Instant::now() < deadline {
                match nix::sys::wait::waitpid(pid, Some(nix::sys::wait::WaitPidFlag::WNOHANG)) {
                    Ok(nix::sys::wait::WaitStatus::StillAlive) => {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    _ => break,
                }
            }
            killed += 1;
        }
    }
}

/// The children of process `pid`, from each of its threads' `children`.
fn children_of(pid: u32) -> Vec<i32> {
    let mut children: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect();
    children.sort_unstable();
    children.dedup();
    children
}
