//! The command sandbox and resource limits, from config and flags.
//!
//! ```toml
//! sandbox = "workspace-write"          # shorthand for [sandbox] mode
//! [sandbox]
//! mode = "workspace-write"             # | "read-only" | "off"; --sandbox wins
//! network = false                      # commands may use the network
//! allow_loopback = false               # with the network off: a loopback of their own
//! deny_read = ["~/.ssh", "~/.aws"]     # replaces the default credential list
//! writable_roots = ["~/.cache/cargo"]  # more folders commands may write
//! auto_allow = true                    # sandboxed Bash runs without approval unless a rule asks
//! [limits]                             # per command; 0 = no limit
//! cpu_secs = 600
//! address_space_mb = 32768
//! processes = 4096
//! file_size_mb = 16384
//! open_files = 4096
//! ```
//!
//! A parent alcove's policy (`--parent-policy`, for an alcove it runs as a
//! process-runner child) carries its sandbox: a ceiling, so the session
//! runs in the stricter of it and its own setting, never looser.
//!
//! A project's own `.alcove/config.toml` lives in the workspace the sandbox
//! lets commands write, so it may only make the sandbox stricter: its
//! `mode` counts when stricter, its other `[sandbox]` keys are ignored with
//! a warning. When the mode is not `off`, the launcher is tried once, on a
//! thread of its own started once the first model reply begins (off the
//! first request's way; [`ProbeStart`]); if this machine cannot confine commands, alcove says so as soon
//! as the probe answers and refuses to run them (never runs them
//! unconfined).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use alcove_core::{EventSink, Runtime};
use alcove_protocol::{AgentEvent, AgentPath, EventKind};
use alcove_tools::{Confinement, SandboxMode, SandboxScope};

use crate::config::Layer;
use crate::{CommonArgs, UsageError};

/// What the session runs commands with.
pub(crate) struct SandboxSetup {
    /// The main agent's scope.
    pub(crate) scope: SandboxScope,
    /// Folders, limits and the launcher.
    pub(crate) confinement: Arc<Confinement>,
    /// Whether sandboxed Bash calls need no approval.
    pub(crate) auto_allow: bool,
    /// Things to tell the user at start.
    pub(crate) warnings: Vec<String>,
}

/// When the sandbox probe may start: once the first model reply has begun
/// (its request is on the wire, and the probe's thread and processes then
/// take nothing from it), after [`PROBE_AT_THE_LATEST`] if no reply has, or
/// when the session ends. A sink of the session's events.
#[derive(Default)]
pub(crate) struct ProbeStart {
    notify: tokio::sync::Notify,
    started: std::sync::atomic::AtomicBool,
}

/// How long the probe waits for the first reply to begin.
const PROBE_AT_THE_LATEST: std::time::Duration = std::time::Duration::from_millis(50);

impl ProbeStart {
    /// Lets the probe start now.
    pub(crate) fn now(&self) {
        if !self
            .started
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            self.notify.notify_one();
        }
    }
}

impl EventSink for ProbeStart {
    fn emit(&self, event: &AgentEvent) {
        if matches!(
            event.kind,
            EventKind::TextDelta { .. }
                | EventKind::ThinkingDelta { .. }
                | EventKind::Usage { .. }
                | EventKind::ModelRetry { .. }
                | EventKind::StreamRestarted { .. }
        ) {
            self.now();
        }
    }
}

/// Starts the probe when `start` says and reports, once it has answered,
/// that this machine cannot confine commands (if so): a task of its own.
/// A confined command that comes first starts the probe itself and waits
/// for it. Await the handle before the session's end (after
/// [`ProbeStart::now`]).
pub(crate) fn report_unavailable(
    setup: &SandboxSetup,
    runtime: &Runtime,
    start: Arc<ProbeStart>,
) -> tokio::task::JoinHandle<()> {
    let confinement = setup.confinement.clone();
    let mode = setup.scope.mode;
    let runtime = runtime.clone();
    tokio::spawn(async move {
        let _ = tokio::time::timeout(PROBE_AT_THE_LATEST, start.notify.notified()).await;
        if let Err(reason) = confinement.availability.settled().await {
            let message = format!(
                "the {} sandbox is not available on this machine: {reason}. Bash commands will \
                 be refused; run alcove with --sandbox off to run them unconfined.",
                mode.as_str()
            );
            runtime.emit(&AgentPath::main(), EventKind::Warning { message });
        }
    })
}

/// Reads the layers and `--sandbox`, and starts probing the machine when
/// confined ([`report_unavailable`] says what the probe found).
pub(crate) fn setup(
    layers: &[Layer],
    common: &CommonArgs,
    workspace: &Path,
    ceiling: Option<SandboxScope>,
) -> Result<SandboxSetup, UsageError> {
    let settings = crate::settings::sandbox::read(layers)?;
    let warnings = settings.warnings.clone();
    let table = &settings.table;
    let mut mode = crate::settings::sandbox::mode(common.sandbox.as_deref(), &settings)?;
    if let Some(ceiling) = ceiling {
        mode = mode.stricter(ceiling.mode);
    }
    let scope = SandboxScope {
        mode,
        network: (mode == SandboxMode::Off || table.network.unwrap_or(false))
            && ceiling.is_none_or(|ceiling| ceiling.network),
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let launcher = std::env::current_exe()
        .map_err(|err| UsageError(format!("cannot find the alcove binary: {err}")))?;
    let mut confinement = Confinement::new(launcher, home.as_deref());
    let resolve = |text: &String| resolve_path(text, home.as_deref(), workspace);
    if let Some(deny) = &table.deny_read {
        confinement.deny_read = deny.iter().map(resolve).collect();
    }
    if let Some(roots) = &table.writable_roots {
        confinement.writable_roots = roots.iter().map(resolve).collect();
    }
    confinement.allow_loopback = table.allow_loopback.unwrap_or(false);
    confinement.limits = settings.limits;
    if scope.is_confined() {
        confinement.defer_probe();
    }
    Ok(SandboxSetup {
        scope,
        auto_allow: scope.is_confined() && table.auto_allow.unwrap_or(true),
        confinement: Arc::new(confinement),
        warnings,
    })
}

/// `~/x` against the home folder, a relative path against the workspace.
fn resolve_path(text: &str, home: Option<&Path>, workspace: &Path) -> PathBuf {
    match (text.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if text == "~" => home.map_or_else(|| PathBuf::from(text), Path::to_owned),
        _ => workspace.join(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_against_home_and_workspace() {
        let home = Path::new("/home/u");
        let ws = Path::new("/w");
        assert_eq!(resolve_path("~/.ssh", Some(home), ws), home.join(".ssh"));
        assert_eq!(resolve_path("/abs", Some(home), ws), PathBuf::from("/abs"));
        assert_eq!(resolve_path("out", Some(home), ws), ws.join("out"));
    }
}
