//! Grep against ripgrep on a large tree (the cargo registry sources).
//!
//! alcove's side is the `Grep` tool's own `duration_ms` as reported in its
//! `tool_call_finished` event (the search and the rendering of its result,
//! without process start-up); rg's side is the wall time of an `rg` process
//! from spawn to exit with its output read through a pipe (so rg cannot take
//! its /dev/null shortcut), which includes rg's start-up of about a
//! millisecond. Both honour .gitignore outside git repositories (`Grep`
//! always does; rg is given `--no-require-git`), and the match counts are
//! compared so the two did the same work.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::measure::{median, ms};
use crate::scenarios::Bench;

/// One query, as the model would ask it and as rg is told it.
struct Query {
    pattern: &'static str,
    mode: &'static str,
    rg_flag: &'static str,
}

const QUERIES: [Query; 3] = [
    Query {
        pattern: r"impl\s+Drop\s+for",
        mode: "files_with_matches",
        rg_flag: "-l",
    },
    Query {
        pattern: r"unsafe\s*\{",
        mode: "count",
        rg_flag: "-c",
    },
    Query {
        pattern: "NEVER_FOUND_[0-9]{9}_ANYWHERE",
        mode: "content",
        rg_flag: "-n",
    },
];

/// One query's medians.
pub(crate) struct GrepFigure {
    pub(crate) pattern: &'static str,
    pub(crate) mode: &'static str,
    pub(crate) alcove_ms: f64,
    pub(crate) rg_ms: f64,
    /// (files, matching lines) found by each; lines only in count mode.
    pub(crate) alcove_found: (usize, usize),
    pub(crate) rg_found: (usize, usize),
}

/// The tree searched by default: the cargo registry sources.
pub(crate) fn default_tree() -> Option<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))?;
    let tree = cargo_home.join("registry").join("src");
    tree.is_dir().then_some(tree)
}

/// Files and matching lines in a `Grep` result.
fn grep_found(text: &str) -> (usize, usize) {
    let number = |line: &str, prefix: &str| {
        line.strip_prefix(prefix)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    for line in text.lines() {
        if let Some(files) = number(line, "Found ")
            && line.ends_with("files")
            && !line.contains("matching lines")
        {
            return (files, 0);
        }
        if line.starts_with("Found ") && line.contains(" matching lines in ") {
            let words: Vec<&str> = line.split_whitespace().collect();
            let lines = words.get(1).and_then(|w| w.parse().ok()).unwrap_or(0);
            let files = words.get(5).and_then(|w| w.parse().ok()).unwrap_or(0);
            return (files, lines);
        }
    }
    (0, 0)
}

/// Files and matching lines in rg's output for `flag`.
fn rg_found(text: &str, flag: &str) -> (usize, usize) {
    match flag {
        "-c" => {
            let counts: Vec<usize> = text
                .lines()
                .filter_map(|line| line.rsplit_once(':')?.1.parse().ok())
                .collect();
            (counts.len(), counts.iter().sum())
        }
        "-l" => (text.lines().count(), 0),
        _ => (0, 0),
    }
}

fn rg_once(rg: &Path, tree: &Path, query: &Query) -> anyhow::Result<(f64, String)> {
    let started = Instant::now();
    let output = Command::new(rg)
        .args(["--no-require-git", query.rg_flag, query.pattern])
        .arg(tree)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .context("cannot run rg")?;
    let elapsed = ms(started.elapsed());
    // 1 is rg's "nothing matched".
    if !matches!(output.status.code(), Some(0 | 1)) {
        bail!("rg failed: {}", output.status);
    }
    Ok((
        elapsed,
        String::from_utf8_lossy(&output.stdout).into_owned(),
    ))
}

/// The Grep call's (duration, result) from `alcove exec --json` events.
fn alcove_once(
    bench: &Bench,
    tree: &Path,
    query: &Query,
    tag: &str,
) -> anyhow::Result<(f64, String)> {
    let server = FakeServer::start(Script::new().conversation(
        tag,
        vec![
            Step::tool_call(
                "Grep",
                json!({"pattern": query.pattern, "output_mode": query.mode}),
            ),
            Step::text("searched"),
        ],
    ));
    let env = TestEnv::new();
    let tree_arg = tree.display().to_string();
    let output = bench
        .exec(&env, &server, &["--cd", &tree_arg, "--json", tag])
        .stdout(Stdio::piped())
        .output()
        .context("cannot run alcove")?;
    if !output.status.success() {
        bail!("alcove failed on the Grep run: {}", output.status);
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let finished = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["type"] == "tool_call_finished")
        .context("no tool_call_finished event")?;
    if finished["is_error"] == true {
        bail!("the Grep call failed: {}", finished["content"]);
    }
    let duration = finished["duration_ms"].as_f64().context("no duration_ms")?;
    let content = finished["content"].as_str().unwrap_or_default().to_owned();
    Ok((duration, content))
}

pub(crate) fn grep_vs_rg(bench: &Bench, tree: &Path, rg: &Path) -> anyhow::Result<Vec<GrepFigure>> {
    let mut out = Vec::new();
    for query in &QUERIES {
        let (mut alcove, mut ripgrep) = (Vec::new(), Vec::new());
        let (mut alcove_found, mut rg_found_) = ((0, 0), (0, 0));
        // The first round warms the page cache for both and is not counted.
        for run in 0..=bench.runs {
            let (a, text) = alcove_once(bench, tree, query, &format!("GREP run {run}."))?;
            let (r, rg_text) = rg_once(rg, tree, query)?;
            alcove_found = grep_found(&text);
            rg_found_ = rg_found(&rg_text, query.rg_flag);
            if run > 0 {
                alcove.push(a);
                ripgrep.push(r);
            }
        }
        out.push(GrepFigure {
            pattern: query.pattern,
            mode: query.mode,
            alcove_ms: median(&alcove),
            rg_ms: median(&ripgrep),
            alcove_found,
            rg_found: rg_found_,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_read_from_both_outputs() {
        assert_eq!(grep_found("Found 12 files\na\nb"), (12, 0));
        assert_eq!(
            grep_found("a:1\n\nFound 30 matching lines in 4 files"),
            (4, 30)
        );
        assert_eq!(grep_found("No matches found"), (0, 0));
        assert_eq!(rg_found("a:3\nb/c:4\n", "-c"), (2, 7));
        assert_eq!(rg_found("a\nb\n", "-l"), (2, 0));
    }
}
