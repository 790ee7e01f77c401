//! The `Bash` tool: runs a shell command in the workspace root.
//!
//! Each command runs in its own process group so that everything it starts —
//! pipelines, background jobs, test runners' workers — can be killed as one
//! on timeout or cancel, and is killed when the command ends: no process
//! outlives the call. With `run_in_background` the call returns once the
//! command has started, and `background.rs` watches it until it ends or is
//! stopped (its agent's end at the latest). Output is captured with bounded
//! memory (head and tail are kept, the middle is counted), because a
//! runaway command must not be able to flood the model's context or the
//! agent's memory. Secrets in the
//! agent's environment (API keys, `*_TOKEN`, …) are removed from the
//! command's environment as its [`EnvPolicy`] says.
//!
//! With a [`Confinement`] (what the CLI always gives), the command is
//! started through alcove's sandbox launcher, which applies the calling
//! agent's [`SandboxScope`](alcove_sandbox::SandboxScope) and the resource
//! limits before it runs the shell; a failure the sandbox or a limit
//! probably caused gets a line saying so.

use crate::capture::Capture;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use alcove_protocol::ToolSpec;
use alcove_sandbox::{Confinement, HeldChild, Launch};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use crate::background::{BackgroundScope, BackgroundSlot};
use crate::{
    Access, Effects, EnvPolicy, Invocation, ProcessGroup, ToolContext, ToolOutput, TypedTool,
    Workspace,
};

const NAME: &str = "Bash";
const DESCRIPTION: &str = "Runs a bash command in the workspace; returns stdout and stderr. \
Each call is a fresh shell (cd does not persist); stdin is closed. Prefer Read, Glob, Grep, \
Edit and Write over cat, find, grep and sed.";

/// Default timeout, in milliseconds.
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout accepted, in milliseconds; larger values are clamped.
const MAX_TIMEOUT_MS: u64 = 600_000;
/// How long a SIGTERMed group gets before SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(200);
/// How long to keep reading the output pipe after the group was killed (a
/// process that escaped the group with `setsid` could hold it open
/// forever). Once every writer is gone the pipe ends at once, so this is
/// only waited in full for such an escapee; 500 ms lost a command's whole
/// output when its readers were starved on a loaded machine.
const DRAIN_GRACE: Duration = Duration::from_secs(3);

/// Arguments of `Bash`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashInput {
    /// The command.
    command: String,
    /// Timeout in ms (default 120000, max 600000).
    timeout: Option<u64>,
    /// What it does, in 5-10 words.
    #[allow(dead_code)] // Read by people in transcripts, not by the tool.
    description: Option<String>,
    /// Run it in the background (servers, watchers); read it with BashOutput.
    run_in_background: Option<bool>,
}

/// The `Bash` tool.
pub struct Bash {
    spec: ToolSpec,
    env: EnvPolicy,
    confinement: Option<Arc<Confinement>>,
    /// The environment commands get, read at the first call.
    command_env: OnceLock<CommandEnv>,
}

/// The agent's environment as its commands get it. Read once: alcove never
/// changes its own environment while it runs, and reading and filtering
/// it for every command was a sixth of a `Bash` call's instructions.
pub(crate) struct CommandEnv {
    /// The names [`EnvPolicy`] removes, for a command alcove starts itself.
    removed: Vec<String>,
    /// Every other variable, for a command the sandbox holder starts.
    kept: Vec<(OsString, OsString)>,
}

impl CommandEnv {
    fn of(policy: &EnvPolicy) -> CommandEnv {
        let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        let removed = policy.names_to_remove(vars.iter().map(|(name, value)| (name, value)));
        let kept = vars
            .into_iter()
            .filter(|(name, _)| !removed.iter().any(|removed| name == removed.as_str()))
            .collect();
        CommandEnv { removed, kept }
    }
}

impl Default for Bash {
    /// Removes every sensitive variable from the command's environment.
    fn default() -> Self {
        Bash::with_env_policy(EnvPolicy::default())
    }
}

impl Bash {
    /// A `Bash` tool whose commands' environment follows `env`.
    pub fn with_env_policy(env: EnvPolicy) -> Bash {
        Bash {
            spec: crate::tool_spec!(BashInput, NAME, DESCRIPTION),
            env,
            confinement: None,
            command_env: OnceLock::new(),
        }
    }

    /// The same tool, running every command through the sandbox launcher
    /// as the calling agent's scope and `confinement` say.
    pub fn confined(mut self, confinement: Arc<Confinement>) -> Bash {
        self.confinement = Some(confinement);
        self
    }
}

#[async_trait::async_trait]
impl TypedTool for Bash {
    type Input = BashInput;
    type Call = BashInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::Execute
    }

    fn concurrency_safe(&self) -> bool {
        false
    }

    fn uses_background(&self) -> bool {
        true
    }

    fn inspect(
        &self,
        input: BashInput,
        workspace: &Workspace,
    ) -> Result<(Invocation, BashInput), String> {
        if input.command.trim().is_empty() {
            return Err("command is empty".into());
        }
        // An approval prompt says the command would keep running.
        let mut summary = one_line(&input.command);
        if input.run_in_background == Some(true) {
            summary.push_str(" (in the background)");
        }
        let invocation = Invocation {
            summary,
            paths: vec![workspace.root().to_path_buf()],
            command: Some(input.command.clone()),
        };
        Ok((invocation, input))
    }

    async fn call(&self, input: BashInput, context: &ToolContext) -> ToolOutput {
        let timeout_ms = match input.timeout {
            None | Some(0) => DEFAULT_TIMEOUT_MS,
            Some(ms) => ms.min(MAX_TIMEOUT_MS),
        };
        let command_env = self.command_env.get_or_init(|| CommandEnv::of(&self.env));
        // Taken first: a command over the limit is never started.
        let background = match (input.run_in_background, &context.background) {
            (Some(true), Some(scope)) => match scope.shells.reserve() {
                Ok(slot) => Some((scope, slot)),
                Err(reason) => return ToolOutput::error(reason),
            },
            (Some(true), None) => {
                return ToolOutput::error("Background commands are not available here.");
            }
            _ => None,
        };
        let launch = match &self.confinement {
            None => None,
            Some(confinement) => match confinement.launch(
                context.sandbox,
                context.workspace.root(),
                "bash",
                &["-c", &input.command],
            ) {
                Ok(launch) => launch,
                Err(reason) => return ToolOutput::error(reason),
            },
        };
        if let Some((scope, slot)) = background {
            return start_in_background(scope, slot, &input.command, command_env, launch, context)
                .await;
        }
        let (mut output, signal) = run(
            &input.command,
            context.workspace.root(),
            command_env,
            timeout_ms,
            &context.cancel,
            launch.as_ref(),
        )
        .await;
        let planted = launch
            .as_ref()
            .map(Launch::undo_git_plants)
            .unwrap_or_default();
        drop(launch);
        if !planted.is_empty() {
            output.is_error = true;
            output.content.push('\n');
            output.content.push_str(&planted_note(&planted));
        }
        if let (true, Some(confinement)) = (output.is_error, &self.confinement) {
            let note = signal
                .and_then(|signal| confinement.limits.explain_signal(signal))
                .or_else(|| confinement.explain_denial(context.sandbox, &output.content))
                .or_else(|| confinement.limits.explain_output(&output.content));
            if let Some(note) = note {
                output.content.push('\n');
                output.content.push_str(&note);
            }
        }
        output
    }
}

/// Starts `command` as a background command of the calling agent: the
/// answer says its id and how to read and stop it.
async fn start_in_background(
    scope: &BackgroundScope,
    slot: BackgroundSlot,
    command: &str,
    env: &CommandEnv,
    launch: Option<Launch>,
    context: &ToolContext,
) -> ToolOutput {
    let running = match start(command, context.workspace.root(), env, launch.as_ref()).await {
        Ok(running) => running,
        Err(reason) => return ToolOutput::error(reason),
    };
    let (id, pid) = scope.shells.watch(
        slot,
        context.agent.clone(),
        one_line(command),
        running,
        launch,
        context.cancel.clone(),
        scope.emit.clone(),
    );
    let pid = pid.map(|pid| format!(", pid {pid}")).unwrap_or_default();
    ToolOutput::ok(format!(
        "Command running in background with ID: {id}{pid}. Read its output with BashOutput \
         (bash_id \"{id}\"); stop it with KillShell (shell_id \"{id}\"). It is stopped when \
         you end, on interrupt, and at the session's end."
    ))
}

/// What the answer says when a command created files git would read from
/// the git folder (and alcove removed them).
fn planted_note(planted: &[std::path::PathBuf]) -> String {
    let names: Vec<String> = planted
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    format!(
        "[sandbox] Refused: the command created {}, which would make git (the user's and \
         alcove's) take its config and hooks from elsewhere; alcove removed it. Commands may \
         not write a repository's commondir, config or hooks.",
        names.join(", ")
    )
}

/// The command's first line, shortened, for approval prompts and logs.
fn one_line(command: &str) -> String {
    let first = command.trim().lines().next().unwrap_or_default();
    let mut line: String = first.chars().take(200).collect();
    if line.len() < first.len() || command.trim().lines().nth(1).is_some() {
        line.push_str(" …");
    }
    line
}

/// Why the wait for the command ended.
enum Outcome {
    Exited(std::io::Result<ExitStatus>),
    TimedOut,
    Cancelled,
}

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

/// Runs `command` (through `launch` when given); the result and the signal
/// that killed the shell, if one did.
async fn run(
    command: &str,
    cwd: &Path,
    env: &CommandEnv,
    timeout_ms: u64,
    cancel: &CancellationToken,
    launch: Option<&Launch>,
) -> (ToolOutput, Option<i32>) {
    let mut running = match start(command, cwd, env, launch).await {
        Ok(running) => running,
        Err(message) => return (ToolOutput::error(message), None),
    };
    let mut capture = Capture::default();
    let stop = async {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(timeout_ms)) => Outcome::TimedOut,
            () = cancel.cancelled() => Outcome::Cancelled,
        }
    };
    let outcome = match running.wait_reading(&mut capture, stop).await {
        Ok(status) => Outcome::Exited(status),
        Err(stopped) => stopped,
    };
    if !matches!(outcome, Outcome::Exited(_)) {
        running.terminate(&mut capture).await;
    }
    running.finish(&mut capture).await;

    let printed = capture.total;
    let text = capture.render();
    let mut content = if text.trim().is_empty() {
        "(no output)".to_owned()
    } else {
        text.trim_end().to_owned()
    };
    let effects = |exit_code| Effects {
        exit_code,
        bytes: Some(printed),
        ..Effects::default()
    };
    let exit_code = match &outcome {
        Outcome::Exited(Ok(status)) => status.code(),
        _ => None,
    };
    let signal = match &outcome {
        Outcome::Exited(Ok(status)) => signal_of(status),
        _ => None,
    };
    let status_line = match outcome {
        Outcome::Exited(Ok(status)) if status.success() => {
            return (ToolOutput::ok(content).with_effects(effects(Some(0))), None);
        }
        Outcome::Exited(Ok(_)) => match (exit_code, signal) {
            (Some(code), _) => format!("Exit code: {code}"),
            (None, Some(signal)) => format!("Killed by signal {signal}"),
            (None, None) => "Exited abnormally".to_owned(),
        },
        Outcome::Exited(Err(err)) => format!("Could not wait for the command: {err}"),
        Outcome::TimedOut => {
            format!("Command timed out after {timeout_ms} ms; its process group was killed")
        }
        Outcome::Cancelled => "Command cancelled; its process group was killed".to_owned(),
    };
    content.push('\n');
    content.push_str(&status_line);
    (
        ToolOutput::error(content).with_effects(effects(exit_code)),
        signal,
    )
}

fn signal_of(status: &ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn removed_variables_are_absent_from_the_command_environment() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let removed = CommandEnv {
            removed: vec!["HOME".to_owned()],
            kept: Vec::new(),
        };
        let (out, _) = run(
            "echo \"home=${HOME:-unset}\"",
            dir.path(),
            &removed,
            10_000,
            &cancel,
            None,
        )
        .await;
        assert!(out.content.contains("home=unset"), "{}", out.content);
        let nothing_removed = CommandEnv {
            removed: Vec::new(),
            kept: Vec::new(),
        };
        let (kept, _) = run(
            "echo \"home=${HOME:-unset}\"",
            dir.path(),
            &nothing_removed,
            10_000,
            &cancel,
            None,
        )
        .await;
        assert!(!kept.content.contains("home=unset"), "{}", kept.content);
    }

    #[test]
    fn one_line_summaries() {
        assert_eq!(one_line("cargo test"), "cargo test");
        assert_eq!(one_line("a\nb"), "a …");
        assert_eq!(one_line(&"x".repeat(300)).chars().count(), 202);
    }
}
