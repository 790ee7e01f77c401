//! Commands started by the session's holder instead of through the launcher.
//!
//! A confined command started through the launcher costs a process image
//! of its own: alcove spawns `alcove-sandbox`, which loads, parses its
//! policy, joins the session's namespaces and then executes the shell.
//! That extra `execve` and start-up were most of what a confined `Bash`
//! call cost beyond its shell (about 1.5 ms of CPU on the bench's VM,
//! bench/notes.md). The session's holder ([`crate::shared_net`]) is already
//! a single-threaded process inside the session's user and network
//! namespace, so it serves as the commands' parent instead: alcove sends it
//! the policy, the command and two pipe ends over a `SOCK_SEQPACKET`
//! socket, the holder starts a child ([`crate::spawn`]), and the child
//! applies exactly what the launcher applies (a user namespace of its own,
//! the pids cgroup, the limits and the Landlock domain) before it becomes
//! the shell. The child borrows the small, single-threaded holder's memory
//! until it execs, where a child of alcove would have to copy alcove's.
//!
//! The holder reports each child's pid and, when it has reaped it, its
//! wait status; [`HeldChild::wait`] waits for that report. When alcove goes
//! away (the socket closes, `kill -9` included) the holder kills the process
//! group of every command still running and ends.
//!
//! The holder's loop is [`crate::holder`]. Messages: a request is NUL-separated fields (policy JSON, working
//! folder, argument count, arguments, then `NAME=value` environment
//! entries) with the command's stdout and stderr as `SCM_RIGHTS`; a reply
//! is `spawned PID`, `failed REASON` or `exited PID STATUS`.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::IoSlice;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::sys::socket::{
    AddressFamily, ControlMessage, MsgFlags, SockFlag, SockType, recv, sendmsg, socketpair,
};
use nix::unistd::Pid;
use tokio::sync::oneshot;

/// The largest request: a `SOCK_SEQPACKET` message must fit the socket's
/// buffer. A larger command falls back to the launcher.
pub(crate) const MAX_REQUEST: usize = 128 * 1024;
/// How long alcove waits for the holder to say it started a command.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// A connected pair: alcove's end and the holder's.
pub(crate) fn socket_pair() -> Result<(OwnedFd, OwnedFd), String> {
    socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|err| format!("cannot make the holder's socket: {err}"))
}

/// A command the holder started: its pid (which leads its process group)
/// and its exit, when the holder reports it.
#[derive(Debug)]
pub struct HeldChild {
    pid: u32,
    exit: oneshot::Receiver<i32>,
    /// What the first completed wait saw (a receiver polled after it
    /// completed would panic); `None` inside when the holder ended first.
    status: Option<Option<ExitStatus>>,
}

impl HeldChild {
    /// The command's pid, also its process group's id.
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Waits until the holder has reaped the command.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = match self.status {
            Some(status) => status,
            None => {
                let status = (&mut self.exit).await.ok().map(ExitStatus::from_raw);
                *self.status.insert(status)
            }
        };
        status.ok_or_else(|| std::io::Error::other("the sandbox holder ended before the command"))
    }
}

/// What the reader hands to the request waiting for its answer.
type Answer = Result<(u32, oneshot::Receiver<i32>), String>;

/// Alcove's side of the socket: sends requests one at a time and routes
/// the holder's reports (a thread reads them).
#[derive(Debug)]
pub(crate) struct Spawner {
    socket: OwnedFd,
    /// Held while a request waits for its answer, so answers come in order;
    /// `None` until the first request starts the thread reading reports (a
    /// session that runs no command pays for no thread).
    answers: Mutex<Option<Answers>>,
    /// How long a request waits for its answer.
    timeout: Duration,
}

/// The answers to come, in the order of the requests.
#[derive(Debug)]
struct Answers {
    received: mpsc::Receiver<Answer>,
    /// Requests that stopped waiting (the holder can wait on a child's
    /// `chdir` into a hung mount): their answers come first and are not
    /// the next request's.
    late: usize,
}

impl Answers {
    /// The answer to the request just sent, or why there is none.
    fn next(&mut self, timeout: Duration) -> Result<Answer, String> {
        loop {
            match self.received.recv_timeout(timeout) {
                Ok(stale) if self.late > 0 => {
                    self.late -= 1;
                    // Its call has given up: nobody would wait for it.
                    if let Ok((pid, _)) = stale {
                        let _ = killpg(Pid::from_raw(pid.cast_signed()), Signal::SIGKILL);
                    }
                }
                Ok(answer) => return Ok(answer),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.late += 1;
                    return Err("the session's sandbox holder did not answer".to_owned());
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("the session's sandbox holder has ended".to_owned());
                }
            }
        }
    }
}

impl Spawner {
    /// Alcove's side of `socket`.
    pub(crate) fn new(socket: OwnedFd) -> Spawner {
        Spawner {
            socket,
            answers: Mutex::new(None),
            timeout: ANSWER_TIMEOUT,
        }
    }

    /// Starts the thread reading the holder's reports.
    fn start_reader(&self) -> Result<Answers, String> {
        let reading = self
            .socket
            .try_clone()
            .map_err(|err| format!("cannot share the holder's socket: {err}"))?;
        let (answer, answers) = mpsc::channel();
        std::thread::Builder::new()
            .name("sandbox-holder".to_owned())
            .spawn(move || read_reports(&reading, &answer))
            .map_err(|err| format!("cannot start the holder's reader: {err}"))?;
        Ok(Answers {
            received: answers,
            late: 0,
        })
    }

    /// Asks the holder to run `argv` in `cwd` with exactly `env`, confined
    /// by `policy` (JSON), its stdout and stderr both going to `output`
    /// (the holder's protocol takes the two apart; alcove gives one pipe).
    /// `None` when the request is too large to send (the caller uses the
    /// launcher instead).
    pub(crate) fn spawn(
        &self,
        policy: &str,
        cwd: &Path,
        argv: &[&OsStr],
        env: &[(&OsStr, &OsStr)],
        output: &OwnedFd,
    ) -> Option<Result<HeldChild, String>> {
        let request = encode(policy, cwd, argv, env);
        if request.len() > MAX_REQUEST {
            return None;
        }
        let Ok(mut answers) = self.answers.lock() else {
            return Some(Err("the sandbox holder's lock is poisoned".to_owned()));
        };
        let answers = match &mut *answers {
            Some(answers) => answers,
            empty @ None => match self.start_reader() {
                Ok(reader) => empty.insert(reader),
                Err(reason) => return Some(Err(reason)),
            },
        };
        let fds = [output.as_raw_fd(), output.as_raw_fd()];
        if let Err(err) = sendmsg::<()>(
            self.socket.as_raw_fd(),
            &[IoSlice::new(&request)],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::MSG_NOSIGNAL,
            None,
        ) {
            return Some(Err(format!(
                "cannot reach the session's sandbox holder: {err}"
            )));
        }
        Some(match answers.next(self.timeout) {
            Ok(Ok((pid, exit))) => Ok(HeldChild {
                pid,
                exit,
                status: None,
            }),
            Ok(Err(reason)) | Err(reason) => Err(reason),
        })
    }
}

/// The reader thread: answers go to the waiting request, exits to the
/// command's [`HeldChild`]. Ends when the holder does.
fn read_reports(socket: &OwnedFd, answers: &mpsc::Sender<Answer>) {
    let mut exits: HashMap<u32, oneshot::Sender<i32>> = HashMap::new();
    let mut buffer = vec![0u8; 4096];
    loop {
        let read = match recv(socket.as_raw_fd(), &mut buffer, MsgFlags::empty()) {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        let report = String::from_utf8_lossy(&buffer[..read]);
        let mut words = report.splitn(3, ' ');
        let number = |word: Option<&str>| word.and_then(|word| word.trim().parse::<i64>().ok());
        match words.next() {
            Some("spawned") => {
                let Some(pid) = number(words.next()).and_then(|pid| u32::try_from(pid).ok()) else {
                    continue;
                };
                let (exit, exited) = oneshot::channel();
                exits.insert(pid, exit);
                let _ = answers.send(Ok((pid, exited)));
            }
            Some("failed") => {
                let reason = report.strip_prefix("failed ").unwrap_or_default();
                let _ = answers.send(Err(reason.to_owned()));
            }
            Some("exited") => {
                let pid = number(words.next()).and_then(|pid| u32::try_from(pid).ok());
                let status = number(words.next()).and_then(|status| i32::try_from(status).ok());
                if let (Some(exit), Some(status)) = (pid.and_then(|pid| exits.remove(&pid)), status)
                {
                    let _ = exit.send(status);
                }
            }
            _ => {}
        }
    }
}

pub(crate) fn encode(
    policy: &str,
    cwd: &Path,
    argv: &[&OsStr],
    env: &[(&OsStr, &OsStr)],
) -> Vec<u8> {
    let mut request = Vec::with_capacity(4096);
    let mut field = |parts: &[&[u8]]| {
        for part in parts {
            request.extend_from_slice(part);
        }
        request.push(0);
    };
    field(&[policy.as_bytes()]);
    field(&[cwd.as_os_str().as_bytes()]);
    field(&[argv.len().to_string().as_bytes()]);
    for arg in argv {
        field(&[arg.as_bytes()]);
    }
    for (name, value) in env {
        field(&[name.as_bytes(), b"=", value.as_bytes()]);
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    fn pipe_end() -> OwnedFd {
        let (_, out) = std::io::pipe().unwrap();
        out.into()
    }

    #[tokio::test]
    async fn a_started_command_reports_its_pid_and_then_its_exit() {
        let (ours, holders) = socket_pair().unwrap();
        let spawner = Spawner::new(ours);
        // A stand-in holder: takes the request (and its two descriptors),
        // answers, and reports the exit after a while.
        let holder = std::thread::spawn(move || {
            let mut buffer = vec![0u8; MAX_REQUEST];
            let read = recv(holders.as_raw_fd(), &mut buffer, MsgFlags::empty()).unwrap();
            assert!(buffer[..read].starts_with(b"{}\0/w\x002\0bash\0-c\0"));
            for report in ["spawned 4242", "exited 4242 768"] {
                nix::sys::socket::send(holders.as_raw_fd(), report.as_bytes(), MsgFlags::empty())
                    .unwrap();
            }
            holders
        });
        let out = pipe_end();
        let argv = [OsStr::new("bash"), OsStr::new("-c")];
        let mut child = spawner
            .spawn("{}", Path::new("/w"), &argv, &[], &out)
            .unwrap()
            .unwrap();
        assert_eq!(child.id(), 4242);
        let status = child.wait().await.unwrap();
        assert_eq!(status.code(), Some(3));
        // A second wait sees the same exit (the select loop waits again).
        assert_eq!(child.wait().await.unwrap().code(), Some(3));
        drop(holder.join().unwrap());
    }

    #[tokio::test]
    async fn an_answer_that_comes_too_late_is_not_the_next_requests_and_its_command_is_ended() {
        let (ours, holders) = socket_pair().unwrap();
        let mut spawner = Spawner::new(ours);
        spawner.timeout = Duration::from_millis(500);
        // The command the late answer names: a group of its own.
        let mut late = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let late_pid = late.id();
        // A stand-in holder stuck on its first request past the timeout,
        // then answering both in order.
        let holder = std::thread::spawn(move || {
            let mut buffer = vec![0u8; MAX_REQUEST];
            recv(holders.as_raw_fd(), &mut buffer, MsgFlags::empty()).unwrap();
            // Past the first wait, well inside the second.
            std::thread::sleep(Duration::from_millis(750));
            let send = |report: String| {
                nix::sys::socket::send(holders.as_raw_fd(), report.as_bytes(), MsgFlags::empty())
                    .unwrap()
            };
            send(format!("spawned {late_pid}"));
            recv(holders.as_raw_fd(), &mut buffer, MsgFlags::empty()).unwrap();
            send("spawned 4343".to_owned());
            holders
        });
        let out = pipe_end();
        let argv = [OsStr::new("true")];
        let first = spawner.spawn("{}", Path::new("/"), &argv, &[], &out);
        assert!(first.unwrap().unwrap_err().contains("did not answer"));
        let second = spawner.spawn("{}", Path::new("/"), &argv, &[], &out);
        assert_eq!(second.unwrap().unwrap().id(), 4343);
        let status = late.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "{status:?}");
        drop(holder.join().unwrap());
    }

    #[tokio::test]
    async fn a_holder_that_is_gone_is_an_error_and_a_huge_request_goes_elsewhere() {
        let (ours, holders) = socket_pair().unwrap();
        let spawner = Spawner::new(ours);
        let out = pipe_end();
        let big = "x".repeat(MAX_REQUEST);
        let huge = [(OsStr::new("BIG"), OsStr::new(&big))];
        let argv = [OsStr::new("true")];
        assert!(
            spawner
                .spawn("{}", Path::new("/"), &argv, &huge, &out)
                .is_none()
        );
        drop(holders);
        let refused = spawner
            .spawn("{}", Path::new("/"), &argv, &[], &out)
            .unwrap()
            .unwrap_err();
        assert!(refused.contains("holder"), "{refused}");
    }
}
