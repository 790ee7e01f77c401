//! A small JavaScript lexer: enough to read `meta`'s literal and to see a
//! script's code apart from its comments and strings.
//!
//! The static checks (`check.rs`) look for `Math.random()` and friends in
//! code only, so a prompt that mentions them is not refused, while code
//! inside a template's `${…}` is still seen.

/// A position in a script's source.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str) -> Cursor<'a> {
        Cursor { text, at: 0 }
    }

    pub(crate) fn offset(&self) -> usize {
        self.at
    }

    /// The 1-based line of the cursor.
    pub(crate) fn line(&self) -> usize {
        self.text[..self.at].matches('\n').count() + 1
    }

    pub(crate) fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn peek_second(&self) -> Option<char> {
        self.text[self.at..].chars().nth(1)
    }

    pub(crate) fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        Some(c)
    }

    pub(crate) fn eat_char(&mut self, wanted: char) -> bool {
        if self.peek() == Some(wanted) {
            self.bump();
            true
        } else {
            false
        }
    }

    /// Consumes `word` when it is the next whole identifier.
    pub(crate) fn eat_word(&mut self, word: &str) -> bool {
        let rest = &self.text[self.at..];
        let whole = rest.starts_with(word)
            && !rest[word.len()..]
                .chars()
                .next()
                .is_some_and(is_identifier_char);
        if whole {
            self.at += word.len();
        }
        whole
    }

    /// An identifier (possibly empty).
    pub(crate) fn word(&mut self) -> String {
        let start = self.at;
        while self.peek().is_some_and(is_identifier_char) {
            self.bump();
        }
        self.text[start..self.at].to_owned()
    }

    /// A number's characters.
    pub(crate) fn number(&mut self) -> String {
        let start = self.at;
        self.eat_char('-');
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
        {
            self.bump();
        }
        self.text[start..self.at].replace('_', "")
    }

    /// Whitespace and comments.
    pub(crate) fn skip_trivia(&mut self) {
        loop {
            match (self.peek(), self.peek_second()) {
                (Some(c), _) if c.is_whitespace() => {
                    self.bump();
                }
                (Some('/'), Some('/')) => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                (Some('/'), Some('*')) => {
                    self.bump();
                    self.bump();
                    while self.peek().is_some()
                        && !(self.peek() == Some('*') && self.peek_second() == Some('/'))
                    {
                        self.bump();
                    }
                    self.bump();
                    self.bump();
                }
                _ => return,
            }
        }
    }

    /// Spaces and tabs, not a line end.
    pub(crate) fn skip_spaces_on_line(&mut self) {
        while self.peek().is_some_and(|c| c == ' ' || c == '\t') {
            self.bump();
        }
    }

    /// A '…' or "…" string, unescaped.
    pub(crate) fn string(&mut self) -> Result<String, String> {
        let line = self.line();
        let Some(quote) = self.bump() else {
            return Err("expected a string".to_owned());
        };
        let mut out = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => return Err(format!("line {line}: unterminated string")),
                Some(c) if c == quote => return Ok(out),
                Some('\\') => out.push(self.escape()?),
                Some(c) => out.push(c),
            }
        }
    }

    /// A `…` template without `${}`.
    pub(crate) fn plain_template(&mut self) -> Result<String, String> {
        let line = self.line();
        self.bump();
        let mut out = String::new();
        loop {
            match self.bump() {
                None => return Err(format!("line {line}: unterminated template")),
                Some('`') => return Ok(out),
                Some('$') if self.peek() == Some('{') => {
                    return Err(format!(
                        "meta (line {line}) must be a pure literal: template interpolation is not allowed"
                    ));
                }
                Some('\\') => out.push(self.escape()?),
                Some(c) => out.push(c),
            }
        }
    }

    fn escape(&mut self) -> Result<char, String> {
        Ok(match self.bump() {
            Some('n') => '\n',
            Some('t') => '\t',
            Some('r') => '\r',
            Some('0') => '\0',
            Some('u') => {
                let hex: String = (0..4).filter_map(|_| self.bump()).collect();
                u32::from_str_radix(&hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("bad escape \\u{hex}"))?
            }
            Some(c) => c,
            None => return Err("unterminated escape".to_owned()),
        })
    }
}

pub(crate) fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// `source` with comments and the text of strings and templates replaced by
/// spaces (line ends kept), so only code is left; a template's `${…}` is code.
pub(crate) fn code_only(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let chars: Vec<char> = source.chars().collect();
    // Each open template, with the brace depth its `${` was opened at.
    let mut templates: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut in_template_text = false;
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        if in_template_text {
            match c {
                '\\' => {
                    out.push(' ');
                    if let Some(&next) = chars.get(i + 1) {
                        out.push(blank(next));
                    }
                    i += 2;
                    continue;
                }
                '`' => {
                    in_template_text = false;
                    templates.pop();
                    out.push('`');
                }
                '$' if chars.get(i + 1) == Some(&'{') => {
                    in_template_text = false;
                    depth += 1;
                    out.push_str("${");
                    i += 2;
                    continue;
                }
                other => out.push(blank(other)),
            }
            i += 1;
            continue;
        }
        match c {
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    out.push(' ');
                    i += 1;
                }
                continue;
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                out.push_str("  ");
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    out.push(blank(chars[i]));
                    i += 1;
                }
                out.push_str("  ");
                i += 2;
                continue;
            }
            '\'' | '"' => {
                out.push(c);
                i += 1;
                while i < chars.len() && chars[i] != c && chars[i] != '\n' {
                    if chars[i] == '\\' {
                        out.push(' ');
                        i += 1;
                    }
                    if let Some(&inside) = chars.get(i) {
                        out.push(blank(inside));
                    }
                    i += 1;
                }
                if i < chars.len() {
                    out.push(chars[i]);
                }
            }
            '`' => {
                out.push('`');
                templates.push(depth);
                in_template_text = true;
            }
            '{' => {
                depth += 1;
                out.push(c);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                out.push(c);
                if templates.last() == Some(&depth) {
                    in_template_text = true;
                }
            }
            other => out.push(other),
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_strings_are_blanked_and_interpolations_kept() {
        let source = "a('Math.random()') // Date.now()\n/* x */ b(`t ${c(`u ${d}`)} v`)";
        let code = code_only(source);
        assert!(!code.contains("Math"), "{code}");
        assert!(!code.contains("Date"), "{code}");
        assert!(code.contains("${c(`") && code.contains("${d}"), "{code}");
        assert!(!code.contains('t') || !code.contains(" t "), "{code}");
        assert_eq!(code.lines().count(), 2);
        assert_eq!(code.chars().count(), source.chars().count());
    }
}
