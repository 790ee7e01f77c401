//! Hook matchers, as Claude Code reads them: empty or `*` matches
//! everything; plain names (`Bash`, `Edit|Write`, `code-reviewer`) match
//! exactly; anything else is a regular expression searched in the name
//! (`mcp__.*__write`, `Notebook.*`).

use regex::Regex;

/// A compiled matcher.
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    All,
    Names(Vec<String>),
    Pattern(Regex),
}

impl Matcher {
    /// Compiles `text`; an invalid regular expression is an error.
    pub(crate) fn parse(text: &str) -> Result<Matcher, String> {
        let text = text.trim();
        if text.is_empty() || text == "*" {
            return Ok(Matcher::All);
        }
        let plain = text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|'));
        if plain {
            return Ok(Matcher::Names(
                text.split('|')
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ));
        }
        Regex::new(text)
            .map(Matcher::Pattern)
            .map_err(|err| format!("not a valid regular expression: {err}"))
    }

    /// Whether the hook runs for `target`.
    pub(crate) fn matches(&self, target: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|name| name == target),
            Matcher::Pattern(regex) => regex.is_match(target),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(matcher: &str, target: &str) -> bool {
        Matcher::parse(matcher).unwrap().matches(target)
    }

    #[test]
    fn empty_and_star_match_everything() {
        assert!(matches("", "Bash"));
        assert!(matches("*", "anything"));
        assert!(matches("  ", "Read"));
    }

    #[test]
    fn plain_names_match_exactly() {
        assert!(matches("Bash", "Bash"));
        assert!(!matches("Bash", "BashOutput"));
        assert!(!matches("Bash", "bash"));
        assert!(matches("Edit|Write", "Write"));
        assert!(matches("Edit|Write", "Edit"));
        assert!(!matches("Edit|Write", "Read"));
        assert!(matches("code-reviewer", "code-reviewer"));
        assert!(!matches("code-reviewer", "code-reviewer-2"));
    }

    #[test]
    fn other_matchers_are_regexes_searched_in_the_name() {
        assert!(matches("mcp__.*__write", "mcp__fs__write_file"));
        assert!(matches("^Re.d$", "Read"));
        assert!(!matches("^Re.d$", "Ready"));
        assert!(matches("Notebook.*", "NotebookEdit"));
        assert!(Matcher::parse("(unclosed").is_err());
    }
}
