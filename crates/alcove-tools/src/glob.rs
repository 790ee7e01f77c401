//! The `Glob` tool: finds files by name pattern, newest first.
//!
//! The walk is ripgrep's (`ignore`): `.gitignore`d and hidden files are
//! skipped, which is what a model exploring a repository wants (no
//! `target/`, no `node_modules/`). Newest-modified first puts the files the
//! user is working on at the top of a capped list.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use alcove_protocol::ToolSpec;
use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::{Access, HiddenPaths, Invocation, ToolContext, ToolOutput, TypedTool, Workspace};

const NAME: &str = "Glob";
const DESCRIPTION: &str = "Finds files by name with a glob like \"src/**/*.{ts,tsx}\" (`*` does \
not cross `/`; `**` is any depth). Returns at most 100 paths, newest first; skips ignored and \
hidden files.";

/// Files listed at most.
const MAX_RESULTS: usize = 100;

/// Arguments of `Glob`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobInput {
    /// The glob.
    pattern: String,
    /// Folder to search (default: the workspace).
    path: Option<String>,
}

/// A validated search: where to walk and what to match below it.
pub struct Plan {
    /// The directory the model asked for (or the root); must exist.
    dir: PathBuf,
    /// Where the walk starts: `dir` plus the pattern's literal leading folders.
    base: PathBuf,
    /// The rest of the pattern, matched against paths relative to `base`.
    matcher: GlobMatcher,
}

fn plan(input: &GlobInput, workspace: &Workspace) -> Result<Plan, String> {
    let dir = workspace.resolve(input.path.as_deref().unwrap_or("."));
    let pattern = input.pattern.trim();
    if pattern.is_empty() {
        return Err("pattern is empty; give a glob such as \"**/*.rs\"".into());
    }
    let (prefix, rest) = split_literal_prefix(pattern);
    let base = workspace.resolve_path(&dir.join(prefix));
    let matcher = GlobBuilder::new(rest)
        .literal_separator(true)
        .build()
        .map_err(|err| format!("invalid glob pattern {pattern:?}: {err}"))?
        .compile_matcher();
    Ok(Plan { dir, base, matcher })
}

/// Splits `src/**/*.rs` into `src` and `**/*.rs`, so the walk starts where the
/// pattern can match (and an absolute pattern works at all). The last segment
/// always stays in the pattern.
fn split_literal_prefix(pattern: &str) -> (&str, &str) {
    let is_literal = |segment: &str| !segment.contains(['*', '?', '[', ']', '{', '}', '\\']);
    let mut cut = 0;
    for (i, _) in pattern.match_indices('/') {
        if !is_literal(&pattern[cut..i]) {
            break;
        }
        cut = i + 1;
    }
    if cut == 0 {
        ("", pattern)
    } else {
        (&pattern[..cut], &pattern[cut..])
    }
}

/// The `Glob` tool.
pub struct Glob {
    spec: ToolSpec,
}

impl Default for Glob {
    fn default() -> Self {
        Glob {
            spec: crate::tool_spec!(GlobInput, NAME, DESCRIPTION),
        }
    }
}

#[async_trait::async_trait]
impl TypedTool for Glob {
    type Input = GlobInput;
    type Call = Plan;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::ReadOnly
    }

    fn inspect(
        &self,
        input: GlobInput,
        workspace: &Workspace,
    ) -> Result<(Invocation, Plan), String> {
        let plan = plan(&input, workspace)?;
        let summary = match &input.path {
            Some(_) => format!("{} in {}", input.pattern, workspace.display(&plan.dir)),
            None => input.pattern.clone(),
        };
        let invocation = Invocation {
            summary,
            paths: vec![plan.dir.clone()],
            command: None,
        };
        Ok((invocation, plan))
    }

    async fn call(&self, plan: Plan, context: &ToolContext) -> ToolOutput {
        let shown_dir = context.workspace.display(&plan.dir);
        match std::fs::metadata(&plan.dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return ToolOutput::error(format!("{shown_dir} is not a directory")),
            Err(_) => return ToolOutput::error(format!("Directory does not exist: {shown_dir}")),
        }
        let cancel = context.cancel.clone();
        let workspace = context.workspace.clone();
        let hidden = context.hidden.clone();
        let job = tokio::task::spawn_blocking(move || {
            let found = find(&plan, &cancel, &hidden);
            (found, cancel.is_cancelled())
        });
        let (mut found, cancelled) = match job.await {
            Ok(done) => done,
            Err(err) => return ToolOutput::error(format!("Glob failed: {err}")),
        };
        if cancelled {
            return ToolOutput::error("Glob cancelled");
        }
        if found.is_empty() {
            return ToolOutput::ok("No files found");
        }
        // Newest first; the path breaks ties so the order is deterministic.
        found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let total = found.len();
        let mut out: Vec<String> = found
            .iter()
            .take(MAX_RESULTS)
            .map(|(path, _)| workspace.display(path))
            .collect();
        if total > MAX_RESULTS {
            out.push(format!(
                "(showing the {MAX_RESULTS} most recently modified of {total} files; {} left out — use a more specific pattern or path)",
                total - MAX_RESULTS
            ));
        }
        ToolOutput::ok(out.join("\n"))
    }
}

/// Walks `plan.base` and returns every matching file with its mtime.
fn find(
    plan: &Plan,
    cancel: &CancellationToken,
    hidden: &HiddenPaths,
) -> Vec<(PathBuf, SystemTime)> {
    let mut found = Vec::new();
    if !plan.base.is_dir() {
        return found;
    }
    let hidden = hidden.clone();
    let walker = ignore::WalkBuilder::new(&plan.base)
        // Without this, `ignore` honours .gitignore only inside a git
        // repository; a workspace that is not (yet) one still has its
        // .gitignore respected, as the user expects.
        .require_git(false)
        // Folders and files a Read deny rule covers are not listed (nor entered).
        .filter_entry(move |entry| !hidden.hides_entry(entry))
        .build();
    for entry in walker {
        if cancel.is_cancelled() {
            break;
        }
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        let is_file = match entry.file_type() {
            Some(kind) if kind.is_file() => true,
            Some(kind) if kind.is_symlink() => path.is_file(),
            _ => false,
        };
        if !is_file {
            continue;
        }
        let rel = path.strip_prefix(&plan.base).unwrap_or(path);
        if plan.matcher.is_match(rel) {
            found.push((path.to_path_buf(), mtime(path)));
        }
    }
    found
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_prefix_is_split_off() {
        assert_eq!(split_literal_prefix("**/*.rs"), ("", "**/*.rs"));
        assert_eq!(split_literal_prefix("*.rs"), ("", "*.rs"));
        assert_eq!(split_literal_prefix("src/**/*.rs"), ("src/", "**/*.rs"));
        assert_eq!(split_literal_prefix("a/b/c.txt"), ("a/b/", "c.txt"));
        assert_eq!(split_literal_prefix("/tmp/x/*.rs"), ("/tmp/x/", "*.rs"));
        assert_eq!(
            split_literal_prefix("src/{a,b}/x.rs"),
            ("src/", "{a,b}/x.rs")
        );
    }
}
