//! What a Claude Code or Codex user types, landing where they expect:
//! `-p/--print`, `--continue`, `--resume [ID]`, `--output-format`,
//! `--max-turns`, `--append-system-prompt` at the top level (as `exec`'s),
//! `--allowedTools`/`--disallowedTools` (as `--allow`/`--deny`, lists
//! split), `--dangerously-skip-permissions` (as `--permission-mode
//! bypassPermissions`); a mistyped subcommand caught before it becomes a
//! paid prompt; and the session flags left out of the help of the commands
//! they do nothing for.
//!
//! The typo rule: a prompt given without `-p` that is one word (letters,
//! digits, `-`, `_`; no space, no `?`) is refused with exit 2 when it is
//! within two edits of a subcommand (`reprot` → `report`) or is another
//! tool's command alcove does not have (`login`, `logout`, `doctor`, …).
//! Any prompt with a space, any `-p` prompt and any `exec` prompt go to the
//! model as written.

use clap::{Args, CommandFactory, FromArgMatches};

use crate::output_format::OutputFormat;
use crate::{Cli, CommonArgs, UsageError};

/// The top-level flags of a headless run (`alcove -p …`), and of the
/// interactive UI where they apply (`--continue`, `--resume`,
/// `--max-turns`, `--append-system-prompt`).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct PrintFlags {
    /// Run the prompt headless and print the answer (as `alcove exec`).
    #[arg(short = 'p', long = "print")]
    pub(crate) print: bool,
    /// Continue the last session in this folder.
    #[arg(long = "continue", conflicts_with = "resume")]
    pub(crate) continue_last: bool,
    /// Continue a session by its id or the first characters of it (no id:
    /// pick one).
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub(crate) resume: Option<String>,
    /// With -p: text (the answer), json (one result object at the end) or
    /// stream-json (the event lines).
    #[arg(long, value_name = "FORMAT")]
    pub(crate) output_format: Option<OutputFormat>,
    /// The most model requests the main agent may make (default 100).
    #[arg(long, value_name = "N")]
    pub(crate) max_turns: Option<u32>,
    /// Text added to the end of the system prompt.
    #[arg(long, value_name = "TEXT")]
    pub(crate) append_system_prompt: Option<String>,
}

/// The subcommands whose work is not a session: the permission, sandbox
/// and turn flags are left out of their help.
const NOT_SESSIONS: [&str; 7] = [
    "report",
    "merge",
    "worktrees",
    "agents",
    "skills",
    "mcp",
    "config",
];

/// The flags that only act on a session.
const SESSION_FLAGS: [&str; 6] = [
    "permission_mode",
    "allow",
    "deny",
    "sandbox",
    "dangerously_skip_permissions",
    "parent_policy",
];

/// Other tools' commands alcove does not have: a one-word prompt of these
/// is refused like a typo.
const OTHER_TOOLS_COMMANDS: [(&str, &str); 6] = [
    (
        "login",
        "alcove reads its key from the environment: set ANTHROPIC_API_KEY or OPENAI_API_KEY (or \
         [providers.<id>] api_key_env in config.toml)",
    ),
    (
        "logout",
        "alcove keeps no login: unset ANTHROPIC_API_KEY or OPENAI_API_KEY",
    ),
    ("doctor", "`alcove config check` checks the configuration"),
    ("update", "update alcove the way you installed it"),
    ("upgrade", "update alcove the way you installed it"),
    (
        "status",
        "`alcove config show` prints the settings in effect",
    ),
];

/// Parses the whole command line (the path for everything but a plain
/// `exec`), with the session flags hidden where they do nothing.
pub(crate) fn parse_full() -> Cli {
    let mut command = Cli::command();
    command.build();
    for name in NOT_SESSIONS {
        command = command.mut_subcommand(name, |sub| {
            sub.mut_args(|arg| {
                let hidden = SESSION_FLAGS.contains(&arg.get_id().as_str()) || arg.is_hide_set();
                arg.hide(hidden)
            })
        });
    }
    let matches = command.get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit())
}

/// The flags' effects on the common arguments: `--dangerously-skip-permissions`
/// is `--permission-mode bypassPermissions`; `--allowedTools "Read Grep"`
/// is two rules.
pub(crate) fn normalize(common: &mut CommonArgs) -> Result<(), UsageError> {
    if common.dangerously_skip_permissions {
        match common.permission_mode.as_deref() {
            None | Some("bypassPermissions") => {}
            Some(other) => {
                return Err(UsageError(format!(
                    "--dangerously-skip-permissions is --permission-mode bypassPermissions; it \
                     cannot go with --permission-mode {other}"
                )));
            }
        }
        common.permission_mode = Some("bypassPermissions".to_owned());
    }
    common.allow = common
        .allow
        .iter()
        .flat_map(|text| split_rules(text))
        .collect();
    common.deny = common
        .deny
        .iter()
        .flat_map(|text| split_rules(text))
        .collect();
    Ok(())
}

/// `"Read, Bash(git diff:*) Grep"` → three rules: lists are split at commas
/// and spaces outside parentheses (a rule has none there).
fn split_rules(text: &str) -> Vec<String> {
    let mut rules = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' | ' ' | '\t' if depth == 0 => {
                if !current.is_empty() {
                    rules.push(std::mem::take(&mut current));
                }
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.is_empty() || rules.is_empty() {
        rules.push(current);
    }
    rules
}

/// A one-word prompt that is a mistyped command, refused (see the module
/// comment for the rule).
pub(crate) fn refuse_typo(prompt: &str) -> Result<(), UsageError> {
    let word = prompt.trim();
    let one_word = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_');
    if !one_word {
        return Ok(());
    }
    let lower = word.to_lowercase();
    if let Some((name, remedy)) = OTHER_TOOLS_COMMANDS.iter().find(|(name, _)| *name == lower) {
        return Err(UsageError(format!(
            "alcove has no `{name}` command; {remedy}. To send the word to the model, use \
             `alcove -p {word}`"
        )));
    }
    let nearest = Cli::command()
        .get_subcommands()
        .map(|sub| sub.get_name().to_owned())
        .map(|name| (strsim::damerau_levenshtein(&lower, &name), name))
        .filter(|(distance, name)| *distance <= 2 && *distance < name.len().min(lower.len()))
        .min();
    match nearest {
        Some((_, name)) => Err(UsageError(format!(
            "did you mean `alcove {name}`? (`{word}` is not a command; to send it to the model \
             as a prompt, use `alcove -p {word}`)"
        ))),
        None => Ok(()),
    }
}

/// `alcove [PROMPT]` with no subcommand: `-p` runs it headless (as
/// `exec`); otherwise the interactive UI starts, continuing a session with
/// `--continue` / `--resume`, after the typo check.
pub(crate) async fn run_top_level(
    mut common: CommonArgs,
    flags: PrintFlags,
    prompt: Option<String>,
) -> anyhow::Result<u8> {
    if flags.print {
        return crate::exec::run(&common, crate::exec::ExecArgs::print(prompt, flags)).await;
    }
    if let Some(prompt) = &prompt {
        refuse_typo(prompt)?;
    }
    if flags.output_format.is_some() {
        return Err(UsageError(
            "--output-format goes with -p (a headless run) or `alcove exec`".to_owned(),
        )
        .into());
    }
    common.max_turns = flags.max_turns;
    common.append_system_prompt = flags.append_system_prompt;
    if flags.continue_last || flags.resume.is_some() {
        if prompt.is_some() {
            return Err(UsageError(
                "a prompt with --continue or --resume goes with -p; the interactive UI takes it                  once the session is open"
                    .to_owned(),
            )
            .into());
        }
        let id = flags.resume.filter(|id| !id.is_empty());
        let args = crate::tui::ResumeArgs::new(id, flags.continue_last);
        return crate::tui::resume(&common, args).await;
    }
    crate::tui::run(&common, prompt).await
}

/// `common` with `--append-system-prompt`'s text, when one was given.
pub(crate) fn with_system_prompt(common: &CommonArgs, text: Option<String>) -> CommonArgs {
    let mut common = common.clone();
    if text.is_some() {
        common.append_system_prompt = text;
    }
    common
}

/// The full id of the session to continue: `--continue`'s last session in
/// this folder, or the one `--resume` names by its id or a prefix of it.
pub(crate) fn session_to_continue(
    common: &CommonArgs,
    resume: Option<String>,
    continue_last: bool,
) -> anyhow::Result<Option<String>> {
    if !continue_last && resume.is_none() {
        return Ok(None);
    }
    let dirs = crate::config::Dirs::from_env().map_err(|err| UsageError(format!("{err:#}")))?;
    if continue_last {
        let workspace = common.workspace()?;
        let last = crate::resume::list_sessions(&dirs.data, Some(workspace.root()))
            .into_iter()
            .next()
            .ok_or_else(|| {
                UsageError(format!(
                    "--continue: no earlier session in {}",
                    workspace.root().display()
                ))
            })?;
        return Ok(Some(last.id));
    }
    match resume {
        Some(id) => Ok(Some(crate::resume::find_session(&dirs.data, &id)?.id)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_lists_split_outside_parentheses() {
        assert_eq!(
            split_rules("Read, Bash(git diff:*) Grep"),
            ["Read", "Bash(git diff:*)", "Grep"]
        );
        assert_eq!(split_rules("Bash(rm:*)"), ["Bash(rm:*)"]);
    }

    #[test]
    fn one_word_typos_are_refused_and_prompts_pass() {
        assert!(
            refuse_typo("reprot")
                .unwrap_err()
                .0
                .contains("`alcove report`")
        );
        assert!(
            refuse_typo("merg")
                .unwrap_err()
                .0
                .contains("`alcove merge`")
        );
        assert!(
            refuse_typo("login")
                .unwrap_err()
                .0
                .contains("ANTHROPIC_API_KEY")
        );
        for prompt in ["fix the tests", "hello", "why?", "refactor", "x", "go"] {
            assert!(refuse_typo(prompt).is_ok(), "{prompt}");
        }
    }
}
