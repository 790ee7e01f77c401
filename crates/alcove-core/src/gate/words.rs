//! Matching `Bash(...)` rules against the words of one part of a command.
//!
//! `Bash(git diff:*)` is a prefix of words, `Bash(npm run *)` a glob over the
//! words joined by single spaces, `Bash(npm test)` the exact words. Deny and
//! ask rules are also tried on the words without leading assignments,
//! wrappers (`sudo`, `env`, `nohup`, …) and the program's folder, so that
//! `sudo /bin/rm x` is caught by `Bash(rm:*)`; allow rules match the words as
//! written only.

use std::path::Path;

use super::shell::Part;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BashPattern {
    /// `git diff:*`: the words start with these.
    Prefix(Vec<String>),
    /// `npm run *`: a glob over the words joined by single spaces.
    Glob(String),
    /// `npm test`: exactly these words.
    Exact(Vec<String>),
}

/// Commands whose second word names a subcommand, for suggested rules.
const SUBCOMMAND_TOOLS: [&str; 16] = [
    "git", "cargo", "npm", "pnpm", "yarn", "go", "docker", "kubectl", "gh", "uv", "pip", "poetry",
    "bun", "deno", "make", "rustup",
];
/// Words that run the rest of the command, skipped when matching deny and ask rules.
const WRAPPERS: [&str; 9] = [
    "command", "builtin", "exec", "nohup", "time", "sudo", "doas", "env", "nice",
];

impl BashPattern {
    pub(crate) fn parse(inner: &str) -> Result<BashPattern, String> {
        let words = |text: &str| {
            text.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        if let Some(prefix) = inner.strip_suffix(":*") {
            let prefix = words(prefix);
            if prefix.is_empty() {
                return Err("`:*` needs a command before it, as in `Bash(git diff:*)`".to_owned());
            }
            if prefix.iter().any(|word| word.contains('*')) {
                return Err("a `:*` prefix rule takes no other `*`".to_owned());
            }
            return Ok(BashPattern::Prefix(prefix));
        }
        if inner.contains(":*") {
            return Err("`:*` may only end the pattern, as in `Bash(git diff:*)`".to_owned());
        }
        if inner.contains('*') {
            return Ok(BashPattern::Glob(words(inner).join(" ")));
        }
        Ok(BashPattern::Exact(words(inner)))
    }

    pub(crate) fn matches(&self, words: &[String]) -> bool {
        match self {
            BashPattern::Prefix(prefix) => {
                words.len() >= prefix.len() && words[..prefix.len()] == prefix[..]
            }
            BashPattern::Exact(exact) => words == exact.as_slice(),
            BashPattern::Glob(glob) => {
                let text = words.join(" ");
                wildcard(glob, &text) || glob.strip_suffix(" *").is_some_and(|bare| bare == text)
            }
        }
    }
}

/// `*` matches any run of characters (spaces included); everything else is literal.
fn wildcard(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// The ways a command's words are tried against deny and ask rules: as
/// written, and without leading assignments, wrappers (`sudo`, `env`, …) and
/// the folder of the program (`/bin/rm` → `rm`). Best effort: the real
/// guarantee is that allow rules must match every part as written.
pub(crate) fn deny_variants(words: &[String]) -> Vec<Vec<String>> {
    let mut variants = vec![words.to_vec()];
    let mut current: Vec<String> = words.to_vec();
    for _ in 0..8 {
        let before = current.clone();
        while current.first().is_some_and(|word| is_assignment(word)) {
            current.remove(0);
        }
        if current
            .first()
            .is_some_and(|word| WRAPPERS.contains(&word.as_str()))
        {
            current.remove(0);
            while current
                .first()
                .is_some_and(|word| word.starts_with('-') || is_assignment(word))
            {
                current.remove(0);
            }
        }
        if let Some(first) = current.first_mut()
            && first.contains('/')
            && let Some(name) = Path::new(first.as_str())
                .file_name()
                .and_then(|name| name.to_str())
        {
            *first = name.to_owned();
        }
        if current == before || current.is_empty() {
            break;
        }
        variants.push(current.clone());
    }
    variants
}

pub(crate) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `Bash(program:*)` (or `Bash(program subcommand:*)`) for each command part.
pub(crate) fn suggest_bash(parts: &[Part]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in parts {
        let Part::Command(words) = part else { continue };
        let words: Vec<&String> = words
            .iter()
            .skip_while(|word| is_assignment(word))
            .collect();
        let Some(first) = words.first() else { continue };
        let rule = match words.get(1) {
            Some(second)
                if SUBCOMMAND_TOOLS.contains(&first.as_str())
                    && second
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-')
                    && !second.starts_with('-') =>
            {
                format!("Bash({first} {second}:*)")
            }
            _ => format!("Bash({first}:*)"),
        };
        if !out.contains(&rule) {
            out.push(rule);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn matches(pattern: &str, command: &str) -> bool {
        BashPattern::parse(pattern)
            .unwrap()
            .matches(&words(command))
    }

    #[test]
    fn prefix_glob_and_exact_patterns() {
        assert!(matches("git diff:*", "git diff"));
        assert!(matches("git diff:*", "git diff --stat HEAD"));
        assert!(!matches("git diff:*", "git difftool"));
        assert!(matches("ls *", "ls -la"));
        assert!(
            !matches("ls *", "lsof"),
            "the space before * is a word boundary"
        );
        assert!(matches("ls*", "lsof"));
        assert!(matches("npm run *", "npm run"));
        assert!(matches("docker * --rm", "docker run -it --rm"));
        assert!(matches("npm   test", "npm test"));
        assert!(!matches("npm test", "npm test --watch"));
    }

    #[test]
    fn deny_variants_strip_assignments_wrappers_and_folders() {
        let variants = deny_variants(&words("FOO=1 sudo -E env X=2 /usr/bin/rm -rf x"));
        assert!(variants.contains(&words("rm -rf x")), "{variants:?}");
        assert_eq!(deny_variants(&words("rm x")), [words("rm x")]);
    }

    #[test]
    fn suggestions_name_the_program_and_known_subcommands() {
        let parts = [
            Part::Command(words("git push origin")),
            Part::Command(words("FOO=1 rm -rf x")),
            Part::Command(words("cargo --version")),
            Part::Redirect("out.txt".to_owned()),
            Part::Command(words("git push -f")),
        ];
        assert_eq!(
            suggest_bash(&parts),
            ["Bash(git push:*)", "Bash(rm:*)", "Bash(cargo:*)"]
        );
    }
}
