//! How the session's holder ([`crate::holder`]) starts one command without
//! copying itself: `clone(CLONE_VM | CLONE_VFORK | CLONE_NEWUSER)`. The child
//! borrows the holder's memory, which waits until the child has called
//! `execve` or ended, and starts in a user namespace of its own (so
//! `limits.processes` counts one command) — the one step the child could
//! not take itself, since `unshare(CLONE_NEWUSER)` refuses a process that
//! shares its memory.
//!
//! A `fork` copied the holder's page tables and flushed its TLB for every
//! command, and the command's `execve` then tore the copy down: on this
//! class of VM a fork, exit and wait of a 2 MB process cost ~0.25 ms of CPU
//! more than the same through a shared-memory clone (bench/notes.md,
//! point 31).
//!
//! With guarded paths ([`crate::git_guard`]) the clone also makes a mount
//! namespace, owned by the child's user namespace, in which the child binds
//! them read-only before it enters its Landlock domain.
//!
//! Everything the child needs is made before the clone ([`Launch`]), so on
//! its way to `execve` the child allocates nothing (what it allocated would
//! stay in the holder's heap). A step that fails hands its reason back
//! through [`Launch::failure`]: the memory is shared, and the holder reads
//! it once the clone returns and writes it where the child's stderr goes.
//! Writing the id maps without allocating lives here too, and serves the
//! holder's own namespace as well ([`crate::net::map_ids`]).

use std::cell::Cell;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use nix::errno::Errno;
use nix::libc;
use nix::sched::CloneFlags;
use nix::sys::signal::SigSet;
use nix::unistd::{Pid, geteuid, getgid, getuid};

use crate::git_guard::Binds;
use crate::launcher::LAUNCH_FAILED;
use crate::limits::ResourceLimits;

/// The stack a command's child starts on: 64 KiB (it makes a few system
/// calls, and formats a message only when one fails) above a page the
/// child cannot touch, so an overflow faults instead of writing over the
/// holder's heap.
pub(crate) struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

/// The guard page below a [`ChildStack`].
const GUARD: usize = 4096;

impl ChildStack {
    #[allow(unsafe_code)]
    pub(crate) fn new() -> Result<ChildStack, String> {
        let len = GUARD + 64 * 1024;
        // SAFETY: a fresh private mapping, owned by the value returned.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(format!("cannot map a stack: {}", Errno::last()));
        }
        let stack = ChildStack { base, len };
        // SAFETY: the first page of the mapping just made.
        if unsafe { libc::mprotect(base, GUARD, libc::PROT_NONE) } != 0 {
            return Err(format!("cannot guard a stack: {}", Errno::last()));
        }
        Ok(stack)
    }

    /// The part above the guard page.
    #[allow(unsafe_code)]
    fn usable(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes, readable and writable above
        // its first page, and borrowed mutably for as long as the slice.
        unsafe {
            std::slice::from_raw_parts_mut(self.base.cast::<u8>().add(GUARD), self.len - GUARD)
        }
    }
}

impl Drop for ChildStack {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer borrowed.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// What every command's child uses, made by the holder once, with its
/// first request (the holder's ids and whether it may make cgroups never
/// change): the stack the child starts on and [`Fixed`].
pub(crate) struct Starter {
    stack: ChildStack,
    fixed: Fixed,
    /// Whether commands get pids cgroups of their own: the holder is root
    /// and a v1 pids hierarchy is mounted.
    pub(crate) own_cgroups: bool,
}

/// The part of a [`Starter`] each launch reads.
struct Fixed {
    /// The child's stdin.
    null: OwnedFd,
    /// The lines mapping the holder's ids to themselves in the child's
    /// user namespace.
    uid_map: CString,
    gid_map: CString,
}

impl Starter {
    pub(crate) fn new() -> Result<Starter, String> {
        let null = std::fs::File::open("/dev/null")
            .map_err(|err| format!("/dev/null: {err}"))?
            .into();
        Ok(Starter {
            stack: ChildStack::new()?,
            fixed: Fixed {
                null,
                uid_map: id_map(getuid().as_raw())?,
                gid_map: id_map(getgid().as_raw())?,
            },
            own_cgroups: geteuid().is_root() && crate::limits::pids_hierarchy_exists(),
        })
    }

    /// Starts the child of `command` and waits until it has become the
    /// command or failed to ([`Launch::start`]).
    pub(crate) fn start(
        &mut self,
        command: Command<'_>,
        stdout: &OwnedFd,
        stderr: &OwnedFd,
    ) -> Result<(Pid, Option<String>), String> {
        Launch::new(command, stdout, stderr, &self.fixed)?.start(&mut self.stack)
    }
}

/// What the child of one command does, prepared by the holder.
struct Launch<'a> {
    /// The program's path, as found on `PATH` (none when it was not: a
    /// bare name is never looked up in the command's folder), and `sh`'s
    /// when the program is `bash` (a machine without bash still has sh).
    program: Option<CString>,
    fallback: Option<(CString, Vec<*const libc::c_char>)>,
    /// The name the command is known by, for failures.
    name: OsString,
    /// `argv[0]` and `envp`, each as a null-terminated array of pointers
    /// into the strings kept beside them.
    _argv: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    _envp: Vec<CString>,
    envp: Vec<*const libc::c_char>,
    cwd: CString,
    fixed: &'a Fixed,
    stdout: RawFd,
    stderr: RawFd,
    /// `cgroup.procs` of the pids cgroup the command joins, when it gets
    /// one ([`crate::cgroups`]).
    cgroup: Option<&'a CStr>,
    /// Limits to set, when they are not the holder's own.
    limits: Option<ResourceLimits>,
    /// A copy of the Landlock ruleset's descriptor: every command the
    /// holder starts enters a domain (the holder is in none of its own).
    ruleset: OwnedFd,
    /// Paths bound read-only in the command's own mount namespace, which
    /// the clone makes when there are any ([`crate::git_guard`]).
    binds: &'a Binds,
    /// Why the child did not become the command, set by the child.
    failure: Cell<Option<String>>,
}

/// The parts of a request a launch is made from.
pub(crate) struct Command<'a> {
    pub(crate) argv: &'a [OsString],
    pub(crate) env: &'a [(OsString, OsString)],
    pub(crate) cwd: &'a OsStr,
    pub(crate) found: Option<OsString>,
    pub(crate) sh: Option<OsString>,
    pub(crate) cgroup: Option<&'a CStr>,
    pub(crate) limits: Option<ResourceLimits>,
    pub(crate) ruleset: OwnedFd,
    pub(crate) binds: &'a Binds,
}

fn c_string(bytes: &[u8], what: &str) -> Result<CString, String> {
    CString::new(bytes).map_err(|_| format!("{what} contains a NUL byte"))
}

/// A null-terminated array of pointers to `strings`.
fn pointers(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|string| string.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

impl<'a> Launch<'a> {
    fn new(
        command: Command<'a>,
        stdout: &OwnedFd,
        stderr: &OwnedFd,
        fixed: &'a Fixed,
    ) -> Result<Launch<'a>, String> {
        let Some(name) = command.argv.first() else {
            return Err("missing command".to_owned());
        };
        let with_slash = |path: &OsString| path.as_bytes().contains(&b'/');
        let program = command.found.filter(with_slash);
        let argv = command
            .argv
            .iter()
            .map(|arg| c_string(arg.as_bytes(), "an argument"))
            .collect::<Result<Vec<_>, _>>()?;
        let envp = command
            .env
            .iter()
            .map(|(name, value)| {
                let mut entry = name.as_bytes().to_vec();
                entry.push(b'=');
                entry.extend_from_slice(value.as_bytes());
                c_string(&entry, "the environment")
            })
            .collect::<Result<Vec<_>, _>>()?;
        let argv_pointers = pointers(&argv);
        let fallback = match command.sh {
            Some(sh) if with_slash(&sh) => {
                let mut argv = argv_pointers.clone();
                if let Some(first) = argv.first_mut() {
                    *first = c"sh".as_ptr();
                }
                Some((c_string(sh.as_bytes(), "sh")?, argv))
            }
            _ => None,
        };
        Ok(Launch {
            program: program
                .map(|program| c_string(program.as_bytes(), "the program"))
                .transpose()?,
            fallback,
            name: name.clone(),
            argv: argv_pointers,
            _argv: argv,
            envp: pointers(&envp),
            _envp: envp,
            cwd: c_string(command.cwd.as_bytes(), "the folder")?,
            fixed,
            stdout: stdout.as_raw_fd(),
            stderr: stderr.as_raw_fd(),
            cgroup: command.cgroup,
            limits: command.limits,
            ruleset: command.ruleset,
            binds: command.binds,
            failure: Cell::new(None),
        })
    }

    /// Starts the child and waits until it has become the command or
    /// failed to. The pid is returned either way (a failed child ends with
    /// [`LAUNCH_FAILED`] and is reaped like a command); the reason of a
    /// failure comes with it.
    #[allow(unsafe_code)]
    fn start(self, stack: &mut ChildStack) -> Result<(Pid, Option<String>), String> {
        let mut flags = CloneFlags::CLONE_VM | CloneFlags::CLONE_VFORK | CloneFlags::CLONE_NEWUSER;
        if !self.binds.is_empty() {
            // Owned by the child's new user namespace, so the holder's
            // mounts are copied as slaves: nothing bound propagates back.
            flags |= CloneFlags::CLONE_NEWNS;
        }
        let child = Box::new(|| -> isize {
            let reason = self.become_command();
            self.failure.set(Some(reason));
            LAUNCH_FAILED as isize
        });
        // SAFETY: the holder is single-threaded and CLONE_VFORK suspends it
        // until the child has called `execve` or ended, so nothing else
        // touches the memory the child shares; the child runs on `stack`,
        // not on the holder's, and allocates only on its way to failing
        // (that string is handed back in `failure`, and freed here).
        let pid = unsafe { nix::sched::clone(child, stack.usable(), flags, Some(libc::SIGCHLD)) }
            .map_err(|err| {
            format!("cannot start the command in a user namespace of its own (clone: {err})")
        })?;
        Ok((pid, self.failure.take()))
    }

    /// In the child: applies the policy as the launcher would, then becomes
    /// the command. Returns only on failure, with the reason.
    fn become_command(&self) -> String {
        match self.apply() {
            Err(reason) => reason,
            Ok(()) => self.exec(),
        }
    }

    #[allow(unsafe_code)]
    fn apply(&self) -> Result<(), String> {
        let step = |what: &str, result: libc::c_int| {
            Errno::result(result)
                .map(drop)
                .map_err(|err| format!("{what}: {err}"))
        };
        // SAFETY (each call below): plain system calls on this process with
        // descriptors it holds and strings made before the clone.
        step("setpgid", unsafe { libc::setpgid(0, 0) })?;
        SigSet::empty()
            .thread_set_mask()
            .map_err(|err| format!("sigprocmask: {err}"))?;
        // Rust programs ignore SIGPIPE; commands expect its default.
        let pipe = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        if pipe == libc::SIG_ERR {
            return Err(format!("signal: {}", Errno::last()));
        }
        for (from, to) in [
            (self.fixed.null.as_raw_fd(), 0),
            (self.stdout, 1),
            (self.stderr, 2),
        ] {
            step("dup2", unsafe { libc::dup2(from, to) })?;
        }
        if unsafe { libc::chdir(self.cwd.as_ptr()) } != 0 {
            return Err(format!(
                "cannot enter {}: {}",
                String::from_utf8_lossy(self.cwd.as_bytes()),
                std::io::Error::last_os_error()
            ));
        }
        write_id_maps(&self.fixed.uid_map, &self.fixed.gid_map)?;
        self.binds.apply()?;
        if let Some(procs) = self.cgroup {
            join_pids_cgroup(procs)?;
        }
        if let Some(limits) = &self.limits {
            limits.apply()?;
        }
        step("no_new_privs", unsafe {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        })?;
        let restricted = unsafe {
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                self.ruleset.as_raw_fd(),
                0,
            )
        };
        if restricted != 0 {
            return Err(format!("Landlock: {}", Errno::last()));
        }
        Ok(())
    }

    #[allow(unsafe_code)]
    fn exec(&self) -> String {
        let err = match &self.program {
            Some(program) => {
                // SAFETY: the path and both arrays are null-terminated and
                // outlive the call (they are the holder's, which waits).
                unsafe { libc::execve(program.as_ptr(), self.argv.as_ptr(), self.envp.as_ptr()) };
                std::io::Error::last_os_error()
            }
            None => std::io::Error::from_raw_os_error(libc::ENOENT),
        };
        if let (Some((sh, argv)), std::io::ErrorKind::NotFound) = (&self.fallback, err.kind()) {
            // SAFETY: as above.
            unsafe { libc::execve(sh.as_ptr(), argv.as_ptr(), self.envp.as_ptr()) };
            return format!("cannot run bash or sh: {}", std::io::Error::last_os_error());
        }
        format!("cannot run {}: {err}", self.name.to_string_lossy())
    }
}

/// The line of `/proc/self/uid_map` (or `gid_map`) that maps `id` to
/// itself.
pub(crate) fn id_map(id: u32) -> Result<CString, String> {
    c_string(format!("{id} {id} 1\n").as_bytes(), "an id map")
}

/// Maps the caller's ids to themselves in the user namespace it was just
/// born in or moved to (`uid_map` and `gid_map` from [`id_map`]), so files
/// and `id` look the same inside. Allocates only on failure.
pub(crate) fn write_id_maps(uid_map: &CStr, gid_map: &CStr) -> Result<(), String> {
    write_file(c"/proc/self/setgroups", c"deny")?;
    write_file(c"/proc/self/uid_map", uid_map)?;
    write_file(c"/proc/self/gid_map", gid_map)
}

/// Writes `text` to the file at `path`, as `std::fs::write` would but
/// without allocating.
#[allow(unsafe_code)]
fn write_file(path: &CStr, text: &CStr) -> Result<(), String> {
    let failed = || {
        format!(
            "cannot write {}: {}",
            path.to_string_lossy(),
            std::io::Error::last_os_error()
        )
    };
    // SAFETY: both strings are null-terminated; the descriptor is this
    // call's own.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(failed());
        }
        let bytes = text.to_bytes();
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let result = if usize::try_from(written).ok() == Some(bytes.len()) {
            Ok(())
        } else {
            Err(failed())
        };
        libc::close(fd);
        result
    }
}

/// A path built on the stack: the child may not allocate.
struct StackPath {
    bytes: [u8; 64],
    len: usize,
}

impl StackPath {
    fn new(prefix: &[u8]) -> StackPath {
        let mut path = StackPath {
            bytes: [0; 64],
            len: 0,
        };
        path.push(prefix);
        path
    }

    fn push(&mut self, part: &[u8]) {
        let end = (self.len + part.len()).min(self.bytes.len() - 1);
        let take = end - self.len;
        self.bytes[self.len..end].copy_from_slice(&part[..take]);
        self.len = end;
    }

    fn push_number(&mut self, mut number: u32) {
        let mut digits = [0u8; 10];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (number % 10) as u8;
            number /= 10;
            if number == 0 {
                break;
            }
        }
        self.push(&digits[start..]);
    }

    fn as_c_str(&self) -> &CStr {
        CStr::from_bytes_until_nul(&self.bytes).unwrap_or(c"")
    }
}

/// Moves the child into the pids cgroup whose `cgroup.procs` is `procs`
/// ([`crate::cgroups`]).
fn join_pids_cgroup(procs: &CStr) -> Result<(), String> {
    let mut pid = StackPath::new(b"");
    pid.push_number(std::process::id());
    write_file(procs, pid.as_c_str())
        .map_err(|err| format!("limits.processes: cannot use the pids cgroup: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The descriptor of a read-only policy's Landlock ruleset.
    fn bare_ruleset() -> OwnedFd {
        let policy = crate::LaunchPolicy::bare(crate::SandboxMode::ReadOnly);
        let prepared = crate::fs_rules::prepare(&policy).unwrap();
        Option::<OwnedFd>::from(prepared.ruleset).unwrap()
    }

    static NO_BINDS: std::sync::LazyLock<Binds> =
        std::sync::LazyLock::new(|| Binds::new(&[]).unwrap());

    fn launch_of<'a>(
        fixed: &'a Fixed,
        argv: &'a [OsString],
        found: &str,
        sh: Option<&str>,
    ) -> Launch<'a> {
        let out: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
        let command = Command {
            argv,
            env: &[],
            cwd: OsStr::new("/"),
            found: Some(found.into()),
            sh: sh.map(OsString::from),
            cgroup: None,
            limits: None,
            ruleset: bare_ruleset(),
            binds: &NO_BINDS,
        };
        Launch::new(command, &out, &out, fixed).unwrap()
    }

    #[test]
    fn a_program_not_found_on_path_is_never_run_from_the_commands_folder() {
        // `Kept::find` gives the bare name back when no folder has it:
        // `execve` would then run a `bash` file in the command's folder.
        let starter = Starter::new().unwrap();
        let argv = [OsString::from("bash"), OsString::from("-c")];
        let lost = launch_of(&starter.fixed, &argv, "bash", Some("sh"));
        assert!(lost.program.is_none());
        assert!(lost.fallback.is_none());
        let found = launch_of(&starter.fixed, &argv, "/usr/bin/bash", Some("/usr/bin/sh"));
        assert_eq!(found.program.as_deref(), Some(c"/usr/bin/bash"));
        let (sh, argv) = found.fallback.as_ref().unwrap();
        assert_eq!(sh.as_c_str(), c"/usr/bin/sh");
        // SAFETY: the pointers point into strings `found` keeps.
        #[allow(unsafe_code)]
        let (first, second) = unsafe { (CStr::from_ptr(argv[0]), CStr::from_ptr(argv[1])) };
        assert_eq!((first, second), (c"sh", c"-c"));
        assert!(argv[2].is_null() && found.argv[2].is_null());
    }

    #[test]
    fn a_child_stack_gives_64_kib_above_its_guard_page() {
        let mut stack = ChildStack::new().unwrap();
        let usable = stack.usable();
        assert_eq!(usable.len(), 64 * 1024);
        usable[0] = 1;
        usable[64 * 1024 - 1] = 1;
        assert_eq!(usable.as_ptr() as usize % 4096, 0);
    }

    #[test]
    fn a_stack_path_holds_a_cgroup_folder_and_stops_at_its_size() {
        let mut path = StackPath::new(b"/sys/fs/cgroup/pids");
        path.push(b"/alcove-");
        path.push_number(4_194_304);
        assert_eq!(path.as_c_str(), c"/sys/fs/cgroup/pids/alcove-4194304");
        let mut zero = StackPath::new(b"");
        zero.push_number(0);
        assert_eq!(zero.as_c_str(), c"0");
        let mut long = StackPath::new(&[b'x'; 100]);
        long.push_number(7);
        assert_eq!(long.as_c_str().to_bytes().len(), 63);
    }
}
