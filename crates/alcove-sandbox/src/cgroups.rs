//! The holder's pids cgroups (root only, [`crate::limits`]), kept and
//! reused: each command joins an empty cgroup of the holder's instead of
//! one made for it and removed after it.
//!
//! Making a cgroup, moving the first process into it and removing it once
//! that process has ended cost ~0.3 ms of CPU a command on this class of
//! VM, where moving a process into a kept one costs next to nothing
//! (bench/notes.md, point 36). A cgroup is reused only when it holds no
//! process (`pids.current` is 0): what a command left running keeps its
//! cgroup to itself, and that cgroup is looked at again with the next
//! command. The holder's cgroups are named `alcove-<holder pid>-<n>`, so
//! [`crate::limits::sweep_cgroups`] leaves them while the holder lives and
//! removes them once it is gone; the holder removes them itself on its way
//! out.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use nix::unistd::Pid;

use crate::limits::{CGROUP_PREFIX, PIDS_ROOT};

/// How many empty cgroups the holder keeps at most (more commands at once
/// make more; the extra ones are removed as they empty).
const IDLE_AT_MOST: usize = 8;

/// One of the holder's cgroups.
pub(crate) struct Cgroup {
    dir: PathBuf,
    /// `cgroup.procs` inside it, which the child writes its pid to.
    procs: CString,
    /// The `pids.max` last written.
    max: u64,
}

impl Cgroup {
    /// The file the command's child joins the cgroup by.
    pub(crate) fn procs(&self) -> &CStr {
        &self.procs
    }

    /// Whether no process is in it.
    fn is_empty(&self) -> bool {
        std::fs::read(self.dir.join("pids.current")).is_ok_and(|count| count.trim_ascii() == b"0")
    }

    fn remove(self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The holder's cgroups: empty ones ready for a command, those of running
/// commands, and those of ended commands with processes left.
pub(crate) struct CgroupPool {
    /// `<PIDS_ROOT>/alcove-<holder pid>-`.
    prefix: String,
    made: u64,
    idle: Vec<Cgroup>,
    running: HashMap<Pid, Cgroup>,
    left_busy: Vec<Cgroup>,
}

impl CgroupPool {
    pub(crate) fn new() -> CgroupPool {
        CgroupPool {
            prefix: format!("{PIDS_ROOT}/{CGROUP_PREFIX}{}-", std::process::id()),
            made: 0,
            idle: Vec::new(),
            running: HashMap::new(),
            left_busy: Vec::new(),
        }
    }

    /// An empty cgroup allowing `max` processes, kept or made; none when
    /// one cannot be made (the command is then left to RLIMIT_NPROC, as
    /// the launcher leaves it).
    pub(crate) fn take(&mut self, max: u64) -> Result<Option<Cgroup>, String> {
        for cgroup in std::mem::take(&mut self.left_busy) {
            self.give_back(cgroup);
        }
        let cgroup = match self.idle.pop() {
            Some(cgroup) => cgroup,
            None => match self.make() {
                Some(cgroup) => cgroup,
                None => return Ok(None),
            },
        };
        self.limit(cgroup, max).map(Some)
    }

    fn make(&mut self) -> Option<Cgroup> {
        self.made += 1;
        let dir = PathBuf::from(format!("{}{}", self.prefix, self.made));
        std::fs::create_dir(&dir).ok()?;
        let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()).ok()?;
        Some(Cgroup { dir, procs, max: 0 })
    }

    /// Sets `pids.max` to `max` unless it is already.
    fn limit(&mut self, mut cgroup: Cgroup, max: u64) -> Result<Cgroup, String> {
        if cgroup.max != max {
            if let Err(err) = std::fs::write(cgroup.dir.join("pids.max"), max.to_string()) {
                let reason = format!(
                    "limits.processes: cannot use the pids cgroup {}: {err}",
                    cgroup.dir.display()
                );
                self.idle.push(cgroup);
                return Err(reason);
            }
            cgroup.max = max;
        }
        Ok(cgroup)
    }

    /// `cgroup` is the cgroup of the command started as `pid`.
    pub(crate) fn started(&mut self, pid: Pid, cgroup: Cgroup) {
        self.running.insert(pid, cgroup);
    }

    /// `cgroup` was taken for a command that did not start.
    pub(crate) fn unused(&mut self, cgroup: Cgroup) {
        self.give_back(cgroup);
    }

    /// The command started as `pid` has ended and been reaped.
    pub(crate) fn ended(&mut self, pid: Pid) {
        if let Some(cgroup) = self.running.remove(&pid) {
            self.give_back(cgroup);
        }
    }

    fn give_back(&mut self, cgroup: Cgroup) {
        if !cgroup.is_empty() {
            self.left_busy.push(cgroup);
        } else if self.idle.len() < IDLE_AT_MOST {
            self.idle.push(cgroup);
        } else {
            cgroup.remove();
        }
    }
}

impl Drop for CgroupPool {
    /// Removes every cgroup that is empty by now; the sweep of a later
    /// session removes the rest once their processes are gone.
    fn drop(&mut self) {
        let running = self.running.drain().map(|(_, cgroup)| cgroup);
        for cgroup in self
            .idle
            .drain(..)
            .chain(self.left_busy.drain(..))
            .chain(running)
        {
            cgroup.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pids_max(cgroup: &Cgroup) -> String {
        std::fs::read_to_string(cgroup.dir.join("pids.max")).unwrap()
    }

    #[test]
    fn a_cgroup_is_reused_only_once_its_processes_are_gone() {
        if !(nix::unistd::geteuid().is_root() && crate::limits::pids_hierarchy_exists()) {
            eprintln!("skipped: needs root and a v1 pids hierarchy");
            return;
        }
        let mut pool = CgroupPool::new();
        let first = pool.take(8).unwrap().unwrap();
        let first_dir = first.dir.clone();
        // A command that ended, leaving a process of its own behind.
        let mut left = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::fs::write(first.dir.join("cgroup.procs"), left.id().to_string()).unwrap();
        let pid = Pid::from_raw(i32::try_from(left.id()).unwrap());
        pool.started(pid, first);
        pool.ended(pid);
        let second = pool.take(8).unwrap().unwrap();
        assert_ne!(second.dir, first_dir);
        assert_eq!(pids_max(&second), "8\n");
        let second_dir = second.dir.clone();
        pool.unused(second);

        left.kill().unwrap();
        left.wait().unwrap();
        let a = pool.take(8).unwrap().unwrap();
        let b = pool.take(3).unwrap().unwrap();
        let mut dirs = [a.dir.clone(), b.dir.clone()];
        dirs.sort();
        let mut expected = [first_dir.clone(), second_dir.clone()];
        expected.sort();
        assert_eq!(dirs, expected);
        assert_eq!(pids_max(&b), "3\n");
        pool.unused(a);
        pool.unused(b);
        drop(pool);
        assert!(!first_dir.exists() && !second_dir.exists());
    }
}
