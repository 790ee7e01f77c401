//! Permission rules in Claude Code's syntax, and matching them against a call.
//!
//! `Bash` (every call of a tool), `Bash(git diff:*)` (the command's words
//! start with these), `Bash(npm run *)` (a glob over the command's words),
//! `Read(./secrets/**)`, `Edit(src/**)`, `Write(/tmp/**)` (path globs, see
//! `paths`), `Agent(explore)` (the child's type), `mcp__server__tool` and
//! `mcp__server` (every tool of that server). `Edit` rules also cover
//! `Write`, and `Read` rules also cover `Glob` and `Grep`, as in Claude Code.

use std::fmt;
use std::path::PathBuf;

use alcove_tools::Workspace;
use serde_json::Value;

use super::paths::{PathContext, PathPattern};
use super::shell::{Part, Shell, rough_commands};
use super::words::{BashPattern, deny_variants, suggest_bash};

/// Which list a rule is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    /// Runs without asking.
    Allow,
    /// Needs approval.
    Ask,
    /// Never runs.
    Deny,
}

impl RuleKind {
    /// `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }
}

/// A rule that could not be parsed: a usage error naming the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// Where it came from.
    pub source: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid permission rule `{}` ({}): {}",
            self.rule, self.source, self.reason
        )
    }
}

impl std::error::Error for RuleError {}

/// One rule, with where it came from (named in every decision it makes).
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: String,
    spec: Spec,
    source: String,
}

#[derive(Debug, Clone)]
enum Spec {
    /// Every call of the tool.
    Any,
    Bash(BashPattern),
    Path(PathPattern),
    /// A child's agent type.
    Agent(String),
    /// `WebFetch(domain:docs.rs)`: the URL's host, or with `*.` any
    /// host under it.
    Domain(String),
}

/// Tools whose rules take a path pattern.
const PATH_TOOLS: [&str; 7] = [
    "Read",
    "Edit",
    "Write",
    "Glob",
    "Grep",
    "MultiEdit",
    "NotebookEdit",
];

impl Rule {
    /// Parses one rule; `source` says where it came from (`--deny`, a config
    /// file path, an agent definition).
    pub fn parse(text: &str, source: &str) -> Result<Rule, RuleError> {
        let error = |reason: &str| RuleError {
            rule: text.to_owned(),
            source: source.to_owned(),
            reason: reason.to_owned(),
        };
        let trimmed = text.trim();
        let (tool, inner) = match trimmed.find('(') {
            None => (trimmed, None),
            Some(open) => {
                let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(error("a rule with `(` must end with `)`"));
                };
                (&trimmed[..open], Some(inner))
            }
        };
        if tool.is_empty()
            || !tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*')
        {
            return Err(error(
                "expected a tool name (letters, digits, `_`, `-`), optionally followed by `(pattern)`",
            ));
        }
        if tool.contains('*') && !tool.starts_with("mcp__") {
            return Err(error(
                "`*` in a tool name is only allowed in mcp__server__* rules",
            ));
        }
        let spec = match inner.map(str::trim) {
            None | Some("*") => Spec::Any,
            Some("") => return Err(error("the pattern between the parentheses is empty")),
            Some(inner) => match tool {
                "Bash" => Spec::Bash(BashPattern::parse(inner).map_err(|reason| error(&reason))?),
                "Agent" | "Task" => Spec::Agent(inner.to_owned()),
                "WebFetch" => match inner.strip_prefix("domain:").map(str::trim) {
                    Some(domain) if !domain.is_empty() => Spec::Domain(domain.to_ascii_lowercase()),
                    _ => return Err(error("a WebFetch rule reads `WebFetch(domain:<host>)`")),
                },
                tool if PATH_TOOLS.contains(&tool) => {
                    Spec::Path(PathPattern::parse(inner).map_err(|reason| error(&reason))?)
                }
                _ => {
                    return Err(error(&format!(
                        "alcove matches patterns only for Bash, Read, Edit, Write, Glob, Grep, \
                         Agent and WebFetch; write a bare `{tool}` to match every call"
                    )));
                }
            },
        };
        Ok(Rule {
            text: trimmed.to_owned(),
            tool: tool.to_owned(),
            spec,
            source: source.to_owned(),
        })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where it came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether this is a bare tool name (matching every call of the tool).
    pub fn is_bare(&self) -> bool {
        matches!(self.spec, Spec::Any)
    }

    /// Whether the rule is about `tool` at all (`Edit` rules cover `Write`).
    pub fn covers_tool(&self, tool: &str) -> bool {
        if self.tool == tool {
            return true;
        }
        match self.tool.as_str() {
            "Edit" => matches!(tool, "Write" | "MultiEdit" | "NotebookEdit"),
            "Read" => matches!(tool, "Glob" | "Grep"),
            "Agent" | "Task" => matches!(tool, "Agent" | "Task" | "spawn_agent"),
            rule if rule.starts_with("mcp__") => {
                let pattern = rule.trim_end_matches('*').trim_end_matches("__");
                tool.strip_prefix(pattern).is_some_and(|rest| {
                    rest.starts_with("__") || (rest.is_empty() && !rule.ends_with('*'))
                })
            }
            _ => false,
        }
    }

    /// Whether this is a domain rule of `tool` matching `host`.
    pub(crate) fn names_host(&self, tool: &str, host: &str) -> bool {
        self.covers_tool(tool)
            && matches!(&self.spec, Spec::Domain(domain) if domain_matches(domain, host))
    }

    pub(crate) fn is_bash_specific(&self) -> bool {
        matches!(self.spec, Spec::Bash(_))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// What a rule is matched against.
pub(crate) struct CallFacts<'a> {
    pub(crate) tool: &'a str,
    pub(crate) input: &'a Value,
    pub(crate) paths: &'a [PathBuf],
    /// The parsed command, for Bash calls.
    pub(crate) shell: Option<&'a Shell>,
    /// The command as written, for Bash calls.
    pub(crate) command: Option<&'a str>,
    pub(crate) paths_context: PathContext<'a>,
    pub(crate) workspace: &'a Workspace,
}

/// Whether a `domain:` rule's `domain` matches `host` (`*.x` matches `x`
/// and every host under it).
fn domain_matches(domain: &str, host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    match domain.strip_prefix("*.") {
        Some(base) => host == base || host.ends_with(&format!(".{base}")),
        None => host == domain,
    }
}

impl CallFacts<'_> {
    /// The host of a `WebFetch` call's `url`.
    pub(crate) fn url_host(&self) -> Option<String> {
        let url = self.input.get("url").and_then(Value::as_str)?;
        crate::web::host_of(&crate::web::parse_url(url).ok()?).ok()
    }

    /// The agent type an `Agent` (or `spawn_agent`) call asks for.
    pub(crate) fn agent_type(&self) -> String {
        ["subagent_type", "agent_type"]
            .iter()
            .find_map(|key| self.input.get(key).and_then(Value::as_str))
            .filter(|name| !name.trim().is_empty())
            .unwrap_or(crate::DEFAULT_AGENT_TYPE)
            .to_owned()
    }
}

impl Rule {
    /// Whether a deny or ask rule catches the call: one path, one part is enough.
    fn catches(&self, facts: &CallFacts<'_>) -> bool {
        if !self.covers_tool(facts.tool) {
            return false;
        }
        match &self.spec {
            Spec::Any => true,
            // The path as named, and where it lands: a symlink to a denied
            // file is denied too.
            Spec::Path(pattern) => facts.paths.iter().any(|path| {
                pattern.matches(path, facts.paths_context)
                    || pattern.matches(&facts.workspace.real_path(path), facts.paths_context)
            }),
            Spec::Agent(name) => name.eq_ignore_ascii_case(&facts.agent_type()),
            Spec::Domain(domain) => facts
                .url_host()
                .is_some_and(|host| domain_matches(domain, &host)),
            Spec::Bash(pattern) => match (facts.shell, facts.command) {
                (Some(Shell::Parts(parts)), _) => parts.iter().any(|part| match part {
                    Part::Command(words) => deny_variants(words)
                        .iter()
                        .any(|words| pattern.matches(words)),
                    Part::Redirect(_) => false,
                }),
                (Some(Shell::Unparsable(_)), Some(command)) => {
                    rough_commands(command).iter().any(|words| {
                        deny_variants(words)
                            .iter()
                            .any(|words| pattern.matches(words))
                    })
                }
                _ => false,
            },
        }
    }

    /// Whether an allow rule covers the whole of a non-Bash call: every path.
    fn allows(&self, facts: &CallFacts<'_>) -> bool {
        if !self.covers_tool(facts.tool) {
            return false;
        }
        match &self.spec {
            Spec::Any => true,
            Spec::Path(pattern) => {
                !facts.paths.is_empty()
                    && facts.paths.iter().all(|path| {
                        pattern.matches(path, facts.paths_context)
                            && (!pattern.is_workspace_relative() || facts.workspace.contains(path))
                    })
            }
            Spec::Agent(name) => name.eq_ignore_ascii_case(&facts.agent_type()),
            Spec::Domain(domain) => facts
                .url_host()
                .is_some_and(|host| domain_matches(domain, &host)),
            Spec::Bash(_) => false,
        }
    }

    /// Whether an allow rule allows one part of a Bash command.
    fn allows_part(&self, part: &Part) -> bool {
        match (&self.spec, part) {
            (Spec::Any, _) => true,
            (Spec::Bash(pattern), Part::Command(words)) => pattern.matches(words),
            _ => false,
        }
    }
}

/// What one set of rules says about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A deny rule matched (its text and source).
    Deny(String, String),
    /// An ask rule matched.
    Ask(String, String),
    /// Allow rules cover the whole call.
    Allow,
    /// No rule decides.
    NoMatch,
}

/// The allow, ask and deny rules of one level (the session, or one agent definition).
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
}

impl RuleSet {
    /// Parses three lists of rules from one source.
    pub fn from_lists(
        allow: &[String],
        ask: &[String],
        deny: &[String],
        source: &str,
    ) -> Result<RuleSet, RuleError> {
        let mut rules = RuleSet::default();
        for (kind, list) in [
            (RuleKind::Allow, allow),
            (RuleKind::Ask, ask),
            (RuleKind::Deny, deny),
        ] {
            for text in list {
                rules.add(kind, Rule::parse(text, source)?);
            }
        }
        Ok(rules)
    }

    /// Adds a rule at the end of its list.
    pub fn add(&mut self, kind: RuleKind, rule: Rule) {
        match kind {
            RuleKind::Allow => self.allow.push(rule),
            RuleKind::Ask => self.ask.push(rule),
            RuleKind::Deny => self.deny.push(rule),
        }
    }

    /// Appends another set's rules after this one's.
    pub fn extend(&mut self, other: RuleSet) {
        self.allow.extend(other.allow);
        self.ask.extend(other.ask);
        self.deny.extend(other.deny);
    }

    /// The rules of one kind, in order.
    pub fn rules(&self, kind: RuleKind) -> &[Rule] {
        match kind {
            RuleKind::Allow => &self.allow,
            RuleKind::Ask => &self.ask,
            RuleKind::Deny => &self.deny,
        }
    }

    /// Whether there are no rules at all.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }

    /// Whether a bare deny rule takes `tool` away.
    pub(crate) fn removes(&self, tool: &str) -> bool {
        self.deny
            .iter()
            .any(|rule| rule.is_bare() && rule.covers_tool(tool))
    }

    /// Whether a Bash-specific deny or ask rule exists (which an unparsable
    /// command cannot be checked against).
    pub(crate) fn has_bash_restrictions(&self) -> bool {
        self.deny
            .iter()
            .chain(&self.ask)
            .any(Rule::is_bash_specific)
    }

    /// Whether a deny rule of this level catches the call.
    /// Whether an allow rule here names `host` for `tool` ([`Rule::names_host`]).
    pub(crate) fn names_host(&self, tool: &str, host: &str) -> bool {
        self.allow.iter().any(|rule| rule.names_host(tool, host))
    }

    pub(crate) fn denies(&self, facts: &CallFacts<'_>) -> bool {
        self.deny.iter().any(|rule| rule.catches(facts))
    }

    /// Whether some deny rule of this level is about reading paths.
    pub(crate) fn denies_reads(&self) -> bool {
        self.deny
            .iter()
            .any(|rule| rule.covers_tool("Read") && !rule.is_bare())
    }

    /// Deny, then ask, then allow; the first match wins. `session` holds
    /// extra allow rules (granted "for this session").
    pub(crate) fn verdict(&self, facts: &CallFacts<'_>, session: &[Rule]) -> Verdict {
        if let Some(rule) = self.deny.iter().find(|rule| rule.catches(facts)) {
            return Verdict::Deny(rule.text.clone(), rule.source.clone());
        }
        if let Some(rule) = self.ask.iter().find(|rule| rule.catches(facts)) {
            return Verdict::Ask(rule.text.clone(), rule.source.clone());
        }
        let mut allow = self.allow.iter().chain(session);
        let allowed = match facts.shell {
            Some(Shell::Parts(parts)) => {
                let rules: Vec<&Rule> = allow.filter(|rule| rule.covers_tool(facts.tool)).collect();
                !rules.is_empty()
                    && parts
                        .iter()
                        .all(|part| rules.iter().any(|rule| rule.allows_part(part)))
            }
            Some(Shell::Unparsable(_)) => {
                allow.any(|rule| rule.covers_tool(facts.tool) && rule.is_bare())
            }
            None => allow.any(|rule| rule.allows(facts)),
        };
        if allowed {
            Verdict::Allow
        } else {
            Verdict::NoMatch
        }
    }
}

/// Rules that would allow the call, for messages and "allow always".
pub(crate) fn suggestions(facts: &CallFacts<'_>) -> Vec<String> {
    let family = match facts.tool {
        "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => Some("Edit"),
        "Read" | "Glob" | "Grep" => Some(facts.tool),
        _ => None,
    };
    let mut out: Vec<String> = Vec::new();
    match (facts.tool, facts.shell) {
        ("Bash", Some(Shell::Parts(parts))) => out = suggest_bash(parts),
        ("Bash", _) => {}
        ("Agent" | "spawn_agent", _) => out.push(format!("Agent({})", facts.agent_type())),
        ("WebFetch", _) => match facts.url_host() {
            Some(host) => out.push(format!("WebFetch(domain:{host})")),
            None => out.push("WebFetch".to_owned()),
        },
        (tool, _) => match family {
            Some(family) if !facts.paths.is_empty() => {
                for path in facts.paths {
                    // A relative rule never reaches through a symlink out of
                    // the workspace (see `allows`): name such a path absolutely.
                    let shown = match path.strip_prefix(facts.paths_context.root) {
                        Ok(relative)
                            if !relative.as_os_str().is_empty()
                                && facts.workspace.contains(path) =>
                        {
                            relative.display().to_string()
                        }
                        _ => path.display().to_string(),
                    };
                    out.push(format!("{family}({shown})"));
                }
            }
            _ => out.push(tool.to_owned()),
        },
    }
    out
}
