//! The main agent's plan (its last `TodoWrite`), drawn under the
//! conversation while it has steps: done, the one in progress (in its
//! `activeForm`), and what is left.

use alcove_protocol::{Todo, TodoStatus, completed_count};
use ratatui::text::Line;

use super::theme::Theme;
use super::wrap::truncate;

/// The most steps drawn; the rest are counted.
const SHOWN: usize = 8;

/// `Plan 1/3` and a line per step (at most [`SHOWN`]); none for no plan.
pub(crate) fn lines(todos: &[Todo], width: usize, theme: Theme) -> Vec<Line<'static>> {
    if todos.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![Line::styled(
        truncate(
            &format!(" Plan {}/{}", completed_count(todos), todos.len()),
            width,
        ),
        theme.strong(),
    )];
    for todo in todos.iter().take(SHOWN) {
        let (mark, text, style) = match todo.status {
            TodoStatus::Completed => ("✓", &todo.content, theme.dim()),
            TodoStatus::InProgress => ("▸", &todo.active_form, theme.accent()),
            TodoStatus::Pending => ("○", &todo.content, theme.text()),
        };
        let text = text.replace('\n', " ");
        lines.push(Line::styled(
            truncate(&format!("  {mark} {text}"), width),
            style,
        ));
    }
    if todos.len() > SHOWN {
        lines.push(Line::styled(
            format!("  … {} more", todos.len() - SHOWN),
            theme.dim(),
        ));
    }
    lines
}
