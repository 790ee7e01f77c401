//! The UI's styles in one place, so `NO_COLOR` is honoured everywhere.
//!
//! With colour off, styles keep their modifiers (bold, dim, reverse) and
//! drop every foreground and background colour.

use ratatui::style::{Color, Modifier, Style};

/// The styles of one run of the UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Theme {
    color: bool,
}

impl Theme {
    /// Colour unless `NO_COLOR` is set to something non-empty.
    pub(crate) fn from_env() -> Theme {
        Theme {
            color: std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty()),
        }
    }

    /// A theme with or without colour.
    #[cfg(test)]
    pub(crate) fn new(color: bool) -> Theme {
        Theme { color }
    }

    fn fg(self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    /// Plain text.
    pub(crate) fn text(self) -> Style {
        Style::new()
    }

    /// Secondary text: hints, durations, borders.
    pub(crate) fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }

    /// What the user typed.
    pub(crate) fn user(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    /// Markers of the assistant and of running work.
    pub(crate) fn accent(self) -> Style {
        self.fg(Color::Magenta)
    }

    /// Tool names and headings.
    pub(crate) fn strong(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    /// Success.
    pub(crate) fn ok(self) -> Style {
        self.fg(Color::Green)
    }

    /// Failures and errors.
    pub(crate) fn error(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    /// Warnings and things that wait for the user.
    pub(crate) fn warn(self) -> Style {
        self.fg(Color::Yellow)
    }

    /// Inline code and code blocks.
    pub(crate) fn code(self) -> Style {
        self.fg(Color::LightBlue)
    }

    /// Added diff lines.
    pub(crate) fn added(self) -> Style {
        self.fg(Color::Green)
    }

    /// Removed diff lines.
    pub(crate) fn removed(self) -> Style {
        self.fg(Color::Red)
    }

    /// The selected row of a list.
    pub(crate) fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
}
