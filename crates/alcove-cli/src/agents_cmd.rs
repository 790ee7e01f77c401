//! Agent definitions for a session, and `alcove agents`, which lists them
//! with their source files and effective tools so a user can see which file
//! won and what a child of each kind can actually call.
//!
//! Folders, lowest precedence first: `~/.claude/agents` (compatibility),
//! the user's config dir `agents/` (`$ALCOVE_HOME/agents` or
//! `$XDG_CONFIG_HOME/alcove/agents`), the workspace's `.claude/agents`
//! (compatibility), then `.alcove/agents`. Project beats user; alcove's own
//! folder beats the compatibility one at the same level; any of them may
//! replace a built-in.

use std::path::{Path, PathBuf};

use alcove_core::{AgentDefinition, Definitions, load_definitions};
use clap::Args;
use serde_json::{Value, json};

use crate::config::Dirs;
use crate::{CommonArgs, UsageError};

/// `alcove agents` arguments.
#[derive(Debug, Args)]
pub(crate) struct AgentsArgs {
    /// Print the definitions as one JSON array.
    #[arg(long)]
    json: bool,
}

/// The definition folders for `workspace`, lowest precedence first.
pub(crate) fn definition_dirs(dirs: &Dirs, workspace: &Path) -> Vec<PathBuf> {
    let mut folders = Vec::new();
    if let Some(home) = std::env::var_os("HOME").filter(|home| !home.is_empty()) {
        folders.push(PathBuf::from(home).join(".claude/agents"));
    }
    folders.push(dirs.config.join("agents"));
    folders.push(workspace.join(".claude/agents"));
    folders.push(workspace.join(".alcove/agents"));
    folders
}

/// The built-ins plus every definition file found for `workspace`, and a
/// warning per skipped file or ignored value.
pub(crate) fn load(dirs: &Dirs, workspace: &Path) -> (Definitions, Vec<String>) {
    load_definitions(&definition_dirs(dirs, workspace))
}

pub(crate) fn run(common: &CommonArgs, args: &AgentsArgs) -> anyhow::Result<u8> {
    let workspace = common.workspace()?.root().to_owned();
    let dirs = Dirs::from_env().map_err(|err| UsageError(format!("{err:#}")))?;
    let settings = crate::trust::ProjectSettings::of(common, &dirs, &workspace)
        .and_then(|settings| settings.config())
        .map_err(|err| UsageError(format!("{err:#}")))?;
    let max_depth = settings.agents.max_depth.unwrap_or(1);
    let (definitions, warnings) = load(&dirs, &workspace);
    for warning in &warnings {
        eprintln!("alcove: warning: {warning}");
    }
    let mut pool: Vec<String> = alcove_tools::builtin_tools::<()>()
        .iter()
        .map(|tool| tool.spec().name.clone())
        .collect();
    pool.push(alcove_core::WEB_FETCH.to_owned());
    if settings.web.search_url.is_some() {
        pool.push(alcove_core::WEB_SEARCH.to_owned());
    }
    if args.json {
        let list: Vec<Value> = definitions
            .all()
            .iter()
            .map(|definition| to_json(definition, &pool))
            .collect();
        println!("{}", Value::Array(list));
        return Ok(0);
    }
    for definition in definitions.all() {
        print!("{}", describe(definition, &pool, &workspace));
    }
    if max_depth > 1 {
        println!(
            "Children at depths below {max_depth} (agents.max_depth) also get the delegation tools."
        );
    }
    Ok(0)
}

fn effective_tools(definition: &AgentDefinition, pool: &[String]) -> Vec<String> {
    definition
        .effective_tools(pool.iter().map(String::as_str))
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// One definition as a text block.
fn describe(definition: &AgentDefinition, pool: &[String], workspace: &Path) -> String {
    let source = match &definition.source {
        Some(path) => path
            .strip_prefix(workspace)
            .unwrap_or(path)
            .display()
            .to_string(),
        None => "built-in".to_owned(),
    };
    let tools = effective_tools(definition, pool);
    let mut text = format!(
        "{}  ({source})\n  {}\n  tools: {}\n",
        definition.name,
        one_line(&definition.description),
        if tools.is_empty() {
            "none".to_owned()
        } else {
            tools.join(", ")
        }
    );
    let mut settings = Vec::new();
    if let Some(model) = &definition.model {
        settings.push(format!("model: {model}"));
    }
    if let Some(mode) = &definition.permission_mode {
        settings.push(format!("permissionMode: {mode}"));
    }
    if let Some(turns) = definition.max_turns {
        settings.push(format!("maxTurns: {turns}"));
    }
    if let Some(timeout) = definition.timeout {
        settings.push(format!("timeout: {}s", timeout.as_secs_f64()));
    }
    if !settings.is_empty() {
        text.push_str(&format!("  {}\n", settings.join(" · ")));
    }
    let rules = &definition.permissions;
    for (kind, list) in [
        ("allow", &rules.allow),
        ("ask", &rules.ask),
        ("deny", &rules.deny),
    ] {
        if !list.is_empty() {
            text.push_str(&format!("  permissions.{kind}: {}\n", list.join(", ")));
        }
    }
    text
}

fn to_json(definition: &AgentDefinition, pool: &[String]) -> Value {
    json!({
        "name": definition.name,
        "description": definition.description,
        "source": definition.source.as_ref().map(|path| path.display().to_string()),
        "tools": effective_tools(definition, pool),
        "disallowed_tools": definition.disallowed_tools,
        "model": definition.model,
        "permission_mode": definition.permission_mode,
        "max_turns": definition.max_turns,
        "timeout_secs": definition.timeout.map(|timeout| timeout.as_secs_f64()),
        "permissions": {
            "allow": definition.permissions.allow,
            "ask": definition.permissions.ask,
            "deny": definition.permissions.deny,
        },
    })
}

fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= 160 {
        return flat;
    }
    let mut cut: String = flat.chars().take(160).collect();
    cut.push('…');
    cut
}
