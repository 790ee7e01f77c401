//! What the viewport shows, top to bottom: the turn in progress (streaming
//! answer, running calls), the main agent's plan, the delegation panel, an approval prompt, queued
//! prompts, the editor and a status line — or a child's live transcript.
//!
//! Everything is lines, so the viewport's height is known before drawing
//! and it never takes more rows than the terminal has: the turn in progress
//! shows its last lines when space is short.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::Position;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::app::{App, Overlay};
use super::cells::{format_duration, format_tokens, spinner};
use super::theme::Theme;
use super::wrap::{text_width, truncate};

/// The most rows the editor takes before it scrolls.
const EDITOR_ROWS: usize = 6;

/// The viewport's lines and where the cursor goes.
pub(crate) struct Screen {
    pub(crate) lines: Vec<Line<'static>>,
    pub(crate) cursor: Option<(u16, u16)>,
}

/// Lays out the viewport for a terminal `width` × `rows`.
pub(crate) fn layout(app: &App, width: u16, rows: u16, now: Instant) -> Screen {
    let width_usize = usize::from(width.max(1));
    let rows = usize::from(rows.max(1));
    let theme = app.theme;
    if let Overlay::Child { index, scroll } = app.overlay {
        return child_view(app, index, scroll, width_usize, rows, now);
    }
    let approval = app.approvals.lines(width_usize, theme);
    let mut panel = if app.running() || app.panel.any_running() {
        app.panel.lines(width_usize, theme, now)
    } else {
        Vec::new()
    };
    let queued: Vec<Line<'static>> = app
        .queued
        .iter()
        .map(|text| {
            Line::styled(
                truncate(
                    &format!("⏵ queued: {}", text.replace('\n', " ")),
                    width_usize,
                ),
                theme.dim(),
            )
        })
        .collect();
    let placeholder = if app.running() {
        "Type to queue a message; Esc interrupts"
    } else {
        "Ask anything, or /help"
    };
    let editor_rows = EDITOR_ROWS.min(rows.saturating_sub(3).max(1));
    let (editor, editor_cursor) = app
        .editor
        .render(width_usize, editor_rows, placeholder, theme);
    let rule = Line::styled("─".repeat(width_usize), theme.dim());
    let footer = footer(app, width_usize, now);

    let mut plan = super::plan::lines(&app.plan, width_usize, theme);
    plan.extend(background_line(app, width_usize));
    let fixed = approval.len() + queued.len() + 1 + editor.len() + 1;
    plan.truncate(rows.saturating_sub(fixed + 2) / 2);
    let fixed = fixed + plan.len();
    panel.truncate(rows.saturating_sub(fixed));
    let room = rows.saturating_sub(fixed + panel.len());
    // The panel shows children better than their parents' running Agent calls.
    let mut live = app
        .main
        .live_lines(width_usize, theme, now, !panel.is_empty());
    if !live.is_empty() {
        live.insert(0, Line::default());
    }
    let skip = live.len().saturating_sub(room);

    let mut lines: Vec<Line<'static>> = live.into_iter().skip(skip).collect();
    lines.extend(plan);
    lines.extend(panel);
    lines.extend(approval.iter().cloned());
    lines.extend(queued);
    lines.push(rule);
    let editor_top = lines.len();
    lines.extend(editor);
    lines.push(footer);
    lines.truncate(rows);
    let cursor = (app.approvals.is_empty())
        .then(|| {
            (
                editor_cursor.0,
                u16::try_from(editor_top).unwrap_or(0) + editor_cursor.1,
            )
        })
        .filter(|(_, y)| usize::from(*y) < lines.len());
    Screen { lines, cursor }
}

/// `background: 2 running (python3 -m http.server 8000 · npm run watch)`,
/// while any runs.
fn background_line(app: &App, width: usize) -> Option<Line<'static>> {
    if app.background.is_empty() {
        return None;
    }
    let commands: Vec<&str> = app
        .background
        .iter()
        .map(|(_, command)| command.as_str())
        .collect();
    let text = format!(
        "background: {} running ({})",
        app.background.len(),
        commands.join(" · ")
    );
    Some(Line::styled(truncate(&text, width), app.theme.dim()))
}

/// Draws `screen` into the frame.
pub(crate) fn draw(frame: &mut Frame<'_>, screen: &Screen) {
    let area = frame.area();
    frame.render_widget(Paragraph::new(screen.lines.clone()), area);
    if let Some((x, y)) = screen.cursor {
        frame.set_cursor_position(Position::new(area.x + x, area.y + y));
    }
}

fn child_view(
    app: &App,
    index: usize,
    scroll: usize,
    width: usize,
    rows: usize,
    now: Instant,
) -> Screen {
    let theme = app.theme;
    let Some(child) = app.panel.children.get(index) else {
        return Screen {
            lines: vec![Line::styled("(no such agent)", theme.dim())],
            cursor: None,
        };
    };
    let mut lines = vec![
        child.row(width, theme, now),
        Line::styled(
            truncate(
                &format!(
                    "  {} · {} · Esc back · x stop · Tab next · ↑/↓ scroll",
                    child.path, child.agent_type
                ),
                width,
            ),
            theme.dim(),
        ),
        Line::styled("─".repeat(width), theme.dim()),
    ];
    let body = child.log.all_lines(width, theme, now);
    let room = rows.saturating_sub(lines.len() + 1);
    let scroll = scroll.min(body.len().saturating_sub(room));
    let end = body.len() - scroll;
    let start = end.saturating_sub(room);
    lines.extend(body[start..end].iter().cloned());
    if body.is_empty() {
        lines.push(Line::styled("  (nothing yet)", theme.dim()));
    }
    lines.push(footer(app, width, now));
    lines.truncate(rows);
    Screen {
        lines,
        cursor: None,
    }
}

/// `model · mode · tokens` on the left, what is happening on the right.
fn footer(app: &App, width: usize, now: Instant) -> Line<'static> {
    let theme: Theme = app.theme;
    let tokens = app.usage.budget_tokens();
    let context = match app.context {
        Some((used, window)) if window > 0 => format!(
            " · ctx {}/{} ({}%)",
            format_tokens(used),
            format_tokens(window),
            used.saturating_mul(100) / window
        ),
        _ => String::new(),
    };
    let facts = |model: &str| {
        format!(
            "{model} · {} · {} tok{context}",
            app.facts.mode,
            format_tokens(tokens)
        )
    };
    let (right, style) = if let Some(hint) = &app.hint {
        (hint.clone(), theme.warn())
    } else if !app.approvals.is_empty() {
        (
            format!("{} waiting for approval", app.approvals.len()),
            theme.warn(),
        )
    } else if let Overlay::Child { .. } = app.overlay {
        ("Esc back · Ctrl+C interrupts".to_owned(), theme.dim())
    } else if app.interrupting {
        ("interrupting…".to_owned(), theme.warn())
    } else if let Some(started) = app.turn_started {
        (
            format!(
                "{} working {} · esc to interrupt",
                spinner(started, now),
                format_duration(now.saturating_duration_since(started))
            ),
            theme.accent(),
        )
    } else if app.panel.children.is_empty() {
        ("/help for commands".to_owned(), theme.dim())
    } else {
        ("/help · ctrl+t agents".to_owned(), theme.dim())
    };
    let right = truncate(&right, width);
    let room = width.saturating_sub(text_width(&right) + 2);
    let mut left = facts(&app.facts.model);
    if text_width(&left) > room {
        // The model's name without its provider.
        left = facts(app.facts.model.rsplit('/').next().unwrap_or_default());
    }
    let left = truncate(&left, room);
    let pad = width.saturating_sub(text_width(&left) + text_width(&right));
    Line::from(vec![
        Span::styled(left, theme.dim()),
        Span::raw(" ".repeat(pad)),
        Span::styled(right, style),
    ])
}
