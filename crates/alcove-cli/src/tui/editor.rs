//! The prompt editor: multi-line text with a cursor, prompt history and
//! paste.
//!
//! Enter sends. Shift+Enter (where the terminal reports it), Alt+Enter,
//! Ctrl+J, or a `\` before Enter start a new line. ↑/↓ move between lines
//! and, from the first or last line, through earlier prompts.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use super::theme::Theme;

/// What a key did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum EditorAction {
    None,
    /// Enter on a non-empty prompt: the text to send.
    Submit(String),
}

/// The editor's state.
#[derive(Debug)]
pub(crate) struct Editor {
    lines: Vec<Vec<char>>,
    row: usize,
    col: usize,
    history: Vec<String>,
    /// Which history entry is shown, when browsing.
    browsing: Option<usize>,
    /// The text being written before browsing began.
    draft: String,
}

impl Default for Editor {
    fn default() -> Editor {
        Editor {
            lines: vec![Vec::new()],
            row: 0,
            col: 0,
            history: Vec::new(),
            browsing: None,
            draft: String::new(),
        }
    }
}

impl Editor {
    /// The text.
    pub(crate) fn text(&self) -> String {
        self.lines
            .iter()
            .map(|line| line.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Whether there is no text.
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// Replaces the text, with the cursor at its end.
    pub(crate) fn set_text(&mut self, text: &str) {
        self.lines = text
            .split('\n')
            .map(|line| line.chars().collect())
            .collect();
        if self.lines.is_empty() {
            self.lines.push(Vec::new());
        }
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].len();
    }

    /// Empties it.
    pub(crate) fn clear(&mut self) {
        self.set_text("");
        self.browsing = None;
    }

    /// Remembers a sent prompt for ↑.
    pub(crate) fn remember(&mut self, text: &str) {
        if self.history.last().map(String::as_str) != Some(text) {
            self.history.push(text.to_owned());
        }
        self.browsing = None;
    }

    /// Inserts text at the cursor (typing or paste; `\r\n` and `\r` become `\n`).
    pub(crate) fn insert(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for c in text.chars() {
            if c == '\n' {
                self.newline();
            } else if c == '\t' {
                self.insert_char(' ');
                self.insert_char(' ');
            } else if !c.is_control() {
                self.insert_char(c);
            }
        }
    }

    fn insert_char(&mut self, c: char) {
        self.lines[self.row].insert(self.col, c);
        self.col += 1;
    }

    fn newline(&mut self) {
        let rest = self.lines[self.row].split_off(self.col);
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    /// Handles one key.
    pub(crate) fn on_key(&mut self, key: KeyEvent) -> EditorAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) =>
            {
                self.newline()
            }
            KeyCode::Char('j') if ctrl => self.newline(),
            KeyCode::Enter => {
                if self.col > 0 && self.lines[self.row][self.col - 1] == '\\' {
                    self.lines[self.row].remove(self.col - 1);
                    self.col -= 1;
                    self.newline();
                    return EditorAction::None;
                }
                let text = self.text();
                if text.trim().is_empty() {
                    return EditorAction::None;
                }
                self.remember(&text);
                self.clear();
                return EditorAction::Submit(text);
            }
            KeyCode::Char('a') if ctrl => self.col = 0,
            KeyCode::Char('e') if ctrl => self.col = self.lines[self.row].len(),
            KeyCode::Char('u') if ctrl => {
                self.lines[self.row].drain(..self.col);
                self.col = 0;
            }
            KeyCode::Char('k') if ctrl => {
                self.lines[self.row].truncate(self.col);
            }
            KeyCode::Char('w') if ctrl => self.delete_word(),
            KeyCode::Backspace if alt || ctrl => self.delete_word(),
            KeyCode::Char(c) if !ctrl && !alt => self.insert_char(c),
            KeyCode::Backspace => {
                if self.col > 0 {
                    self.col -= 1;
                    self.lines[self.row].remove(self.col);
                } else if self.row > 0 {
                    let line = self.lines.remove(self.row);
                    self.row -= 1;
                    self.col = self.lines[self.row].len();
                    self.lines[self.row].extend(line);
                }
            }
            KeyCode::Delete => {
                if self.col < self.lines[self.row].len() {
                    self.lines[self.row].remove(self.col);
                } else if self.row + 1 < self.lines.len() {
                    let line = self.lines.remove(self.row + 1);
                    self.lines[self.row].extend(line);
                }
            }
            KeyCode::Left => {
                if self.col > 0 {
                    self.col -= 1;
                } else if self.row > 0 {
                    self.row -= 1;
                    self.col = self.lines[self.row].len();
                }
            }
            KeyCode::Right => {
                if self.col < self.lines[self.row].len() {
                    self.col += 1;
                } else if self.row + 1 < self.lines.len() {
                    self.row += 1;
                    self.col = 0;
                }
            }
            KeyCode::Home => self.col = 0,
            KeyCode::End => self.col = self.lines[self.row].len(),
            KeyCode::Up => {
                if self.row > 0 {
                    self.row -= 1;
                    self.col = self.col.min(self.lines[self.row].len());
                } else {
                    self.history_back();
                }
            }
            KeyCode::Down => {
                if self.row + 1 < self.lines.len() {
                    self.row += 1;
                    self.col = self.col.min(self.lines[self.row].len());
                } else {
                    self.history_forward();
                }
            }
            _ => {}
        }
        EditorAction::None
    }

    fn delete_word(&mut self) {
        let line = &mut self.lines[self.row];
        let mut start = self.col;
        while start > 0 && line[start - 1] == ' ' {
            start -= 1;
        }
        while start > 0 && line[start - 1] != ' ' {
            start -= 1;
        }
        line.drain(start..self.col);
        self.col = start;
    }

    fn history_back(&mut self) {
        let next = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(idx) => idx - 1,
        };
        self.browsing = Some(next);
        let text = self.history[next].clone();
        self.set_text(&text);
    }

    fn history_forward(&mut self) {
        let Some(idx) = self.browsing else {
            return;
        };
        if idx + 1 < self.history.len() {
            self.browsing = Some(idx + 1);
            let text = self.history[idx + 1].clone();
            self.set_text(&text);
        } else {
            self.browsing = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
    }

    /// The editor as at most `max_rows` lines `width` wide (soft-wrapped,
    /// scrolled to keep the cursor in view) and the cursor's (column, row)
    /// within them.
    pub(crate) fn render(
        &self,
        width: usize,
        max_rows: usize,
        placeholder: &str,
        theme: Theme,
    ) -> (Vec<Line<'static>>, (u16, u16)) {
        let room = width.saturating_sub(2).max(1);
        let mut rows: Vec<(bool, String)> = Vec::new();
        let mut cursor = (0, 0);
        for (line_idx, line) in self.lines.iter().enumerate() {
            let mut current = String::new();
            let mut used = 0;
            let first_row = rows.len();
            for (char_idx, c) in line.iter().enumerate() {
                let w = c.width().unwrap_or(0);
                if used + w > room {
                    rows.push((rows.len() == first_row, std::mem::take(&mut current)));
                    used = 0;
                }
                if line_idx == self.row && char_idx == self.col {
                    cursor = (used, rows.len());
                }
                current.push(*c);
                used += w;
            }
            if line_idx == self.row && self.col >= line.len() {
                if used >= room {
                    rows.push((rows.len() == first_row, std::mem::take(&mut current)));
                    used = 0;
                }
                cursor = (used, rows.len());
            }
            rows.push((rows.len() == first_row, current));
        }
        let max_rows = max_rows.max(1);
        let skip = (cursor.1 + 1).saturating_sub(max_rows);
        let mut out = Vec::new();
        for (idx, (starts_line, text)) in rows.iter().enumerate().skip(skip).take(max_rows) {
            let lead = if idx == 0 {
                "› "
            } else if *starts_line {
                "· "
            } else {
                "  "
            };
            let body = if self.is_empty() {
                Span::styled(placeholder.to_owned(), theme.dim())
            } else {
                Span::styled(text.clone(), theme.text())
            };
            out.push(Line::from(vec![Span::styled(lead, theme.accent()), body]));
        }
        let x = u16::try_from(cursor.0 + 2).unwrap_or(u16::MAX);
        let y = u16::try_from(cursor.1 - skip).unwrap_or(0);
        (out, (x, y))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::from(code)
    }

    fn typed(editor: &mut Editor, text: &str) {
        for c in text.chars() {
            editor.on_key(key(KeyCode::Char(c)));
        }
    }

    #[test]
    fn enter_sends_and_the_newline_keys_do_not() {
        let mut editor = Editor::default();
        typed(&mut editor, "one");
        editor.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
        typed(&mut editor, "two\\");
        editor.on_key(key(KeyCode::Enter));
        editor.on_key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::CONTROL));
        typed(&mut editor, "three");
        assert_eq!(
            editor.on_key(key(KeyCode::Enter)),
            EditorAction::Submit("one\ntwo\n\nthree".to_owned())
        );
        assert!(editor.is_empty());
        assert_eq!(editor.on_key(key(KeyCode::Enter)), EditorAction::None);
    }

    #[test]
    fn history_browses_and_restores_the_draft() {
        let mut editor = Editor::default();
        for prompt in ["first", "second"] {
            typed(&mut editor, prompt);
            editor.on_key(key(KeyCode::Enter));
        }
        typed(&mut editor, "draft");
        editor.on_key(key(KeyCode::Up));
        assert_eq!(editor.text(), "second");
        editor.on_key(key(KeyCode::Up));
        editor.on_key(key(KeyCode::Up));
        assert_eq!(editor.text(), "first");
        editor.on_key(key(KeyCode::Down));
        editor.on_key(key(KeyCode::Down));
        assert_eq!(editor.text(), "draft");
    }

    #[test]
    fn paste_keeps_lines_and_rendering_follows_the_cursor() {
        let mut editor = Editor::default();
        let pasted: String = (1..=20).map(|n| format!("line {n}\r\n")).collect();
        editor.insert(&pasted);
        assert_eq!(editor.text().lines().count(), 20);
        let (lines, cursor) = editor.render(40, 5, "", Theme::new(false));
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[3].to_string(), "· line 20");
        assert_eq!(cursor, (2, 4));
        editor.on_key(key(KeyCode::Backspace));
        editor.on_key(KeyEvent::new(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(editor.text().lines().last(), Some("line "));
    }
}
