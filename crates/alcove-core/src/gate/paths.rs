//! Path patterns of file rules: `Read(./secrets/**)`, `Edit(src/**)`,
//! `Write(/tmp/**)`, `Read(~/.ssh/**)`, `Read(*.env)`.
//!
//! Gitignore-like, as in Claude Code: a relative pattern is anchored at the
//! workspace root (`./` optional), one without a slash matches at any depth
//! (`*.env`), `/…` and `//…` are absolute, `~/…` is under the home folder.
//! `*` stays within one path component, `**` crosses them, and a pattern also
//! covers everything below what it names (`Read(./secrets)` covers
//! `secrets/a.txt`).

use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Where a pattern is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    Workspace,
    Absolute,
    Home,
}

/// A compiled path pattern.
#[derive(Debug, Clone)]
pub(crate) struct PathPattern {
    anchor: Anchor,
    matcher: GlobSet,
}

/// What relative and `~/` patterns are resolved against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PathContext<'a> {
    pub(crate) root: &'a Path,
    pub(crate) home: Option<&'a Path>,
}

impl PathPattern {
    /// Compiles the text between the parentheses of a file rule.
    pub(crate) fn parse(spec: &str) -> Result<PathPattern, String> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err("the path pattern is empty".to_owned());
        }
        let (anchor, rest) = if let Some(rest) = spec.strip_prefix("~/") {
            (Anchor::Home, rest.to_owned())
        } else if spec == "~" {
            (Anchor::Home, String::new())
        } else if let Some(rest) = spec.strip_prefix("//") {
            (Anchor::Absolute, format!("/{rest}"))
        } else if spec.starts_with('/') {
            (Anchor::Absolute, spec.to_owned())
        } else if spec.starts_with('~') {
            return Err("only `~/` (the current user's home) is supported".to_owned());
        } else {
            let rest = spec.strip_prefix("./").unwrap_or(spec);
            let rest = if rest == "." { "" } else { rest };
            let trimmed = rest.trim_end_matches('/');
            // Gitignore: a pattern without a slash matches at any depth.
            let rest = if !trimmed.is_empty() && !trimmed.contains('/') {
                format!("**/{trimmed}")
            } else {
                rest.to_owned()
            };
            (Anchor::Workspace, rest)
        };
        let base = rest.trim_end_matches('/');
        let mut builder = GlobSetBuilder::new();
        let mut globs = Vec::new();
        if base.is_empty() || base == "/" {
            globs.push("**".to_owned());
            if anchor == Anchor::Absolute {
                globs.push("/**".to_owned());
            }
        } else {
            globs.push(base.to_owned());
            if !base.ends_with("**") {
                globs.push(format!("{base}/**"));
            }
        }
        for glob in globs {
            let glob = GlobBuilder::new(&glob)
                .literal_separator(true)
                .build()
                .map_err(|err| format!("bad glob: {}", err.kind()))?;
            builder.add(glob);
        }
        let matcher = builder
            .build()
            .map_err(|err| format!("bad glob: {}", err.kind()))?;
        Ok(PathPattern { anchor, matcher })
    }

    /// Whether the absolute, normalised `path` matches.
    pub(crate) fn matches(&self, path: &Path, context: PathContext<'_>) -> bool {
        match self.anchor {
            Anchor::Absolute => self.matcher.is_match(path),
            Anchor::Workspace => path
                .strip_prefix(context.root)
                .is_ok_and(|relative| self.matcher.is_match(relative)),
            Anchor::Home => context.home.is_some_and(|home| {
                path.strip_prefix(home)
                    .is_ok_and(|relative| self.matcher.is_match(relative))
            }),
        }
    }

    /// Whether the pattern is anchored at the workspace root (an allow rule
    /// of that kind must not reach outside it through a symlink).
    pub(crate) fn is_workspace_relative(&self) -> bool {
        self.anchor == Anchor::Workspace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, path: &str) -> bool {
        let context = PathContext {
            root: Path::new("/ws"),
            home: Some(Path::new("/home/u")),
        };
        PathPattern::parse(pattern)
            .unwrap()
            .matches(Path::new(path), context)
    }

    #[test]
    fn relative_patterns_are_anchored_at_the_workspace_root() {
        assert!(matches("src/**", "/ws/src/a/b.rs"));
        assert!(matches("./src/**", "/ws/src/a.rs"));
        assert!(!matches("src/**", "/ws/lib/src/a.rs"));
        assert!(!matches("src/**", "/elsewhere/src/a.rs"));
        assert!(matches("src/*.rs", "/ws/src/a.rs"));
        assert!(
            !matches("src/*.rs", "/ws/src/deep/a.rs"),
            "* stays in one component"
        );
    }

    #[test]
    fn a_pattern_covers_what_lies_below_it_and_slashless_ones_match_anywhere() {
        assert!(matches("./secrets", "/ws/secrets/key.pem"));
        assert!(matches("./secrets/**", "/ws/secrets/deep/key.pem"));
        assert!(matches("*.env", "/ws/a/b/prod.env"));
        assert!(matches(".env", "/ws/.env"));
        assert!(!matches(".env", "/ws/.envrc"));
    }

    #[test]
    fn absolute_and_home_patterns() {
        assert!(matches("/tmp/**", "/tmp/x/y"));
        assert!(matches("//tmp/**", "/tmp/x"));
        assert!(!matches("/tmp/**", "/ws/tmp/x"));
        assert!(matches("~/.ssh/**", "/home/u/.ssh/id_rsa"));
        assert!(!matches("~/.ssh/**", "/ws/.ssh/id_rsa"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert!(PathPattern::parse("").is_err());
        assert!(PathPattern::parse("src/[").is_err());
        assert!(PathPattern::parse("~other/x").is_err());
    }
}
