//! `ToolSearch {query}`: loads deferred tools (`deferred.rs`), in Claude
//! Code's words: `select:Name1,Name2` loads those tools by name; any other
//! query is keywords matched against the deferred tools' names and
//! descriptions, the best matches loaded (`max_results`, default 5, as
//! Claude Code takes it; left out of the schema to keep it small).
//!
//! The result names what it loaded on its first line (`Loaded: A, B`),
//! which is how the agent's loaded set is read back from its history, and
//! a line per tool; the definitions themselves go into the `tools` of the
//! agent's next requests (appended at the end), not into the result, so
//! they are not sent twice. The deferred tools are the caller's, read from
//! the scope dispatch lends, never captured when the tool was built.
//!
//! A small model calls it with a file's name (`select:pyproject.toml`)
//! where it should call `Read` (issue 45): a query that loads nothing and
//! names a file, a folder or a path, or asks a question, is answered with
//! the call to make instead ([`next_step`]), the file looked up in the
//! workspace.

use std::path::Path;

use alcove_protocol::ToolSpec;
use alcove_tools::{Access, Invocation, ScopedTool, ToolContext, ToolOutput, Workspace};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::agents::AgentScope;
use crate::deferred::{LOADED_LINE, TOOL_SEARCH, deferred_tools};

/// How many tools a keyword query loads unless `max_results` says.
const DEFAULT_MAX_RESULTS: usize = 5;

/// Arguments of `ToolSearch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ToolSearchInput {
    /// "select:Name1,Name2", or keywords.
    query: String,
    /// Claude Code's: how many matches keywords load.
    #[serde(default)]
    #[schemars(skip)]
    max_results: Option<usize>,
}

/// The `ToolSearch` tool of an agent whose deferred tools are named in its
/// description.
pub(crate) struct ToolSearch {
    spec: ToolSpec,
}

impl ToolSearch {
    /// The tool for an agent whose deferred tools are `names`.
    pub(crate) fn new(names: &[&str]) -> ToolSearch {
        let description = format!(
            "Loads tool definitions (not files) of tools offered by name only: {}. Query \"select:A,B\" loads those; keywords load the best matches.",
            names.join(", ")
        );
        ToolSearch {
            spec: alcove_tools::tool_spec!(ToolSearchInput, TOOL_SEARCH, &description),
        }
    }
}

#[async_trait::async_trait]
impl ScopedTool<AgentScope> for ToolSearch {
    type Input = ToolSearchInput;
    type Call = ToolSearchInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::ReadOnly
    }

    fn inspect(
        &self,
        input: ToolSearchInput,
        _workspace: &Workspace,
    ) -> Result<(Invocation, ToolSearchInput), String> {
        if input.query.trim().is_empty() {
            return Err("the query is empty: pass \"select:Name\" or keywords".to_owned());
        }
        let invocation = Invocation {
            summary: input.query.clone(),
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, input))
    }

    /// The deferred tools are the caller's, from the scope dispatch lends.
    async fn call(
        &self,
        input: ToolSearchInput,
        context: &ToolContext,
        scope: &AgentScope,
    ) -> ToolOutput {
        let deferred = deferred_tools(&scope.run.tools);
        let specs: Vec<&ToolSpec> = deferred.iter().map(|tool| tool.spec()).collect();
        let offered: Vec<&str> = scope
            .run
            .tools
            .iter()
            .map(|tool| tool.spec().name.as_str())
            .collect();
        let max = input.max_results.unwrap_or(DEFAULT_MAX_RESULTS).max(1);
        let out = answer(&input.query, &specs, &offered, max);
        if out.starts_with(LOADED_LINE) {
            return ToolOutput::ok(out);
        }
        // Nothing loaded: a file, a path or a question gets the next step
        // first.
        let file = |path: &str| {
            let resolved = context.workspace.resolve(path);
            // What a Read deny rule or `sandbox.deny_read` covers is not
            // there, for this answer as for Glob and Grep.
            if scope.run.gate.hides(&resolved, &context.workspace) {
                return Found::Nothing;
            }
            match std::fs::metadata(&resolved) {
                Ok(meta) if meta.is_dir() => Found::Folder,
                Ok(_) => Found::File,
                Err(_) => Found::Nothing,
            }
        };
        match next_step(&input.query, &file) {
            Some(step) => ToolOutput::ok(format!("{step}\n{out}")),
            None => ToolOutput::ok(out),
        }
    }
}

alcove_tools::scoped_tool!(ToolSearch, AgentScope);

/// The result for `query` among the deferred `specs`; `offered` are all
/// the agent's tools.
fn answer(query: &str, specs: &[&ToolSpec], offered: &[&str], max: usize) -> String {
    let query = query.trim();
    let mut notes = Vec::new();
    let found: Vec<&ToolSpec> = match query.strip_prefix("select:") {
        Some(names) => names
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .filter_map(|name| {
                let spec = specs.iter().find(|spec| spec.name == name).copied();
                if spec.is_none() {
                    notes.push(if offered.contains(&name) {
                        format!("{name} is not deferred: it is in your tools already.")
                    } else {
                        format!("No tool is named {name}.")
                    });
                }
                spec
            })
            .collect(),
        None => ranked(query, specs, max),
    };
    let mut out = String::new();
    if found.is_empty() {
        out.push_str(&format!("No deferred tool matches {query:?}."));
    } else {
        let names: Vec<&str> = found.iter().map(|spec| spec.name.as_str()).collect();
        out.push_str(LOADED_LINE);
        out.push_str(&names.join(", "));
        out.push_str(
            "\nTheir definitions are in your tools from your next request on: call them as any tool.",
        );
        for spec in &found {
            out.push_str(&format!(
                "\n- {}: {}",
                spec.name,
                first_sentence(&spec.description)
            ));
        }
    }
    for note in notes {
        out.push('\n');
        out.push_str(&note);
    }
    if found.is_empty() {
        let all: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
        out.push_str(&format!(
            "\nDeferred tools: {}. Load one with \"select:Name\".",
            all.join(", ")
        ));
    }
    out
}

/// What a query's term is in the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    File,
    Folder,
    Nothing,
}

/// The next step for a query that loaded nothing, when it is not about a
/// tool: the Read of a file it names, the Glob of a folder or a missing
/// path, the search tools for a question. `file` says what a path is.
fn next_step(query: &str, file: &dyn Fn(&str) -> Found) -> Option<String> {
    let query = query.trim();
    let terms = query.strip_prefix("select:").unwrap_or(query);
    let named = terms
        .split(|c: char| c.is_whitespace() || c == ',')
        .map(|term| term.trim_matches(|c: char| "`'\"()[]{}?!:;".contains(c)))
        .map(|term| term.trim_end_matches('.'))
        .filter(|term| !term.is_empty());
    for term in named {
        let pathlike = term.contains('/')
            || Path::new(term)
                .extension()
                .is_some_and(|ext| ext.len() <= 5 && !ext.is_empty());
        let step = match file(term) {
            Found::File => format!(
                "{term} is a file in the workspace, not a tool: read it with Read {{\"file_path\": \"{term}\"}}. {TOOL_SEARCH} only loads tool definitions."
            ),
            Found::Folder => format!(
                "{term} is a folder in the workspace, not a tool: list it with Glob {{\"pattern\": \"{}/**\"}}. {TOOL_SEARCH} only loads tool definitions.",
                term.trim_end_matches('/')
            ),
            Found::Nothing if pathlike => {
                let name = Path::new(term)
                    .file_name()
                    .map_or(term.to_owned(), |name| name.to_string_lossy().into_owned());
                format!(
                    "{term} looks like a path, not a tool, and is not in the workspace: find it with Glob {{\"pattern\": \"**/{name}\"}}. {TOOL_SEARCH} only loads tool definitions."
                )
            }
            Found::Nothing => continue,
        };
        return Some(step);
    }
    let question = query.ends_with('?') || query.split_whitespace().count() >= 6;
    question.then(|| {
        format!(
            "{TOOL_SEARCH} only loads tool definitions; it does not answer questions or search files. Search file contents with Grep {{\"pattern\": \"...\"}}, find files with Glob, read one with Read."
        )
    })
}

/// The deferred tools matching `query`'s words, best first: a word equal
/// to a name counts most, then a word in a name, then one in a
/// description; ties keep the agent's order.
fn ranked<'a>(query: &str, specs: &[&'a ToolSpec], max: usize) -> Vec<&'a ToolSpec> {
    let words: Vec<String> = query
        .split(|c: char| c.is_whitespace() || c == ',')
        .map(|word| word.trim_start_matches('+').to_lowercase())
        .filter(|word| !word.is_empty())
        .collect();
    let mut scored: Vec<(usize, &ToolSpec)> = specs
        .iter()
        .map(|spec| {
            let name = spec.name.to_lowercase();
            let description = spec.description.to_lowercase();
            let score = words
                .iter()
                .map(|word| {
                    if name == *word {
                        10
                    } else if name.contains(word.as_str()) {
                        4
                    } else if description.contains(word.as_str()) {
                        1
                    } else {
                        0
                    }
                })
                .sum::<usize>();
            (score, *spec)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    scored.into_iter().take(max).map(|(_, spec)| spec).collect()
}

fn first_sentence(text: &str) -> &str {
    let line = text.lines().next().unwrap_or("");
    match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: alcove_protocol::Schema::from(serde_json::json!({"type": "object"})),
        }
    }

    #[test]
    fn select_loads_by_name_and_says_what_it_could_not() {
        let fetch = spec("WebFetch", "Fetches a URL. More.");
        let wait = spec("wait", "Waits for agents.");
        let specs = [&fetch, &wait];
        let out = answer("select:wait, Read,Nope", &specs, &["Read", "wait"], 5);
        assert!(out.starts_with("Loaded: wait\n"), "{out}");
        assert!(out.contains("- wait: Waits for agents."), "{out}");
        assert!(out.contains("Read is not deferred"), "{out}");
        assert!(out.contains("No tool is named Nope."), "{out}");
        let none = answer("select:Nope", &specs, &[], 5);
        assert!(none.starts_with("No deferred tool matches"), "{none}");
        assert!(none.contains("Deferred tools: WebFetch, wait."), "{none}");
    }

    #[test]
    fn a_query_naming_a_file_a_path_or_a_question_gets_the_next_step() {
        let file = |term: &str| match term {
            "pyproject.toml" => Found::File,
            "src" => Found::Folder,
            _ => Found::Nothing,
        };
        let step = next_step("select:pyproject.toml", &file).unwrap();
        assert!(
            step.starts_with(
                "pyproject.toml is a file in the workspace, not a tool: read it with Read {\"file_path\": \"pyproject.toml\"}"
            ),
            "{step}"
        );
        let step = next_step("src", &file).unwrap();
        assert!(step.contains("Glob {\"pattern\": \"src/**\"}"), "{step}");
        let step = next_step("select:lib/missing.py", &file).unwrap();
        assert!(
            step.contains("Glob {\"pattern\": \"**/missing.py\"}"),
            "{step}"
        );
        let step = next_step("what is the package name?", &file).unwrap();
        assert!(step.contains("only loads tool definitions"), "{step}");
        assert_eq!(next_step("background agent", &file), None);
        assert_eq!(next_step("select:Nope", &file), None);
    }

    #[test]
    fn keywords_rank_names_over_descriptions_and_stop_at_max() {
        let fetch = spec("WebFetch", "Fetches a page from the web.");
        let search = spec("WebSearch", "Searches the web.");
        let spawn = spec("spawn_agent", "Starts an agent in the background.");
        let specs = [&spawn, &fetch, &search];
        let found = ranked("web search", &specs, 5);
        let names: Vec<&str> = found.iter().map(|spec| spec.name.as_str()).collect();
        assert_eq!(names, ["WebSearch", "WebFetch"]);
        assert_eq!(ranked("web", &specs, 1).len(), 1);
        assert!(ranked("nothing here", &specs, 5).is_empty());
        assert_eq!(ranked("spawn_agent", &specs, 5)[0].name, "spawn_agent");
    }
}
