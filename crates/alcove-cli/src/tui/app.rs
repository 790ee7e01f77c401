//! The UI's state and everything that changes it: agent events, keys,
//! slash commands, turn starts and ends.
//!
//! It does no I/O. The loop in `driver` feeds it and carries out the
//! [`Action`]s it returns; `view` draws it. Finished conversation lines
//! collect in an outbox that the loop writes to the terminal's scrollback.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use alcove_core::{AgentOutcome, PermissionGate};
use alcove_protocol::{AgentEvent, EventKind, RunStatus, Usage};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::Line;

use super::approval::{ApprovalQueue, SessionRules};
use super::cells::{Cell, NoticeKind, ToolStatus};
use super::conversation::Conversation;
use super::editor::{Editor, EditorAction};
use super::panel::Panel;
use super::theme::Theme;
use super::ui_commands::{self, Command};

/// What the session is, as the UI shows it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Facts {
    pub(crate) id: String,
    pub(crate) model: String,
    pub(crate) mode: String,
    pub(crate) workspace: PathBuf,
    pub(crate) transcript: Option<String>,
    /// Agent types: name and description.
    pub(crate) definitions: Vec<(String, String)>,
    /// Custom commands and skills the user can run: `/name` and description.
    pub(crate) prompts: Vec<(String, String)>,
    /// The delegation tree's budget, when one is set (`/status` shows its use).
    pub(crate) tree: Option<Arc<alcove_core::TreeBudget>>,
    /// The model's context window in tokens, and where the figure came from.
    pub(crate) window: u64,
    pub(crate) window_source: String,
    /// The model's price, when config has one.
    pub(crate) price: Option<crate::settings::model::Price>,
    /// The session's MCP servers, read live by `/mcp`.
    pub(crate) mcp: Option<Arc<alcove_mcp::McpManager>>,
}

/// What the loop must do after a key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Start a turn with this prompt.
    Submit(String),
    /// Cancel the running turn.
    Interrupt,
    Exit,
    /// Start a new conversation.
    Clear,
    /// Continue with another model.
    SwitchModel(String),
    /// Show the memory file.
    ShowMemory,
    /// Append a line to the memory file.
    Remember(String),
    /// Compact the conversation, with an optional focus.
    Compact(Option<String>),
    /// Stop one child (and its descendants); its parent reads a
    /// cancelled report and goes on.
    StopChild(alcove_protocol::AgentPath),
}

/// What the viewport shows besides the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overlay {
    None,
    /// A child's live transcript: its index in the panel, and how many
    /// lines it is scrolled up from the bottom.
    Child {
        index: usize,
        scroll: usize,
    },
}

/// The UI's state.
pub(crate) struct App {
    pub(crate) theme: Theme,
    pub(crate) width: u16,
    pub(crate) facts: Facts,
    pub(crate) main: Conversation,
    pub(crate) panel: Panel,
    pub(crate) approvals: ApprovalQueue,
    pub(crate) editor: Editor,
    pub(crate) rules: Arc<SessionRules>,
    /// The main agent's gate, for "allow always" rules once it takes them.
    pub(crate) gate: Option<Arc<PermissionGate>>,
    pub(crate) overlay: Overlay,
    /// Prompts sent while a turn ran, in order.
    pub(crate) queued: VecDeque<String>,
    /// When the running turn started.
    pub(crate) turn_started: Option<Instant>,
    pub(crate) interrupting: bool,
    /// Tokens of every agent.
    pub(crate) usage: Usage,
    pub(crate) main_turns: u32,
    /// The main agent's last `context` figure: (used, window).
    pub(crate) context: Option<(u64, u64)>,
    /// A short message for the footer, until the next key.
    pub(crate) hint: Option<String>,
    /// The main agent's plan, from its last `plan_updated`.
    pub(crate) plan: Vec<alcove_protocol::Todo>,
    /// Background commands still running, every agent's: (id, command),
    /// oldest first.
    pub(crate) background: Vec<(String, String)>,
    ctrl_c_armed: bool,
    outbox: Vec<Line<'static>>,
    last_committed: Option<Cell>,
}

impl App {
    /// A fresh UI `width` columns wide.
    pub(crate) fn new(theme: Theme, width: u16, facts: Facts, rules: Arc<SessionRules>) -> App {
        App {
            theme,
            width,
            facts,
            main: Conversation::default(),
            panel: Panel::default(),
            approvals: ApprovalQueue::default(),
            editor: Editor::default(),
            rules,
            gate: None,
            overlay: Overlay::None,
            queued: VecDeque::new(),
            turn_started: None,
            interrupting: false,
            usage: Usage::default(),
            main_turns: 0,
            context: None,
            plan: Vec::new(),
            background: Vec::new(),
            hint: None,
            ctrl_c_armed: false,
            outbox: Vec::new(),
            last_committed: None,
        }
    }

    /// Whether a turn runs.
    pub(crate) fn running(&self) -> bool {
        self.turn_started.is_some()
    }

    /// Whether anything on screen moves by itself (spinners, clocks).
    pub(crate) fn animating(&self) -> bool {
        self.running() || self.panel.any_running()
    }

    /// Lines finished since the last call, for the scrollback.
    pub(crate) fn take_outbox(&mut self) -> Vec<Line<'static>> {
        std::mem::take(&mut self.outbox)
    }

    /// Adds a finished cell to the conversation.
    pub(crate) fn commit(&mut self, cell: Cell, now: Instant) {
        if cell.wants_gap(self.last_committed.as_ref()) {
            self.outbox.push(Line::default());
        }
        self.outbox
            .extend(cell.lines(usize::from(self.width), self.theme, now));
        self.last_committed = Some(cell);
    }

    /// A notice in the conversation.
    pub(crate) fn notice(&mut self, kind: NoticeKind, text: impl Into<String>, now: Instant) {
        self.commit(Cell::Notice(kind, text.into()), now);
    }

    /// Applies one event of any agent.
    pub(crate) fn apply_event(&mut self, event: &AgentEvent, now: Instant) {
        match &event.kind {
            EventKind::SessionStarted {
                session_id,
                model,
                transcript,
                ..
            } => {
                self.facts.id = session_id.clone();
                self.facts.model = model.clone();
                self.facts.transcript = transcript.clone();
            }
            EventKind::Usage { usage } => self.usage.add(*usage),
            EventKind::Context { used, window } if event.agent.as_str() == "main" => {
                self.context = Some((*used, *window));
            }
            EventKind::Compacted { tokens_after, .. } if event.agent.as_str() == "main" => {
                if let Some((_, window)) = self.context {
                    self.context = Some((*tokens_after, window));
                }
            }
            EventKind::TurnStarted { .. } if event.agent.as_str() == "main" => self.main_turns += 1,
            EventKind::PlanUpdated { todos } if event.agent.as_str() == "main" => {
                self.plan = todos.clone();
            }
            EventKind::BackgroundStarted { id, command, .. } => {
                self.background.push((id.clone(), command.clone()));
            }
            EventKind::BackgroundEnded { id, .. } => {
                self.background.retain(|(running, _)| running != id);
            }
            _ => {}
        }
        self.panel.apply(event, &self.facts.workspace, now);
        if event.agent.as_str() == "main" {
            let cells = self
                .main
                .apply(&event.kind, &self.facts.workspace, false, now);
            for cell in cells {
                self.commit(cell, now);
            }
        }
    }

    /// `/compact` starts: it runs like a turn (interruptible, footer busy).
    pub(crate) fn begin_compaction(&mut self, now: Instant) {
        self.notice(NoticeKind::Info, "Compacting the conversation…", now);
        self.turn_started = Some(now);
        self.interrupting = false;
    }

    /// A turn starts with `prompt`.
    pub(crate) fn begin_turn(&mut self, prompt: &str, now: Instant) {
        self.commit(Cell::User(prompt.to_owned()), now);
        self.turn_started = Some(now);
        self.interrupting = false;
        self.panel.epoch += 1;
    }

    /// The running turn ended.
    pub(crate) fn end_turn(&mut self, outcome: &AgentOutcome, now: Instant) {
        for cell in self.main.cut_short() {
            self.commit(cell, now);
        }
        for mut tool in std::mem::take(&mut self.main.running) {
            tool.status = ToolStatus::Failed;
            self.commit(Cell::Tool(tool), now);
        }
        if self
            .panel
            .tree_order(true)
            .iter()
            .any(|idx| self.panel.children[*idx].epoch == self.panel.epoch)
        {
            let lines = self.panel.lines(usize::from(self.width), self.theme, now);
            self.commit(Cell::Lines(lines), now);
        }
        let (kind, text) = match outcome.status {
            RunStatus::Completed => (None, String::new()),
            RunStatus::Aborted => (
                Some(NoticeKind::Warning),
                "Interrupted. The conversation is kept; say how to go on.".to_owned(),
            ),
            RunStatus::MaxTurns => (
                Some(NoticeKind::Warning),
                format!(
                    "Stopped after {} model turns (the turn cap) before the task was finished.",
                    outcome.turns
                ),
            ),
            RunStatus::Budget => (
                Some(NoticeKind::Warning),
                "Stopped: a budget ran out.".to_owned(),
            ),
            RunStatus::Failed | RunStatus::Halted => (
                Some(NoticeKind::Error),
                format!(
                    "The turn failed: {}",
                    outcome.error.as_deref().unwrap_or("unknown error")
                ),
            ),
        };
        if let Some(kind) = kind {
            self.notice(kind, text, now);
        }
        self.turn_started = None;
        self.interrupting = false;
    }

    /// Forgets the conversation on screen (a new one starts).
    pub(crate) fn reset_conversation(&mut self) {
        self.main = Conversation::default();
        self.panel = Panel::default();
        self.last_committed = None;
        self.main_turns = 0;
        self.usage = Usage::default();
        self.overlay = Overlay::None;
    }

    /// Handles a key.
    pub(crate) fn on_key(&mut self, key: KeyEvent, now: Instant) -> Option<Action> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let is_ctrl_c = ctrl && key.code == KeyCode::Char('c');
        let armed = std::mem::take(&mut self.ctrl_c_armed);
        if !is_ctrl_c {
            self.hint = None;
        }
        if let Overlay::Child { .. } = self.overlay {
            return self.on_child_view_key(key, is_ctrl_c);
        }
        if is_ctrl_c {
            if self.running() {
                self.ctrl_c_armed = true;
                return self.interrupt();
            }
            if !self.editor.is_empty() {
                self.editor.clear();
                return None;
            }
            if armed {
                return Some(Action::Exit);
            }
            self.ctrl_c_armed = true;
            self.hint = Some("Press Ctrl+C again to exit".to_owned());
            return None;
        }
        if key.code == KeyCode::Esc && !self.approvals.typing_reason() {
            return if self.running() {
                self.interrupt()
            } else {
                None
            };
        }
        if !self.approvals.is_empty() {
            if let Some(approval) = self.approvals.on_key(key) {
                self.approvals
                    .answer(approval, &self.rules, self.gate.as_deref());
            }
            return None;
        }
        match key.code {
            KeyCode::Char('t') if ctrl => {
                self.open_child_view();
                return None;
            }
            KeyCode::Char('d') if ctrl && self.editor.is_empty() => return Some(Action::Exit),
            KeyCode::Tab => {
                if let Some(command) =
                    ui_commands::complete(&self.editor.text(), &self.facts.prompts)
                {
                    self.editor.set_text(&format!("{command} "));
                }
                return None;
            }
            _ => {}
        }
        let EditorAction::Submit(text) = self.editor.on_key(key) else {
            return None;
        };
        if let Some(note) = ui_commands::memory_note(&text) {
            return Some(Action::Remember(note.to_owned()));
        }
        if let Some(command) = ui_commands::parse(&text) {
            let custom = match &command {
                Command::Init => true,
                Command::Unknown(name) => self.facts.prompts.iter().any(|(known, _)| known == name),
                _ => false,
            };
            // `/init`, custom commands and skills are prompts, expanded when the turn starts.
            if !custom {
                return self.run_command(command, now);
            }
        }
        if self.running() {
            self.queued.push_back(text);
            self.hint = Some("Queued; it is sent when this turn ends".to_owned());
            return None;
        }
        Some(Action::Submit(text))
    }

    /// Pasted text goes to the deny reason being typed, or the editor.
    pub(crate) fn on_paste(&mut self, text: &str) {
        if self.approvals.typing_reason() {
            self.approvals.paste(text);
        } else if self.overlay == Overlay::None {
            self.editor.insert(text);
        }
    }

    fn interrupt(&mut self) -> Option<Action> {
        if self.interrupting {
            return None;
        }
        self.interrupting = true;
        self.queued.clear();
        Some(Action::Interrupt)
    }

    fn open_child_view(&mut self) {
        let order = self.panel.tree_order(false);
        let running = order
            .iter()
            .rev()
            .find(|idx| self.panel.children[**idx].state == super::panel::ChildState::Running);
        match running.or(order.last()) {
            Some(index) => {
                self.overlay = Overlay::Child {
                    index: *index,
                    scroll: 0,
                }
            }
            None => self.hint = Some("No child agents in this session yet".to_owned()),
        }
    }

    fn on_child_view_key(&mut self, key: KeyEvent, is_ctrl_c: bool) -> Option<Action> {
        let Overlay::Child { index, scroll } = self.overlay else {
            return None;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            _ if is_ctrl_c => {
                self.overlay = Overlay::None;
                if self.running() {
                    return self.interrupt();
                }
            }
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Left => self.overlay = Overlay::None,
            KeyCode::Char('t') if ctrl => self.overlay = Overlay::None,
            KeyCode::Char('x') if !ctrl => {
                let child = self.panel.children.get(index)?;
                if child.state != super::panel::ChildState::Running {
                    self.hint = Some(format!("{} is not running", child.path));
                    return None;
                }
                self.hint = Some(format!("Stopping {}…", child.path));
                return Some(Action::StopChild(child.path.clone()));
            }
            KeyCode::Tab | KeyCode::BackTab | KeyCode::Right => {
                let order = self.panel.tree_order(false);
                let at = order.iter().position(|idx| *idx == index).unwrap_or(0);
                let next = if key.code == KeyCode::BackTab {
                    (at + order.len() - 1) % order.len().max(1)
                } else {
                    (at + 1) % order.len().max(1)
                };
                if let Some(next) = order.get(next) {
                    self.overlay = Overlay::Child {
                        index: *next,
                        scroll: 0,
                    };
                }
            }
            KeyCode::Up => {
                self.overlay = Overlay::Child {
                    index,
                    scroll: scroll + 1,
                }
            }
            KeyCode::Down => {
                self.overlay = Overlay::Child {
                    index,
                    scroll: scroll.saturating_sub(1),
                }
            }
            KeyCode::PageUp => {
                self.overlay = Overlay::Child {
                    index,
                    scroll: scroll + 10,
                }
            }
            KeyCode::PageDown => {
                self.overlay = Overlay::Child {
                    index,
                    scroll: scroll.saturating_sub(10),
                }
            }
            KeyCode::End => self.overlay = Overlay::Child { index, scroll: 0 },
            _ => {}
        }
        None
    }

    fn run_command(&mut self, command: Command, now: Instant) -> Option<Action> {
        let theme = self.theme;
        match command {
            Command::Help => self.commit(
                Cell::Lines(ui_commands::help_lines(
                    usize::from(self.width),
                    theme,
                    &self.facts.prompts,
                )),
                now,
            ),
            Command::Agents => {
                let lines = ui_commands::agents_lines(self, now);
                self.commit(Cell::Lines(lines), now);
            }
            Command::Mcp => {
                let lines = ui_commands::mcp_lines(self);
                self.commit(Cell::Lines(lines), now);
            }
            Command::Status => {
                let lines = ui_commands::status_lines(self);
                self.commit(Cell::Lines(lines), now);
            }
            Command::Permissions => {
                let rules = self.rules.list();
                let added = if rules.is_empty() {
                    "none".to_owned()
                } else {
                    rules.join(", ")
                };
                let text = format!(
                    "Permission mode: {}. Allowed for this session: {added}. \
                     `alcove config show` lists every rule with its file.",
                    self.facts.mode
                );
                self.notice(NoticeKind::Info, text, now);
            }
            Command::Resume => {
                let text = "To continue another session: /exit, then `alcove resume` (pick one), \
                            `alcove --continue` (the last one here) or `alcove --resume <id>`."
                    .to_owned();
                self.notice(NoticeKind::Info, text, now);
            }
            Command::Model(None) => {
                let text = format!(
                    "Model: {}. `/model provider/name` switches for the next turns (same conversation).",
                    self.facts.model
                );
                self.notice(NoticeKind::Info, text, now);
            }
            Command::Clear | Command::Model(Some(_)) | Command::Compact(_) if self.running() => {
                self.notice(
                    NoticeKind::Warning,
                    "A turn is running: wait for it or press Esc first.",
                    now,
                );
            }
            Command::Model(Some(spec)) => return Some(Action::SwitchModel(spec)),
            Command::Clear => return Some(Action::Clear),
            Command::Compact(focus) => return Some(Action::Compact(focus)),
            Command::Exit => return Some(Action::Exit),
            Command::Memory => return Some(Action::ShowMemory),
            Command::Init => {}
            Command::Unknown(name) => {
                self.notice(
                    NoticeKind::Error,
                    format!("Unknown command {name}. Type /help for the list."),
                    now,
                );
            }
        }
        None
    }
}
