//! The holder's side of [`crate::held`]: a single-threaded loop that takes
//! requests on its socket, forks a child per command, and reports each
//! child's pid and, once reaped, its wait status.
//!
//! Each child applies what the launcher applies ([`crate::launcher`]): the
//! pids cgroup, a user namespace of its own inside the session's (so
//! `limits.processes` counts one command), the limits and the Landlock
//! domain. What can be done once is done once, in the holder: each
//! policy's ruleset is built once and kept while the paths it was built
//! from are unchanged, each program is looked up on `PATH` once, stale
//! cgroups are swept once, and limits equal to the holder's own are
//! inherited rather than set again.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::IoSliceMut;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, Signal, killpg};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg, send};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork, getgid, getuid};

use crate::fs_rules;
use crate::held::MAX_REQUEST;
use crate::launcher::{FAILURE_PREFIX, LAUNCH_FAILED};
use crate::limits::{self, ResourceLimits};
use crate::net;
use crate::policy::{LaunchPolicy, SandboxMode};

/// A request, decoded by the holder.
struct Request {
    /// The policy as sent, which names its cached ruleset.
    policy_json: String,
    policy: LaunchPolicy,
    cwd: OsString,
    argv: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
}

fn decode(bytes: &[u8]) -> Result<Request, String> {
    let mut fields = bytes.strip_suffix(&[0]).unwrap_or(bytes).split(|b| *b == 0);
    let mut next = || fields.next().ok_or("a request ended early");
    let policy_json = String::from_utf8(next()?.to_vec()).map_err(|_| "bad policy: not UTF-8")?;
    let policy = serde_json::from_str(&policy_json).map_err(|err| format!("bad policy: {err}"))?;
    let cwd = OsStr::from_bytes(next()?).to_owned();
    let count: usize = std::str::from_utf8(next()?)
        .ok()
        .and_then(|count| count.parse().ok())
        .ok_or("a request's argument count is not a number")?;
    let argv = (0..count)
        .map(|_| next().map(|arg| OsStr::from_bytes(arg).to_owned()))
        .collect::<Result<Vec<_>, _>>()?;
    let env = fields
        .filter_map(|entry| {
            let split = entry.iter().position(|b| *b == b'=')?;
            Some((
                OsString::from_vec(entry[..split].to_vec()),
                OsString::from_vec(entry[split + 1..].to_vec()),
            ))
        })
        .collect();
    Ok(Request {
        policy_json,
        policy,
        cwd,
        argv,
        env,
    })
}

/// How many rulesets (and program paths) the holder keeps at most.
const KEPT_AT_MOST: usize = 16;

/// What the holder keeps between commands, so each fork does the least:
/// the Landlock ruleset of each policy (rebuilt when a path it was built
/// from changed), where each program was found on each `PATH`, and the
/// limits it applied to itself (which every child inherits).
struct Kept {
    rulesets: HashMap<String, fs_rules::Prepared>,
    programs: HashMap<(OsString, OsString), OsString>,
    limits: ResourceLimits,
}

/// The holder's side, once its namespace is ready and `check` applied to
/// itself: serves requests on `socket` until alcove closes it, then kills
/// what is left and returns.
pub(crate) fn serve(socket: &OwnedFd, check: &LaunchPolicy) -> Result<(), String> {
    let mut kept = Kept {
        rulesets: HashMap::new(),
        programs: HashMap::new(),
        limits: check.limits,
    };
    let mut child_exits = SigSet::empty();
    child_exits.add(Signal::SIGCHLD);
    child_exits
        .thread_block()
        .map_err(|err| format!("cannot block SIGCHLD: {err}"))?;
    let signals =
        SignalFd::with_flags(&child_exits, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
            .map_err(|err| format!("cannot watch for exits: {err}"))?;
    let mut live: Vec<Pid> = Vec::new();
    // Made at the first request: a session that runs no command pays for
    // neither.
    let mut buffer = Vec::new();
    loop {
        let mut ready = [
            PollFd::new(socket.as_fd(), PollFlags::POLLIN),
            PollFd::new(signals.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut ready, PollTimeout::NONE) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(err) => return Err(format!("poll: {err}")),
        }
        let [request, exits] = ready.map(|fd| fd.any().unwrap_or(false));
        if exits {
            while let Ok(Some(_)) = signals.read_signal() {}
            reap(socket, &mut live);
        }
        if !request {
            continue;
        }
        if buffer.is_empty() {
            buffer = vec![0u8; MAX_REQUEST];
            limits::sweep_cgroups();
        }
        let mut fds = nix::cmsg_space!([RawFd; 2]);
        let mut iov = [IoSliceMut::new(&mut buffer)];
        let message = recvmsg::<()>(
            socket.as_raw_fd(),
            &mut iov,
            Some(&mut fds),
            MsgFlags::MSG_CMSG_CLOEXEC,
        );
        let (read, truncated, received) = match message {
            Err(Errno::EINTR | Errno::EAGAIN) => continue,
            Err(_) => break,
            Ok(message) => {
                let received: Vec<OwnedFd> = message
                    .cmsgs()
                    .into_iter()
                    .flatten()
                    .filter_map(|cmsg| match cmsg {
                        ControlMessageOwned::ScmRights(fds) => Some(fds),
                        _ => None,
                    })
                    .flatten()
                    .map(owned)
                    .collect();
                (
                    message.bytes,
                    message.flags.contains(MsgFlags::MSG_TRUNC),
                    received,
                )
            }
        };
        if read == 0 && received.is_empty() {
            break;
        }
        let reply = if truncated {
            Err("the request was too large".to_owned())
        } else {
            decode(&buffer[..read])
                .and_then(|request| start(request, received, &child_exits, &mut kept))
        };
        let reply = match reply {
            Ok(pid) => {
                live.push(pid);
                format!("spawned {pid}")
            }
            Err(reason) => format!("failed {reason}"),
        };
        let _ = send(socket.as_raw_fd(), reply.as_bytes(), MsgFlags::MSG_NOSIGNAL);
    }
    // Alcove is gone: nothing it started may outlive it.
    for pid in live {
        let _ = killpg(pid, Signal::SIGKILL);
    }
    Ok(())
}

/// Takes ownership of a descriptor the kernel has just given this process.
#[allow(unsafe_code)]
fn owned(fd: RawFd) -> OwnedFd {
    // SAFETY: `fd` came with SCM_RIGHTS in the message just received, so it
    // is open and owned by nothing else in this process.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Reports every child that has ended.
fn reap(socket: &OwnedFd, live: &mut Vec<Pid>) {
    loop {
        let (pid, status) = match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => (pid, (code & 0xff) << 8),
            Ok(WaitStatus::Signaled(pid, signal, core)) => {
                (pid, signal as i32 | if core { 0x80 } else { 0 })
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(_) => continue,
        };
        live.retain(|live| *live != pid);
        let report = format!("exited {pid} {status}");
        let _ = send(
            socket.as_raw_fd(),
            report.as_bytes(),
            MsgFlags::MSG_NOSIGNAL,
        );
    }
}

/// Forks the child that becomes the command.
#[allow(unsafe_code)]
fn start(
    request: Request,
    fds: Vec<OwnedFd>,
    child_exits: &SigSet,
    kept: &mut Kept,
) -> Result<Pid, String> {
    let [stdout, stderr]: [OwnedFd; 2] = fds
        .try_into()
        .map_err(|_| "a request needs exactly two descriptors".to_owned())?;
    if request.policy.mode != SandboxMode::Off {
        let fits = kept
            .rulesets
            .get(&request.policy_json)
            .is_some_and(fs_rules::Prepared::still_fits);
        if !fits {
            let prepared = fs_rules::prepare(&request.policy)?;
            kept.keep_ruleset(request.policy_json.clone(), prepared);
        }
    }
    let found = request
        .argv
        .first()
        .map(|program| kept.find(program, &request.env));
    // SAFETY: the holder is single-threaded (it runs nothing but this
    // loop), so the child may allocate and use the standard library freely.
    match unsafe { fork() } {
        Ok(ForkResult::Parent { child }) => Ok(child),
        Ok(ForkResult::Child) => {
            // This process's copy of the ruleset: the holder keeps its own.
            let ruleset = kept.rulesets.remove(&request.policy_json);
            let inherited = kept.limits == request.policy.limits;
            let applied = Applied {
                ruleset,
                limits_inherited: inherited,
                found,
            };
            let reason = become_command(request, applied, &stdout, &stderr, child_exits);
            eprintln!("{FAILURE_PREFIX}{reason}");
            std::process::exit(LAUNCH_FAILED)
        }
        Err(err) => Err(format!("cannot fork: {err}")),
    }
}

impl Kept {
    /// Keeps `prepared` for `policy`, forgetting all kept so far when
    /// there are [`KEPT_AT_MOST`]: a read-only command's policy names its
    /// own temp folder, so policies need not repeat, and each ruleset
    /// holds a descriptor.
    fn keep_ruleset(&mut self, policy: String, prepared: fs_rules::Prepared) {
        if self.rulesets.len() >= KEPT_AT_MOST {
            self.rulesets.clear();
        }
        self.rulesets.insert(policy, prepared);
    }

    /// Where `program` is on the command's `PATH` (as `execvp` would find
    /// it), remembered; the name itself when it has a slash or is not found.
    fn find(&mut self, program: &OsStr, env: &[(OsString, OsString)]) -> OsString {
        if program.as_bytes().contains(&b'/') {
            return program.to_owned();
        }
        let path = env
            .iter()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value.clone())
            .unwrap_or_default();
        let key = (program.to_owned(), path);
        if let Some(found) = self.programs.get(&key) {
            return found.clone();
        }
        // Only absolute folders: a relative one (or an empty `PATH`) would
        // name the holder's own folder, which is not the command's.
        let found = std::env::split_paths(&key.1)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(program))
            .find(|candidate| {
                candidate
                    .metadata()
                    .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
            })
            .map_or_else(|| program.to_owned(), std::path::PathBuf::into_os_string);
        if self.programs.len() >= KEPT_AT_MOST {
            self.programs.clear();
        }
        self.programs.insert(key, found.clone());
        found
    }
}

/// What the holder prepared for one child.
struct Applied {
    /// The Landlock ruleset (none with the mode off).
    ruleset: Option<fs_rules::Prepared>,
    /// Whether the holder's own limits are the command's.
    limits_inherited: bool,
    /// Where the program was found on `PATH`.
    found: Option<OsString>,
}

/// In the forked child: applies the policy as the launcher would, then
/// becomes the command. Returns only on failure, with the reason.
fn become_command(
    request: Request,
    applied: Applied,
    stdout: &OwnedFd,
    stderr: &OwnedFd,
    child_exits: &SigSet,
) -> String {
    let setup = || -> Result<(), String> {
        nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0))
            .map_err(|err| format!("setpgid: {err}"))?;
        let _ = child_exits.thread_unblock();
        let null = std::fs::File::open("/dev/null").map_err(|err| format!("/dev/null: {err}"))?;
        nix::unistd::dup2_stdin(&null).map_err(|err| format!("dup2: {err}"))?;
        nix::unistd::dup2_stdout(stdout).map_err(|err| format!("dup2: {err}"))?;
        nix::unistd::dup2_stderr(stderr).map_err(|err| format!("dup2: {err}"))?;
        std::env::set_current_dir(&request.cwd)
            .map_err(|err| format!("cannot enter {}: {err}", Path::new(&request.cwd).display()))?;
        request.policy.limits.enter_cgroup(false)?;
        let (uid, gid) = (getuid(), getgid());
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWUSER)
            .map_err(|err| format!("cannot create a user namespace (unshare: {err})"))?;
        net::map_ids(uid, gid)?;
        // What the launcher's `restrict_self` applies, from what was kept.
        if !applied.limits_inherited {
            request.policy.limits.apply()?;
        }
        match applied.ruleset {
            Some(prepared) => fs_rules::enforce(prepared.ruleset),
            None if request.policy.mode == SandboxMode::Off => Ok(()),
            None => Err("no Landlock ruleset was prepared".to_owned()),
        }
    };
    if let Err(reason) = setup() {
        return reason;
    }
    let Some((program, args)) = request.argv.split_first() else {
        return "missing command".to_owned();
    };
    let exec = |path: &OsStr, name: &OsStr| {
        std::process::Command::new(path)
            .arg0(name)
            .args(args)
            .env_clear()
            .envs(request.env.iter().map(|(name, value)| (name, value)))
            .exec()
    };
    let err = exec(applied.found.as_deref().unwrap_or(program), program);
    // A machine without bash still has sh.
    if err.kind() == std::io::ErrorKind::NotFound && program == "bash" {
        return format!(
            "cannot run bash or sh: {}",
            exec(OsStr::new("sh"), OsStr::new("sh"))
        );
    }
    format!("cannot run {}: {err}", program.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::held::encode;

    #[test]
    fn the_holder_keeps_a_bounded_number_of_rulesets() {
        let mut kept = Kept {
            rulesets: HashMap::new(),
            programs: HashMap::new(),
            limits: ResourceLimits::NONE,
        };
        let policy = LaunchPolicy {
            mode: crate::SandboxMode::ReadOnly,
            network: false,
            allow_loopback: false,
            network_holder: None,
            writable: Vec::new(),
            deny_read: Vec::new(),
            limits: ResourceLimits::NONE,
        };
        for n in 0..3 * KEPT_AT_MOST {
            let prepared = fs_rules::prepare(&policy).unwrap();
            kept.keep_ruleset(format!("policy {n}"), prepared);
            assert!(kept.rulesets.len() <= KEPT_AT_MOST);
        }
        assert!(
            kept.rulesets
                .contains_key(&format!("policy {}", 3 * KEPT_AT_MOST - 1))
        );
    }

    #[test]
    fn a_request_decodes_to_what_was_encoded() {
        let policy = LaunchPolicy {
            mode: crate::SandboxMode::ReadOnly,
            network: false,
            allow_loopback: true,
            network_holder: Some(7),
            writable: vec!["/w".into()],
            deny_read: Vec::new(),
            limits: crate::ResourceLimits::default(),
        };
        let json = serde_json::to_string(&policy).unwrap();
        let argv = [
            OsStr::new("bash"),
            OsStr::new("-c"),
            OsStr::new("echo a=b\n"),
        ];
        let env = vec![
            (OsString::from("PATH"), OsString::from("/bin:/usr/bin")),
            (OsString::from("EMPTY"), OsString::new()),
            (OsString::from("X"), OsString::from_vec(b"a=\xff".to_vec())),
        ];
        let request = decode(&encode(&json, Path::new("/w s"), &argv, &env)).unwrap();
        assert_eq!(request.policy, policy);
        assert_eq!(request.cwd, "/w s");
        assert_eq!(request.argv, ["bash", "-c", "echo a=b\n"]);
        assert_eq!(request.env, env);
    }

    #[test]
    fn a_short_or_malformed_request_is_an_error() {
        assert!(decode(b"").is_err());
        assert!(decode(b"{}\0/\0").is_err());
        let json = serde_json::to_string(&LaunchPolicy {
            mode: crate::SandboxMode::Off,
            network: true,
            allow_loopback: false,
            network_holder: None,
            writable: Vec::new(),
            deny_read: Vec::new(),
            limits: crate::ResourceLimits::NONE,
        })
        .unwrap();
        let missing_args = format!("{json}\0/\x003\0bash\0");
        assert!(decode(missing_args.as_bytes()).is_err());
        let not_a_count = format!("{json}\0/\0three\0");
        assert!(decode(not_a_count.as_bytes()).is_err());
    }
}
