//! A shell command started for the model: its shell (alcove's own child or
//! the sandbox holder's), the process group it leads, and the one pipe its
//! stdout and stderr share.
//!
//! Shared by foreground `Bash` calls (`bash.rs`) and background commands
//! (`background.rs`), so both start, read, stop and reap a command the same
//! way: SIGTERM to the whole group, SIGKILL after a grace, the pipe drained
//! with a bound (a `setsid` escapee could hold it open forever).

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use alcove_sandbox::{HeldChild, Launch};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

use crate::ProcessGroup;
use crate::bash::CommandEnv;
use crate::capture::Capture;

/// How long a SIGTERMed group gets before SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(200);
/// How long to keep reading the output pipe after the group was killed (a
/// process that escaped the group with `setsid` could hold it open
/// forever). Once every writer is gone the pipe ends at once, so this is
/// only waited in full for such an escapee; 500 ms lost a command's whole
/// output when its readers were starved on a loaded machine.
const DRAIN_GRACE: Duration = Duration::from_secs(3);

fn spawn(
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    remove: &[String],
    launch: Option<&Launch>,
    output: &OwnedFd,
) -> std::io::Result<Child> {
    let mut process = Command::new(program);
    for name in remove {
        process.env_remove(name);
    }
    for (name, value) in launch
        .map(|launch| launch.env.as_slice())
        .unwrap_or_default()
    {
        process.env(name, value);
    }
    process
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output.try_clone()?)
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
}

/// The running shell: alcove's own child, or (confined, in the session's
/// network namespace) the sandbox holder's.
enum Shell {
    Own(Child),
    Held(HeldChild),
}

impl Shell {
    fn id(&self) -> Option<u32> {
        match self {
            Shell::Own(child) => child.id(),
            Shell::Held(child) => Some(child.id()),
        }
    }

    async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        match self {
            Shell::Own(child) => child.wait().await,
            Shell::Held(child) => child.wait().await,
        }
    }

    /// SIGTERM to the group, SIGKILL after `TERM_GRACE`.
    async fn terminate(&mut self, group: &ProcessGroup) {
        match self {
            Shell::Own(child) => group.terminate(child, TERM_GRACE).await,
            Shell::Held(child) => group.stop(child.wait(), TERM_GRACE).await,
        }
    }
}

/// The one pipe a command's stdout and stderr both write to, so its output
/// reaches the model in the order it was written, and alcove reads it in the
/// task that waits for the command (one descriptor to watch, no reader tasks
/// to start and no channel between them: bench/notes.md, point 37).
fn output_pipe() -> std::io::Result<(tokio::net::unix::pipe::Receiver, OwnedFd)> {
    let (read, write) = std::io::pipe()?;
    let read = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(read))?;
    Ok((read, OwnedFd::from(write)))
}

/// The reading end of a command's output pipe and the buffer each read
/// fills.
struct Output {
    /// `None` once the pipe has ended, or failed and been dropped.
    pipe: Option<tokio::net::unix::pipe::Receiver>,
    chunk: Vec<u8>,
}

impl Output {
    /// The next read into `chunk`; never ready once the pipe is gone.
    /// Cancel-safe: a read dropped unfinished has read nothing.
    async fn next(&mut self) -> std::io::Result<usize> {
        match &mut self.pipe {
            Some(pipe) => pipe.read_buf(&mut self.chunk).await,
            None => std::future::pending().await,
        }
    }

    /// Keeps what a read gave. At the pipe's end, or when reading failed
    /// (said in the output), the pipe is dropped: a writer still there
    /// gets EPIPE instead of blocking on a pipe no one reads.
    fn took(&mut self, read: std::io::Result<usize>, capture: &mut impl OutputSink) {
        match read {
            Ok(0) => self.pipe = None,
            Ok(_) => {
                capture.push(&self.chunk);
                self.chunk.clear();
            }
            Err(err) => {
                capture.push(format!("\n[alcove: reading the output failed: {err}]\n").as_bytes());
                self.pipe = None;
            }
        }
    }
}

/// Starts `command` as alcove's own child (through the launcher when
/// `launch` is given); the error is the tool's answer's text.
fn spawn_own(
    command: &str,
    cwd: &Path,
    remove: &[String],
    launch: Option<&Launch>,
    output: &OwnedFd,
) -> Result<Child, String> {
    let shell_args = [OsString::from("-c"), OsString::from(command)];
    let (program, args) = match launch {
        Some(launch) => (launch.program.as_path(), launch.args.as_slice()),
        None => (Path::new("bash"), shell_args.as_slice()),
    };
    match spawn(program, args, cwd, remove, launch, output) {
        Err(err)
            if err.kind() == std::io::ErrorKind::NotFound && cwd.is_dir() && launch.is_none() =>
        {
            spawn(Path::new("sh"), args, cwd, remove, None, output)
                .map_err(|err| format!("Cannot start a shell (bash or sh): {err}"))
        }
        Err(err) => Err(format!(
            "Cannot start {} in {}: {err}",
            program.display(),
            cwd.display()
        )),
        Ok(child) => Ok(child),
    }
}

/// A started command: its shell, the process group it leads and the
/// reading end of its output pipe. Shared by foreground calls ([`run`])
/// and background commands (`background.rs`).
pub(crate) struct Running {
    shell: Shell,
    guard: ProcessGroup,
    output: Output,
    /// The shell's pid, also its group's id.
    pub(crate) pid: Option<u32>,
    /// Whether it was started through the launcher, whose pid names its
    /// pids cgroup.
    launched: bool,
}

/// Starts `command` (through `launch` when given); the error is the
/// tool's answer's text.
pub(crate) async fn start(
    command: &str,
    cwd: &Path,
    env: &CommandEnv,
    launch: Option<&Launch>,
) -> Result<Running, String> {
    let (output, write_end) = output_pipe()
        .map_err(|err| format!("Cannot make a pipe for the command's output: {err}"))?;
    let held = match launch {
        Some(launch) => launch.start_held(cwd, &env.kept, &write_end).await,
        None => None,
    };
    let shell = match held {
        Some(Ok(child)) => Shell::Held(child),
        Some(Err(reason)) => {
            return Err(format!(
                "Cannot start the command in {}: {reason}",
                cwd.display()
            ));
        }
        None => Shell::Own(spawn_own(command, cwd, &env.removed, launch, &write_end)?),
    };
    // Only the command holds the write end now: its end is the pipe's end.
    drop(write_end);
    // The shell leads its own group, whose id is its pid; a launcher's
    // pid also names its pids cgroup, if any.
    let pid = shell.id();
    let guard = match pid.and_then(|pid| i32::try_from(pid).ok()) {
        Some(pid) => ProcessGroup::led_by(pid),
        None => ProcessGroup::none(),
    };
    Ok(Running {
        launched: launch.is_some() && matches!(shell, Shell::Own(_)),
        shell,
        guard,
        output: Output {
            pipe: Some(output),
            chunk: Vec::with_capacity(8192),
        },
        pid,
    })
}

impl Running {
    /// Reads its output into `sink` until the shell exits, or `stop`
    /// comes first (then what it gave).
    pub(crate) async fn wait_reading<T>(
        &mut self,
        sink: &mut impl OutputSink,
        stop: impl std::future::Future<Output = T>,
    ) -> Result<std::io::Result<ExitStatus>, T> {
        tokio::pin!(stop);
        loop {
            tokio::select! {
                read = self.output.next() => self.output.took(read, sink),
                status = self.shell.wait() => break Ok(status),
                stopped = &mut stop => break Err(stopped),
            }
        }
    }

    /// SIGTERM to the group, SIGKILL after `TERM_GRACE`, reading on
    /// meanwhile: output it prints on SIGTERM must not fill the pipe and
    /// block it past its grace.
    pub(crate) async fn terminate(&mut self, sink: &mut impl OutputSink) {
        let terminated = self.shell.terminate(&self.guard);
        tokio::pin!(terminated);
        loop {
            tokio::select! {
                () = &mut terminated => break,
                read = self.output.next() => self.output.took(read, sink),
            }
        }
    }

    /// Kills what is left of the group (background jobs included), reaps
    /// the shell and reads what is left in the pipe.
    pub(crate) async fn finish(mut self, sink: &mut impl OutputSink) {
        self.guard.kill();
        let _ = self.shell.wait().await;
        // A launcher's pids cgroup is named by its pid; the holder keeps
        // its own commands' cgroups.
        if let (Some(pid), true) = (self.pid, self.launched) {
            alcove_sandbox::limits::remove_cgroup(pid);
        }
        let drain_until = tokio::time::Instant::now() + DRAIN_GRACE;
        while self.output.pipe.is_some() {
            match tokio::time::timeout_at(drain_until, self.output.next()).await {
                Ok(read) => self.output.took(read, sink),
                Err(_) => break,
            }
        }
        self.guard.disarm();
    }
}

/// Where a command's output goes as it is read.
pub(crate) trait OutputSink {
    /// Keeps `chunk`.
    fn push(&mut self, chunk: &[u8]);
}

impl OutputSink for Capture {
    fn push(&mut self, chunk: &[u8]) {
        Capture::push(self, chunk);
    }
}
