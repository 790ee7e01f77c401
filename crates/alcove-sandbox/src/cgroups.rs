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
//!
//! Joining a cgroup is the one step of a command's start that waits: the
//! kernel takes the cgroups' thread-group lock for writing, which waits for
//! an RCU grace period unless a move came just before: 6–8 ms of wall time
//! here for a command that comes 30 ms or more after the last (always, at
//! a model's pace), though next to no CPU (bench/notes.md, point 38). So
//! the holder makes that move while idle: it waits in the empty cgroup the
//! next command will use (whose `pids.max` counts it: one more than the
//! command's limit), and the child, forked there, starts in it and joins
//! nothing. When that command ends leaving nothing, the holder is already
//! where the next one starts. When it leaves processes behind, or another
//! command must start while it runs, the holder goes back to its own
//! cgroup (lowering the command's limit by its place first) and those
//! commands join cgroups of their own, as every command did before.

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
    /// Its `cgroup.procs`, which a process joins it by.
    fn procs(&self) -> &CStr {
        &self.procs
    }

    /// How many tasks are in it, if that can be read.
    fn count(&self) -> Option<u64> {
        let count = std::fs::read(self.dir.join("pids.current")).ok()?;
        std::str::from_utf8(count.trim_ascii()).ok()?.parse().ok()
    }

    /// Whether no process is in it.
    fn is_empty(&self) -> bool {
        self.count() == Some(0)
    }

    /// Sets `pids.max` to `max` unless it is already.
    fn limit(&mut self, max: u64) -> Result<(), String> {
        if self.max != max {
            std::fs::write(self.dir.join("pids.max"), max.to_string()).map_err(|err| {
                format!(
                    "limits.processes: cannot use the pids cgroup {}: {err}",
                    self.dir.display()
                )
            })?;
            self.max = max;
        }
        Ok(())
    }

    fn remove(self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// A cgroup taken for a command.
pub(crate) struct Taken {
    cgroup: Cgroup,
    /// Whether the holder is in it: the child then starts there and joins
    /// nothing.
    inherited: bool,
}

impl Taken {
    /// The `cgroup.procs` the command's child joins by, when it must.
    pub(crate) fn procs_to_join(&self) -> Option<&CStr> {
        (!self.inherited).then_some(self.cgroup.procs())
    }
}

/// Where the holder itself is.
enum Spot {
    /// In the pids cgroup it started in.
    Home,
    /// In one of its cgroups with no command in it: the next command's
    /// child starts there, joining nothing, and the cgroup allows one
    /// process more than a command's limit (the holder's).
    Resident(Cgroup),
    /// In the cgroup of the running command `Pid`, which started there.
    With(Pid),
    /// In a cgroup where what a command left runs on, having failed to
    /// leave it: no command starts there (they join cgroups of their own).
    Stuck(Cgroup),
}

/// The holder's cgroups: empty ones ready for a command, those of running
/// commands, those of ended commands with processes left, and the one the
/// holder sits in.
pub(crate) struct CgroupPool {
    /// `<PIDS_ROOT>/alcove-<holder pid>-`.
    prefix: String,
    made: u64,
    idle: Vec<Cgroup>,
    running: HashMap<Pid, Cgroup>,
    left_busy: Vec<Cgroup>,
    holder: Spot,
    /// What is written to a `cgroup.procs` to move the holder: `0`, the
    /// writing process itself (a test moves a stand-in).
    mover: String,
    /// The holder's own `cgroup.procs` when it started, found when it
    /// first moves.
    home: Option<PathBuf>,
    /// Set when a move failed: the holder then stays where it is and
    /// every command joins its cgroup, as it did before this mattered.
    stay: bool,
    /// The process limit of the last command taken for: the holder
    /// settles in a cgroup allowing as many.
    last_max: Option<u64>,
}

impl CgroupPool {
    pub(crate) fn new() -> CgroupPool {
        CgroupPool {
            prefix: format!("{PIDS_ROOT}/{CGROUP_PREFIX}{}-", std::process::id()),
            made: 0,
            idle: Vec::new(),
            running: HashMap::new(),
            left_busy: Vec::new(),
            holder: Spot::Home,
            mover: "0".to_owned(),
            home: None,
            stay: false,
            last_max: None,
        }
    }

    /// An empty cgroup allowing `max` processes to the command: the one
    /// the holder sits in, or one kept or made for the child to join; none
    /// when one cannot be made (the command is then left to RLIMIT_NPROC,
    /// as the launcher leaves it).
    pub(crate) fn take(&mut self, max: u64) -> Result<Option<Taken>, String> {
        self.last_max = Some(max);
        self.recheck_left_busy();
        match std::mem::replace(&mut self.holder, Spot::Home) {
            Spot::Resident(mut cgroup) => {
                return match cgroup.limit(max.saturating_add(1)) {
                    Ok(()) => Ok(Some(Taken {
                        cgroup,
                        inherited: true,
                    })),
                    Err(reason) => {
                        self.holder = Spot::Resident(cgroup);
                        Err(reason)
                    }
                };
            }
            // A child started where another command runs would count
            // against that command's limit until it joined its own.
            Spot::With(pid) => {
                self.holder = Spot::With(pid);
                self.go_home();
            }
            stuck @ Spot::Stuck(_) => self.holder = stuck,
            Spot::Home => {}
        }
        let mut cgroup = match self.idle.pop() {
            Some(cgroup) => cgroup,
            None => match self.make() {
                Some(cgroup) => cgroup,
                None => return Ok(None),
            },
        };
        if let Err(reason) = cgroup.limit(max) {
            self.idle.push(cgroup);
            return Err(reason);
        }
        Ok(Some(Taken {
            cgroup,
            inherited: false,
        }))
    }

    fn make(&mut self) -> Option<Cgroup> {
        self.made += 1;
        let dir = PathBuf::from(format!("{}{}", self.prefix, self.made));
        std::fs::create_dir(&dir).ok()?;
        let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()).ok()?;
        Some(Cgroup { dir, procs, max: 0 })
    }

    /// `taken` is the cgroup of the command started as `pid`.
    pub(crate) fn started(&mut self, pid: Pid, taken: Taken) {
        if taken.inherited {
            self.holder = Spot::With(pid);
        }
        self.running.insert(pid, taken.cgroup);
    }

    /// `taken` was taken for a command that did not start.
    pub(crate) fn unused(&mut self, taken: Taken) {
        if taken.inherited {
            self.holder = Spot::Resident(taken.cgroup);
        } else {
            self.give_back(taken.cgroup);
        }
    }

    /// The command started as `pid` has ended and been reaped.
    pub(crate) fn ended(&mut self, pid: Pid) {
        let Some(mut cgroup) = self.running.remove(&pid) else {
            return;
        };
        if !matches!(self.holder, Spot::With(with) if with == pid) {
            self.give_back(cgroup);
            return;
        }
        // Only the holder is left: ready for the next command as it is.
        if cgroup.count() == Some(1) {
            self.holder = Spot::Resident(cgroup);
            return;
        }
        // What the command left runs on: the holder leaves it to them.
        if self.leave(&mut cgroup) {
            self.holder = Spot::Home;
            self.give_back(cgroup);
        } else {
            self.stay = true;
            self.holder = Spot::Stuck(cgroup);
        }
    }

    /// With no command running, moves the holder into an empty cgroup
    /// allowing as many processes as the last command (and itself), where
    /// the next command's child then starts. A move into a cgroup waits for an RCU grace
    /// period when no move came just before (6–8 ms on this class of VM,
    /// bench/notes.md, point 38): made while idle, it is off the path of
    /// a command's start.
    pub(crate) fn settle(&mut self) {
        let Some(max) = self.last_max else {
            return;
        };
        if self.stay || !matches!(self.holder, Spot::Home) || !self.running.is_empty() {
            return;
        }
        self.recheck_left_busy();
        let Some(mut cgroup) = self.idle.pop().or_else(|| self.make()) else {
            return;
        };
        if cgroup.limit(max.saturating_add(1)).is_err() || self.move_to(cgroup.procs()).is_err() {
            self.stay = true;
            self.give_back(cgroup);
            return;
        }
        self.holder = Spot::Resident(cgroup);
    }

    /// Moves the holder back to where it started: a command with no limit
    /// must not start in one of its cgroups.
    pub(crate) fn go_home(&mut self) {
        match std::mem::replace(&mut self.holder, Spot::Home) {
            Spot::Home => {}
            Spot::Resident(cgroup) | Spot::Stuck(cgroup) => {
                if self.move_home().is_ok() {
                    self.give_back(cgroup);
                } else {
                    // Failing to leave, it is no command's to start in.
                    self.stay = true;
                    self.holder = Spot::Stuck(cgroup);
                }
            }
            Spot::With(pid) => {
                let left = match self.running.remove(&pid) {
                    Some(mut cgroup) => {
                        let left = self.leave(&mut cgroup);
                        self.running.insert(pid, cgroup);
                        left
                    }
                    None => self.move_home().is_ok(),
                };
                if !left {
                    self.stay = true;
                    self.holder = Spot::With(pid);
                }
            }
        }
    }

    /// Moves the holder out of `cgroup`, where a command's processes stay,
    /// taking its place in the limit with it (lowered first, so they never
    /// get it).
    fn leave(&mut self, cgroup: &mut Cgroup) -> bool {
        let with_holder = cgroup.max;
        if cgroup.limit(with_holder.saturating_sub(1).max(1)).is_err() {
            return false;
        }
        if self.move_home().is_err() {
            let _ = cgroup.limit(with_holder);
            return false;
        }
        true
    }

    fn move_home(&mut self) -> std::io::Result<()> {
        let home = match &self.home {
            Some(home) => home.clone(),
            None => self.home.insert(home_procs(&self.mover)?).clone(),
        };
        std::fs::write(home, &self.mover)
    }

    fn move_to(&mut self, procs: &CStr) -> std::io::Result<()> {
        if self.home.is_none() {
            self.home = Some(home_procs(&self.mover)?);
        }
        std::fs::write(std::ffi::OsStr::from_bytes(procs.to_bytes()), &self.mover)
    }

    /// Gives back, to be reused, the cgroups whose leftovers are gone.
    fn recheck_left_busy(&mut self) {
        for cgroup in std::mem::take(&mut self.left_busy) {
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

/// The `cgroup.procs` of the pids cgroup `mover` (`0`: this process) is in,
/// from `/proc/<pid>/cgroup`.
fn home_procs(mover: &str) -> std::io::Result<PathBuf> {
    let whose = if mover == "0" { "self" } else { mover };
    let listed = std::fs::read_to_string(format!("/proc/{whose}/cgroup"))?;
    let path = listed
        .lines()
        .find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let _hierarchy = fields.next()?;
            let controllers = fields.next()?;
            let path = fields.next()?;
            controllers
                .split(',')
                .any(|name| name == "pids")
                .then_some(path)
        })
        .ok_or_else(|| std::io::Error::other("not in a pids cgroup"))?;
    let procs = PathBuf::from(PIDS_ROOT)
        .join(path.trim_start_matches('/'))
        .join("cgroup.procs");
    // In a cgroup namespace the listed path is not the mount's: then the
    // holder does not move at all, lest it could not come back.
    if !procs.exists() {
        return Err(std::io::Error::other(
            "its pids cgroup is not under the mount",
        ));
    }
    Ok(procs)
}

impl Drop for CgroupPool {
    /// Takes the holder home, then removes every cgroup that is empty by
    /// now; the sweep of a later session removes the rest once their
    /// processes are gone.
    fn drop(&mut self) {
        match std::mem::replace(&mut self.holder, Spot::Home) {
            Spot::Home => {}
            Spot::Resident(cgroup) => {
                let _ = self.move_home();
                cgroup.remove();
            }
            Spot::With(_) => {
                let _ = self.move_home();
            }
            Spot::Stuck(cgroup) => {
                let _ = self.move_home();
                cgroup.remove();
            }
        }
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
        assert!(first.procs_to_join().is_some(), "the holder is not in it");
        let first_dir = first.cgroup.dir.clone();
        // A command that ended, leaving a process of its own behind.
        let mut left = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::fs::write(first.cgroup.dir.join("cgroup.procs"), left.id().to_string()).unwrap();
        let pid = Pid::from_raw(i32::try_from(left.id()).unwrap());
        pool.started(pid, first);
        pool.ended(pid);
        let second = pool.take(8).unwrap().unwrap();
        assert_ne!(second.cgroup.dir, first_dir);
        assert_eq!(pids_max(&second.cgroup), "8\n");
        let second_dir = second.cgroup.dir.clone();
        pool.unused(second);

        left.kill().unwrap();
        left.wait().unwrap();
        let a = pool.take(8).unwrap().unwrap();
        let b = pool.take(3).unwrap().unwrap();
        let mut dirs = [a.cgroup.dir.clone(), b.cgroup.dir.clone()];
        dirs.sort();
        let mut expected = [first_dir.clone(), second_dir.clone()];
        expected.sort();
        assert_eq!(dirs, expected);
        assert_eq!(pids_max(&b.cgroup), "3\n");
        pool.unused(a);
        pool.unused(b);
        drop(pool);
        assert!(!first_dir.exists() && !second_dir.exists());
    }

    /// The pids cgroup `pid` is in, as `/proc` lists it.
    fn pids_cgroup_of(pid: u32) -> String {
        let listed = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
        let line = listed.lines().find(|line| line.contains(":pids:")).unwrap();
        line.rsplit(':').next().unwrap().to_owned()
    }

    fn sleeper() -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap()
    }

    #[test]
    fn the_holder_waits_in_the_next_commands_cgroup_and_leaves_what_a_command_left() {
        if !(nix::unistd::geteuid().is_root() && crate::limits::pids_hierarchy_exists()) {
            eprintln!("skipped: needs root and a v1 pids hierarchy");
            return;
        }
        let mut holder = sleeper();
        let home = pids_cgroup_of(holder.id());
        let mut pool = CgroupPool::new();
        // Its own names: the other test's pool is in this process too.
        pool.prefix.push_str("h-");
        pool.mover = holder.id().to_string();
        let pid_of = |child: &std::process::Child| Pid::from_raw(child.id().cast_signed());

        // Idle, it settles in a cgroup with room for itself beside a command
        // (allowing what the last command was allowed, and itself).
        pool.last_max = Some(8);
        pool.settle();
        let taken = pool.take(8).unwrap().unwrap();
        let resident = taken.cgroup.dir.clone();
        assert!(
            taken.procs_to_join().is_none(),
            "the child starts where the holder is"
        );
        let name = resident.file_name().unwrap().to_str().unwrap().to_owned();
        assert_eq!(pids_cgroup_of(holder.id()), format!("/{name}"));
        assert_eq!(pids_max(&taken.cgroup), "9\n");

        // A command that ends leaving nothing: the holder stays, unmoved.
        let mut command = sleeper();
        std::fs::write(resident.join("cgroup.procs"), command.id().to_string()).unwrap();
        pool.started(pid_of(&command), taken);
        command.kill().unwrap();
        command.wait().unwrap();
        pool.ended(pid_of(&command));
        let taken = pool.take(8).unwrap().unwrap();
        assert_eq!(taken.cgroup.dir, resident);
        assert!(taken.procs_to_join().is_none());

        // A command that leaves a process behind: the holder goes home and
        // gives the leftover the command's limit, not its own place too.
        let mut command = sleeper();
        let mut left = sleeper();
        for pid in [command.id(), left.id()] {
            std::fs::write(resident.join("cgroup.procs"), pid.to_string()).unwrap();
        }
        pool.started(pid_of(&command), taken);
        command.kill().unwrap();
        command.wait().unwrap();
        pool.ended(pid_of(&command));
        assert_eq!(pids_cgroup_of(holder.id()), home);
        assert_eq!(
            std::fs::read_to_string(resident.join("pids.max")).unwrap(),
            "8\n"
        );
        // The next command joins a cgroup of its own; once idle again, the
        // holder settles in another one.
        let joined = pool.take(8).unwrap().unwrap();
        assert!(joined.procs_to_join().is_some());
        assert_ne!(joined.cgroup.dir, resident);
        pool.unused(joined);
        pool.settle();
        assert_ne!(pids_cgroup_of(holder.id()), home);
        assert_ne!(pids_cgroup_of(holder.id()), format!("/{name}"));

        left.kill().unwrap();
        left.wait().unwrap();
        drop(pool);
        assert_eq!(pids_cgroup_of(holder.id()), home, "dropped, it goes home");
        assert!(!resident.exists());
        holder.kill().unwrap();
        holder.wait().unwrap();
    }
}
