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
use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use alcove_protocol::ToolSpec;
use alcove_sandbox::{Confinement, Launch};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::background::{BackgroundScope, BackgroundSlot};
use crate::started_command::start;
use crate::{
    Access, Effects, EnvPolicy, Invocation, ToolContext, ToolOutput, TypedTool, Workspace,
};

const NAME: &str = "Bash";
const DESCRIPTION: &str = "Runs a bash command in the workspace; returns stdout and stderr. \
Each call is a fresh shell (cd does not persist); stdin is closed. Prefer Read, Glob, Grep, \
Edit and Write over cat, find, grep and sed.";

/// Default timeout, in milliseconds.
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout accepted, in milliseconds; larger values are clamped.
const MAX_TIMEOUT_MS: u64 = 600_000;

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
    pub(crate) removed: Vec<String>,
    /// Every other variable, for a command the sandbox holder starts.
    pub(crate) kept: Vec<(OsString, OsString)>,
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
