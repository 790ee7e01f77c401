//! Word wrapping of styled lines.
//!
//! Lines that go to the terminal's scrollback must be wrapped before they
//! are written, since the number of rows they take has to be known; this is
//! the one wrapper every cell uses.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Wraps `line` to `width` columns at spaces (words longer than a row are
/// cut). Rows after the first start with `indent`.
pub(crate) fn wrap_line(line: &Line<'_>, width: usize, indent: &str) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent_width: usize = indent.chars().map(char_width).sum();
    let indent_width = if indent_width >= width {
        0
    } else {
        indent_width
    };
    let chars: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|span| {
            let style = span.style;
            span.content.chars().map(move |c| (c, style))
        })
        .filter(|(c, _)| *c != '\n' && *c != '\r')
        .map(|(c, style)| if c == '\t' { (' ', style) } else { (c, style) })
        .collect();

    let mut rows: Vec<Vec<(char, Style)>> = vec![Vec::new()];
    let mut used = 0;
    let mut idx = 0;
    while idx < chars.len() {
        let is_space = chars[idx].0 == ' ';
        let end = chars[idx..]
            .iter()
            .position(|(c, _)| (*c == ' ') != is_space)
            .map_or(chars.len(), |len| idx + len);
        let token = &chars[idx..end];
        idx = end;
        let token_width: usize = token.iter().map(|(c, _)| char_width(*c)).sum();
        let continuation = rows.len() > 1;
        let row_start = if continuation { indent_width } else { 0 };
        if is_space {
            if used == row_start && continuation {
                continue;
            }
            for &(c, style) in token {
                if used + 1 > width {
                    break;
                }
                push(&mut rows, (c, style));
                used += 1;
            }
            continue;
        }
        if used + token_width > width && used > row_start {
            trim_trailing_spaces(&mut rows);
            new_row(&mut rows, indent, indent_width, &mut used);
        }
        for &(c, style) in token {
            let w = char_width(c);
            let row_start = if rows.len() > 1 { indent_width } else { 0 };
            if used + w > width && used > row_start {
                new_row(&mut rows, indent, indent_width, &mut used);
            }
            push(&mut rows, (c, style));
            used += w;
        }
    }
    trim_trailing_spaces(&mut rows);
    rows.into_iter()
        .map(|row| Line::from(spans_of(&row)).style(line.style))
        .collect()
}

/// The display width of a string.
pub(crate) fn text_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// `text` cut to `width` columns, with `…` when something was cut.
pub(crate) fn truncate(text: &str, width: usize) -> String {
    if text_width(text) <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = char_width(c);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    if width > 0 {
        out.push('…');
    }
    out
}

fn char_width(c: char) -> usize {
    if c == '\t' { 1 } else { c.width().unwrap_or(0) }
}

fn push(rows: &mut [Vec<(char, Style)>], cell: (char, Style)) {
    if let Some(row) = rows.last_mut() {
        row.push(cell);
    }
}

fn new_row(
    rows: &mut Vec<Vec<(char, Style)>>,
    indent: &str,
    indent_width: usize,
    used: &mut usize,
) {
    let mut row = Vec::new();
    if indent_width > 0 {
        row.extend(indent.chars().map(|c| (c, Style::new())));
    }
    rows.push(row);
    *used = indent_width;
}

fn trim_trailing_spaces(rows: &mut [Vec<(char, Style)>]) {
    if let Some(row) = rows.last_mut() {
        while row.last().is_some_and(|(c, _)| *c == ' ') && row.len() > 1 {
            row.pop();
        }
    }
}

fn spans_of(row: &[(char, Style)]) -> Vec<Span<'static>> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut current: Option<Style> = None;
    for &(c, style) in row {
        if current != Some(style) {
            if let Some(previous) = current
                && !text.is_empty()
            {
                spans.push(Span::styled(std::mem::take(&mut text), previous));
            }
            current = Some(style);
        }
        text.push(c);
    }
    if let Some(style) = current
        && !text.is_empty()
    {
        spans.push(Span::styled(text, style));
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|line| line.to_string()).collect()
    }

    #[test]
    fn wraps_at_spaces_with_a_hanging_indent() {
        let line = Line::from("• one two three four five");
        assert_eq!(
            texts(&wrap_line(&line, 12, "  ")),
            vec!["• one two", "  three four", "  five"]
        );
    }

    #[test]
    fn cuts_words_longer_than_a_row_and_keeps_empty_lines() {
        assert_eq!(
            texts(&wrap_line(&Line::from("abcdefghij"), 4, "")),
            vec!["abcd", "efgh", "ij"]
        );
        assert_eq!(texts(&wrap_line(&Line::from(""), 4, "")), vec![""]);
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
