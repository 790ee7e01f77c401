//! Background commands: `Bash {run_in_background: true}` starts a command
//! and returns at once; `BashOutput` reads what it printed since the last
//! read; `KillShell` ends it.
//!
//! A session has one [`BackgroundShells`] (on the core's `Runtime`, lent
//! to these three tools per call, so no tool holds it), which bounds how
//! many run at once and keeps a bounded buffer of each one's unread
//! output. Each command is started exactly as a foreground `Bash` call
//! (`started_command::start`: the caller's sandbox, its own process group) and
//! watched by a task of its own, which reads its pipe, so it never blocks
//! on a full pipe, and ends its whole group when it exits or is stopped.
//! Nothing is left behind: a command is stopped when the call's run is
//! cancelled (an interrupt), when the agent that started it ends
//! ([`BackgroundShells::kill_owned_by`], from the child lifecycle), and at
//! the session's end ([`BackgroundShells::kill_all`]); its task dropped
//! (the runtime going away) kills its group too.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use alcove_protocol::{AgentPath, EventKind};
use alcove_sandbox::Launch;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::started_command::{OutputSink, Running};

/// Emits an event as the calling agent; dispatch lends it with the
/// session's [`BackgroundShells`].
pub type Emit = Arc<dyn Fn(EventKind) + Send + Sync>;

/// What a background-command tool gets with its call
/// ([`crate::ToolContext::background`]).
#[derive(Clone)]
pub struct BackgroundScope {
    /// The session's background commands.
    pub shells: Arc<BackgroundShells>,
    /// Events from the calling agent (started and ended).
    pub emit: Emit,
}

/// How many background commands may run at once, and how much unread
/// output each keeps.
#[derive(Debug, Clone, Copy)]
pub struct BackgroundLimits {
    /// Commands running at once in the session, every agent's together.
    pub max_running: usize,
    /// Bytes of unread output kept per command; older output is dropped
    /// (and counted) once more is unread.
    pub output_bytes: usize,
}

/// The default of [`BackgroundLimits::max_running`].
pub const DEFAULT_MAX_RUNNING: usize = 8;
/// The default of [`BackgroundLimits::output_bytes`]: 64 KiB, about what
/// one tool result may carry.
pub const DEFAULT_OUTPUT_BYTES: usize = 64 * 1024;
/// Ended commands kept for a last `BashOutput`; older ones are forgotten.
const ENDED_KEPT: usize = 16;

impl Default for BackgroundLimits {
    fn default() -> BackgroundLimits {
        BackgroundLimits {
            max_running: DEFAULT_MAX_RUNNING,
            output_bytes: DEFAULT_OUTPUT_BYTES,
        }
    }
}

/// A session's background commands.
pub struct BackgroundShells {
    limits: BackgroundLimits,
    slots: Arc<Semaphore>,
    next: AtomicU64,
    shells: Mutex<Vec<Arc<Shell>>>,
}

impl Default for BackgroundShells {
    fn default() -> BackgroundShells {
        BackgroundShells::new(BackgroundLimits::default())
    }
}

/// One background command.
struct Shell {
    id: String,
    owner: AgentPath,
    /// The command's first line, shortened.
    command: String,
    pid: Option<u32>,
    started: Instant,
    state: Mutex<State>,
    /// Asks its task to end it; `kill_reason` says who asked.
    stop: CancellationToken,
    kill_reason: Mutex<Option<String>>,
    /// Cancelled by its task once the command is reaped and its pipe read.
    ended: CancellationToken,
}

/// What a command printed and not yet read, and how it ended.
#[derive(Default)]
struct State {
    unread: VecDeque<u8>,
    /// Unread bytes dropped since the last read (the buffer was full).
    dropped: u64,
    /// How it ended, once it has.
    end: Option<End>,
}

/// How a background command ended.
#[derive(Debug, Clone)]
struct End {
    exit_code: Option<i32>,
    signal: Option<i32>,
    /// Who stopped it, when it did not end by itself.
    killed: Option<String>,
}

/// A background command as `/status` and the UI list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundInfo {
    /// Its id (`bash_1`).
    pub id: String,
    /// The agent that started it.
    pub owner: AgentPath,
    /// Its first line, shortened.
    pub command: String,
    /// Its shell's pid (its process group's id).
    pub pid: Option<u32>,
}

/// A place among the commands that may run at once, taken before a
/// command starts.
pub struct BackgroundSlot {
    _permit: OwnedSemaphorePermit,
}

impl BackgroundShells {
    /// No commands yet, with `limits`.
    pub fn new(limits: BackgroundLimits) -> BackgroundShells {
        BackgroundShells {
            limits,
            slots: Arc::new(Semaphore::new(limits.max_running)),
            next: AtomicU64::new(1),
            shells: Mutex::new(Vec::new()),
        }
    }

    /// The limits.
    pub fn limits(&self) -> BackgroundLimits {
        self.limits
    }

    fn list(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Shell>>> {
        self.shells.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for one more command, or why there is none.
    pub fn reserve(&self) -> Result<BackgroundSlot, String> {
        match self.slots.clone().try_acquire_owned() {
            Ok(permit) => Ok(BackgroundSlot { _permit: permit }),
            Err(_) => {
                let running: Vec<String> = self
                    .running()
                    .iter()
                    .map(|shell| format!("{} ({})", shell.id, shell.command))
                    .collect();
                Err(format!(
                    "{} background commands are running, the most a session may run at once \
                     ([background] max_running): {}. End one with KillShell first.",
                    self.limits.max_running,
                    running.join(", ")
                ))
            }
        }
    }

    /// The commands still running, oldest first.
    pub fn running(&self) -> Vec<BackgroundInfo> {
        self.list()
            .iter()
            .filter(|shell| !shell.ended.is_cancelled())
            .map(|shell| BackgroundInfo {
                id: shell.id.clone(),
                owner: shell.owner.clone(),
                command: shell.command.clone(),
                pid: shell.pid,
            })
            .collect()
    }

    /// Watches `running`, a command `owner` started in `slot`, on a task of
    /// its own until it ends or is stopped (also when `cancel` fires);
    /// `launch` is kept while it runs (its private temporary folder).
    /// Returns its id; `emit` gets its `background_started` now and its
    /// `background_ended` at its end.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn watch(
        &self,
        slot: BackgroundSlot,
        owner: AgentPath,
        command: String,
        running: Running,
        launch: Option<Launch>,
        cancel: CancellationToken,
        emit: Emit,
    ) -> (String, Option<u32>) {
        let id = format!("bash_{}", self.next.fetch_add(1, Ordering::Relaxed));
        let shell = Arc::new(Shell {
            id: id.clone(),
            owner,
            command,
            pid: running.pid,
            started: Instant::now(),
            state: Mutex::new(State::default()),
            stop: CancellationToken::new(),
            kill_reason: Mutex::new(None),
            ended: CancellationToken::new(),
        });
        {
            let mut list = self.list();
            let ended = list
                .iter()
                .filter(|shell| shell.ended.is_cancelled())
                .count();
            if ended >= ENDED_KEPT
                && let Some(oldest) = list.iter().position(|shell| shell.ended.is_cancelled())
            {
                list.remove(oldest);
            }
            list.push(shell.clone());
        }
        emit(EventKind::BackgroundStarted {
            id: id.clone(),
            command: shell.command.clone(),
            pid: shell.pid,
        });
        let pid = shell.pid;
        let buffer = self.limits.output_bytes;
        tokio::spawn(async move {
            let _slot = slot;
            let _launch = launch;
            // `ended` fires however the task ends, so no one waits for a
            // command whose task is gone.
            let ended = shell.ended.clone().drop_guard();
            watch(&shell, running, buffer, cancel).await;
            let end = shell.lock().end.clone().unwrap_or(End {
                exit_code: None,
                signal: None,
                killed: None,
            });
            emit(EventKind::BackgroundEnded {
                id: shell.id.clone(),
                exit_code: end.exit_code,
                killed: end.killed.is_some(),
            });
            drop(ended);
        });
        (id, pid)
    }

    /// The command `id` that `caller` may see: its own, or one of its
    /// descendants'.
    fn find(&self, caller: &AgentPath, id: &str) -> Result<Arc<Shell>, String> {
        let list = self.list();
        let visible = |shell: &&Arc<Shell>| owned_within(&shell.owner, caller);
        if let Some(shell) = list.iter().filter(visible).find(|shell| shell.id == id) {
            return Ok(shell.clone());
        }
        let ids: Vec<&str> = list
            .iter()
            .filter(visible)
            .map(|shell| shell.id.as_str())
            .collect();
        Err(if ids.is_empty() {
            format!(
                "No background command `{id}`: you have started none (Bash with run_in_background: true)."
            )
        } else {
            format!(
                "No background command `{id}` of yours; yours are: {}.",
                ids.join(", ")
            )
        })
    }

    /// What `id` printed since the last read (only the lines `filter`
    /// matches, when given: the others are read too) and whether it runs.
    pub fn read(
        &self,
        caller: &AgentPath,
        id: &str,
        filter: Option<&regex::Regex>,
    ) -> Result<String, String> {
        let shell = self.find(caller, id)?;
        let (bytes, dropped, end) = {
            let mut state = shell.lock();
            let bytes: Vec<u8> = state.unread.drain(..).collect();
            let dropped = std::mem::take(&mut state.dropped);
            (bytes, dropped, state.end.clone())
        };
        let mut out = shell.status_line(end.as_ref());
        if dropped > 0 {
            let kept = match self.limits.output_bytes {
                bytes if bytes >= 1024 => format!("{} KiB", bytes / 1024),
                bytes => format!("{bytes} bytes"),
            };
            out.push_str(&format!(
                "\n[{dropped} bytes of older output were dropped: only the last {kept} unread are kept]"
            ));
        }
        // The kept bytes may start inside a character whose start was dropped.
        let skip = if dropped > 0 {
            bytes.iter().take_while(|b| **b & 0xC0 == 0x80).count()
        } else {
            0
        };
        let text = String::from_utf8_lossy(&bytes[skip..]);
        let text = match filter {
            None => text.trim_end().to_owned(),
            Some(filter) => {
                let lines: Vec<&str> = text.lines().collect();
                let kept: Vec<&str> = lines
                    .iter()
                    .copied()
                    .filter(|line| filter.is_match(line))
                    .collect();
                if kept.len() < lines.len() {
                    out.push_str(&format!(
                        "\n[{} of {} new lines matched the filter; the others were read and are gone]",
                        kept.len(),
                        lines.len()
                    ));
                }
                kept.join("\n")
            }
        };
        out.push('\n');
        out.push_str(if text.is_empty() {
            "(no new output)"
        } else {
            &text
        });
        Ok(out)
    }

    /// Ends `id` (its whole process group: SIGTERM, SIGKILL after a short
    /// grace) and waits until it is gone; what it printed last stays to
    /// be read.
    pub async fn kill(&self, caller: &AgentPath, id: &str) -> Result<String, String> {
        let shell = self.find(caller, id)?;
        if shell.ended.is_cancelled() {
            return Ok(format!(
                "{}; nothing to stop.",
                shell.status_line(shell.lock().end.as_ref())
            ));
        }
        shell.stop_for("KillShell");
        shell.ended.cancelled().await;
        Ok(format!(
            "{}. Its process group is gone.",
            shell.status_line(shell.lock().end.as_ref())
        ))
    }

    /// Ends every command `owner` started (not its descendants': each
    /// ends with its own agent) and waits until they are gone.
    pub async fn kill_owned_by(&self, owner: &AgentPath, reason: &str) {
        self.kill_where(|shell| &shell.owner == owner, reason).await;
    }

    /// Ends every command of the session and waits until they are gone.
    pub async fn kill_all(&self, reason: &str) {
        self.kill_where(|_| true, reason).await;
    }

    async fn kill_where(&self, which: impl Fn(&Shell) -> bool, reason: &str) {
        let shells: Vec<Arc<Shell>> = self
            .list()
            .iter()
            .filter(|shell| !shell.ended.is_cancelled() && which(shell))
            .cloned()
            .collect();
        for shell in &shells {
            shell.stop_for(reason);
        }
        for shell in &shells {
            shell.ended.cancelled().await;
        }
    }
}

/// Whether a command `owner` started is `caller`'s to see: its own or a
/// descendant's.
fn owned_within(owner: &AgentPath, caller: &AgentPath) -> bool {
    owner == caller
        || owner
            .as_str()
            .strip_prefix(caller.as_str())
            .is_some_and(|rest| rest.starts_with('/'))
}

impl Shell {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stop_for(&self, reason: &str) {
        let mut kill_reason = self
            .kill_reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        kill_reason.get_or_insert_with(|| reason.to_owned());
        self.stop.cancel();
    }

    /// `bash_1 (python3 -m http.server): running, pid 1234, for 12 s`.
    fn status_line(&self, end: Option<&End>) -> String {
        let state = match end {
            None => format!(
                "running, pid {}, for {} s",
                self.pid
                    .map_or_else(|| "?".to_owned(), |pid| pid.to_string()),
                self.started.elapsed().as_secs()
            ),
            Some(End {
                killed: Some(by), ..
            }) => format!("killed ({by})"),
            Some(End {
                exit_code: Some(code),
                ..
            }) => format!("exited with code {code}"),
            Some(End {
                signal: Some(signal),
                ..
            }) => format!("killed by signal {signal}"),
            Some(_) => "ended".to_owned(),
        };
        format!("{} ({}): {state}", self.id, self.command)
    }
}

/// The buffer a command's task fills.
struct Unread<'a> {
    shell: &'a Shell,
    limit: usize,
}

impl OutputSink for Unread<'_> {
    fn push(&mut self, chunk: &[u8]) {
        let mut state = self.shell.lock();
        state.unread.extend(chunk);
        let excess = state.unread.len().saturating_sub(self.limit);
        if excess > 0 {
            state.unread.drain(..excess);
            state.dropped += u64::try_from(excess).unwrap_or(u64::MAX);
        }
    }
}

/// Reads the command's output until it exits, or until it is stopped or
/// `cancel` fires (then its group is ended); records how it ended.
async fn watch(shell: &Shell, mut running: Running, limit: usize, cancel: CancellationToken) {
    let mut sink = Unread { shell, limit };
    let stop = async {
        tokio::select! {
            () = shell.stop.cancelled() => {}
            () = cancel.cancelled() => shell.stop_for("interrupted"),
        }
    };
    let end = match running.wait_reading(&mut sink, stop).await {
        Ok(Ok(status)) => {
            use std::os::unix::process::ExitStatusExt;
            End {
                exit_code: status.code(),
                signal: status.signal(),
                killed: None,
            }
        }
        Ok(Err(_)) => End {
            exit_code: None,
            signal: None,
            killed: None,
        },
        Err(()) => {
            running.terminate(&mut sink).await;
            let by = shell
                .kill_reason
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
                .unwrap_or_else(|| "stopped".to_owned());
            End {
                exit_code: None,
                signal: None,
                killed: Some(by),
            }
        }
    };
    // Whatever is left of its group (its own background jobs) ends now.
    running.finish(&mut sink).await;
    shell.lock().end = Some(end);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(id: &str, owner: AgentPath) -> Arc<Shell> {
        Arc::new(Shell {
            id: id.to_owned(),
            owner,
            command: "watch".to_owned(),
            pid: Some(1),
            started: Instant::now(),
            state: Mutex::new(State::default()),
            stop: CancellationToken::new(),
            kill_reason: Mutex::new(None),
            ended: CancellationToken::new(),
        })
    }

    #[test]
    fn unread_output_keeps_the_newest_bytes_and_says_how_many_were_dropped() {
        let shells = BackgroundShells::new(BackgroundLimits {
            max_running: 1,
            output_bytes: 16,
        });
        let main = AgentPath::main();
        let watched = shell("bash_1", main.clone());
        shells.list().push(watched.clone());
        let mut sink = Unread {
            shell: &watched,
            limit: 16,
        };
        sink.push(b"line one\nline two\nline three\n");
        let text = shells.read(&main, "bash_1", None).unwrap();
        assert!(text.starts_with("bash_1 (watch): running, pid 1"), "{text}");
        assert!(
            text.contains("[13 bytes of older output were dropped"),
            "{text}"
        );
        assert!(text.ends_with("\n two\nline three"), "{text}");
        let again = shells.read(&main, "bash_1", None).unwrap();
        assert!(again.ends_with("(no new output)"), "{again}");

        sink.push(b"GET a\nno\nGET b\n");
        let filter = regex::Regex::new("^GET").unwrap();
        let text = shells.read(&main, "bash_1", Some(&filter)).unwrap();
        assert!(text.ends_with("\nGET a\nGET b"), "{text}");
        assert!(text.contains("2 of 3 new lines matched"), "{text}");

        let child = main.child("agent-1");
        let refused = shells.read(&child, "bash_1", None).unwrap_err();
        assert!(refused.contains("you have started none"), "{refused}");
        watched.lock().end = Some(End {
            exit_code: Some(3),
            signal: None,
            killed: None,
        });
        let ended = shells.read(&main, "bash_1", None).unwrap();
        assert!(
            ended.starts_with("bash_1 (watch): exited with code 3"),
            "{ended}"
        );
    }

    #[test]
    fn a_caller_sees_its_own_commands_and_its_descendants() {
        let main = AgentPath::main();
        let child = main.child("agent-1");
        assert!(owned_within(&main, &main));
        assert!(owned_within(&child, &main));
        assert!(!owned_within(&main, &child));
        assert!(!owned_within(&main.child("agent-10"), &child));
    }
}
