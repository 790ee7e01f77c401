//! What can be known of a script before it runs: the calls it may not make
//! and the `agent()` call sites the plan shows.
//!
//! `Date.now()`, `Math.random()` and `new Date()` would make a resumed run
//! differ from the first one; `import`/`require` would load code the plan
//! never showed. A script that names them in its code (not in a comment or
//! a string) is refused before any agent starts; the runtime throws too, for
//! what a static look cannot see.

use crate::lexer::{code_only, is_identifier_char};

/// One `agent(` in a script's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSite {
    /// 1-based line in the script file.
    pub line: usize,
    /// The line's text, trimmed and cut to 120 characters.
    pub text: String,
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Punct(char),
}

fn tokens(code: &str) -> Vec<(Token, usize)> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            line += 1;
        } else if is_identifier_char(c) {
            let mut word = String::from(c);
            while let Some(&next) = chars.peek() {
                if !is_identifier_char(next) {
                    break;
                }
                word.push(next);
                chars.next();
            }
            out.push((Token::Word(word), line));
        } else if !c.is_whitespace() {
            out.push((Token::Punct(c), line));
        }
    }
    out
}

fn is_word(token: Option<&(Token, usize)>, word: &str) -> bool {
    matches!(token, Some((Token::Word(w), _)) if w == word)
}

fn is_punct(token: Option<&(Token, usize)>, punct: char) -> bool {
    matches!(token, Some((Token::Punct(p), _)) if *p == punct)
}

/// Refuses a script whose code calls what the dialect forbids; every
/// offence is listed with its line.
pub fn check_source(body: &str) -> Result<(), String> {
    let code = code_only(body);
    let tokens = tokens(&code);
    let mut offences = Vec::new();
    for (i, (token, line)) in tokens.iter().enumerate() {
        let Token::Word(word) = token else { continue };
        let before = i.checked_sub(1).and_then(|b| tokens.get(b));
        let member = is_punct(before, '.');
        let next = tokens.get(i + 1);
        let after = tokens.get(i + 2);
        let found = match word.as_str() {
            "Math" if is_punct(next, '.') && is_word(after, "random") => {
                Some("Math.random() (vary prompts by index instead)")
            }
            "Date" if is_punct(next, '.') && is_word(after, "now") => {
                Some("Date.now() (pass a time in through args)")
            }
            "Date" if is_word(before, "new") => {
                let no_argument = !is_punct(next, '(') || is_punct(after, ')');
                no_argument
                    .then_some("new Date() without an argument (pass a time in through args)")
            }
            "Date" if !member && is_punct(next, '(') => {
                Some("Date() (pass a time in through args)")
            }
            "import" if !member => Some("import (a workflow loads no modules)"),
            "require" if !member && is_punct(next, '(') => {
                Some("require() (a workflow loads no modules)")
            }
            _ => None,
        };
        if let Some(what) = found {
            offences.push(format!("line {line}: {what}"));
        }
    }
    if offences.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the script uses what a workflow may not (it would break resume or load code): {}",
            offences.join("; ")
        ))
    }
}

/// The `agent(` calls in `body`'s code, in source order.
pub fn call_sites(body: &str) -> Vec<CallSite> {
    let code = code_only(body);
    let lines: Vec<&str> = body.lines().collect();
    let tokens = tokens(&code);
    let mut sites: Vec<CallSite> = Vec::new();
    for (i, (token, line)) in tokens.iter().enumerate() {
        let before = i.checked_sub(1).and_then(|b| tokens.get(b));
        if *token == Token::Word("agent".to_owned())
            && is_punct(tokens.get(i + 1), '(')
            && !is_punct(before, '.')
            && sites.last().map(|site| site.line) != Some(*line)
        {
            let text: String = lines
                .get(line - 1)
                .map(|text| text.trim().chars().take(120).collect())
                .unwrap_or_default();
            sites.push(CallSite { line: *line, text });
        }
    }
    sites
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nondeterminism_and_modules_are_refused_with_their_lines() {
        for (source, words) in [
            ("const x = Math.random()", "line 1: Math.random()"),
            ("\nconst t = Date . now()", "line 2: Date.now()"),
            ("const d = new Date()", "new Date() without"),
            ("const d = new Date", "new Date() without"),
            ("const s = Date()", "Date()"),
            ("import fs from 'fs'", "import"),
            ("const m = await import('x')", "import"),
            ("const fs = require('fs')", "require()"),
            ("const x = `${Math.random()}`", "Math.random()"),
        ] {
            let err = check_source(source).unwrap_err();
            assert!(err.contains(words), "{source}: {err}");
        }
    }

    #[test]
    fn mentions_in_strings_and_comments_and_dates_with_arguments_pass() {
        let source = "// Math.random() is banned\nconst p = 'do not call Date.now()'\nconst d = new Date(args.when)\nconst t = `at ${d.getTime()}`\nx.require(1); y.Date(2)";
        assert_eq!(check_source(source), Ok(()));
    }

    #[test]
    fn agent_call_sites_are_listed_once_per_line() {
        let source = "const a = await agent('one')\n// agent('not code')\nconst b = await parallel([() => agent('x'), () => agent('y')])\nobj.agent('member')";
        let sites = call_sites(source);
        assert_eq!(sites.iter().map(|s| s.line).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(sites[0].text, "const a = await agent('one')");
    }
}
