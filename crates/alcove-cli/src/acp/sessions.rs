//! The ACP sessions of one connection, and what each request does to them.
//!
//! Each ACP session is one alcove session, opened as `exec` and the TUI
//! open theirs (`session.rs`), with this front end's sinks (`updates.rs`)
//! and approver (`approver.rs`): its id is the alcove session id, so
//! `session/load` finds the transcript, and its children's subagent
//! sessions are `<id>/main/agent-N`. A prompt runs the main agent's turn
//! on a task of its own under a cancellation token of its own, so
//! `session/cancel` cancels it as Esc does (every tool call is answered by
//! the loop), and a cancel naming a child's session cancels that child and
//! its descendants only (`Supervisor::cancel_agent`). The model a prompt
//! runs on is the session's config option (`models.rs`); Read sees the
//! editor's buffers when the client offers them (`buffers.rs`).

mod offers;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, ContentBlock as AcpBlock, EmbeddedResourceResource, McpServer,
    SessionConfigOption, SessionUpdate, StopReason,
};
use agent_client_protocol::{Client, Error, ErrorCode};
use alcove_core::{EventSink, PermissionMode, run_agent};
use alcove_protocol::{AgentPath, ContentBlock, EventKind, Message, RunStatus, Usage};
use tokio_util::sync::CancellationToken;

use super::approver::{AcpApprover, ModeGate};
use super::models;
use super::replay;
use super::updates::Updates;
use crate::CommonArgs;
use crate::session::{FrontEnd, Session};
use offers::MODE_OPTION;

/// One open ACP session.
pub(crate) struct Live {
    session: Session,
    updates: Arc<Updates>,
    gate: Arc<ModeGate>,
    /// The options it was opened with (`--cd` the client's cwd).
    common: CommonArgs,
    history: tokio::sync::Mutex<Vec<Message>>,
    /// The running prompt's token.
    turn: Mutex<Option<CancellationToken>>,
    mode: Mutex<PermissionMode>,
    /// The model the next prompt runs on.
    model: Mutex<models::Chosen>,
}

/// Every session of the connection.
pub(crate) struct Sessions {
    common: CommonArgs,
    subagents: std::sync::atomic::AtomicBool,
    /// Whether the client serves `fs/read_text_file` (its buffers).
    editor_files: std::sync::atomic::AtomicBool,
    open: Mutex<HashMap<String, Arc<Live>>>,
}

/// A JSON-RPC error with `message`.
fn error(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::new(code, message)
}

impl Sessions {
    pub(crate) fn new(common: CommonArgs) -> Sessions {
        Sessions {
            common,
            subagents: Default::default(),
            editor_files: Default::default(),
            open: Mutex::default(),
        }
    }

    /// What the client offers (`initialize`): subagent sessions, and its
    /// buffers through `fs/read_text_file`.
    pub(crate) fn set_client(&self, subagents: bool, editor_files: bool) {
        self.subagents
            .store(subagents, std::sync::atomic::Ordering::Relaxed);
        self.editor_files
            .store(editor_files, std::sync::atomic::Ordering::Relaxed);
    }

    fn live(&self, id: &str) -> Option<Arc<Live>> {
        self.open.lock().ok().and_then(|open| open.get(id).cloned())
    }

    /// The session `id` names: an open one, or the one owning the subagent session `id`.
    fn owner(&self, id: &str) -> Result<(Arc<Live>, Option<AgentPath>), Error> {
        if let Some(live) = self.live(id) {
            return Ok((live, None));
        }
        let open: Vec<Arc<Live>> = self
            .open
            .lock()
            .map(|open| open.values().cloned().collect())
            .unwrap_or_default();
        open.into_iter()
            .find_map(|live| {
                let child = live.updates.child_of_session(id)?;
                Some((live, Some(child)))
            })
            .ok_or_else(|| unknown_session(id))
    }

    /// `session/new` and `session/load`: opens an alcove session in `cwd`.
    pub(crate) async fn open(
        &self,
        connection: ConnectionTo<Client>,
        cwd: &Path,
        mcp_servers: Vec<McpServer>,
        resume: Option<String>,
    ) -> Result<Arc<Live>, Error> {
        if !cwd.is_absolute() {
            return Err(error(
                ErrorCode::INVALID_PARAMS,
                format!("cwd must be an absolute path, got {}", cwd.display()),
            ));
        }
        let mut common = self.common.clone();
        common.cd = Some(cwd.to_owned());
        let workspace = common
            .workspace()
            .map_err(|err| error(ErrorCode::INVALID_PARAMS, format!("{err:#}")))?;
        let extra_mcp = mcp_servers
            .into_iter()
            .map(super::mcp::server_config)
            .collect::<Result<Vec<_>, String>>()
            .map_err(|message| error(ErrorCode::INVALID_PARAMS, message))?;
        let updates = Arc::new(Updates::new(
            connection,
            self.subagents.load(std::sync::atomic::Ordering::Relaxed),
            workspace.root().to_owned(),
        ));
        // The gate comes with the session; the approver reads it through this.
        let gate = Arc::new(ModeGate::new(Arc::new(alcove_core::PermissionGate::new(
            PermissionMode::DontAsk,
        ))));
        let front_end = FrontEnd {
            sinks: vec![updates.clone() as Arc<dyn EventSink>],
            approver: Arc::new(AcpApprover::new(updates.clone(), gate.clone(), workspace)),
            max_turns: None,
            resume: resume.clone(),
            extra_mcp,
            file_source: self
                .editor_files
                .load(std::sync::atomic::Ordering::Relaxed)
                .then(|| {
                    Arc::new(super::buffers::EditorBuffers::new(updates.clone()))
                        as Arc<dyn alcove_tools::FileSource>
                }),
        };
        let session = Session::open(&common, front_end)
            .await
            .map_err(|err| error(ErrorCode::INVALID_PARAMS, format!("{err:#}")))?;
        let id = session.id.clone();
        // ACP has no way to ask the editor's user about trust: an
        // untrusted folder stays so (`alcove trust`, or `alcove acp
        // --trust` in the editor's agent command, trusts it).
        if let Some(notice) = &session.trust_notice {
            eprintln!("alcove: warning: {notice}");
        }
        updates.set_top(
            id.clone(),
            session.config.pricing.get(&session.model_name).copied(),
        );
        gate.switch(session.gate.clone());
        session.runtime.hooks.session_start().await;
        session.ready().await;
        let history = crate::resume::continue_history(&session);
        let mode = session.gate.mode();
        let model = Mutex::new(models::Chosen::of(&session));
        let live = Arc::new(Live {
            session,
            updates,
            gate,
            common,
            history: tokio::sync::Mutex::new(history),
            turn: Mutex::default(),
            mode: Mutex::new(mode),
            model,
        });
        if let Ok(mut open) = self.open.lock() {
            open.insert(id, live.clone());
        }
        Ok(live)
    }

    /// Everything `session/list` shows.
    pub(crate) fn list(
        &self,
        cwd: Option<&Path>,
    ) -> Vec<agent_client_protocol::v1::schema::SessionInfo> {
        match crate::config::Dirs::from_env() {
            Ok(dirs) => replay::list(&dirs.data, cwd),
            Err(_) => Vec::new(),
        }
    }

    /// `session/prompt`: runs one turn of the main agent.
    /// Answers with how it stopped and the tokens the whole tree used.
    pub(crate) async fn prompt(
        &self,
        id: &str,
        blocks: Vec<AcpBlock>,
    ) -> Result<(StopReason, Usage), Error> {
        let (live, child) = self.owner(id)?;
        if child.is_some() {
            return Err(error(
                ErrorCode::INVALID_PARAMS,
                format!("{id} is a subagent session: it takes no prompts of its own"),
            ));
        }
        let cancel = CancellationToken::new();
        {
            let Ok(mut turn) = live.turn.lock() else {
                return Err(error(ErrorCode::INTERNAL_ERROR, "session state poisoned"));
            };
            if turn.as_ref().is_some_and(|turn| !turn.is_cancelled()) {
                return Err(error(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "session {id} is already running a prompt; cancel it or wait for its stopReason"
                    ),
                ));
            }
            *turn = Some(cancel.clone());
        }
        let (text, images) = prompt_content(&blocks);
        // Tokens used between prompts (a spawned child working on) count
        // for none; the turn's own are counted from here.
        live.updates.take_turn_usage();
        let stop = live.run_turn(text, images, cancel).await;
        let usage = live.updates.take_turn_usage();
        if let Ok(mut turn) = live.turn.lock() {
            *turn = None;
        }
        stop.map(|stop| (stop, usage))
    }

    /// `session/cancel`: the running turn of a session, or one child.
    pub(crate) fn cancel(&self, id: &str) {
        let Ok((live, child)) = self.owner(id) else {
            return;
        };
        match child {
            Some(child) => {
                live.session.supervisor.cancel_agent(&child);
            }
            None => {
                if let Some(turn) = live.turn.lock().ok().and_then(|turn| turn.clone()) {
                    turn.cancel();
                }
            }
        }
    }

    /// `session/set_mode`: the mode, also told to a client that reads
    /// config options (`config_option_update`).
    pub(crate) fn set_mode(&self, id: &str, mode_id: &str) -> Result<(), Error> {
        let (live, child) = self.owner(id)?;
        if child.is_some() {
            return Err(error(
                ErrorCode::INVALID_PARAMS,
                "a subagent session has its parent's mode",
            ));
        }
        self.switch_mode(&live, mode_id)?;
        live.updates.send(
            live.updates.top(),
            SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(live.config_options())),
        );
        Ok(())
    }

    /// Switches the main agent (and the children it starts from then on)
    /// to `mode_id`'s gate, and sends `current_mode_update`.
    fn switch_mode(&self, live: &Live, mode_id: &str) -> Result<(), Error> {
        let mode = PermissionMode::parse(mode_id).ok_or_else(|| {
            error(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "unknown mode `{mode_id}`; use default, acceptEdits, plan, bypassPermissions or dontAsk"
                ),
            )
        })?;
        let gate = live
            .session
            .gate_in_mode(&live.common, mode)
            .map_err(|err| error(ErrorCode::INTERNAL_ERROR, format!("{err:#}")))?;
        live.gate.switch(gate);
        if let Ok(mut current) = live.mode.lock() {
            *current = mode;
        }
        live.announce_mode();
        Ok(())
    }

    /// `session/set_config_option`: the permission mode (as
    /// `session/set_mode`) or the model, for the next prompts.
    pub(crate) fn set_config_option(
        &self,
        id: &str,
        option: &str,
        value: Option<&str>,
    ) -> Result<Vec<SessionConfigOption>, Error> {
        let (live, child) = self.owner(id)?;
        if child.is_some() {
            return Err(error(
                ErrorCode::INVALID_PARAMS,
                "a subagent session has its parent's options",
            ));
        }
        let value = value.ok_or_else(|| {
            error(
                ErrorCode::INVALID_PARAMS,
                format!("the {option} option takes a value id, not a boolean"),
            )
        })?;
        match option {
            MODE_OPTION => {
                self.switch_mode(&live, value)?;
                return Ok(live.config_options());
            }
            models::MODEL_OPTION => {}
            _ => {
                return Err(error(
                    ErrorCode::INVALID_PARAMS,
                    format!(
                        "unknown config option `{option}`; this session has `{MODE_OPTION}` and `{}`",
                        models::MODEL_OPTION
                    ),
                ));
            }
        }
        let session = &live.session;
        let spec = models::spec_of(session, value)
            .map_err(|message| error(ErrorCode::INVALID_PARAMS, message))?;
        let client = if spec == session.model_name {
            None
        } else {
            let runtime = session
                .runtime_on(Some(&spec))
                .map_err(|message| error(ErrorCode::INVALID_PARAMS, message))?;
            Some(runtime.model)
        };
        if let Ok(mut chosen) = live.model.lock() {
            *chosen = models::Chosen { spec, client };
        }
        Ok(live.config_options())
    }

    /// The connection closed: every session's turn is cancelled and the
    /// sessions end as `exec`'s do.
    pub(crate) async fn close_all(&self) {
        let open: Vec<Arc<Live>> = self
            .open
            .lock()
            .map(|mut open| open.drain().map(|(_, live)| live).collect())
            .unwrap_or_default();
        // Approvals still pending were answered "disconnected" as the
        // connection closed: a moment lets the asking agents read that
        // before their turns are cancelled.
        if !open.is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        for live in open {
            if let Some(turn) = live.turn.lock().ok().and_then(|turn| turn.clone()) {
                turn.cancel();
            }
            live.end().await;
        }
    }
}

fn unknown_session(id: &str) -> Error {
    error(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!("unknown session `{id}`: open one with session/new or session/load"),
    )
}

/// A prompt's content blocks as what the model reads: text as it is,
/// embedded resources with their URI, links as their URI, and images
/// made to fit the model APIs' limits as `@image.png` in the TUI is (a
/// model without vision gets a note in their place from its wire).
fn prompt_content(blocks: &[AcpBlock]) -> (String, Vec<ContentBlock>) {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            AcpBlock::Text(text) => parts.push(text.text.clone()),
            AcpBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => parts.push(format!(
                    "<context uri=\"{}\">\n{}\n</context>",
                    contents.uri, contents.text
                )),
                EmbeddedResourceResource::BlobResourceContents(contents) => {
                    parts.push(format!("[binary resource {} not included]", contents.uri));
                }
                #[allow(unreachable_patterns)]
                _ => {}
            },
            AcpBlock::ResourceLink(link) => parts.push(format!("@{}", link.uri)),
            AcpBlock::Image(image) => match alcove_tools::image::prepare_base64(&image.data) {
                Ok(prepared) => images.push(ContentBlock::Image {
                    media_type: prepared.image.media_type,
                    data: prepared.image.data,
                }),
                Err(reason) => parts.push(format!("[an attached image was left out: {reason}]")),
            },
            _ => {}
        }
    }
    (parts.join("\n\n"), images)
}

impl Live {
    /// The session's id (also the transcript's).
    pub(crate) fn id(&self) -> &str {
        &self.session.id
    }

    /// Replays the loaded history.
    pub(crate) async fn replay(&self) {
        let history = self.history.lock().await;
        replay::replay(
            &self.updates,
            &history,
            self.session.runtime.workspace.root(),
        );
    }

    async fn run_turn(
        &self,
        text: String,
        images: Vec<ContentBlock>,
        cancel: CancellationToken,
    ) -> Result<StopReason, Error> {
        let session = &self.session;
        let (prompt, mut runtime) = crate::prompt_commands::prepare(session, text);
        // The model chosen in the editor, unless a command asked for its own.
        if Arc::ptr_eq(&runtime.model, &session.runtime.model)
            && let Some(client) = self
                .model
                .lock()
                .ok()
                .and_then(|chosen| chosen.client.clone())
        {
            runtime.model = client;
        }
        let prompt = match session.runtime.hooks.user_prompt_submit(&prompt).await {
            Ok(None) => prompt,
            Ok(Some(context)) => format!("{prompt}\n\n[hook context]\n{context}"),
            Err(reason) => {
                session.runtime.emit(
                    &AgentPath::main(),
                    EventKind::Warning {
                        message: format!(
                            "the prompt was blocked by a UserPromptSubmit hook: {reason}"
                        ),
                    },
                );
                self.updates.send(
                    self.updates.top(),
                    super::updates::message_chunk(&format!(
                        "The prompt was blocked by a UserPromptSubmit hook: {reason}"
                    )),
                );
                return Ok(StopReason::Refusal);
            }
        };
        let mut run = session.main_run(cancel);
        if let Some(gate) = self.gate.current() {
            run.gate = gate;
        }
        let mut history = self.history.lock().await;
        let mut message = Message::user_text(prompt);
        message.content.extend(images);
        let outcome = run_agent(&runtime, &run, history.clone(), message).await;
        *history = outcome.messages;
        match outcome.status {
            RunStatus::Completed => Ok(StopReason::EndTurn),
            RunStatus::MaxTurns => Ok(StopReason::MaxTurnRequests),
            RunStatus::Aborted => Ok(StopReason::Cancelled),
            RunStatus::Budget => Ok(StopReason::MaxTokens),
            RunStatus::Failed | RunStatus::Halted => Err(error(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "the model failed: {}",
                    outcome
                        .error
                        .map_or_else(|| "unknown error".to_owned(), |e| session.explain(&e))
                ),
            )),
        }
    }

    /// Ends the session as `exec` does: spawned agents closed, MCP servers
    /// stopped, `session_ended` recorded.
    async fn end(&self) {
        self.session
            .end(crate::session::SessionEnd::quiet("other"))
            .await;
    }
}
