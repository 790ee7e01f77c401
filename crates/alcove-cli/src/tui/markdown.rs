//! Assistant text rendered as Markdown: headings, lists, quotes, rules, code
//! blocks and inline code, bold and italic.
//!
//! It works line by line and keeps no state beyond "inside a code fence", so
//! text still streaming in (an unclosed fence, half a list) renders the same
//! way it will once complete. Line breaks are kept as the model wrote them.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::theme::Theme;
use super::wrap::wrap_line;

/// `text` as styled lines wrapped to `width`.
pub(crate) fn render(text: &str, width: usize, theme: Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    for raw in text.lines() {
        let trimmed = raw.trim_start();
        if let Some(marker) = &fence {
            if trimmed.starts_with(marker.as_str()) && trimmed.trim_end() == marker.as_str() {
                fence = None;
            } else {
                let line = Line::from(vec![
                    Span::raw("  "),
                    Span::styled(raw.to_owned(), theme.code()),
                ]);
                out.extend(wrap_line(&line, width, "  "));
            }
            continue;
        }
        if let Some(marker) = fence_marker(trimmed) {
            fence = Some(marker);
            continue;
        }
        if trimmed.is_empty() {
            out.push(Line::default());
            continue;
        }
        let indent = raw.len() - trimmed.len();
        if let Some((level, heading)) = heading(trimmed) {
            let mut style = theme.strong();
            if level == 1 {
                style = style.add_modifier(Modifier::UNDERLINED);
            }
            let line = Line::from(inline(heading, style, theme));
            out.extend(wrap_line(&line, width, ""));
            continue;
        }
        if is_rule(trimmed) {
            out.push(Line::styled("─".repeat(width.min(40)), theme.dim()));
            continue;
        }
        if let Some(quoted) = trimmed.strip_prefix('>') {
            let mut spans = vec![Span::styled("│ ", theme.dim())];
            spans.extend(inline(
                quoted.trim_start(),
                Style::new().add_modifier(Modifier::ITALIC),
                theme,
            ));
            out.extend(wrap_line(&Line::from(spans), width, "│ "));
            continue;
        }
        if let Some((marker, item)) = list_item(trimmed) {
            let lead = " ".repeat(indent);
            let hang = " ".repeat(indent + marker.chars().count() + 1);
            let mut spans = vec![
                Span::raw(lead),
                Span::styled(format!("{marker} "), theme.accent()),
            ];
            spans.extend(inline(item, Style::new(), theme));
            out.extend(wrap_line(&Line::from(spans), width, &hang));
            continue;
        }
        let line = Line::from(inline(raw, Style::new(), theme));
        out.extend(wrap_line(&line, width, ""));
    }
    out
}

/// ```` ``` ```` or `~~~` (with or without a language) opens a fence closed by the same marker.
fn fence_marker(trimmed: &str) -> Option<String> {
    for marker in ["```", "~~~"] {
        if trimmed.starts_with(marker) {
            let len = trimmed
                .chars()
                .take_while(|c| *c == marker.as_bytes()[0] as char)
                .count();
            return Some(marker[..1].repeat(len));
        }
    }
    None
}

fn heading(trimmed: &str) -> Option<(usize, &str)> {
    let level = trimmed.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&level) {
        let rest = &trimmed[level..];
        if let Some(text) = rest.strip_prefix(' ') {
            return Some((level, text.trim()));
        }
    }
    None
}

fn is_rule(trimmed: &str) -> bool {
    let compact: String = trimmed.chars().filter(|c| !c.is_whitespace()).collect();
    compact.len() >= 3
        && ["-", "*", "_"]
            .iter()
            .any(|c| compact.chars().all(|x| x.to_string() == *c))
}

/// `- x`, `* x`, `+ x` become a bullet; `1. x` and `1) x` keep their number.
fn list_item(trimmed: &str) -> Option<(String, &str)> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(item) = trimmed.strip_prefix(bullet) {
            return Some(("•".to_owned(), item));
        }
    }
    let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && digits < 4 {
        let rest = &trimmed[digits..];
        for close in [". ", ") "] {
            if let Some(item) = rest.strip_prefix(close) {
                return Some((trimmed[..digits + 1].to_owned(), item));
            }
        }
    }
    None
}

/// Inline markup: `code`, **bold**, *italic* / _italic_, [text](url).
fn inline(text: &str, base: Style, theme: Theme) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut plain = String::new();
    let mut bold = false;
    let mut italic = false;
    let style_of = |bold: bool, italic: bool| {
        let mut style = base;
        if bold {
            style = style.add_modifier(Modifier::BOLD);
        }
        if italic {
            style = style.add_modifier(Modifier::ITALIC);
        }
        style
    };
    let chars: Vec<char> = text.chars().collect();
    let mut idx = 0;
    let flush = |plain: &mut String, spans: &mut Vec<Span<'static>>, style: Style| {
        if !plain.is_empty() {
            spans.push(Span::styled(std::mem::take(plain), style));
        }
    };
    while idx < chars.len() {
        let c = chars[idx];
        let next = chars.get(idx + 1).copied();
        if c == '`'
            && let Some(len) = chars[idx + 1..].iter().position(|x| *x == '`')
        {
            flush(&mut plain, &mut spans, style_of(bold, italic));
            let code: String = chars[idx + 1..idx + 1 + len].iter().collect();
            spans.push(Span::styled(code, theme.code()));
            idx += len + 2;
            continue;
        }
        if (c == '*' || c == '_') && next == Some(c) {
            let closing = bold || closes(&chars[idx + 2..], &[c, c]);
            if closing {
                flush(&mut plain, &mut spans, style_of(bold, italic));
                bold = !bold;
                idx += 2;
                continue;
            }
        }
        if (c == '*' || c == '_') && next != Some(c) {
            let word_inside = if italic {
                idx > 0 && chars[idx - 1] != ' '
            } else {
                next.is_some_and(|n| n != ' ') && closes(&chars[idx + 1..], &[c])
            };
            let intraword = c == '_'
                && idx > 0
                && chars[idx - 1].is_alphanumeric()
                && next.is_some_and(char::is_alphanumeric);
            if word_inside && !intraword {
                flush(&mut plain, &mut spans, style_of(bold, italic));
                italic = !italic;
                idx += 1;
                continue;
            }
        }
        if c == '['
            && let Some(close) = chars[idx..].iter().position(|x| *x == ']')
            && chars.get(idx + close + 1) == Some(&'(')
            && let Some(end) = chars[idx + close + 1..].iter().position(|x| *x == ')')
        {
            flush(&mut plain, &mut spans, style_of(bold, italic));
            let label: String = chars[idx + 1..idx + close].iter().collect();
            let url: String = chars[idx + close + 2..idx + close + 1 + end]
                .iter()
                .collect();
            spans.push(Span::styled(
                label,
                style_of(bold, italic).add_modifier(Modifier::UNDERLINED),
            ));
            spans.push(Span::styled(format!(" ({url})"), theme.dim()));
            idx += close + 1 + end + 1;
            continue;
        }
        plain.push(c);
        idx += 1;
    }
    flush(&mut plain, &mut spans, style_of(bold, italic));
    spans
}

/// Whether `pattern` occurs later in `rest`.
fn closes(rest: &[char], pattern: &[char]) -> bool {
    rest.windows(pattern.len()).any(|window| window == pattern)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        render(text, 40, Theme::new(false))
            .iter()
            .map(|line| line.to_string())
            .collect()
    }

    #[test]
    fn block_elements() {
        let text = "# Title\n\nSome `code` and **bold**.\n- one\n  - nested\n2. two\n> quoted\n---\n```rust\nfn main() {}\n```\nafter";
        assert_eq!(
            texts(text),
            vec![
                "Title",
                "",
                "Some code and bold.",
                "• one",
                "  • nested",
                "2. two",
                "│ quoted",
                "────────────────────────────────────────",
                "  fn main() {}",
                "after",
            ]
        );
    }

    #[test]
    fn an_unclosed_fence_is_code_until_the_end() {
        assert_eq!(texts("```\nlet x = *y;"), vec!["  let x = *y;"]);
        assert_eq!(
            texts("snake_case_name and 2 * 3 * 4"),
            vec!["snake_case_name and 2 * 3 * 4"]
        );
        assert_eq!(texts("see [docs](http://x)"), vec!["see docs (http://x)"]);
    }

    #[test]
    fn inline_styles_are_spans() {
        let lines = render("a **b** *c* `d`", 40, Theme::new(true));
        let spans = &lines[0].spans;
        assert!(
            spans
                .iter()
                .any(|s| s.content == "b" && s.style.add_modifier.contains(Modifier::BOLD))
        );
        assert!(
            spans
                .iter()
                .any(|s| s.content == "c" && s.style.add_modifier.contains(Modifier::ITALIC))
        );
        assert!(
            spans
                .iter()
                .any(|s| s.content == "d" && s.style.fg.is_some())
        );
    }
}
