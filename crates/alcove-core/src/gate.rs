//! The permission gate: the one place that decides whether a tool call may run.
//!
//! Every call at every depth is checked here after its arguments were
//! validated and before any hook or the tool itself runs. A refusal is a
//! result the model reads, naming the rule that refused it or the flag or
//! rule that would allow it; it is never a crash.
//!
//! A gate holds a mode and allow / ask / deny rules (Claude Code syntax, see
//! `rules`). Rules are evaluated deny → ask → allow, first match wins; when
//! none matches, the mode decides. A child's gate *narrows* its parent's: it
//! links to the parent (never copies it), a parent's deny or ask always
//! holds, a child's allow never widens what the parent allows, and the
//! child's mode is the stricter of the two. In plan mode nothing that edits
//! or executes runs, whatever any level's allow rules say. Only config, flags and the user
//! (through "allow always for this session") change rules; nothing a tool
//! returns or a model writes can.
//!
//! Before any rule or mode, the session's [`AccessPolicy`] (compiled from
//! `[sandbox]`, the same one commands' Landlock domains are built from)
//! refuses a file tool's read of a `sandbox.deny_read` path and its write
//! outside the folders the agent's sandbox lets commands write, in every
//! mode: no rule or mode lets a tool past what a command could not do.

mod approval;
#[cfg(test)]
mod narrowing_tests;
mod paths;
mod policy;
mod reads;
mod rules;
pub(crate) mod shell;
#[cfg(test)]
mod tests;
mod words;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use alcove_protocol::AgentPath;
use alcove_tools::{Access, AccessPolicy, Invocation, SandboxScope, Workspace};
use serde_json::Value;

pub use approval::{Approval, ApprovalRequest, Approver, NoApprover};
pub use policy::{Charter, POLICY_ENV, ParentPolicy};
pub use rules::{Rule, RuleError, RuleKind, RuleSet};

use paths::PathContext;
use rules::{CallFacts, Verdict, suggestions};
use shell::Shell;

/// How permissive a session is, in Claude Code's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionMode {
    /// Read-only tools run; anything else needs approval (denied when no one
    /// can be asked).
    Default,
    /// Read-only tools and file edits run; commands need approval.
    AcceptEdits,
    /// Read-only tools only.
    Plan,
    /// Everything runs that no deny or ask rule stops.
    BypassPermissions,
    /// Like `Default`, but whatever would ask is denied outright.
    DontAsk,
}

impl PermissionMode {
    /// Parses the spelling used by flags and config.
    pub fn parse(text: &str) -> Option<PermissionMode> {
        match text {
            "default" => Some(PermissionMode::Default),
            "acceptEdits" => Some(PermissionMode::AcceptEdits),
            "plan" => Some(PermissionMode::Plan),
            "bypassPermissions" => Some(PermissionMode::BypassPermissions),
            "dontAsk" => Some(PermissionMode::DontAsk),
            _ => None,
        }
    }

    /// The spelling used by flags and config.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::DontAsk => "dontAsk",
        }
    }

    /// How strict the mode is: plan > dontAsk > default > acceptEdits >
    /// bypassPermissions. `dontAsk` ranks above `default` because it runs
    /// exactly what `default` runs without asking and denies the rest.
    fn strictness(self) -> u8 {
        match self {
            PermissionMode::Plan => 4,
            PermissionMode::DontAsk => 3,
            PermissionMode::Default => 2,
            PermissionMode::AcceptEdits => 1,
            PermissionMode::BypassPermissions => 0,
        }
    }

    /// The stricter of two modes (a child's effective mode).
    pub fn stricter(self, other: PermissionMode) -> PermissionMode {
        if other.strictness() > self.strictness() {
            other
        } else {
            self
        }
    }
}

/// The gate's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The call may run.
    Allow,
    /// Someone must approve it first; the text says what and how to allow it
    /// for good (it is the denial the model reads when no one can approve).
    Ask(String),
    /// The call may not run; the reason is the result the model reads.
    Deny(String),
}

/// A decision before the last step, remembering whether a rule allowed the
/// call (then no stricter mode below can take it back) or only a mode did.
enum Outcome {
    Deny(String),
    Ask(String),
    Allow { by_rule: bool },
}

/// Decides, for every tool call of an agent, whether it may run.
#[derive(Debug)]
pub struct PermissionGate {
    /// The effective mode: the stricter of this level's and the parent's.
    mode: PermissionMode,
    /// Whether this level or one above is in `dontAsk` mode.
    denies_asks: bool,
    /// This level's own rules (the session's at the root, a definition's below).
    rules: RuleSet,
    /// The gate this one narrows, consulted by reference.
    parent: Option<Arc<PermissionGate>>,
    /// Rules the user allowed "always" during this session (root only).
    session: Mutex<Vec<Rule>>,
    /// The home folder `~/` patterns resolve against (root only).
    home: Option<PathBuf>,
    /// Whether commands run sandboxed and so need no approval when no rule
    /// asks or denies (`sandbox.auto_allow`; children inherit it).
    sandboxed_commands: bool,
    /// The session's read and write boundaries (children inherit them).
    access: Option<Arc<AccessPolicy>>,
}

/// One call being checked.
struct Check<'a> {
    agent: &'a AgentPath,
    access: Access,
    invocation: &'a Invocation,
    facts: CallFacts<'a>,
}

impl PermissionGate {
    /// A root gate in `mode`, without rules.
    pub fn new(mode: PermissionMode) -> PermissionGate {
        PermissionGate {
            mode,
            denies_asks: mode == PermissionMode::DontAsk,
            rules: RuleSet::default(),
            parent: None,
            session: Mutex::new(Vec::new()),
            home: None,
            sandboxed_commands: false,
            access: None,
        }
    }

    /// The same gate letting commands run without approval when no rule
    /// asks or denies, because they run in the sandbox.
    pub fn with_sandboxed_commands(mut self, sandboxed: bool) -> PermissionGate {
        self.set_sandboxed_commands(sandboxed);
        self
    }

    /// Sets whether sandboxed commands need no approval at this level (and
    /// in the children narrowed from it later).
    pub fn set_sandboxed_commands(&mut self, sandboxed: bool) {
        self.sandboxed_commands = sandboxed;
    }

    /// The same gate holding file tools to `access` (and the children
    /// narrowed from it later).
    pub fn with_access(mut self, access: Arc<AccessPolicy>) -> PermissionGate {
        self.set_access(access);
        self
    }

    /// Holds file tools to `access` at this level and below.
    pub fn set_access(&mut self, access: Arc<AccessPolicy>) {
        self.access = Some(access);
    }

    /// The same gate with `rules` (config and flags) as its own.
    pub fn with_rules(mut self, rules: RuleSet) -> PermissionGate {
        self.rules = rules;
        self
    }

    /// The same gate resolving `~/` in path rules against `home`.
    pub fn with_home(mut self, home: Option<PathBuf>) -> PermissionGate {
        self.home = home;
        self
    }

    /// A child's gate: this gate's rules and mode still apply (by reference),
    /// `rules` apply on top and can only narrow, and the mode is the stricter
    /// of `mode` (when given) and this gate's.
    pub fn narrowed(
        self: &Arc<Self>,
        mode: Option<PermissionMode>,
        rules: RuleSet,
    ) -> Arc<PermissionGate> {
        let own = mode.unwrap_or(self.mode);
        Arc::new(PermissionGate {
            mode: self.mode.stricter(own),
            denies_asks: self.denies_asks || own == PermissionMode::DontAsk,
            rules,
            parent: Some(self.clone()),
            session: Mutex::new(Vec::new()),
            home: None,
            sandboxed_commands: self.sandboxed_commands,
            access: self.access.clone(),
        })
    }

    /// The effective mode (for a child, the stricter of its own and its parent's).
    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// This level's own rules.
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// The gate this one narrows, if any.
    pub fn parent(&self) -> Option<&Arc<PermissionGate>> {
        self.parent.as_ref()
    }

    /// Whether `tool` may be offered to the model at all: a bare tool name in
    /// a deny rule at this level or above takes it away.
    pub fn offers(&self, tool: &str) -> bool {
        !self.rules.removes(tool)
            && self
                .parent
                .as_ref()
                .is_none_or(|parent| parent.offers(tool))
    }

    /// Allows calls matching `rule` for the rest of the session, at the root
    /// gate (so in every agent, where no deny or ask rule says otherwise).
    pub fn allow_for_session(&self, rule: Rule) {
        self.root().session_rules().push(rule);
    }

    /// The rules "allow always" would add for a call like this one: the
    /// command's programs for Bash, the file for file tools, the type for
    /// `Agent`, the tool otherwise.
    pub fn suggest_rules(&self, tool: &str, input: &Value, workspace: &Workspace) -> Vec<Rule> {
        let command = input.get("command").and_then(Value::as_str);
        let shell = command.map(shell::parse);
        let paths: Vec<PathBuf> = ["file_path", "path", "notebook_path"]
            .iter()
            .filter_map(|key| input.get(key).and_then(Value::as_str))
            .map(|path| workspace.resolve(path))
            .collect();
        let facts = CallFacts {
            tool,
            input,
            paths: &paths,
            shell: shell.as_ref(),
            command,
            paths_context: PathContext {
                root: workspace.root(),
                home: self.home(),
            },
            workspace,
        };
        suggestions(&facts)
            .iter()
            .filter_map(|text| Rule::parse(text, "allowed always for this session").ok())
            .collect()
    }

    /// Whether an allow rule of the root gate (the session's config and
    /// flags, or "allow always") names `host` for `tool`
    /// (`WebFetch(domain:localhost)`): what lets a fetch reach a loopback
    /// or private address. A bare rule names no host. A child's own allow
    /// rules (an agent definition's) never do: they may only narrow what
    /// its parent may reach, never widen it.
    pub fn names_host(&self, tool: &str, host: &str) -> bool {
        let root = self.root();
        root.rules.names_host(tool, host)
            || root
                .session_rules()
                .iter()
                .any(|rule| rule.names_host(tool, host))
    }

    /// Checks one validated call of `tool` with arguments `input`, for an
    /// agent whose commands run in `sandbox`.
    #[allow(clippy::too_many_arguments)]
    pub fn check(
        &self,
        agent: &AgentPath,
        tool: &str,
        access: Access,
        invocation: &Invocation,
        input: &Value,
        workspace: &Workspace,
        sandbox: SandboxScope,
    ) -> Decision {
        if let Some(reason) = self.beyond_access(tool, access, invocation, workspace, sandbox) {
            return Decision::Deny(reason);
        }
        let shell = invocation.command.as_deref().map(shell::parse);
        let check = Check {
            agent,
            access,
            invocation,
            facts: CallFacts {
                tool,
                input,
                paths: &invocation.paths,
                shell: shell.as_ref(),
                command: invocation.command.as_deref(),
                paths_context: PathContext {
                    root: workspace.root(),
                    home: self.home(),
                },
                workspace,
            },
        };
        match self.decide(&check) {
            Outcome::Deny(reason) => Decision::Deny(reason),
            // A gate in plan mode (its own, or inherited as the stricter) runs
            // no command and writes nothing, whatever a rule above allows or
            // would ask about.
            _ if self.mode == PermissionMode::Plan
                && matches!(access, Access::Edit | Access::Execute) =>
            {
                Decision::Deny(plan_denial(tool))
            }
            Outcome::Ask(reason) => Decision::Ask(reason),
            // Even a bare `Bash` allow: the deny and ask rules beside it could not be checked.
            Outcome::Allow { .. }
                if matches!(shell, Some(Shell::Unparsable(_))) && self.restricts_bash() =>
            {
                self.ask_or_deny(format!(
                    "{tool} ({}) asked by {agent} needs approval: {}, so the Bash deny and ask \
                     rules in force cannot be checked against it. Rewrite it in plain shell syntax.",
                    invocation.summary,
                    unparsable_reason(shell.as_ref()),
                ))
                .into_decision()
            }
            Outcome::Allow { .. } => Decision::Allow,
        }
    }
}

impl Outcome {
    fn into_decision(self) -> Decision {
        match self {
            Outcome::Deny(reason) => Decision::Deny(reason),
            Outcome::Ask(reason) => Decision::Ask(reason),
            Outcome::Allow { .. } => Decision::Allow,
        }
    }
}

impl PermissionGate {
    /// Why the session's access policy refuses a file tool's call, if it
    /// does: a read (or an edit, which reads) of a `deny_read` path, or a
    /// write the agent's sandbox would refuse its commands.
    fn beyond_access(
        &self,
        tool: &str,
        access: Access,
        invocation: &Invocation,
        workspace: &Workspace,
        sandbox: SandboxScope,
    ) -> Option<String> {
        let policy = self.access.as_deref()?;
        if !matches!(access, Access::ReadOnly | Access::Edit) {
            return None;
        }
        for path in &invocation.paths {
            let real = workspace.real_path(path);
            if let Some(entry) = policy
                .read_denied(path, &real)
                .or_else(|| policy.hard_link_denied(&real))
            {
                return Some(format!(
                    "Permission denied: {tool} of {} is refused: sandbox.deny_read covers {}, \
                     so neither file tools nor commands may read it, in any permission mode. \
                     Do not try another way to read it; only the user's sandbox.deny_read \
                     setting can change this.",
                    workspace.display(path),
                    entry.display()
                ));
            }
            if access == Access::Edit
                && let Some(why) = policy.write_refused(sandbox.mode, workspace.root(), &real)
            {
                return Some(format!(
                    "Permission denied: {tool} of {} is refused: {why}. This holds in every \
                     permission mode, as it does for Bash.",
                    workspace.display(path)
                ));
            }
        }
        None
    }

    fn root(&self) -> &PermissionGate {
        match &self.parent {
            Some(parent) => parent.root(),
            None => self,
        }
    }

    fn home(&self) -> Option<&Path> {
        match &self.parent {
            Some(parent) => parent.home(),
            None => self.home.as_deref(),
        }
    }

    fn session_rules(&self) -> MutexGuard<'_, Vec<Rule>> {
        self.session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn restricts_bash(&self) -> bool {
        self.rules.has_bash_restrictions()
            || self
                .parent
                .as_ref()
                .is_some_and(|parent| parent.restricts_bash())
    }

    /// This level's decision, its parent's included.
    fn decide(&self, check: &Check<'_>) -> Outcome {
        let own = {
            let session = self.session_rules();
            self.rules.verdict(&check.facts, &session)
        };
        let outcome = match (self.parent.as_ref().map(|parent| parent.decide(check)), own) {
            (Some(Outcome::Deny(reason)), _) => Outcome::Deny(reason),
            (_, Verdict::Deny(rule, source)) => Outcome::Deny(format!(
                "Permission denied: {} ({}) denied by rule {rule} from {source}.",
                check.facts.tool, check.invocation.summary
            )),
            (Some(Outcome::Ask(reason)), _) => Outcome::Ask(reason),
            (_, Verdict::Ask(rule, source)) => Outcome::Ask(format!(
                "{} ({}) asked by {} needs approval: ask rule {rule} from {source}.",
                check.facts.tool, check.invocation.summary, check.agent
            )),
            (None | Some(Outcome::Allow { by_rule: false }), Verdict::Allow)
            | (Some(Outcome::Allow { by_rule: true }), _) => Outcome::Allow { by_rule: true },
            (None | Some(Outcome::Allow { by_rule: false }), Verdict::NoMatch) => {
                self.by_mode(check)
            }
        };
        match outcome {
            Outcome::Ask(reason) => self.ask_or_deny(reason),
            outcome => outcome,
        }
    }

    /// `Ask`, or in `dontAsk` mode (here or above) a denial with the same text.
    fn ask_or_deny(&self, reason: String) -> Outcome {
        if self.denies_asks {
            Outcome::Deny(format!("Permission denied (dontAsk mode): {reason}"))
        } else {
            Outcome::Ask(reason)
        }
    }

    /// What the effective mode says about a call no rule matched.
    fn by_mode(&self, check: &Check<'_>) -> Outcome {
        let tool = check.facts.tool;
        let summary = &check.invocation.summary;
        let agent = check.agent;
        if self.mode == PermissionMode::BypassPermissions {
            return Outcome::Allow { by_rule: false };
        }
        // Only a refusal or a question names the rule that would allow the
        // call; an allowed call does not build it.
        let hint = || allow_hint(&check.facts);
        match check.access {
            Access::ReadOnly | Access::Delegate => Outcome::Allow { by_rule: false },
            // The access policy already held the call to what the
            // sandbox lets commands write; outside bypassPermissions a
            // file tool keeps to the workspace within that, unless a rule
            // allows more.
            Access::Edit => {
                if let Some(outside) = check
                    .invocation
                    .paths
                    .iter()
                    .find(|path| !check.facts.workspace.contains(path))
                {
                    return Outcome::Deny(format!(
                        "Permission denied: {tool} of {} is outside the workspace {}. \
                         Only an allow rule ({}) or --permission-mode bypassPermissions \
                         allows writing outside it.",
                        outside.display(),
                        check.facts.workspace.root().display(),
                        hint()
                    ));
                }
                match self.mode {
                    PermissionMode::AcceptEdits => Outcome::Allow { by_rule: false },
                    PermissionMode::Plan => Outcome::Deny(plan_denial(tool)),
                    _ => Outcome::Ask(format!(
                        "{tool} ({summary}) asked by {agent} needs approval. {} allows it; \
                         --permission-mode acceptEdits (or bypassPermissions) allows file edits.",
                        hint()
                    )),
                }
            }
            Access::Network => match self.mode {
                PermissionMode::Plan => Outcome::Deny(plan_denial(tool)),
                _ => Outcome::Ask(format!(
                    "{tool} ({summary}) asked by {agent} needs approval. {} allows it; \
                     --permission-mode bypassPermissions allows fetches.",
                    hint()
                )),
            },
            Access::Execute => match self.mode {
                PermissionMode::Plan => Outcome::Deny(plan_denial(tool)),
                // Only Bash's commands run in the sandbox (a process-runner
                // spawn, also Execute, does not).
                _ if self.sandboxed_commands
                    && tool == "Bash"
                    && !matches!(check.facts.shell, Some(Shell::Unparsable(_))) =>
                {
                    Outcome::Allow { by_rule: false }
                }
                _ => match check.facts.shell {
                    Some(shell @ Shell::Unparsable(_)) => Outcome::Ask(format!(
                        "{tool} ({summary}) asked by {agent} needs approval: {}, so no Bash rule \
                         can allow it. Rewrite it in plain shell syntax; \
                         --permission-mode bypassPermissions allows commands.",
                        unparsable_reason(Some(shell))
                    )),
                    _ => Outcome::Ask(format!(
                        "{tool} ({summary}) asked by {agent} needs approval. {} allows it; \
                         --permission-mode bypassPermissions allows commands.",
                        hint()
                    )),
                },
            },
        }
    }
}

/// `--allow 'Bash(rm:*)'` (and more when several rules are needed).
fn allow_hint(facts: &CallFacts<'_>) -> String {
    let rules = suggestions(facts);
    if rules.is_empty() {
        return format!("--allow {}", facts.tool);
    }
    rules
        .iter()
        .map(|rule| format!("--allow '{rule}'"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn unparsable_reason(shell: Option<&Shell>) -> String {
    match shell {
        Some(Shell::Unparsable(why)) => format!("the command cannot be parsed ({why})"),
        _ => "the command cannot be parsed".to_owned(),
    }
}

fn plan_denial(tool: &str) -> String {
    format!(
        "Permission denied: {tool} is not available in plan mode, which allows read-only tools only. \
         Present the plan instead."
    )
}
