//! One network namespace for all of a session's commands.
//!
//! Creating a network namespace is the dearest part of starting a confined
//! command (about 0.5 ms of kernel time registering the namespace's sysctls
//! and loopback device, bench/notes.md). So a session makes one: a small
//! holder process ([`NetworkHolder`], the launcher run as `--hold-network`)
//! creates a user and network namespace, brings its loopback up when
//! `allow_loopback` asks, and waits until alcove goes away (its stdin
//! closes). Each command's launcher then [`join`]s the holder's namespaces
//! and makes a user namespace of its own inside them, so `limits.processes`
//! still counts one command's processes.
//!
//! The holder is also where those commands start: it clones each one
//! ([`crate::held`], [`crate::spawn`]), which saves the launcher's own process image per
//! command; the launcher joining the namespace is the fallback.
//!
//! What this shares: the commands of one session see the same (empty)
//! network, so with `allow_loopback` a server one command leaves running is
//! reachable from the next, as on the host; the host's network and the
//! host's loopback stay unreachable to all of them. Where the holder cannot
//! start, every command gets a namespace of its own as before.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use nix::sched::{CloneFlags, setns};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, fork};

use crate::fs_rules;
use crate::held::{self, Spawner};
use crate::launcher;
use crate::net;
use crate::policy::{LaunchPolicy, SandboxMode};

/// The launcher's argument that makes it a holder.
pub const HOLD_ARGUMENT: &str = "--hold-network";

/// What a holder prints once its namespace is ready.
const READY: &str = "ready";

/// The process that keeps the session's network namespace alive. Dropping
/// it ends the process (and, with its last command, the namespace).
#[derive(Debug)]
pub struct NetworkHolder {
    child: Child,
    /// Alcove's end of the socket the holder takes requests on.
    spawner: Spawner,
}

impl NetworkHolder {
    /// Starts `launcher launcher_args…` (alcove's subcommand when the
    /// launcher is alcove itself) as a holder and waits until its namespace
    /// is ready. The holder first has a child of its own enter `check`'s
    /// Landlock domain (`check` is a [`LaunchPolicy`] as JSON) and applies
    /// its limits to itself, so a holder that starts proves the machine can
    /// confine commands (the session's probe). The error is the holder's
    /// own.
    pub fn start(
        launcher: &Path,
        launcher_args: &[OsString],
        allow_loopback: bool,
        check: &str,
    ) -> Result<NetworkHolder, String> {
        let (ours, holders) = held::socket_pair()?;
        let mut child = Command::new(launcher)
            .args(launcher_args)
            .arg(HOLD_ARGUMENT)
            .arg(if allow_loopback {
                "loopback"
            } else {
                "no-loopback"
            })
            .arg(check)
            .stdin(Stdio::from(holders))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| format!("cannot run {}: {err}", launcher.display()))?;
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = BufReader::new(stdout).read_line(&mut line);
        }
        if line.trim_end() == READY {
            child.stderr = None;
            let spawner = Spawner::new(ours);
            return Ok(NetworkHolder { child, spawner });
        }
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(stderr.trim().to_owned())
    }

    /// The holder's process id, which the launcher joins by.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Alcove's side of the holder's socket: the holder starts commands
    /// ([`crate::held`]).
    pub(crate) fn spawner(&self) -> &Spawner {
        &self.spawner
    }
}

impl Drop for NetworkHolder {
    /// Ends the holder, and removes the pids cgroups it kept for commands
    /// ([`crate::cgroups`]). The commands it started are gone by then: each
    /// `Bash` call kills its command's group when it ends or is dropped.
    /// (When alcove itself dies, the holder finds its socket closed, kills
    /// what it still runs and removes its cgroups.)
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        crate::limits::sweep_cgroups();
    }
}

/// The holder's side: makes the namespace, proves that a process can enter
/// `check`'s Landlock domain, applies `check`'s limits to itself (each
/// command inherits them), says so, and starts commands as asked on its
/// stdin (a socket) until it closes.
pub(crate) fn hold(allow_loopback: bool, check: &LaunchPolicy) -> Result<(), String> {
    net::isolate(allow_loopback)?;
    // Before the limits: a process limit of one would refuse the fork.
    prove_landlock(check)?;
    check.limits.apply()?;
    let socket = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|err| format!("cannot take the request socket: {err}"))?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{READY}")
        .and_then(|()| stdout.flush())
        .map_err(|err| format!("cannot report readiness: {err}"))?;
    crate::holder::serve(&socket, check)
}

/// Whether a process can enter `check`'s Landlock domain, found by a
/// forked child that enters it and ends. The holder itself stays outside
/// any domain of its own: each command enters the domain of its own
/// policy, and that is then the only one the kernel checks each path the
/// command opens against (with the holder in a domain too, every command
/// paid for two on every path, and for stacking its own on the holder's;
/// tens of microseconds of CPU a command, bench/notes.md, point 39), and a
/// file made after the session started is covered as the policy says.
#[allow(unsafe_code)]
fn prove_landlock(check: &LaunchPolicy) -> Result<(), String> {
    if check.mode == SandboxMode::Off {
        return Ok(());
    }
    let prepared = fs_rules::prepare(check)?;
    // SAFETY: the holder is single-threaded (it has just made a user
    // namespace, which the kernel refuses a process with other threads),
    // so the child may call anything its parent could.
    match unsafe { fork() }.map_err(|err| format!("cannot fork: {err}"))? {
        ForkResult::Child => {
            let entered = fs_rules::enforce(prepared.ruleset);
            if let Err(reason) = &entered {
                // Its stderr is the holder's: alcove reads it on failure.
                let line = format!("{}{reason}\n", launcher::FAILURE_PREFIX);
                let _ = nix::unistd::write(std::io::stderr(), line.as_bytes());
            }
            // SAFETY: ends the child at once, as a forked child should.
            unsafe { nix::libc::_exit(i32::from(entered.is_err())) }
        }
        ForkResult::Parent { child } => match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, 0)) => Ok(()),
            Ok(_) => Err("a process could not enter the Landlock domain".to_owned()),
            Err(err) => Err(format!("cannot wait for the Landlock check: {err}")),
        },
    }
}

/// The command's side: enters the holder's user and network namespace,
/// then a user namespace of its own (so process limits count only this
/// command). The calling process must be single-threaded.
pub(crate) fn join(holder: u32) -> Result<(), String> {
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    let open = |kind: &str| {
        std::fs::File::open(format!("/proc/{holder}/ns/{kind}"))
            .map_err(|err| format!("cannot find the session's network namespace: {err}"))
    };
    let (user, network) = (open("user")?, open("net")?);
    setns(user.as_fd(), CloneFlags::CLONE_NEWUSER)
        .map_err(|err| format!("cannot enter the session's user namespace (setns: {err})"))?;
    setns(network.as_fd(), CloneFlags::CLONE_NEWNET)
        .map_err(|err| format!("cannot enter the session's network namespace (setns: {err})"))?;
    nix::sched::unshare(CloneFlags::CLONE_NEWUSER)
        .map_err(|err| format!("cannot create a user namespace (unshare: {err})"))?;
    net::map_ids(uid, gid)
}
