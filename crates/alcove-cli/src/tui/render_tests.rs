//! Rendering tests: the UI fed with events on an 80×24 `TestBackend`,
//! drawn exactly as the loop draws it (finished lines into the scrollback,
//! then the viewport), compared with insta snapshots in `snapshots/`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alcove_core::{ApprovalRequest, PermissionGate, PermissionMode};
use alcove_protocol::{AgentEvent, AgentPath, EventKind, RunStatus, Usage};
use alcove_tools::Workspace;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use serde_json::json;
use tokio::sync::oneshot;

use super::app::{App, Facts, Overlay};
use super::approval::{Ask, SessionRules};
use super::term::Inline;
use super::theme::Theme;
use super::view;

/// The agents panel with workflow runs.
mod workflow_panel;

fn app(workspace: &Path, color: bool) -> App {
    let facts = Facts {
        id: "5f0c1e2a-7d41-4b8e-9c3a-2f6d8e1b0a97".to_owned(),
        model: "anthropic/claude-sonnet-4-5".to_owned(),
        mode: "default".to_owned(),
        workspace: workspace.to_owned(),
        transcript: None,
        definitions: vec![("general-purpose".to_owned(), "A capable agent.".to_owned())],
        prompts: Vec::new(),
        tree: None,
        window: 200_000,
        window_source: "table of known models".to_owned(),
        price: None,
        mcp: None,
    };
    App::new(
        Theme::new(color),
        80,
        facts,
        Arc::new(SessionRules::default()),
    )
}

fn path(text: &str) -> AgentPath {
    text.split('/')
        .skip(1)
        .fold(AgentPath::main(), |path, name| path.child(name))
}

fn event(agent: &str, kind: EventKind) -> AgentEvent {
    AgentEvent {
        agent: path(agent),
        kind,
    }
}

fn screen() -> Inline<TestBackend> {
    match Inline::new(TestBackend::new(80, 24), 0) {
        Ok(inline) => inline,
        Err(never) => match never {},
    }
}

/// One frame, as the loop draws it.
fn render(inline: &mut Inline<TestBackend>, app: &mut App, now: Instant) {
    let outbox = app.take_outbox();
    let drawn = inline.insert_history(&outbox).and_then(|()| {
        let layout = view::layout(app, 80, 24, now);
        let height = u16::try_from(layout.lines.len()).unwrap_or(1);
        inline.draw(height, |frame| view::draw(frame, &layout))
    });
    if let Err(never) = drawn {
        match never {}
    }
}

fn started(agent: &str, child: &str, description: &str) -> AgentEvent {
    event(
        agent,
        EventKind::AgentStarted {
            child: path(child),
            call_id: format!("call-{child}"),
            agent_type: "general-purpose".to_owned(),
            description: description.to_owned(),
            depth: u32::try_from(child.matches('/').count()).unwrap_or(1),
            transcript: None,
            run: None,
            phase: None,
        },
    )
}

fn tool_started(agent: &str, id: &str, name: &str, input: serde_json::Value) -> AgentEvent {
    event(
        agent,
        EventKind::ToolCallStarted {
            id: id.to_owned(),
            name: name.to_owned(),
            input,
        },
    )
}

fn tool_finished(agent: &str, id: &str, name: &str, content: &str, ms: u64) -> AgentEvent {
    event(
        agent,
        EventKind::ToolCallFinished {
            id: id.to_owned(),
            name: name.to_owned(),
            content: content.into(),
            is_error: false,
            duration_ms: ms,
            effects: Default::default(),
        },
    )
}

const ANSWER: &str = "## The loop\n\nThe agent loop lives in `agent_loop.rs`. It:\n\n- sends the history and the tools\n- runs each **tool call** through one dispatch path\n\n```rust\nlet outcome = run_agent(&runtime, &run, history, input).await;\nassert_eq!(outcome.status, RunStatus::Completed);\n```\n\nThat is all.";

#[test]
fn a_streamed_answer_with_a_code_block() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path(), true);
    let mut inline = screen();
    let t0 = Instant::now();
    app.begin_turn("where is the agent loop?", t0);
    // Stream the answer up to the middle of its code block.
    let cut = ANSWER.find("assert_eq").unwrap();
    for piece in ANSWER[..cut].split_inclusive(' ') {
        app.apply_event(
            &event(
                "main",
                EventKind::TextDelta {
                    text: piece.to_owned(),
                },
            ),
            t0,
        );
    }
    render(&mut inline, &mut app, t0 + Duration::from_millis(2300));
    insta::assert_snapshot!("streaming", inline.backend());

    app.apply_event(
        &event(
            "main",
            EventKind::AssistantText {
                text: ANSWER.to_owned(),
            },
        ),
        t0,
    );
    app.end_turn(&outcome(RunStatus::Completed), t0);
    render(&mut inline, &mut app, t0 + Duration::from_secs(3));
    insta::assert_snapshot!("finished", inline.backend());
}

#[test]
fn an_edit_diff() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("src/config.rs");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text = "use std::path::Path;\n\npub fn load(path: &Path) -> Config {\n    let text = std::fs::read_to_string(path).unwrap();\n    toml::from_str(&text).unwrap()\n}\n";
    std::fs::write(&file, text).unwrap();
    let mut app = app(dir.path(), true);
    let mut inline = screen();
    let t0 = Instant::now();
    app.begin_turn("do not panic on a missing config", t0);
    let input = json!({
        "file_path": file.display().to_string(),
        "old_string": "    let text = std::fs::read_to_string(path).unwrap();\n    toml::from_str(&text).unwrap()",
        "new_string": "    let text = std::fs::read_to_string(path)?;\n    Ok(toml::from_str(&text)?)",
    });
    app.apply_event(&tool_started("main", "t1", "Edit", input), t0);
    app.apply_event(
        &tool_finished("main", "t1", "Edit", "The file was edited.", 4),
        t0,
    );
    app.apply_event(
        &event(
            "main",
            EventKind::AssistantText {
                text: "`load` now returns errors instead of panicking.".to_owned(),
            },
        ),
        t0,
    );
    app.end_turn(&outcome(RunStatus::Completed), t0);
    render(&mut inline, &mut app, t0 + Duration::from_secs(1));
    insta::assert_snapshot!(inline.backend());
}

#[test]
fn the_delegation_panel_with_three_children() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path(), true);
    let mut inline = screen();
    let t0 = Instant::now();
    app.begin_turn("audit the error handling in three crates", t0);
    for (idx, name) in ["model", "tools", "core"].iter().enumerate() {
        let input = json!({"description": format!("audit {name}"), "prompt": "…"});
        app.apply_event(
            &tool_started("main", &format!("a{idx}"), "Agent", input),
            t0,
        );
    }
    app.apply_event(
        &started("main", "main/agent-1", "audit the model crate's retries"),
        t0,
    );
    app.apply_event(
        &started("main", "main/agent-2", "audit tools"),
        t0 + Duration::from_secs(1),
    );
    app.apply_event(
        &started("main", "main/agent-3", "audit core"),
        t0 + Duration::from_secs(2),
    );
    app.apply_event(
        &started("main/agent-1", "main/agent-1/agent-4", "read retry.rs"),
        t0 + Duration::from_secs(3),
    );
    let usage = |input_tokens, output_tokens| Usage {
        input_tokens,
        output_tokens,
        ..Usage::default()
    };
    for turn in 1..=3 {
        app.apply_event(&event("main/agent-1", EventKind::TurnStarted { turn }), t0);
        app.apply_event(
            &event(
                "main/agent-1",
                EventKind::Usage {
                    usage: usage(1800, 120),
                },
            ),
            t0,
        );
    }
    app.apply_event(
        &tool_started(
            "main/agent-1",
            "g1",
            "Grep",
            json!({"pattern": "retry_after"}),
        ),
        t0,
    );
    app.apply_event(
        &event("main/agent-1/agent-4", EventKind::TurnStarted { turn: 1 }),
        t0,
    );
    app.apply_event(
        &tool_started(
            "main/agent-1/agent-4",
            "r1",
            "Read",
            json!({"file_path": "crates/alcove-model/src/retry.rs"}),
        ),
        t0,
    );
    app.apply_event(
        &event(
            "main",
            EventKind::AgentEnded {
                child: path("main/agent-2"),
                description: "audit tools".to_owned(),
                status: RunStatus::Completed,
                ok: true,
                turns: 5,
                usage: usage(9000, 800),
                error: None,
                evidence: None,
            },
        ),
        t0 + Duration::from_secs(9),
    );
    app.apply_event(
        &event(
            "main",
            EventKind::AgentEnded {
                child: path("main/agent-3"),
                description: "audit core".to_owned(),
                status: RunStatus::Failed,
                ok: false,
                turns: 2,
                usage: usage(2500, 90),
                error: None,
                evidence: None,
            },
        ),
        t0 + Duration::from_millis(6400),
    );
    render(&mut inline, &mut app, t0 + Duration::from_secs(14));
    insta::assert_snapshot!(inline.backend());
}

#[test]
fn an_approval_prompt_from_a_child() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path(), true);
    let mut inline = screen();
    let t0 = Instant::now();
    app.begin_turn("run the tests in a child", t0);
    app.apply_event(
        &tool_started(
            "main",
            "a1",
            "Agent",
            json!({"description": "run the tests"}),
        ),
        t0,
    );
    app.apply_event(&started("main", "main/agent-1", "run the tests"), t0);
    app.apply_event(
        &event("main/agent-1", EventKind::TurnStarted { turn: 1 }),
        t0,
    );
    app.apply_event(
        &tool_started(
            "main/agent-1",
            "b1",
            "Bash",
            json!({"command": "cargo test -p alcove-core"}),
        ),
        t0,
    );
    let gate = PermissionGate::new(PermissionMode::Default);
    let workspace = Workspace::new(dir.path()).unwrap();
    let mut waiting = Vec::new();
    for command in [
        "cargo test -p alcove-core",
        "rm -rf target/tmp && cargo test",
    ] {
        let (reply, answer) = oneshot::channel();
        waiting.push(answer);
        let request = ApprovalRequest {
            agent: path("main/agent-1"),
            agent_description: Some("run the tests".to_owned()),
            tool: "Bash".to_owned(),
            summary: command.to_owned(),
            input: json!({"command": command}),
            reason: format!(
                "Bash ({command}) asked by main/agent-1 needs approval. --permission-mode bypassPermissions allows commands."
            ),
        };
        app.approvals
            .push(Ask { request, reply }, &gate, &workspace);
    }
    render(&mut inline, &mut app, t0 + Duration::from_secs(4));
    insta::assert_snapshot!(inline.backend());
    assert_eq!(waiting.len(), 2);
}

#[test]
fn ctrl_t_opens_a_childs_live_transcript_and_esc_returns() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path(), true);
    let mut inline = screen();
    let t0 = Instant::now();
    app.begin_turn("find the config parser", t0);
    app.apply_event(
        &started("main", "main/agent-1", "find the config parser"),
        t0,
    );
    let task = alcove_protocol::Message::user_text("Find where the config file is parsed.");
    app.apply_event(
        &event("main/agent-1", EventKind::Message { message: task }),
        t0,
    );
    app.apply_event(
        &event("main/agent-1", EventKind::TurnStarted { turn: 1 }),
        t0,
    );
    app.apply_event(
        &tool_started(
            "main/agent-1",
            "g1",
            "Grep",
            json!({"pattern": "fn parse_config"}),
        ),
        t0,
    );
    app.apply_event(
        &tool_finished(
            "main/agent-1",
            "g1",
            "Grep",
            "src/config.rs:12:fn parse_config",
            31,
        ),
        t0,
    );
    app.apply_event(
        &event("main/agent-1", EventKind::TurnStarted { turn: 2 }),
        t0,
    );
    app.apply_event(
        &event(
            "main/agent-1",
            EventKind::TextDelta {
                text: "It is parsed in `src/config.rs`".to_owned(),
            },
        ),
        t0,
    );
    let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
    assert_eq!(app.on_key(ctrl('t'), t0), None);
    assert!(matches!(app.overlay, Overlay::Child { .. }));
    render(&mut inline, &mut app, t0 + Duration::from_secs(5));
    insta::assert_snapshot!(inline.backend());
    app.on_key(KeyEvent::from(KeyCode::Esc), t0);
    assert_eq!(app.overlay, Overlay::None);
}

#[test]
fn no_color_means_no_colour_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path(), false);
    let mut inline = screen();
    let t0 = Instant::now();
    app.begin_turn("hi", t0);
    app.apply_event(
        &event(
            "main",
            EventKind::AssistantText {
                text: ANSWER.to_owned(),
            },
        ),
        t0,
    );
    app.apply_event(
        &event(
            "main",
            EventKind::Warning {
                message: "careful".to_owned(),
            },
        ),
        t0,
    );
    render(&mut inline, &mut app, t0);
    let buffer = inline.backend().buffer();
    assert!(
        buffer
            .content
            .iter()
            .any(|cell| cell.symbol() == "`" || cell.symbol() == "l")
    );
    assert!(
        buffer
            .content
            .iter()
            .all(|cell| cell.fg == Color::Reset && cell.bg == Color::Reset)
    );
}

fn outcome(status: RunStatus) -> alcove_core::AgentOutcome {
    alcove_core::AgentOutcome {
        status,
        messages: Vec::new(),
        turns: 1,
        usage: Usage::default(),
        error: None,
    }
}

#[test]
fn status_shows_what_the_tree_used_when_it_has_a_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path(), false);
    let text = |app: &App| {
        super::ui_commands::status_lines(app)
            .iter()
            .map(|line| line.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(!text(&app).contains("tree"));
    app.facts.tree = Some(Arc::new(alcove_core::TreeBudget::new(None, Some(12))));
    assert!(
        text(&app).contains("tree: 0 of 12 turns, 0 tokens used"),
        "{}",
        text(&app)
    );
}
