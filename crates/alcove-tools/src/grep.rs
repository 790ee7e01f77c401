//! The `Grep` tool: regex search over file contents, built on ripgrep's crates.
//!
//! Models are trained on ripgrep's flags and output, so the parameters mirror
//! `rg` (`-i`, `-n`, `-A`/`-B`/`-C`, `--glob`, `--type`, `-U`) and so does
//! the output. A large tree is searched in parallel (`walk`), but results are sorted before
//! they are shown so the same search always prints the same text.

use std::path::{Path, PathBuf};

use alcove_protocol::ToolSpec;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::read::cut_line;
use crate::{Access, Invocation, ToolContext, ToolOutput, TypedTool, Workspace};
use walk::{Found, search};

mod walk;

const NAME: &str = "Grep";
const DESCRIPTION: &str = "Searches file contents with a regular expression (ripgrep; Rust \
regex syntax: escape literal braces, e.g. `interface\\{\\}`). output_mode: \"files_with_matches\" \
(default) lists matching files, newest first; \"content\" shows path:line:text; \"count\" shows \
path:count. Skips ignored, hidden and binary files.";

/// Characters of output after which the result is cut.
const MAX_OUTPUT_CHARS: usize = 30_000;
/// Characters of one matching line shown (minified files have huge lines).
const MAX_LINE_CHARS: usize = 500;
/// Bytes of results collected before the search stops early, so a pattern
/// matching everything cannot exhaust memory before the output cap applies.
const MAX_COLLECTED_BYTES: usize = 16 * 1024 * 1024;

/// What the search prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)] // A self-contained schema: some providers reject `$ref`.
enum OutputMode {
    Content,
    #[default]
    FilesWithMatches,
    Count,
}

/// Arguments of `Grep`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepInput {
    /// The regular expression.
    pattern: String,
    /// File or folder to search (default: the workspace).
    path: Option<String>,
    /// Only files matching this glob, e.g. "*.{ts,tsx}".
    glob: Option<String>,
    /// Only files of this type, e.g. "py", "rust".
    #[serde(rename = "type")]
    file_type: Option<String>,
    /// Default "files_with_matches".
    output_mode: Option<OutputMode>,
    /// Ignore case.
    #[serde(rename = "-i")]
    case_insensitive: Option<bool>,
    /// Line numbers (default true).
    #[serde(rename = "-n")]
    line_numbers: Option<bool>,
    /// Lines after a match.
    #[serde(rename = "-A")]
    after_context: Option<u32>,
    /// Lines before a match.
    #[serde(rename = "-B")]
    before_context: Option<u32>,
    /// Lines around a match.
    #[serde(rename = "-C")]
    context: Option<u32>,
    /// Only the first N lines or entries (0: all).
    head_limit: Option<u64>,
    /// Let patterns span lines (`.` matches newlines).
    multiline: Option<bool>,
}

/// A validated search.
pub struct Plan {
    /// The file or directory searched.
    path: PathBuf,
    matcher: RegexMatcher,
    overrides: Option<ignore::overrides::Override>,
    types: Option<ignore::types::Types>,
    mode: OutputMode,
    line_numbers: bool,
    before: usize,
    after: usize,
    multiline: bool,
    head_limit: Option<usize>,
}

fn plan(input: &GrepInput, workspace: &Workspace) -> Result<Plan, String> {
    let path = workspace.resolve(input.path.as_deref().unwrap_or("."));
    let multiline = input.multiline.unwrap_or(false);
    let mut builder = RegexMatcherBuilder::new();
    // As ripgrep does: `^`/`$` match at line boundaries; without multiline a
    // match never crosses a line end.
    builder
        .case_insensitive(input.case_insensitive.unwrap_or(false))
        .multi_line(true)
        .dot_matches_new_line(multiline);
    if !multiline {
        builder.line_terminator(Some(b'\n'));
    }
    let matcher = builder.build(&input.pattern).map_err(|err| {
        let hint = if !multiline && input.pattern.contains("\\n") {
            " (set multiline: true to match across lines)"
        } else {
            ""
        };
        format!("invalid regex pattern: {err}{hint}")
    })?;
    let overrides = input
        .glob
        .as_deref()
        .map(str::trim)
        .filter(|globs| !globs.is_empty())
        .map(|globs| overrides(globs, &path))
        .transpose()?;
    let types = input
        .file_type
        .as_deref()
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(types)
        .transpose()?;
    let mode = input.output_mode.unwrap_or_default();
    let context = input.context.unwrap_or(0);
    let (before, after) = if mode == OutputMode::Content {
        (
            input.before_context.unwrap_or(context) as usize,
            input.after_context.unwrap_or(context) as usize,
        )
    } else {
        (0, 0)
    };
    Ok(Plan {
        path,
        matcher,
        overrides,
        types,
        mode,
        line_numbers: input.line_numbers.unwrap_or(true),
        before,
        after,
        multiline,
        head_limit: input
            .head_limit
            .filter(|&n| n > 0)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
    })
}

/// `glob` as ripgrep's `--glob` overrides (space-separated, `!` negates).
fn overrides(globs: &str, path: &Path) -> Result<ignore::overrides::Override, String> {
    let root = if path.is_file() {
        path.parent().unwrap_or(path)
    } else {
        path
    };
    let mut builder = ignore::overrides::OverrideBuilder::new(root);
    for glob in globs.split_whitespace() {
        builder
            .add(glob)
            .map_err(|err| format!("invalid glob {glob:?}: {err}"))?;
    }
    builder
        .build()
        .map_err(|err| format!("invalid glob {globs:?}: {err}"))
}

/// `type` as ripgrep's `--type`, from its default type definitions.
fn types(name: &str) -> Result<ignore::types::Types, String> {
    let mut builder = ignore::types::TypesBuilder::new();
    builder.add_defaults().select(name);
    builder.build().map_err(|err| {
        format!("unknown file type {name:?} ({err}); use ripgrep's type names such as rust, py, js, ts, go, java, or use glob")
    })
}

/// The `Grep` tool.
pub struct Grep {
    spec: ToolSpec,
}

impl Default for Grep {
    fn default() -> Self {
        Grep {
            spec: crate::tool_spec!(GrepInput, NAME, DESCRIPTION),
        }
    }
}

#[async_trait::async_trait]
impl TypedTool for Grep {
    type Input = GrepInput;
    type Call = Plan;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::ReadOnly
    }

    fn inspect(
        &self,
        input: GrepInput,
        workspace: &Workspace,
    ) -> Result<(Invocation, Plan), String> {
        let plan = plan(&input, workspace)?;
        let summary = match &input.path {
            Some(_) => format!("{} in {}", input.pattern, workspace.display(&plan.path)),
            None => input.pattern.clone(),
        };
        let invocation = Invocation {
            summary,
            paths: vec![plan.path.clone()],
            command: None,
        };
        Ok((invocation, plan))
    }

    async fn call(&self, plan: Plan, context: &ToolContext) -> ToolOutput {
        if !plan.path.exists() {
            let shown = context.workspace.display(&plan.path);
            return ToolOutput::error(format!("Path does not exist: {shown}"));
        }
        let workspace = context.workspace.clone();
        let cancel = context.cancel.clone();
        let hidden = context.hidden.clone();
        let job = tokio::task::spawn_blocking(move || {
            let found = search(&plan, &workspace, &cancel, &hidden);
            if cancel.is_cancelled() {
                return ToolOutput::error("Grep cancelled");
            }
            ToolOutput::ok(render(&plan, found))
        });
        match job.await {
            Ok(output) => output,
            Err(err) => ToolOutput::error(format!("Grep failed: {err}")),
        }
    }
}

/// Turns the sorted hits into the text the model reads.
fn render(plan: &Plan, found: Found) -> String {
    let unit = match plan.mode {
        OutputMode::FilesWithMatches => "files",
        OutputMode::Count => "entries",
        OutputMode::Content => "lines",
    };
    // Files and count modes have one line per file; content mode separates
    // files with `--` when context is shown, as ripgrep does.
    let separate = plan.before > 0 || plan.after > 0;
    let mut entries: Vec<&str> = Vec::new();
    for hits in &found.files {
        if separate && !entries.is_empty() {
            entries.push("--");
        }
        entries.extend(hits.lines.iter().map(String::as_str));
    }
    if entries.is_empty() {
        return if found.stopped_early {
            "No matches found (the search stopped early)".to_owned()
        } else {
            "No matches found".to_owned()
        };
    }
    let total = entries.len();
    let mut out = String::new();
    if plan.mode == OutputMode::FilesWithMatches {
        let noun = if total == 1 { "file" } else { "files" };
        out.push_str(&format!("Found {total} {noun}\n"));
    }
    let shown_limit = plan.head_limit.unwrap_or(usize::MAX).min(total);
    let mut shown = 0;
    for entry in entries.iter().take(shown_limit) {
        if out.len() + entry.len() + 1 > MAX_OUTPUT_CHARS {
            break;
        }
        out.push_str(entry);
        out.push('\n');
        shown += 1;
    }
    if shown < shown_limit {
        out.push_str(&format!(
            "\n[output cut at {MAX_OUTPUT_CHARS} chars: {} more {unit} not shown; narrow the search or use head_limit]\n",
            total - shown
        ));
    } else if shown_limit < total {
        out.push_str(&format!(
            "\n(head_limit {shown_limit} reached: {} more {unit} not shown)\n",
            total - shown
        ));
    }
    if plan.mode == OutputMode::Count {
        let matches: usize = found.files.iter().map(|hits| hits.count).sum();
        let files = found.files.len();
        out.push_str(&format!(
            "\nFound {matches} matching lines in {files} {}\n",
            if files == 1 { "file" } else { "files" }
        ));
    }
    if found.stopped_early {
        out.push_str(
            "\n[the search stopped early because it matched too much; results are incomplete — narrow the pattern, path, glob or type]\n",
        );
    }
    out.truncate(out.trim_end().len());
    out
}

/// Collects one file's matches in the shape the output mode needs.
struct HitSink<'a> {
    mode: OutputMode,
    line_numbers: bool,
    shown: &'a str,
    lines: Vec<String>,
    count: usize,
    bytes: usize,
    matched: bool,
    binary: bool,
}

impl<'a> HitSink<'a> {
    fn new(plan: &Plan, shown: &'a str) -> HitSink<'a> {
        HitSink {
            mode: plan.mode,
            line_numbers: plan.line_numbers,
            shown,
            lines: Vec::new(),
            count: 0,
            bytes: 0,
            matched: false,
            binary: false,
        }
    }

    /// Adds `path:N:text` (match) or `path-N-text` (context).
    fn push_line(&mut self, separator: char, number: Option<u64>, raw: &[u8]) {
        let text = String::from_utf8_lossy(raw);
        let text = cut_line(
            text.trim_end_matches(['\n', '\r']),
            MAX_LINE_CHARS,
            raw.len(),
        );
        let line = match number.filter(|_| self.line_numbers) {
            Some(n) => format!("{}{separator}{n}{separator}{text}", self.shown),
            None => format!("{}{separator}{text}", self.shown),
        };
        self.bytes += line.len();
        self.lines.push(line);
    }
}

impl Sink for HitSink<'_> {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _searcher: &Searcher,
        found: &SinkMatch<'_>,
    ) -> Result<bool, Self::Error> {
        self.matched = true;
        match self.mode {
            OutputMode::FilesWithMatches => {
                self.lines = vec![self.shown.to_owned()];
                // One match is enough to list the file.
                return Ok(false);
            }
            OutputMode::Count => self.count += found.lines().count().max(1),
            OutputMode::Content => {
                let first = found.line_number();
                for (i, line) in found.lines().enumerate() {
                    self.push_line(':', first.map(|n| n + i as u64), line);
                }
            }
        }
        Ok(true)
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        context: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        self.push_line('-', context.line_number(), context.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        self.lines.push("--".to_owned());
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        // Binary files are skipped, as ripgrep does when it walks a tree.
        self.binary = true;
        Ok(false)
    }

    fn finish(
        &mut self,
        _searcher: &Searcher,
        _: &grep_searcher::SinkFinish,
    ) -> Result<(), Self::Error> {
        if self.mode == OutputMode::Count && self.matched {
            self.lines = vec![format!("{}:{}", self.shown, self.count)];
        }
        Ok(())
    }
}
