//! An inline viewport whose height follows its content, with finished lines
//! written above it into the terminal's normal scrollback.
//!
//! ratatui's own inline viewport has a fixed height, so the viewport here is
//! a `Viewport::Fixed` area whose top row this type tracks: it grows by
//! scrolling the screen up, shrinks by clearing rows below it, and moves
//! down as history is inserted above it. The alternate screen is never
//! used, so the conversation stays in the terminal's scrollback after exit.
//! Generic over the backend so tests can run it on `TestBackend`.

use ratatui::backend::{Backend, ClearType};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect, Size};
use ratatui::text::Line;
use ratatui::{Frame, Terminal, TerminalOptions, Viewport};

/// The terminal with an inline viewport.
pub(crate) struct Inline<B: Backend> {
    terminal: Terminal<B>,
    screen: Size,
    /// The viewport's first row.
    top: u16,
    height: u16,
    /// History was written where the viewport was; it must be redrawn.
    moved: bool,
}

impl<B: Backend> Inline<B> {
    /// Starts the viewport at `cursor_row` (where the shell left the cursor).
    pub(crate) fn new(backend: B, cursor_row: u16) -> Result<Inline<B>, B::Error> {
        let screen = backend.size()?;
        let top = cursor_row.min(screen.height.saturating_sub(1));
        let area = Rect::new(0, top, screen.width, 1);
        let terminal = Terminal::with_options(
            backend,
            TerminalOptions {
                viewport: Viewport::Fixed(area),
            },
        )?;
        Ok(Inline {
            terminal,
            screen,
            top,
            height: 1,
            moved: false,
        })
    }

    /// The terminal's size.
    pub(crate) fn screen(&self) -> Size {
        self.screen
    }

    /// The backend (tests read the screen from it).
    #[cfg(test)]
    pub(crate) fn backend(&self) -> &B {
        self.terminal.backend()
    }

    /// Draws the viewport `height` rows tall.
    pub(crate) fn draw(
        &mut self,
        height: u16,
        render: impl FnOnce(&mut Frame<'_>),
    ) -> Result<(), B::Error> {
        let moved = std::mem::take(&mut self.moved);
        self.set_height(height, moved)?;
        self.terminal.draw(render)?;
        Ok(())
    }

    /// Writes `lines` (each at most a screen wide) above the viewport.
    pub(crate) fn insert_history(&mut self, lines: &[Line<'_>]) -> Result<(), B::Error> {
        if lines.is_empty() {
            return Ok(());
        }
        let width = self.screen.width;
        let rows = self.screen.height.max(1);
        let count = u16::try_from(lines.len()).unwrap_or(u16::MAX);
        let area = Rect::new(0, 0, width, count);
        let mut buffer = Buffer::empty(area);
        for (idx, line) in lines.iter().enumerate().take(usize::from(count)) {
            let y = u16::try_from(idx).unwrap_or(u16::MAX);
            buffer.set_line(0, y, line, width);
        }
        let blank = Buffer::empty(area);
        let cells = blank.diff(&buffer);

        let backend = self.terminal.backend_mut();
        backend.set_cursor_position(Position::new(0, self.top))?;
        backend.clear_region(ClearType::AfterCursor)?;
        let mut y = self.top;
        let mut next = 0;
        for row in 0..count {
            if y >= rows {
                backend.set_cursor_position(Position::new(0, rows - 1))?;
                backend.append_lines(1)?;
                y = rows - 1;
            }
            let start = next;
            while next < cells.len() && cells[next].1 == row {
                next += 1;
            }
            backend.draw(cells[start..next].iter().map(|(x, _, cell)| (*x, y, *cell)))?;
            y += 1;
        }
        backend.flush()?;
        self.top = y;
        // The next draw places the viewport below the new lines, scrolling
        // only as far as its own (new) height needs.
        self.moved = true;
        Ok(())
    }

    /// The terminal was resized.
    pub(crate) fn resize(&mut self, screen: Size) -> Result<(), B::Error> {
        let narrower = screen.width < self.screen.width;
        self.screen = screen;
        if narrower {
            // ratatui clears the whole screen when the viewport narrows; the
            // viewport then starts at the top.
            self.top = 0;
        }
        let height = self.height;
        self.set_height(height, true)
    }

    /// Clears the screen and puts the viewport at the top (`/clear`).
    pub(crate) fn clear_screen(&mut self) -> Result<(), B::Error> {
        self.terminal.backend_mut().clear_region(ClearType::All)?;
        self.top = 0;
        let height = self.height;
        self.set_height(height, true)
    }

    /// Clears the viewport and leaves the cursor where it began, so the
    /// shell prompt comes right after the conversation.
    pub(crate) fn finish(&mut self) -> Result<(), B::Error> {
        let rows = self.screen.height.max(1);
        let backend = self.terminal.backend_mut();
        if self.top >= rows {
            // History reached the last row: make one free row below it.
            backend.set_cursor_position(Position::new(0, rows - 1))?;
            backend.append_lines(1)?;
            self.top = rows - 1;
        }
        let top = self.top;
        backend.set_cursor_position(Position::new(0, top))?;
        backend.clear_region(ClearType::AfterCursor)?;
        backend.show_cursor()?;
        backend.flush()
    }

    fn set_height(&mut self, height: u16, force: bool) -> Result<(), B::Error> {
        let rows = self.screen.height.max(1);
        let height = height.clamp(1, rows);
        if height == self.height && !force && self.top + height <= rows {
            return Ok(());
        }
        let backend = self.terminal.backend_mut();
        if self.top + height > rows {
            let scroll = self.top + height - rows;
            backend.set_cursor_position(Position::new(0, rows - 1))?;
            backend.append_lines(scroll)?;
            self.top -= scroll.min(self.top);
        }
        backend.set_cursor_position(Position::new(0, self.top))?;
        backend.clear_region(ClearType::AfterCursor)?;
        self.height = height;
        let area = Rect::new(0, self.top, self.screen.width, height);
        self.terminal.resize(area)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::widgets::Paragraph;

    fn rows(inline: &Inline<TestBackend>) -> Vec<String> {
        let buffer = inline.backend().buffer();
        (0..buffer.area.height)
            .map(|y| {
                (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn history_goes_above_the_viewport_and_scrolls_off_the_top() {
        let mut inline = Inline::new(TestBackend::new(10, 5), 1).unwrap();
        inline
            .draw(2, |frame| {
                frame.render_widget(Paragraph::new("› input\nfooter"), frame.area())
            })
            .unwrap();
        assert_eq!(rows(&inline), vec!["", "› input", "footer", "", ""]);
        inline
            .insert_history(&[Line::from("one"), Line::from("two")])
            .unwrap();
        inline
            .draw(2, |frame| {
                frame.render_widget(Paragraph::new("› input\nfooter"), frame.area())
            })
            .unwrap();
        assert_eq!(rows(&inline), vec!["", "one", "two", "› input", "footer"]);
        inline
            .insert_history(&[Line::from("three"), Line::from("four")])
            .unwrap();
        inline
            .draw(3, |frame| {
                frame.render_widget(Paragraph::new("a\nb\nc"), frame.area())
            })
            .unwrap();
        assert_eq!(rows(&inline), vec!["three", "four", "a", "b", "c"]);
        assert_eq!(inline.top, 2);
    }
}
