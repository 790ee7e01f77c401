//! The interactive loop: terminal in raw mode with an inline viewport, one
//! `select!` over keys, agent events, approval asks, the running turn,
//! a clock and signals.
//!
//! Turns run on their own task, so nothing the agents do (or wait for)
//! blocks the display. Leaving — `/exit`, Ctrl+C twice, Ctrl+D, SIGTERM, or
//! the terminal closing (SIGHUP, or stdin ending) — cancels the running
//! turn, waits for its calls to be paired and its children's processes to
//! be killed, records `session_ended`, and restores the terminal.

use std::io::{Stdout, Write};
use std::time::{Duration, Instant};

use alcove_protocol::{AgentEvent, RunStatus};
use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, Event, EventStream, KeyEventKind,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use futures::StreamExt;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Size;
use tokio::signal::unix::{SignalKind, signal};

use super::Start;
use super::app::{Action, App, Facts, Overlay};
use super::approval::Ask;
use super::cells::NoticeKind;
use super::conversation::cells_from_history;
use super::picker::{Picked, Picker};
use super::session_turns::{
    Channels, Totals, Turn, cancel_and_wait, start_compaction, start_turn, wait,
};
use super::term::Inline;
use super::theme::Theme;
use super::view;
use crate::CommonArgs;
use crate::resume::{SessionInfo, continue_history};
use crate::session::Session;

type Screen = Inline<CrosstermBackend<Stdout>>;

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exit {
    /// The user left.
    User,
    /// The terminal went away.
    Hangup,
    /// SIGTERM.
    Terminate,
}

/// One thing the loop woke up for.
enum Input {
    Term(Option<std::io::Result<Event>>),
    Agent(AgentEvent),
    Ask(Ask),
    TurnDone(alcove_core::AgentOutcome),
    Tick,
    Interrupt,
    Hangup,
    Terminate,
}

/// Raw mode and the terminal modes the UI turns on, undone on drop (also
/// when unwinding from a panic).
struct Modes {
    keyboard: bool,
}

impl Modes {
    fn enter() -> std::io::Result<(Modes, Screen)> {
        crossterm::terminal::enable_raw_mode()?;
        let mut modes = Modes { keyboard: false };
        let row = crossterm::cursor::position().map_or(u16::MAX, |(_, row)| row);
        let mut stdout = std::io::stdout();
        crossterm::execute!(stdout, EnableBracketedPaste)?;
        if matches!(
            crossterm::terminal::supports_keyboard_enhancement(),
            Ok(true)
        ) {
            crossterm::execute!(
                stdout,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            )?;
            modes.keyboard = true;
        }
        let screen = Inline::new(CrosstermBackend::new(std::io::stdout()), row)?;
        Ok((modes, screen))
    }
}

impl Drop for Modes {
    fn drop(&mut self) {
        let mut stdout = std::io::stdout();
        if self.keyboard {
            let _ = crossterm::execute!(stdout, PopKeyboardEnhancementFlags);
        }
        let _ = crossterm::execute!(stdout, DisableBracketedPaste, crossterm::cursor::Show);
        let _ = crossterm::terminal::disable_raw_mode();
        let _ = stdout.flush();
    }
}

/// Runs the inline UI to the end; returns the exit status.
pub(crate) async fn run(common: &CommonArgs, start: Start) -> anyhow::Result<u8> {
    let mut channels = Channels::new();
    let (modes, mut screen) = Modes::enter()?;
    let mut keys = EventStream::new();
    let theme = Theme::from_env();

    let (first_prompt, resumed) = match start {
        Start::New(prompt) => (prompt, None),
        Start::Resume(info) => (None, Some(info)),
        Start::Pick(sessions) => match pick(&mut screen, &mut keys, sessions, theme).await? {
            Some(info) => (None, Some(info)),
            None => {
                screen.finish()?;
                drop(modes);
                return Ok(0);
            }
        },
    };
    let mut common = common.clone();
    let mut session = match channels
        .open(
            &common,
            Vec::new(),
            resumed.as_ref().map(|info| info.id.clone()),
        )
        .await
    {
        Ok(session) => session,
        Err(err) => {
            screen.finish()?;
            drop(modes);
            return Err(err);
        }
    };
    session.runtime.hooks.session_start().await;
    let mut history = continue_history(&session);
    let mut app = App::new(
        theme,
        screen.screen().width,
        facts(&session),
        channels.rules.clone(),
    );
    app.gate = Some(session.gate.clone());
    let now = Instant::now();
    if let Some(info) = &resumed {
        for cell in cells_from_history(&history, &app.facts.workspace, now) {
            app.commit(cell, now);
        }
        app.notice(
            NoticeKind::Info,
            format!(
                "Resumed session {} ({} messages). Go on where you left off.",
                info.id,
                history.len()
            ),
            now,
        );
    } else {
        app.notice(
            NoticeKind::Info,
            format!(
                "alcove · {} · /help for commands",
                app.facts.workspace.display()
            ),
            now,
        );
    }

    let mut totals = Totals::default();
    let mut turn: Option<Turn> = None;
    if let Some(prompt) = first_prompt.filter(|prompt| !prompt.trim().is_empty()) {
        app.editor.remember(&prompt);
        app.begin_turn(&prompt, now);
        let started = start_turn(&session, history.clone(), prompt);
        for line in &started.attached {
            app.notice(NoticeKind::Info, line.clone(), now);
        }
        turn = Some(started);
    }

    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut hangup = signal(SignalKind::hangup())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let exit = loop {
        app.approvals.prune();
        if render(&mut screen, &mut app).is_err() {
            break Exit::Hangup;
        }
        let input = tokio::select! {
            event = keys.next() => Input::Term(event),
            Some(event) = channels.events.recv() => Input::Agent(event),
            Some(ask) = channels.asks.recv() => Input::Ask(ask),
            outcome = wait(&mut turn) => Input::TurnDone(outcome),
            _ = tick.tick(), if app.animating() || !app.approvals.is_empty() => Input::Tick,
            _ = interrupt.recv() => Input::Interrupt,
            _ = hangup.recv() => Input::Hangup,
            _ = terminate.recv() => Input::Terminate,
        };
        let now = Instant::now();
        let action = match input {
            Input::Term(None | Some(Err(_))) | Input::Hangup => break Exit::Hangup,
            Input::Terminate => break Exit::Terminate,
            Input::Term(Some(Ok(event))) => match event {
                Event::Key(key) if key.kind != KeyEventKind::Release => app.on_key(key, now),
                Event::Paste(text) => {
                    app.on_paste(&text);
                    None
                }
                Event::Resize(width, height) => {
                    app.width = width;
                    if screen.resize(Size { width, height }).is_err() {
                        break Exit::Hangup;
                    }
                    None
                }
                _ => None,
            },
            Input::Agent(event) => {
                app.apply_event(&event, now);
                while let Ok(event) = channels.events.try_recv() {
                    app.apply_event(&event, now);
                }
                None
            }
            Input::Ask(ask) => {
                app.approvals
                    .push(ask, &session.gate, &session.runtime.workspace);
                app.overlay = Overlay::None;
                None
            }
            Input::TurnDone(mut outcome) => {
                outcome.error = outcome.error.map(|error| session.explain(&error));
                turn = None;
                while let Ok(event) = channels.events.try_recv() {
                    app.apply_event(&event, now);
                }
                app.end_turn(&outcome, now);
                totals.settle(&session, &mut history, outcome);
                app.queued.pop_front().map(Action::Submit)
            }
            Input::Tick => None,
            Input::Interrupt if turn.is_some() => Some(Action::Interrupt),
            Input::Interrupt => Some(Action::Exit),
        };
        match action {
            None => {}
            Some(Action::Exit) => break Exit::User,
            Some(Action::Submit(prompt)) => {
                app.begin_turn(&prompt, now);
                let started = start_turn(&session, history.clone(), prompt);
                for line in &started.attached {
                    app.notice(NoticeKind::Info, line.clone(), now);
                }
                turn = Some(started);
            }
            Some(Action::ShowMemory) => {
                let lines = super::ui_commands::memory_lines(
                    session.memory.path(),
                    &session.memory.read(),
                    usize::from(app.width),
                    app.theme,
                );
                app.commit(super::cells::Cell::Lines(lines), now);
            }
            Some(Action::Remember(note)) => match session.memory.append(&note) {
                Ok(()) => app.notice(
                    NoticeKind::Info,
                    format!("Noted in {}", session.memory.path().display()),
                    now,
                ),
                Err(err) => app.notice(
                    NoticeKind::Error,
                    format!("Cannot write {}: {err}", session.memory.path().display()),
                    now,
                ),
            },
            Some(Action::Compact(focus)) => {
                app.begin_compaction(now);
                turn = Some(start_compaction(&session, history.clone(), focus));
            }
            // The same cancel as ACP's `session/cancel` of a child and
            // `close_agent`: the child ends, its parent goes on.
            Some(Action::StopChild(path)) => {
                let cancelled = session.supervisor.cancel_agent(&path);
                if !cancelled {
                    app.hint = Some(format!("{path} has already ended"));
                }
            }
            Some(Action::Interrupt) => {
                if let Some(turn) = &turn {
                    turn.cancel.cancel();
                }
                // An interrupt stops the background commands of earlier
                // turns too (this turn's stop with its cancelled calls).
                let shells = session.runtime.background.clone();
                tokio::spawn(async move { shells.kill_all("interrupted").await });
            }
            Some(Action::Clear) => match channels.open(&common, Vec::new(), None).await {
                Ok(next) => {
                    totals.end(&session, None, "clear").await;
                    session = next;
                    session.runtime.hooks.session_start().await;
                    totals = Totals::default();
                    history.clear();
                    app.reset_conversation();
                    app.facts = facts(&session);
                    app.gate = Some(session.gate.clone());
                    let _ = screen.clear_screen();
                    app.notice(
                        NoticeKind::Info,
                        format!("New conversation (session {}).", session.id),
                        now,
                    );
                }
                Err(err) => app.notice(
                    NoticeKind::Error,
                    format!("Cannot start a new session: {err:#}"),
                    now,
                ),
            },
            Some(Action::SwitchModel(spec)) => {
                let mut next_common = common.clone();
                next_common.model = Some(spec.clone());
                match channels
                    .open(&next_common, Vec::new(), Some(session.id.clone()))
                    .await
                {
                    Ok(mut next) => {
                        totals.end(&session, None, "model_switch").await;
                        // The conversation goes on, and so do its commands.
                        next.runtime.background = session.runtime.background.clone();
                        session = next;
                        common = next_common;
                        app.gate = Some(session.gate.clone());
                        let next_facts = facts(&session);
                        app.facts.window = next_facts.window;
                        app.facts.window_source = next_facts.window_source;
                        app.facts.price = next_facts.price;
                        app.context = None;
                        app.notice(
                            NoticeKind::Info,
                            format!("Model switched to {spec}; the conversation goes on."),
                            now,
                        );
                    }
                    Err(err) => app.notice(
                        NoticeKind::Error,
                        format!("Cannot switch to {spec}: {err:#}"),
                        now,
                    ),
                }
            }
        }
    };

    let mut status = None;
    if let Some(running) = turn.take() {
        status = Some(RunStatus::Aborted);
        if let Some(outcome) = cancel_and_wait(running).await {
            let now = Instant::now();
            while let Ok(event) = channels.events.try_recv() {
                app.apply_event(&event, now);
            }
            app.end_turn(&outcome, now);
            totals.settle(&session, &mut history, outcome);
        }
    }
    let reason = if exit == Exit::User {
        "prompt_input_exit"
    } else {
        "other"
    };
    totals.end(&session, status, reason).await;
    if exit != Exit::Hangup {
        let _ = screen.insert_history(&app.take_outbox());
        let _ = screen.finish();
    }
    drop(modes);
    // The terminal may be gone: writes may fail, and must not panic.
    if let Some(failure) = session.transcript.failure() {
        let _ = writeln!(std::io::stderr(), "alcove: warning: {failure}");
    }
    match exit {
        Exit::User => {
            if !history.is_empty() {
                let _ = writeln!(
                    std::io::stdout(),
                    "Resume this conversation with: alcove resume {}",
                    session.id
                );
            }
            Ok(0)
        }
        Exit::Hangup => Ok(129),
        Exit::Terminate => Ok(143),
    }
}

/// Draws: finished lines into the scrollback, then the viewport.
fn render(screen: &mut Screen, app: &mut App) -> std::io::Result<()> {
    let now = Instant::now();
    let mut stdout = std::io::stdout();
    crossterm::queue!(stdout, BeginSynchronizedUpdate)?;
    screen.insert_history(&app.take_outbox())?;
    let size = screen.screen();
    let layout = view::layout(app, size.width, size.height, now);
    let height = u16::try_from(layout.lines.len()).unwrap_or(u16::MAX);
    screen.draw(height, |frame| view::draw(frame, &layout))?;
    crossterm::execute!(stdout, EndSynchronizedUpdate)
}

/// What the UI shows about a session.
fn facts(session: &Session) -> Facts {
    Facts {
        id: session.id.clone(),
        model: String::new(),
        mode: session.gate.mode().as_str().to_owned(),
        workspace: session.runtime.workspace.root().to_owned(),
        transcript: Some(session.transcript.path().display().to_string()),
        definitions: session
            .supervisor
            .definitions()
            .all()
            .iter()
            .map(|definition| (definition.name.clone(), definition.description.clone()))
            .collect(),
        prompts: prompts(session),
        tree: session.supervisor.tree_budget(),
        window: session.context_window.tokens,
        window_source: session.context_window.source.clone(),
        price: session.config.pricing.get(&session.model_name).copied(),
        mcp: Some(session.mcp.clone()),
    }
}

/// The custom commands and skills the user can run, for `/help` and Tab.
pub(crate) fn prompts(session: &Session) -> Vec<(String, String)> {
    let commands = session.commands.all().iter().map(|command| {
        let hint = command.argument_hint.as_deref().unwrap_or_default();
        let description = command.description.as_deref().unwrap_or("custom command");
        (
            format!("/{}", command.name),
            format!(
                "{hint}{}{description}",
                if hint.is_empty() { "" } else { "  " }
            ),
        )
    });
    let skills = session
        .skills
        .all()
        .iter()
        .filter(|skill| session.commands.get(&skill.name).is_none())
        .map(|skill| {
            (
                format!("/{}", skill.name),
                format!("skill: {}", skill.description),
            )
        });
    let workflows = crate::workflow_host::saved_workflows(&session.workflows)
        .into_iter()
        .filter_map(|saved| saved.workflow.ok())
        .map(|workflow| {
            (
                format!("/{}", workflow.meta.name),
                format!("workflow: {}", workflow.meta.description),
            )
        });
    commands.chain(skills).chain(workflows).collect()
}

/// The resume picker; `None` when the user left it.
async fn pick(
    screen: &mut Screen,
    keys: &mut EventStream,
    sessions: Vec<SessionInfo>,
    theme: Theme,
) -> std::io::Result<Option<SessionInfo>> {
    let mut picker = Picker::new(sessions);
    loop {
        let size = screen.screen();
        let rows = usize::from(size.height.min(14));
        let lines = picker.lines(usize::from(size.width), rows, theme);
        let height = u16::try_from(lines.len()).unwrap_or(1);
        let layout = view::Screen {
            lines,
            cursor: None,
        };
        screen.draw(height, |frame| view::draw(frame, &layout))?;
        match keys.next().await {
            Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => {
                match picker.on_key(key) {
                    Some(Picked::Session(idx)) => return Ok(picker.sessions.get(idx).cloned()),
                    Some(Picked::Cancelled) => return Ok(None),
                    None => {}
                }
            }
            Some(Ok(Event::Resize(width, height))) => screen.resize(Size { width, height })?,
            Some(Ok(_)) => {}
            None | Some(Err(_)) => return Ok(None),
        }
    }
}
