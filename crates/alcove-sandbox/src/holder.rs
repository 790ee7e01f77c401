//! The holder's side of [`crate::held`]: a single-threaded loop that takes
//! requests on its socket, starts a child per command ([`crate::spawn`]),
//! and reports each child's pid and, once reaped, its wait status.
//!
//! Each child applies what the launcher applies ([`crate::launcher`]): a
//! user namespace of its own inside the session's (so `limits.processes`
//! counts one command), the pids cgroup, the limits and the Landlock
//! domain. What can be done once is done once, in the holder: each
//! policy's ruleset is built once and kept while the paths it was built
//! from are unchanged, each program is looked up on `PATH` once, stale
//! cgroups are swept once, the child's stack, stdin and id maps are made
//! once ([`spawn::Starter`]), limits equal to the holder's own are
//! inherited rather than set again, and root's pids cgroups are kept for
//! the next command once empty ([`CgroupPool`]).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::IoSliceMut;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, Signal, killpg};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg, send};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::cgroups::{CgroupPool, Taken};
use crate::fs_rules;
use crate::held::MAX_REQUEST;
use crate::launcher::FAILURE_PREFIX;
use crate::limits::{self, ResourceLimits};
use crate::policy::{LaunchPolicy, SandboxMode};
use crate::spawn;

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

/// What the holder keeps between commands, so each child does the least:
/// the Landlock ruleset of each policy (rebuilt when a path it was built
/// from changed), where each program was found on each `PATH`, and the
/// limits it applied to itself (which every child inherits), and its pids
/// cgroups.
struct Kept {
    rulesets: HashMap<String, fs_rules::Prepared>,
    programs: HashMap<(OsString, OsString), OsString>,
    limits: ResourceLimits,
    cgroups: CgroupPool,
    /// What each command's child starts from ([`spawn`]), made with the
    /// first request.
    starter: Option<spawn::Starter>,
}

/// The holder's side, once its namespace is ready, `check`'s domain proven
/// and its limits applied to itself: serves requests on `socket` until
/// alcove closes it, then kills what is left and returns.
pub(crate) fn serve(socket: &OwnedFd, check: &LaunchPolicy) -> Result<(), String> {
    let mut kept = Kept {
        rulesets: HashMap::new(),
        programs: HashMap::new(),
        limits: check.limits,
        cgroups: CgroupPool::new(),
        starter: None,
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
            reap(socket, &mut live, &mut kept.cgroups);
            if live.is_empty() {
                kept.cgroups.settle();
            }
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
            decode(&buffer[..read]).and_then(|request| start(request, received, &mut kept))
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

/// Reports every child that has ended, and gives back its cgroup.
fn reap(socket: &OwnedFd, live: &mut Vec<Pid>, cgroups: &mut CgroupPool) {
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
        // After the report: the holder may move out of the command's
        // cgroup, which can wait (`CgroupPool::settle`).
        cgroups.ended(pid);
    }
}

/// Starts the child that becomes the command ([`spawn`]), and writes the
/// reason where its stderr goes if it could not.
fn start(request: Request, fds: Vec<OwnedFd>, kept: &mut Kept) -> Result<Pid, String> {
    let [stdout, stderr]: [OwnedFd; 2] = fds
        .try_into()
        .map_err(|_| "a request needs exactly two descriptors".to_owned())?;
    // The holder is in no Landlock domain of its own, so a command it
    // starts must enter one (alcove sends it confined commands only).
    if request.policy.mode == SandboxMode::Off {
        return Err("the holder starts confined commands only".to_owned());
    }
    let fits = kept
        .rulesets
        .get(&request.policy_json)
        .is_some_and(fs_rules::Prepared::still_fits);
    if !fits {
        let prepared = fs_rules::prepare(&request.policy)?;
        kept.keep_ruleset(request.policy_json.clone(), prepared);
    }
    let ruleset = kept
        .rulesets
        .get(&request.policy_json)
        .map(|prepared| prepared.ruleset.try_clone())
        .transpose()
        .map_err(|err| format!("Landlock: {err}"))?
        .and_then(Option::<OwnedFd>::from)
        .ok_or("this kernel does not enforce Landlock")?;
    let found = request
        .argv
        .first()
        .map(|program| kept.find(program, &request.env));
    let sh = (request
        .argv
        .first()
        .is_some_and(|program| program == "bash"))
    .then(|| kept.find(OsStr::new("sh"), &request.env));
    let starter = match &mut kept.starter {
        Some(starter) => starter,
        None => kept.starter.insert(spawn::Starter::new()?),
    };
    let limits = request.policy.limits;
    let cgroup = match limits.processes_limit().filter(|_| starter.own_cgroups) {
        Some(max) => kept.cgroups.take(max)?,
        None => {
            kept.cgroups.go_home();
            None
        }
    };
    let binds = crate::git_guard::Binds::new(&request.policy.guards)?;
    let command = spawn::Command {
        argv: &request.argv,
        env: &request.env,
        cwd: &request.cwd,
        found,
        sh,
        cgroup: cgroup.as_ref().and_then(Taken::procs_to_join),
        limits: (kept.limits != limits).then_some(limits),
        ruleset,
        binds: &binds,
    };
    let started = starter.start(command, &stdout, &stderr);
    match (&started, cgroup) {
        (Ok((pid, _)), Some(cgroup)) => kept.cgroups.started(*pid, cgroup),
        (Err(_), Some(cgroup)) => kept.cgroups.unused(cgroup),
        (_, None) => {}
    }
    let (pid, failure) = started?;
    if let Some(reason) = failure {
        let line = format!("{FAILURE_PREFIX}{reason}\n");
        let _ = nix::unistd::write(&stderr, line.as_bytes());
    }
    Ok(pid)
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
    /// it, `/bin:/usr/bin` without one), remembered; the name itself when
    /// it has a slash or is not found.
    fn find(&mut self, program: &OsStr, env: &[(OsString, OsString)]) -> OsString {
        if program.as_bytes().contains(&b'/') {
            return program.to_owned();
        }
        let path = env.iter().find(|(name, _)| name == "PATH").map_or_else(
            || OsString::from("/bin:/usr/bin"),
            |(_, value)| value.clone(),
        );
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::held::encode;

    /// A holder's state before its first request.
    fn nothing_kept() -> Kept {
        Kept {
            rulesets: HashMap::new(),
            programs: HashMap::new(),
            limits: ResourceLimits::NONE,
            cgroups: CgroupPool::new(),
            starter: None,
        }
    }

    #[test]
    fn the_holder_keeps_a_bounded_number_of_rulesets() {
        let mut kept = nothing_kept();
        let policy = LaunchPolicy::bare(SandboxMode::ReadOnly);
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
    fn the_holder_refuses_a_command_without_a_landlock_domain() {
        // The holder is in no domain of its own: it must not start a
        // command that would enter none either.
        let mut kept = nothing_kept();
        let policy = LaunchPolicy::bare(SandboxMode::Off);
        let request = Request {
            policy_json: serde_json::to_string(&policy).unwrap(),
            policy,
            cwd: OsString::from("/"),
            argv: vec![OsString::from("true")],
            env: Vec::new(),
        };
        let (read, write) = nix::unistd::pipe().unwrap();
        let refused = start(request, vec![read, write], &mut kept).unwrap_err();
        assert!(refused.contains("confined commands only"), "{refused}");
        assert!(kept.starter.is_none(), "nothing was started");
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
            guards: Vec::new(),
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
        let borrowed: Vec<(&OsStr, &OsStr)> = env
            .iter()
            .map(|(name, value)| (name.as_os_str(), value.as_os_str()))
            .collect();
        let request = decode(&encode(
            &json,
            std::path::Path::new("/w s"),
            &argv,
            &borrowed,
        ))
        .unwrap();
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
            guards: Vec::new(),
        })
        .unwrap();
        let missing_args = format!("{json}\0/\x003\0bash\0");
        assert!(decode(missing_args.as_bytes()).is_err());
        let not_a_count = format!("{json}\0/\0three\0");
        assert!(decode(not_a_count.as_bytes()).is_err());
    }
}
