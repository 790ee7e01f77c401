//! The `alcove resume` picker: recent sessions of this folder, newest first.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};

use super::theme::Theme;
use super::wrap::{text_width, truncate};
use crate::resume::{SessionInfo, ago};

/// How the picker ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Picked {
    Session(usize),
    Cancelled,
}

/// The picker's state.
pub(crate) struct Picker {
    pub(crate) sessions: Vec<SessionInfo>,
    selected: usize,
}

impl Picker {
    pub(crate) fn new(sessions: Vec<SessionInfo>) -> Picker {
        Picker {
            sessions,
            selected: 0,
        }
    }

    /// Handles a key; `Some` once a session is chosen or the picker is left.
    pub(crate) fn on_key(&mut self, key: KeyEvent) -> Option<Picked> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') if !ctrl => {
                self.selected = (self.selected + 1).min(self.sessions.len().saturating_sub(1));
            }
            KeyCode::Enter => return Some(Picked::Session(self.selected)),
            KeyCode::Esc | KeyCode::Char('q') => return Some(Picked::Cancelled),
            KeyCode::Char('c' | 'd') if ctrl => return Some(Picked::Cancelled),
            _ => {}
        }
        None
    }

    /// The picker in at most `rows` lines.
    pub(crate) fn lines(&self, width: usize, rows: usize, theme: Theme) -> Vec<Line<'static>> {
        let mut out = vec![
            Line::styled("Resume a session of this folder", theme.strong()),
            Line::styled("↑/↓ choose · Enter resume · Esc cancel", theme.dim()),
        ];
        let room = rows.saturating_sub(out.len()).max(1);
        let start = (self.selected + 1).saturating_sub(room);
        for (idx, session) in self.sessions.iter().enumerate().skip(start).take(room) {
            let when = format!("{:>9}", ago(session.modified));
            let id: String = session.id.chars().take(8).collect();
            let title_room = width.saturating_sub(text_width(&when) + id.len() + 6);
            let title = if session.title.is_empty() {
                "(no prompt)".to_owned()
            } else {
                truncate(&session.title, title_room)
            };
            let pad = title_room.saturating_sub(text_width(&title));
            let style = if idx == self.selected {
                theme.selected()
            } else {
                theme.text()
            };
            let marker = if idx == self.selected { "› " } else { "  " };
            out.push(Line::from(vec![
                Span::styled(format!("{marker}{title}{}", " ".repeat(pad)), style),
                Span::styled(format!(" {when}  {id}"), theme.dim()),
            ]));
        }
        out
    }
}
