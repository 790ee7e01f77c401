//! Agent definitions: the kinds of child an `Agent` call can ask for.
//!
//! A definition is data — a system prompt, tool lists that can only narrow
//! the parent's, an optional model, turn cap, wall-clock budget, permission
//! mode and per-agent rules — kept in one registry, where definitions loaded
//! from Markdown files (`loader`) sit beside and may replace the built-ins.
//! Names are looked up case- and separator-insensitively (`Explore`,
//! `explore`, `code_reviewer`, `code-reviewer`), as Claude Code does.

use std::path::PathBuf;
use std::time::Duration;

/// A definition's own permission rules, in the Claude Code rule syntax; they
/// apply on top of the inherited ones and never loosen them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentPermissions {
    /// Rules that allow without asking.
    pub allow: Vec<String>,
    /// Rules that ask first.
    pub ask: Vec<String>,
    /// Rules that refuse.
    pub deny: Vec<String>,
}

impl AgentPermissions {
    /// No rules at all.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }
}

/// One kind of child agent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentDefinition {
    /// The name `subagent_type` selects it by.
    pub name: String,
    /// When to use it, for the model.
    pub description: String,
    /// Its instructions, placed before the delegation contract.
    pub system_prompt: String,
    /// When set, only these tools (of the parent's) are offered.
    pub tools: Option<Vec<String>>,
    /// Tools never offered.
    pub disallowed_tools: Vec<String>,
    /// `provider/name` overriding the parent's model, or an alias as
    /// written (`sonnet`) until the session resolves it
    /// ([`Definitions::resolve_models`]).
    pub model: Option<String>,
    /// Its turn cap, overriding `agents.max_turns`.
    pub max_turns: Option<u32>,
    /// Its reasoning effort (`effort:`, as Claude Code's definitions have),
    /// overriding the model's configured one; an `Agent` call's wins.
    pub effort: Option<String>,
    /// Its permission mode (`default`, `acceptEdits`, `plan`,
    /// `bypassPermissions`, `dontAsk`); the child runs in the stricter of
    /// this and its parent's.
    pub permission_mode: Option<String>,
    /// Its own rules, applied on top of the inherited ones.
    pub permissions: AgentPermissions,
    /// Its wall-clock budget, overriding `agents.timeout_secs`.
    pub timeout: Option<Duration>,
    /// Skills (by name) whose bodies are preloaded into its system prompt.
    pub skills: Vec<String>,
    /// Its sandbox mode; the child's commands run in the stricter of this
    /// and its parent's.
    pub sandbox: Option<alcove_tools::SandboxMode>,
    /// Whether its commands may use the network (never more than its parent's).
    pub network: Option<bool>,
    /// `isolation: worktree`: the child works in a git worktree of its own.
    pub worktree: bool,
    /// `leaveSpawned: true`: agents it spawned keep running after it ends
    /// (by default a finished child closes them, so none outlives it).
    pub leave_spawned: bool,
    /// The file it was loaded from (`None` for a built-in).
    pub source: Option<PathBuf>,
}

impl AgentDefinition {
    /// Whether a tool of the parent's called `name` is offered to this kind
    /// of child (before the `Agent` call's own `tool_names` narrow it more).
    pub fn offers_tool(&self, name: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|tools| tools.iter().any(|tool| tool == name))
            && !self.disallowed_tools.iter().any(|tool| tool == name)
    }

    /// The names of `pool` this kind of child is offered, in pool order.
    pub fn effective_tools<'a>(&self, pool: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        pool.into_iter()
            .filter(|name| self.offers_tool(name))
            .collect()
    }
}

/// The definitions a session knows, by name, in a stable order.
#[derive(Debug, Clone)]
pub struct Definitions {
    definitions: Vec<AgentDefinition>,
}

/// The type used when an `Agent` call names none.
pub const DEFAULT_AGENT_TYPE: &str = "general-purpose";

impl Default for Definitions {
    /// The built-ins: `general-purpose`, `explore` and `researcher`.
    fn default() -> Definitions {
        Definitions {
            definitions: vec![
                AgentDefinition {
                    name: DEFAULT_AGENT_TYPE.to_owned(),
                    description: "Multi-step tasks: research, edits, commands.".to_owned(),
                    system_prompt:
                        "You are a general-purpose coding agent working on a task delegated by \
                                    another agent."
                            .to_owned(),
                    ..AgentDefinition::default()
                },
                AgentDefinition {
                    name: "explore".to_owned(),
                    description:
                        "Read-only: searches and reads the code, reports findings with file:line \
                                  evidence."
                            .to_owned(),
                    system_prompt:
                        "You are an exploring agent. You can only read: search with Glob and Grep, \
                                    read with Read. Back every finding with file:line evidence."
                            .to_owned(),
                    tools: Some(vec![
                        "Read".to_owned(),
                        "Glob".to_owned(),
                        "Grep".to_owned(),
                    ]),
                    ..AgentDefinition::default()
                },
                // Seed 004's external-research role: the web, without the
                // local credentials (no command runs, nothing is written;
                // `Read(...)` deny rules hold as for any child).
                AgentDefinition {
                    name: "researcher".to_owned(),
                    description: "Researches outside the code: fetches web pages and reads local files; runs no command and writes nothing."
                        .to_owned(),
                    system_prompt: "You are a research agent. Fetch pages with WebFetch (load it first: ToolSearch \"select:WebFetch\") and read local files with Read, Glob and Grep; you cannot run commands or write files. Cite the URL or file:line of every finding."
                        .to_owned(),
                    tools: Some(
                        ["WebFetch", "WebSearch", "Read", "Glob", "Grep"]
                            .map(str::to_owned)
                            .to_vec(),
                    ),
                    ..AgentDefinition::default()
                },
            ],
        }
    }
}

/// The form of a name that lookups compare: lower case, `_` and spaces read as `-`.
fn name_key(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

impl Definitions {
    /// Adds a definition, replacing one of the same name (compared
    /// case- and separator-insensitively) in its place.
    pub fn insert(&mut self, definition: AgentDefinition) {
        let key = name_key(&definition.name);
        match self
            .definitions
            .iter_mut()
            .find(|existing| name_key(&existing.name) == key)
        {
            Some(existing) => *existing = definition,
            None => self.definitions.push(definition),
        }
    }

    /// The definition called `name` (case- and separator-insensitive).
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        let key = name_key(name);
        self.definitions
            .iter()
            .find(|definition| name_key(&definition.name) == key)
    }

    /// Rewrites every definition's model with `resolve` (an alias becomes
    /// `provider/name`, or `None`: the parent's model).
    pub fn resolve_models(&mut self, mut resolve: impl FnMut(&str) -> Option<String>) {
        for definition in &mut self.definitions {
            definition.model = definition.model.as_deref().and_then(&mut resolve);
        }
    }

    /// All definitions, in order.
    pub fn all(&self) -> &[AgentDefinition] {
        &self.definitions
    }

    /// The names, comma-separated, for error messages.
    pub fn names(&self) -> String {
        self.definitions
            .iter()
            .map(|definition| definition.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What every child is told about its final message.
pub(crate) const DELEGATION_CONTRACT: &str = "\
You were started by another agent to do one bounded task; you cannot ask it questions. \
Your final message is all it will see of your work: none of your tool calls or results reach it. \
End with a concise report:
- Findings, each with file:line evidence.
- Changes you made (files and what changed).
- Checks you ran and their results.
- Open questions or anything you could not finish.
Do not claim what you did not verify.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_case_and_separator_insensitively_and_replace_in_place() {
        let mut definitions = Definitions::default();
        assert!(definitions.get("General_Purpose").is_some());
        assert!(definitions.get("Explore").is_some());
        definitions.insert(AgentDefinition {
            name: "Explore".to_owned(),
            description: "mine".to_owned(),
            ..AgentDefinition::default()
        });
        assert_eq!(definitions.all().len(), 3);
        assert_eq!(definitions.all()[1].description, "mine");
        assert_eq!(definitions.names(), "general-purpose, Explore, researcher");
    }

    #[test]
    fn effective_tools_apply_both_lists_in_pool_order() {
        let definition = AgentDefinition {
            tools: Some(vec![
                "Bash".to_owned(),
                "Read".to_owned(),
                "Grep".to_owned(),
            ]),
            disallowed_tools: vec!["Bash".to_owned()],
            ..AgentDefinition::default()
        };
        let pool = ["Read", "Glob", "Grep", "Bash"];
        assert_eq!(definition.effective_tools(pool), ["Read", "Grep"]);
        let open = AgentDefinition {
            disallowed_tools: vec!["Glob".to_owned()],
            ..AgentDefinition::default()
        };
        assert_eq!(open.effective_tools(pool), ["Read", "Grep", "Bash"]);
    }
}
