//! Running one hook command: `sh -c` in the workspace, in its own process
//! group, the event's JSON on stdin, bounded output, a timeout that kills the
//! whole group, and sensitive variables removed from its environment.
//!
//! A hook is user code that runs on every tool call of every agent; it must
//! neither hang a session (the timeout kills everything it started) nor see
//! the session's API keys (the caller names the variables to remove, by the
//! same policy as Bash commands: `alcove_tools::EnvPolicy`).

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alcove_tools::ProcessGroup;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::task::JoinHandle;

/// The most bytes kept of each of stdout and stderr.
const OUTPUT_CAP: usize = 256 * 1024;
/// How long to keep reading after the shell exited (a background process
/// that inherited the pipes could hold them open forever).
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal ended it.
    Signal,
    /// It ran past its timeout and its process group was killed.
    TimedOut,
    /// It could not be started.
    NotStarted(String),
}

/// What a command did.
#[derive(Debug, Clone)]
pub(crate) struct Ran {
    pub(crate) exit: Exit,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// What a hook command runs with.
pub(crate) struct Invocation<'a> {
    pub(crate) command: &'a str,
    pub(crate) cwd: &'a Path,
    pub(crate) env_remove: &'a [String],
    pub(crate) env_add: &'a [(String, String)],
    pub(crate) stdin: Vec<u8>,
    pub(crate) timeout: Duration,
}

/// Runs one command to its end or its timeout.
pub(crate) async fn run(invocation: Invocation<'_>) -> Ran {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(invocation.command)
        .current_dir(invocation.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for name in invocation.env_remove {
        command.env_remove(name);
    }
    for (name, value) in invocation.env_add {
        command.env(name, value);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            return Ran {
                exit: Exit::NotStarted(err.to_string()),
                stdout: String::new(),
                stderr: String::new(),
            };
        }
    };
    let mut group = ProcessGroup::of(&child);
    if let Some(mut stdin) = child.stdin.take() {
        let payload = invocation.stdin;
        // A hook that never reads its stdin must not block us: write aside.
        tokio::spawn(async move {
            let _ = stdin.write_all(&payload).await;
        });
    }
    let (stdout, stdout_task) = collect(child.stdout.take());
    let (stderr, stderr_task) = collect(child.stderr.take());

    let waited = tokio::time::timeout(invocation.timeout, child.wait()).await;
    let exit = match waited {
        Ok(Ok(status)) => {
            // Finished by itself: what it left in the background is its own.
            group.disarm();
            match status.code() {
                Some(code) => Exit::Code(code),
                None => Exit::Signal,
            }
        }
        Ok(Err(err)) => Exit::NotStarted(err.to_string()),
        Err(_) => {
            group.kill();
            group.disarm();
            let _ = child.kill().await;
            Exit::TimedOut
        }
    };
    let _ = tokio::time::timeout(DRAIN_GRACE, async {
        let _ = stdout_task.await;
        let _ = stderr_task.await;
    })
    .await;
    Ran {
        exit,
        stdout: take(&stdout),
        stderr: take(&stderr),
    }
}

type Buffer = Arc<Mutex<Vec<u8>>>;

/// Reads a pipe to its end into a shared buffer, keeping the first
/// `OUTPUT_CAP` bytes (and draining the rest so the writer never blocks).
fn collect<R: AsyncRead + Unpin + Send + 'static>(pipe: Option<R>) -> (Buffer, JoinHandle<()>) {
    let buffer: Buffer = Arc::default();
    let shared = buffer.clone();
    let task = tokio::spawn(async move {
        let Some(mut pipe) = pipe else {
            return;
        };
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(read) => {
                    if let Ok(mut buffer) = shared.lock() {
                        let room = OUTPUT_CAP.saturating_sub(buffer.len());
                        buffer.extend_from_slice(&chunk[..read.min(room)]);
                    }
                }
            }
        }
    });
    (buffer, task)
}

fn take(buffer: &Buffer) -> String {
    buffer
        .lock()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation<'a>(command: &'a str, cwd: &'a Path, timeout_ms: u64) -> Invocation<'a> {
        Invocation {
            command,
            cwd,
            env_remove: &[],
            env_add: &[],
            stdin: b"{\"hello\": 1}".to_vec(),
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    #[tokio::test]
    async fn stdin_stdout_stderr_and_status() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run(invocation(
            "cat; echo oops >&2; pwd >&2; exit 3",
            dir.path(),
            10_000,
        ))
        .await;
        assert_eq!(ran.exit, Exit::Code(3));
        assert_eq!(ran.stdout, "{\"hello\": 1}");
        assert!(ran.stderr.starts_with("oops\n"));
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        assert!(
            ran.stderr.contains(&cwd.display().to_string()),
            "{}",
            ran.stderr
        );
    }

    #[tokio::test]
    async fn timeouts_kill_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let ran = run(invocation(
            "sleep 30 & echo $! > bg.pid; echo started; sleep 30",
            dir.path(),
            500,
        ))
        .await;
        assert_eq!(ran.exit, Exit::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(ran.stdout, "started\n");
        let pid = std::fs::read_to_string(dir.path().join("bg.pid")).unwrap();
        let pid: i32 = pid.trim().parse().unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        assert!(stat.is_empty() || state.starts_with('Z'), "{stat}");
    }

    #[tokio::test]
    async fn an_abandoned_run_kills_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let run = run(invocation(
            "sleep 30 & echo $! > bg.pid; wait",
            dir.path(),
            60_000,
        ));
        let pid_file = dir.path().join("bg.pid");
        let waiting = async {
            while std::fs::read_to_string(&pid_file).map_or(true, |text| !text.ends_with('\n')) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            _ = run => panic!("the hook finished"),
            () = waiting => {}
        }
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        assert!(stat.is_empty() || state.starts_with('Z'), "{stat}");
    }

    #[tokio::test]
    async fn removed_variables_are_absent_and_added_ones_present() {
        let dir = tempfile::tempdir().unwrap();
        let remove = ["HOME".to_owned()];
        let add = [("HOOK_TEST_VAR".to_owned(), "yes".to_owned())];
        let ran = run(Invocation {
            env_remove: &remove,
            env_add: &add,
            ..invocation(
                "echo \"home=${HOME:-unset} var=$HOOK_TEST_VAR\"",
                dir.path(),
                10_000,
            )
        })
        .await;
        assert_eq!(ran.exit, Exit::Code(0));
        assert_eq!(ran.stdout, "home=unset var=yes\n");
    }
}
