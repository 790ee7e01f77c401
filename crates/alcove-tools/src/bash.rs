//! The `Bash` tool: runs a shell command in the workspace root.
//!
//! Each command runs in its own process group so that everything it starts —
//! pipelines, background jobs, test runners' workers — can be killed as one
//! on timeout or cancel, and is killed when the command ends: no process
//! outlives the call. Output is captured with bounded memory (head and tail
//! are kept, the middle is counted), because a runaway command must not be
//! able to flood the model's context or the agent's memory. Secrets in the
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
struct CommandEnv {
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

    fn inspect(
        &self,
        input: BashInput,
        workspace: &Workspace,
    ) -> Result<(Invocation, BashInput), String> {
        if input.command.trim().is_empty() {
            return Err("command is empty".into());
        }
        let invocation = Invocation {
            summary: one_line(&input.command),
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
        let (mut output, signal) = run(
            &input.command,
            context.workspace.root(),
            command_env,
            timeout_ms,
            &context.cancel,
            launch.as_ref(),
        )
        .await;
        drop(launch);
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
    fn took(&mut self, read: std::io::Result<usize>, capture: &mut Capture) {
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
    let (output, write_end) = match output_pipe() {
        Ok(pipe) => pipe,
        Err(err) => {
            return (
                ToolOutput::error(format!(
                    "Cannot make a pipe for the command's output: {err}"
                )),
                None,
            );
        }
    };
    let held = match launch {
        Some(launch) => launch.start_held(cwd, &env.kept, &write_end).await,
        None => None,
    };
    let mut shell = match held {
        Some(Ok(child)) => Shell::Held(child),
        Some(Err(reason)) => {
            return (
                ToolOutput::error(format!(
                    "Cannot start the command in {}: {reason}",
                    cwd.display()
                )),
                None,
            );
        }
        None => match spawn_own(command, cwd, &env.removed, launch, &write_end) {
            Ok(child) => Shell::Own(child),
            Err(message) => return (ToolOutput::error(message), None),
        },
    };
    // Only the command holds the write end now: its end is the pipe's end.
    drop(write_end);
    // The shell leads its own group, whose id is its pid; a launcher's
    // pid also names its pids cgroup, if any.
    let shell_pid = shell.id();
    let mut guard = match shell_pid.and_then(|pid| i32::try_from(pid).ok()) {
        Some(pid) => ProcessGroup::led_by(pid),
        None => ProcessGroup::none(),
    };

    let mut capture = Capture::default();
    let mut output = Output {
        pipe: Some(output),
        chunk: Vec::with_capacity(8192),
    };
    let deadline = tokio::time::sleep(Duration::from_millis(timeout_ms));
    tokio::pin!(deadline);
    let outcome = loop {
        tokio::select! {
            read = output.next() => output.took(read, &mut capture),
            status = shell.wait() => break Outcome::Exited(status),
            () = &mut deadline => break Outcome::TimedOut,
            () = cancel.cancelled() => break Outcome::Cancelled,
        }
    };
    if !matches!(outcome, Outcome::Exited(_)) {
        // Read on while it ends: output it prints on SIGTERM must not
        // fill the pipe and block it past its grace.
        let terminated = shell.terminate(&guard);
        tokio::pin!(terminated);
        loop {
            tokio::select! {
                () = &mut terminated => break,
                read = output.next() => output.took(read, &mut capture),
            }
        }
    }
    // Whatever is left of the group (background jobs included) dies now.
    guard.kill();
    let _ = shell.wait().await;
    // A launcher's pids cgroup is named by its pid; the holder keeps its
    // own commands' cgroups.
    if let (Some(pid), Some(_), Shell::Own(_)) = (shell_pid, launch, &shell) {
        alcove_sandbox::limits::remove_cgroup(pid);
    }
    let drain_until = tokio::time::Instant::now() + DRAIN_GRACE;
    while output.pipe.is_some() {
        match tokio::time::timeout_at(drain_until, output.next()).await {
            Ok(read) => output.took(read, &mut capture),
            Err(_) => break,
        }
    }
    guard.disarm();

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
