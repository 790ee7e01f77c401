//! The interactive front end: `alcove`, `alcove "prompt"` and `alcove resume`.
//!
//! It consumes the same event stream as `exec --json`, through a channel
//! sink, and answers the permission layer's questions through a channel
//! approver. With a terminal on both stdin and stdout it runs the inline
//! UI (`driver`); otherwise it degrades to plain lines (`plain`).
//!
//! - `app`: the state and everything that changes it; `view`: the viewport.
//! - `conversation`, `cells`, `markdown`, `diff`, `wrap`: how a conversation becomes lines.
//! - `panel`: the live delegation panel; `plan`: the main agent's plan; `approval`: the approver and its prompt.
//! - `editor`: the prompt editor; `commands`: slash commands; `picker`: the resume picker.
//! - `term`: the inline viewport with history written into the scrollback.
//! - `trust_prompt`: the question asked first in a folder not yet trusted.

mod app;
mod approval;
mod cells;
mod conversation;
mod diff;
mod driver;
mod editor;
mod markdown;
mod panel;
mod picker;
mod plain;
mod plan;
mod session_turns;
mod term;
mod theme;
mod trust_prompt;
mod ui_commands;
mod view;
mod wrap;

#[cfg(test)]
mod render_tests;

use std::io::IsTerminal;
use std::path::PathBuf;

use alcove_core::EventSink;
use alcove_protocol::AgentEvent;
use clap::Args;
use tokio::sync::mpsc;

use crate::config::Dirs;
use crate::resume::{SessionInfo, ago, find_session, list_sessions};
use crate::{CommonArgs, UsageError};

/// `alcove resume` arguments.
#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The session id (or its first characters); without it, pick one of this folder's sessions.
    id: Option<String>,
    /// Resume the most recent session of this folder.
    #[arg(long, conflicts_with = "id")]
    last: bool,
}

impl ResumeArgs {
    /// `alcove --resume [ID]` / `alcove --continue`, as `alcove resume`.
    pub(crate) fn new(id: Option<String>, last: bool) -> ResumeArgs {
        ResumeArgs { id, last }
    }
}

/// Where an interactive session starts.
pub(crate) enum Start {
    /// A new conversation, maybe with a first prompt.
    New(Option<String>),
    /// An earlier session, continued.
    Resume(SessionInfo),
    /// Let the user pick one of these sessions.
    Pick(Vec<SessionInfo>),
}

/// Sends every event to the UI loop.
///
/// Unbounded on purpose: `EventSink::emit` is synchronous and runs on the
/// agents' own tasks, so a full bounded channel could only block an agent
/// (stalling its tool calls and its children) or drop an event the UI needs
/// (a `tool_call_finished`, an `agent_ended`). The loop drains it all the
/// time, so it stays short.
pub(crate) struct ChannelSink(pub(crate) mpsc::UnboundedSender<AgentEvent>);

impl EventSink for ChannelSink {
    fn emit(&self, event: &AgentEvent) {
        let _ = self.0.send(event.clone());
    }
}

/// `alcove [PROMPT]`.
pub(crate) async fn run(common: &CommonArgs, prompt: Option<String>) -> anyhow::Result<u8> {
    start(common, Start::New(prompt)).await
}

/// `alcove resume [ID | --last]`.
pub(crate) async fn resume(common: &CommonArgs, args: ResumeArgs) -> anyhow::Result<u8> {
    let dirs = Dirs::from_env().map_err(|err| UsageError(format!("{err:#}")))?;
    if let Some(id) = &args.id {
        let info = find_session(&dirs.data, id)?;
        return start(common, Start::Resume(info)).await;
    }
    let workspace = workspace_root(common)?;
    let sessions = list_sessions(&dirs.data, Some(&workspace));
    if sessions.is_empty() {
        return Err(UsageError(format!(
            "no earlier session in {}; `alcove resume <id>` resumes one from elsewhere",
            workspace.display()
        ))
        .into());
    }
    if args.last {
        let info = sessions
            .into_iter()
            .next()
            .ok_or_else(|| UsageError("no session".to_owned()))?;
        return start(common, Start::Resume(info)).await;
    }
    if !interactive() {
        for info in sessions.iter().take(20) {
            println!("{}  {:>9}  {}", info.id, ago(info.modified), info.title);
        }
        return Err(UsageError(
            "pick one: `alcove resume <id>` or `alcove resume --last`".to_owned(),
        )
        .into());
    }
    start(common, Start::Pick(sessions)).await
}

async fn start(common: &CommonArgs, start: Start) -> anyhow::Result<u8> {
    if interactive() {
        let mut common = common.clone();
        if !trust_prompt::ask_if_needed(&mut common).await? {
            return Ok(0);
        }
        driver::run(&common, start).await
    } else {
        plain::run(common, start).await
    }
}

/// Whether a person is at a terminal on both ends.
fn interactive() -> bool {
    std::io::stdout().is_terminal() && std::io::stdin().is_terminal()
}

/// The canonical workspace folder, as sessions record it.
fn workspace_root(common: &CommonArgs) -> anyhow::Result<PathBuf> {
    Ok(common.workspace()?.root().to_owned())
}
