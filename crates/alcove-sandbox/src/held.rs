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

use std::collections::{HashMap, VecDeque};
use std::ffi::OsStr;
use std::io::IoSlice;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::socket::{
    AddressFamily, ControlMessage, MsgFlags, SockFlag, SockType, recv, sendmsg, socketpair,
};
use nix::unistd::Pid;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
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
type Answer = Result<Started, String>;

/// A started command on its way to its request. Dropped unclaimed (the
/// request gave up, or was itself dropped, before it read the answer), it
/// ends the command's process group: nobody would wait for it or stop it.
#[derive(Debug)]
struct Started {
    pid: u32,
    exit: Option<oneshot::Receiver<i32>>,
}

impl Started {
    /// The command, now its request's to wait for and stop.
    fn claim(mut self) -> Option<HeldChild> {
        let exit = self.exit.take()?;
        Some(HeldChild {
            pid: self.pid,
            exit,
            status: None,
        })
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.exit.is_some() {
            let _ = killpg(Pid::from_raw(self.pid.cast_signed()), Signal::SIGKILL);
        }
    }
}

/// Alcove's side of the socket: sends requests and routes the holder's
/// reports, which a task reads as they come (the socket is one more
/// descriptor in the runtime's poll: a report wakes no thread of its own,
/// and no worker waits in a blocking call while the holder starts a
/// command, which can take milliseconds: bench/notes.md, point 38). A
/// request is sent without waiting for room: a holder whose socket is full
/// is not taking requests, and the launcher runs the command instead. A
/// started command whose request is gone by the time its answer comes
/// (timed out, or dropped with its agent) is ended.
#[derive(Debug)]
pub(crate) struct Spawner {
    socket: OwnedFd,
    /// Who waits for what; shared with the reading task.
    routes: Arc<Mutex<Routes>>,
    /// How long a request waits for its answer.
    timeout: Duration,
}

/// Where the holder's reports go.
#[derive(Debug, Default)]
struct Routes {
    /// One per request sent and not yet answered, oldest first: the holder
    /// answers in the order it was asked. A request that stopped waiting
    /// (the holder can wait on a child's `chdir` into a hung mount) leaves
    /// its sender here; its late answer goes nowhere and its command is
    /// ended.
    waiting: VecDeque<oneshot::Sender<Answer>>,
    /// The exits to report, by pid.
    exits: HashMap<u32, oneshot::Sender<i32>>,
    /// Whether the reading task has started (a session that runs no
    /// command starts none).
    reading: bool,
    /// Whether the holder has ended: no answer will come.
    ended: bool,
}

impl Spawner {
    /// Alcove's side of `socket`.
    pub(crate) fn new(socket: OwnedFd) -> Spawner {
        Spawner {
            socket,
            routes: Arc::default(),
            timeout: ANSWER_TIMEOUT,
        }
    }

    /// Starts the task reading the holder's reports (on the current
    /// runtime).
    fn start_reader(&self) -> Result<(), String> {
        let reading = self
            .socket
            .try_clone()
            .map_err(|err| format!("cannot share the holder's socket: {err}"))?;
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|err| format!("cannot read the holder's reports: {err}"))?;
        let _entered = runtime.enter();
        let reading =
            register(reading).map_err(|err| format!("cannot read the holder's reports: {err}"))?;
        runtime.spawn(read_reports(reading, self.routes.clone()));
        Ok(())
    }

    /// Asks the holder to run `argv` in `cwd` with exactly `env`, confined
    /// by `policy` (JSON), its stdout and stderr both going to `output`
    /// (the holder's protocol takes the two apart; alcove gives one pipe).
    /// `None` when the request is too large to send (the caller uses the
    /// launcher instead).
    pub(crate) async fn spawn(
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
        let answer = match self.send(&request, output) {
            Ok(Some(answer)) => answer,
            // The holder has not taken the requests before (it may be stuck
            // on one): the launcher runs this command.
            Ok(None) => return None,
            Err(reason) => return Some(Err(reason)),
        };
        Some(match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(Ok(started))) => started.claim().ok_or_else(|| HOLDER_ENDED.to_owned()),
            Ok(Ok(Err(reason))) => Err(reason),
            Ok(Err(_)) => Err(HOLDER_ENDED.to_owned()),
            Err(_) => Err("the session's sandbox holder did not answer".to_owned()),
        })
    }

    /// Sends `request` with `output` (twice: stdout and stderr) and
    /// returns where its answer will come; `None` when the socket is full
    /// (the send never blocks: a stuck holder must not hold a worker).
    fn send(
        &self,
        request: &[u8],
        output: &OwnedFd,
    ) -> Result<Option<oneshot::Receiver<Answer>>, String> {
        let mut routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        if routes.ended {
            return Err(HOLDER_ENDED.to_owned());
        }
        if !routes.reading {
            self.start_reader()?;
            routes.reading = true;
        }
        let fds = [output.as_raw_fd(), output.as_raw_fd()];
        // Sent under the lock: answers come in the order of `waiting`.
        let sent = sendmsg::<()>(
            self.socket.as_raw_fd(),
            &[IoSlice::new(request)],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT,
            None,
        );
        match sent {
            Err(Errno::EAGAIN) => Ok(None),
            Err(err) => Err(format!("cannot reach the session's sandbox holder: {err}")),
            Ok(_) => {
                let (answer, answered) = oneshot::channel();
                routes.waiting.push_back(answer);
                Ok(Some(answered))
            }
        }
    }
}

/// `socket` in the current runtime's poll, for reading.
#[allow(unsafe_code)]
fn register(socket: OwnedFd) -> std::io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: an `OwnedFd` is open and names the same open file until it
    // is dropped, and the `AsyncFd` owns it for its whole life.
    unsafe { AsyncFd::register_with_interest(socket, Interest::READABLE) }
        .map_err(|err| err.into_parts().1)
}

/// Why a request got no answer.
const HOLDER_ENDED: &str = "the session's sandbox holder has ended";

/// The reading task: answers go to the waiting request, exits to the
/// command's [`HeldChild`]. Ends when the holder does, and with it every
/// wait.
async fn read_reports(socket: AsyncFd<OwnedFd>, routes: Arc<Mutex<Routes>>) {
    // However the task ends (the holder gone, its runtime shut down), no
    // request or wait is left waiting for it.
    let _ended = ReaderEnded(routes.clone());
    let mut buffer = vec![0u8; 4096];
    loop {
        let Ok(mut ready) = socket.readable().await else {
            break;
        };
        let read = ready.try_io(|socket| {
            recv(socket.as_raw_fd(), &mut buffer, MsgFlags::MSG_DONTWAIT)
                .map_err(std::io::Error::from)
        });
        match read {
            // Nothing there after all: readiness is cleared, wait again.
            Err(_would_block) => {}
            Ok(Ok(0) | Err(_)) => break,
            Ok(Ok(read)) => route(&buffer[..read], &routes),
        }
    }
}

/// Ends every wait on the reader when it goes.
struct ReaderEnded(Arc<Mutex<Routes>>);

impl Drop for ReaderEnded {
    fn drop(&mut self) {
        let mut routes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        routes.ended = true;
        routes.waiting.clear();
        routes.exits.clear();
    }
}

/// Hands one report to whoever waits for it.
fn route(report: &[u8], routes: &Mutex<Routes>) {
    let mut routes = routes.lock().unwrap_or_else(PoisonError::into_inner);
    let report = String::from_utf8_lossy(report);
    let mut words = report.splitn(3, ' ');
    let number = |word: Option<&str>| word.and_then(|word| word.trim().parse::<i64>().ok());
    match words.next() {
        Some("spawned") => {
            let Some(pid) = number(words.next()).and_then(|pid| u32::try_from(pid).ok()) else {
                return;
            };
            let (exit, exited) = oneshot::channel();
            let started = Started {
                pid,
                exit: Some(exited),
            };
            routes.exits.insert(pid, exit);
            // A request that has given up drops it, and with it the command.
            match routes.waiting.pop_front() {
                Some(waiting) => drop(waiting.send(Ok(started))),
                None => drop(started),
            }
        }
        Some("failed") => {
            let reason = report.strip_prefix("failed ").unwrap_or_default();
            if let Some(waiting) = routes.waiting.pop_front() {
                let _ = waiting.send(Err(reason.to_owned()));
            }
        }
        Some("exited") => {
            let pid = number(words.next()).and_then(|pid| u32::try_from(pid).ok());
            let status = number(words.next()).and_then(|status| i32::try_from(status).ok());
            if let (Some(exit), Some(status)) =
                (pid.and_then(|pid| routes.exits.remove(&pid)), status)
            {
                let _ = exit.send(status);
            }
        }
        _ => {}
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

    /// A stand-in holder takes one request and returns its bytes.
    fn take_request(holders: &OwnedFd) -> Vec<u8> {
        let mut buffer = vec![0u8; MAX_REQUEST];
        let read = recv(holders.as_raw_fd(), &mut buffer, MsgFlags::empty()).unwrap();
        buffer.truncate(read);
        buffer
    }

    /// A stand-in holder sends one report.
    fn report(holders: &OwnedFd, text: &str) {
        nix::sys::socket::send(holders.as_raw_fd(), text.as_bytes(), MsgFlags::empty()).unwrap();
    }

    /// A command an answer can name: a process group of its own.
    fn command_of_its_own() -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap()
    }

    #[tokio::test]
    async fn a_started_command_reports_its_pid_and_then_its_exit() {
        let (ours, holders) = socket_pair().unwrap();
        let spawner = Spawner::new(ours);
        // A stand-in holder: takes the request (and its two descriptors),
        // answers, and reports the exit after a while.
        let holder = std::thread::spawn(move || {
            let request = take_request(&holders);
            assert!(request.starts_with(b"{}\0/w\x002\0bash\0-c\0"));
            for text in ["spawned 4242", "exited 4242 768"] {
                report(&holders, text);
            }
            holders
        });
        let out = pipe_end();
        let argv = [OsStr::new("bash"), OsStr::new("-c")];
        let mut child = spawner
            .spawn("{}", Path::new("/w"), &argv, &[], &out)
            .await
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
    async fn waiting_for_the_holder_leaves_the_runtime_free_for_other_tasks() {
        let (ours, holders) = socket_pair().unwrap();
        let mut spawner = Spawner::new(ours);
        spawner.timeout = Duration::from_secs(5);
        // A stand-in holder that answers only once another task of this
        // (single-threaded) runtime has run: a request that blocked its
        // thread while waiting would never let that task run.
        let (ran, other_task_ran) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            take_request(&holders);
            other_task_ran
                .recv_timeout(Duration::from_secs(10))
                .unwrap();
            report(&holders, "spawned 4545");
            holders
        });
        let other = tokio::spawn(async move {
            // Runs only when the request's task yields the thread.
            ran.send(()).unwrap();
        });
        let out = pipe_end();
        let argv = [OsStr::new("true")];
        let child = spawner
            .spawn("{}", Path::new("/"), &argv, &[], &out)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(child.id(), 4545);
        other.await.unwrap();
        drop(holder.join().unwrap());
    }

    #[tokio::test]
    async fn an_answer_that_comes_too_late_is_not_the_next_requests_and_its_command_is_ended() {
        let (ours, holders) = socket_pair().unwrap();
        let mut spawner = Spawner::new(ours);
        spawner.timeout = Duration::from_millis(500);
        // The command the late answer names: a group of its own.
        let mut late = command_of_its_own();
        let late_pid = late.id();
        // A stand-in holder stuck on its first request past the timeout,
        // then answering both in order.
        let holder = std::thread::spawn(move || {
            take_request(&holders);
            // Past the first wait, well inside the second.
            std::thread::sleep(Duration::from_millis(750));
            report(&holders, &format!("spawned {late_pid}"));
            take_request(&holders);
            report(&holders, "spawned 4343");
            holders
        });
        let out = pipe_end();
        let argv = [OsStr::new("true")];
        let first = spawner.spawn("{}", Path::new("/"), &argv, &[], &out).await;
        assert!(first.unwrap().unwrap_err().contains("did not answer"));
        let second = spawner.spawn("{}", Path::new("/"), &argv, &[], &out).await;
        assert_eq!(second.unwrap().unwrap().id(), 4343);
        let status = late.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "{status:?}");
        drop(holder.join().unwrap());
    }

    #[tokio::test]
    async fn a_command_whose_request_was_dropped_before_its_answer_is_ended() {
        let (ours, holders) = socket_pair().unwrap();
        let spawner = Spawner::new(ours);
        let started = command_of_its_own();
        let pid = started.id();
        // A stand-in holder that answers after the request is gone.
        let holder = std::thread::spawn(move || {
            take_request(&holders);
            std::thread::sleep(Duration::from_millis(300));
            report(&holders, &format!("spawned {pid}"));
            holders
        });
        let out = pipe_end();
        let argv = [OsStr::new("true")];
        // The call is dropped (its agent stopped, say) while it waits.
        let dropped = tokio::time::timeout(
            Duration::from_millis(50),
            spawner.spawn("{}", Path::new("/"), &argv, &[], &out),
        )
        .await;
        assert!(dropped.is_err());
        // Waited for off the runtime, which the reader needs meanwhile.
        let status = tokio::task::spawn_blocking(move || {
            let mut started = started;
            started.wait()
        })
        .await
        .unwrap()
        .unwrap();
        assert_eq!(status.signal(), Some(9), "{status:?}");
        drop(holder.join().unwrap());
    }

    #[tokio::test]
    async fn a_holder_that_takes_no_requests_leaves_them_to_the_launcher() {
        let (ours, holders) = socket_pair().unwrap();
        // A small send buffer: a few requests fill it on any machine.
        nix::sys::socket::setsockopt(&ours, nix::sys::socket::sockopt::SndBuf, &(256 * 1024))
            .unwrap();
        let mut spawner = Spawner::new(ours);
        spawner.timeout = Duration::from_millis(20);
        let out = pipe_end();
        let big = "x".repeat(MAX_REQUEST / 2);
        let env = [(OsStr::new("BIG"), OsStr::new(&big))];
        let argv = [OsStr::new("true")];
        // Nothing reads `holders`: the socket fills, and a request that
        // would wait for room goes to the launcher instead.
        let mut answers = Vec::new();
        for _ in 0..16 {
            let answer = spawner.spawn("{}", Path::new("/"), &argv, &env, &out).await;
            let full = answer.is_none();
            answers.push(answer);
            if full {
                break;
            }
        }
        assert!(answers.last().is_some_and(Option::is_none), "{answers:?}");
        assert!(
            answers[..answers.len() - 1]
                .iter()
                .all(|answer| answer.as_ref().is_some_and(|answer| answer
                    .as_ref()
                    .is_err_and(|reason| reason.contains("did not answer")))),
            "{answers:?}"
        );
        drop(holders);
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
                .await
                .is_none()
        );
        drop(holders);
        let refused = spawner
            .spawn("{}", Path::new("/"), &argv, &[], &out)
            .await
            .unwrap()
            .unwrap_err();
        assert!(refused.contains("holder"), "{refused}");
    }
}
