//! Resource limits of one command: rlimits the launcher sets on itself
//! before it runs the command, so the command and everything it starts
//! inherit them.
//!
//! CPU time and file size are enforced by signals (SIGXCPU, SIGXFSZ), which
//! [`explain_signal`] names; the process, address-space and open-file limits
//! make the failing call return an error, which [`explain_output`] names when
//! the output shows it. Each limit is per process except the process count,
//! which the kernel counts per user (in the command's own user namespace when
//! the network is off — the launcher sets it after entering that namespace —
//! so it is effectively per command). The kernel does not
//! apply the process count to root, so for root the launcher also puts the
//! command in a pids cgroup of its own (cgroup v1's `pids` hierarchy, where
//! one is mounted writable), removed by [`remove_cgroup`] after the command;
//! the holder's commands join empty cgroups it keeps ([`crate::cgroups`]).

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use serde::{Deserialize, Serialize};

/// Limits of each command; `None` leaves the inherited limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResourceLimits {
    /// CPU seconds each process may use (default 600, the longest Bash timeout).
    pub cpu_secs: Option<u64>,
    /// Address space of each process, in MiB (default 32768: large enough for
    /// runtimes that reserve big virtual ranges, small enough to stop a runaway).
    pub address_space_mb: Option<u64>,
    /// Processes (default 4096).
    pub processes: Option<u64>,
    /// Largest file a process may write, in MiB (default 16384).
    pub file_size_mb: Option<u64>,
    /// Open files per process (default 4096).
    pub open_files: Option<u64>,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            cpu_secs: Some(600),
            address_space_mb: Some(32 * 1024),
            processes: Some(4096),
            file_size_mb: Some(16 * 1024),
            open_files: Some(4096),
        }
    }
}

const MIB: u64 = 1024 * 1024;

impl ResourceLimits {
    /// No limit set.
    pub const NONE: ResourceLimits = ResourceLimits {
        cpu_secs: None,
        address_space_mb: None,
        processes: None,
        file_size_mb: None,
        open_files: None,
    };

    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        *self != ResourceLimits::NONE
    }

    fn entries(&self) -> [(Resource, Option<u64>, &'static str); 5] {
        [
            (Resource::RLIMIT_CPU, self.cpu_secs, "cpu_secs"),
            (
                Resource::RLIMIT_AS,
                self.address_space_mb.map(|mb| mb.saturating_mul(MIB)),
                "address_space_mb",
            ),
            (Resource::RLIMIT_NPROC, self.processes, "processes"),
            (
                Resource::RLIMIT_FSIZE,
                self.file_size_mb.map(|mb| mb.saturating_mul(MIB)),
                "file_size_mb",
            ),
            (Resource::RLIMIT_NOFILE, self.open_files, "open_files"),
        ]
    }

    /// Sets the limits on the calling process (never above the hard limit
    /// it already has).
    pub fn apply(&self) -> Result<(), String> {
        for (resource, value, name) in self.entries() {
            // 0 means no limit, like an absent key.
            let Some(value) = value.filter(|value| *value > 0) else {
                continue;
            };
            let (_, hard) = getrlimit(resource).map_err(|err| format!("limits.{name}: {err}"))?;
            let value = value.min(hard);
            // CPU: SIGXCPU at the soft limit (which names it), SIGKILL a second later.
            let ceiling = match resource {
                Resource::RLIMIT_CPU => value.saturating_add(1).min(hard),
                _ => value,
            };
            setrlimit(resource, value, ceiling).map_err(|err| format!("limits.{name}: {err}"))?;
        }
        Ok(())
    }

    /// For root, whom the kernel exempts from RLIMIT_NPROC: moves the calling
    /// process into a pids cgroup of its own. The launcher does this before
    /// it leaves the initial user namespace (the holder's children, already
    /// outside it, join theirs from their own user namespace: v1's
    /// `cgroup.procs` checks that the writer is root, which they still are).
    pub fn apply_cgroup(&self) -> Result<(), String> {
        match self.cgroup_max() {
            Some(max) => pids_cgroup(max),
            None => Ok(()),
        }
    }

    /// The process count of a command's own pids cgroup, when it gets one:
    /// for root, with a process limit set.
    pub(crate) fn cgroup_max(&self) -> Option<u64> {
        self.processes_limit()
            .filter(|_| nix::unistd::geteuid().is_root())
    }

    /// The process limit, when one is set.
    pub(crate) fn processes_limit(&self) -> Option<u64> {
        self.processes.filter(|max| *max > 0)
    }

    /// What a command killed by `signal` ran into, if a limit.
    pub fn explain_signal(&self, signal: i32) -> Option<String> {
        match signal {
            s if s == nix::sys::signal::Signal::SIGXCPU as i32 => Some(format!(
                "The command was stopped by the CPU time limit (limits.cpu_secs = {}).",
                show(self.cpu_secs)
            )),
            s if s == nix::sys::signal::Signal::SIGXFSZ as i32 => Some(format!(
                "The command was stopped by the file size limit (limits.file_size_mb = {}).",
                show(self.file_size_mb)
            )),
            _ => None,
        }
    }

    /// Which limit a failed command's output shows it ran into, if any.
    pub fn explain_output(&self, output: &str) -> Option<String> {
        let lower = output.to_ascii_lowercase();
        if self.processes.is_some()
            && (lower.contains("fork: retry") || lower.contains("resource temporarily unavailable"))
        {
            return Some(format!(
                "The command ran into the process limit (limits.processes = {}).",
                show(self.processes)
            ));
        }
        if self.open_files.is_some() && lower.contains("too many open files") {
            return Some(format!(
                "The command ran into the open-file limit (limits.open_files = {}).",
                show(self.open_files)
            ));
        }
        if self.address_space_mb.is_some()
            && (lower.contains("cannot allocate memory")
                || lower.contains("memory allocation of")
                || lower.contains("out of memory"))
        {
            return Some(format!(
                "The command ran into the address-space limit (limits.address_space_mb = {}).",
                show(self.address_space_mb)
            ));
        }
        if self.file_size_mb.is_some() && lower.contains("file too large") {
            return Some(format!(
                "The command ran into the file size limit (limits.file_size_mb = {}).",
                show(self.file_size_mb)
            ));
        }
        None
    }
}

/// Where a launcher's pids cgroup lives (cgroup v1).
pub(crate) const PIDS_ROOT: &str = "/sys/fs/cgroup/pids";

/// How a command's pids cgroup is named, before its pid.
pub(crate) const CGROUP_PREFIX: &str = "alcove-";

fn cgroup_dir(pid: u32) -> std::path::PathBuf {
    std::path::Path::new(PIDS_ROOT).join(format!("{CGROUP_PREFIX}{pid}"))
}

/// Moves the calling process into a new pids cgroup allowing `max`
/// processes. A machine without a writable v1 pids hierarchy is left to
/// RLIMIT_NPROC.
fn pids_cgroup(max: u64) -> Result<(), String> {
    if !pids_hierarchy_exists() {
        return Ok(());
    }
    sweep_cgroups();
    let dir = cgroup_dir(std::process::id());
    if std::fs::create_dir(&dir).is_err() {
        return Ok(());
    }
    std::fs::write(dir.join("pids.max"), max.to_string())
        .and_then(|()| std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string()))
        .map_err(|err| {
            format!(
                "limits.processes: cannot use the pids cgroup {}: {err}",
                dir.display()
            )
        })
}

/// Whether a v1 pids hierarchy is mounted where commands' cgroups go.
pub(crate) fn pids_hierarchy_exists() -> bool {
    std::path::Path::new(PIDS_ROOT)
        .join("cgroup.procs")
        .exists()
}

/// Removes the pids cgroups of launchers and holders that are gone (one
/// whose removal after its command came too early, while the kernel still
/// held exiting processes in it, or whose alcove was killed): an empty
/// cgroup's `rmdir` succeeds, a busy one's fails and it stays. A cgroup is
/// named `alcove-<pid>` by a launcher, `alcove-<pid>-<n>` by a holder
/// ([`crate::cgroups`]).
pub(crate) fn sweep_cgroups() {
    let Ok(entries) = std::fs::read_dir(PIDS_ROOT) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(CGROUP_PREFIX))
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if !std::path::Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// Removes the pids cgroup of the launcher that ran as `pid`, once its
/// command and everything it started are gone.
pub fn remove_cgroup(pid: u32) {
    let dir = cgroup_dir(pid);
    if dir.exists() {
        let _ = std::fs::remove_dir(dir);
    }
}

fn show(value: Option<u64>) -> String {
    value.map_or_else(|| "none".to_owned(), |value| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_named_in_explanations() {
        let limits = ResourceLimits::default();
        let cpu = limits.explain_signal(24).unwrap_or_default();
        assert!(cpu.contains("limits.cpu_secs = 600"), "{cpu}");
        assert!(limits.explain_signal(9).is_none());
        let fork = limits
            .explain_output("bash: fork: retry: Resource temporarily unavailable")
            .unwrap_or_default();
        assert!(fork.contains("limits.processes"), "{fork}");
        assert!(
            ResourceLimits::NONE
                .explain_output("Too many open files")
                .is_none()
        );
    }

    #[test]
    fn config_leaves_unset_limits_at_their_defaults() {
        let limits: ResourceLimits = serde_json::from_str(r#"{"cpu_secs": 2}"#).unwrap();
        assert_eq!(limits.cpu_secs, Some(2));
        assert_eq!(limits.open_files, Some(4096));
    }
}
