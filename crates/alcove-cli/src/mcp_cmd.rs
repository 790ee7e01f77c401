//! `alcove mcp list | add | remove` (and `serve`, in `mcp_serve/`): the configured MCP servers, started
//! once to show their state and tools, and editing `[mcp_servers.<name>]`
//! in the user or project TOML (appending and cutting text, so the file's
//! comments and order survive).

use std::path::{Path, PathBuf};

use alcove_mcp::{McpManager, State, config::valid_server_name};
use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};

use crate::config::Dirs;
use crate::{CommonArgs, UsageError, mcp_setup};

/// `alcove mcp` arguments.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Start every configured server, list its state, source file and tools, and stop it.
    List,
    /// Add a server: `alcove mcp add NAME -- COMMAND ARGS…` or `alcove mcp add NAME --url URL`.
    Add(AddArgs),
    /// Serve alcove's delegation over MCP on stdin/stdout (or `--http ADDR`): `delegate` runs a
    /// child agent in this folder under this session's rules, sandbox and budgets
    /// (docs/mcp-server.md).
    Serve(crate::mcp_serve::ServeArgs),
    /// Remove a server from the user or project TOML.
    Remove {
        /// The server's name.
        name: String,
        /// Which file.
        #[arg(long, value_enum, default_value_t = Scope::User)]
        scope: Scope,
    },
}

#[derive(Debug, Args)]
struct AddArgs {
    /// The server's name (letters, digits, `-`, `_`).
    name: String,
    /// Which file gets it: user (config.toml) or project (.alcove/config.toml).
    #[arg(long, value_enum, default_value_t = Scope::User)]
    scope: Scope,
    /// A streamable HTTP endpoint instead of a command.
    #[arg(long)]
    url: Option<String>,
    /// An environment variable for a stdio server, KEY=VALUE (repeatable).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// The command and its arguments (after `--`).
    #[arg(last = true)]
    command: Vec<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Scope {
    User,
    Project,
}

pub(crate) async fn run(common: &CommonArgs, args: McpArgs) -> anyhow::Result<u8> {
    let workspace = common.workspace()?.root().to_owned();
    let dirs = Dirs::from_env().map_err(|err| UsageError(format!("{err:#}")))?;
    match args.action {
        Action::Serve(serve) => crate::mcp_serve::run(common, serve).await,
        Action::List => list(common, &dirs, &workspace).await,
        Action::Add(add) => {
            let file = scope_file(&dirs, &workspace, add.scope);
            let text = add_server(&read(&file)?, &add)?;
            write(&file, &text)?;
            println!("Added MCP server `{}` to {}", add.name, file.display());
            Ok(0)
        }
        Action::Remove { name, scope } => {
            let file = scope_file(&dirs, &workspace, scope);
            let Some(text) = remove_server(&read(&file)?, &name) else {
                return Err(
                    UsageError(format!("no MCP server `{name}` in {}", file.display())).into(),
                );
            };
            write(&file, &text)?;
            println!("Removed MCP server `{name}` from {}", file.display());
            Ok(0)
        }
    }
}

async fn list(common: &CommonArgs, dirs: &Dirs, workspace: &Path) -> anyhow::Result<u8> {
    let usage = |err: anyhow::Error| UsageError(format!("{err:#}"));
    // An untrusted folder's own servers are not started (not even listed).
    let settings = crate::trust::ProjectSettings::of(common, dirs, workspace).map_err(usage)?;
    if let Some(notice) = settings.notice() {
        eprintln!("alcove: {notice}");
    }
    let (configs, warnings) =
        mcp_setup::configs_from(settings.layers.clone(), settings.files_root());
    for warning in &warnings {
        eprintln!("alcove: warning: {warning}");
    }
    if configs.is_empty() {
        println!("No MCP servers configured.");
        return Ok(0);
    }
    let logs = std::env::temp_dir().join(format!("alcove-mcp-list-{}", std::process::id()));
    let config = settings.config().map_err(usage)?;
    let env_remove =
        crate::permission_setup::env_policy(&config).names_to_remove(std::env::vars_os());
    let manager = McpManager::start(configs, workspace, &logs, &env_remove);
    manager.wait_started().await;
    for line in status_lines(&manager) {
        println!("{line}");
    }
    manager.shutdown().await;
    let _ = std::fs::remove_dir_all(&logs);
    Ok(0)
}

/// Each server: name, state, how it runs, where it was configured, and its tools.
pub(crate) fn status_lines(manager: &McpManager) -> Vec<String> {
    let mut lines = Vec::new();
    for status in manager.statuses() {
        lines.push(format!(
            "{}  {}  {}  ({})",
            status.name,
            status.state.label(),
            status.target,
            status.source
        ));
        match &status.state {
            State::Ready { tools, resources } => {
                let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
                lines.push(format!("  tools: {}", names.join(", ")));
                if *resources {
                    lines.push("  resources: yes".to_owned());
                }
            }
            State::Failed(reason) | State::Crashed(reason) => {
                for line in reason.lines() {
                    lines.push(format!("  {line}"));
                }
            }
            State::Disabled | State::Starting | State::Closed => {}
        }
    }
    lines
}

fn scope_file(dirs: &Dirs, workspace: &Path, scope: Scope) -> PathBuf {
    match scope {
        Scope::User => dirs.config.join("config.toml"),
        Scope::Project => workspace.join(".alcove/config.toml"),
    }
}

fn read(file: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(err) => Err(err).with_context(|| format!("cannot read {}", file.display())),
    }
}

fn write(file: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(file, text).with_context(|| format!("cannot write {}", file.display()))
}

/// `text` with `[mcp_servers.<name>]` appended.
fn add_server(text: &str, add: &AddArgs) -> anyhow::Result<String> {
    if !valid_server_name(&add.name) {
        return Err(UsageError(format!(
            "server name `{}` may only use letters, digits, `-` and `_`",
            add.name
        ))
        .into());
    }
    let existing: toml::Table = text.parse().unwrap_or_default();
    if existing
        .get("mcp_servers")
        .and_then(|servers| servers.get(&add.name))
        .is_some()
    {
        return Err(UsageError(format!(
            "MCP server `{}` already exists there; remove it first",
            add.name
        ))
        .into());
    }
    let mut server = toml::Table::new();
    match (&add.url, add.command.split_first()) {
        (Some(url), None) => {
            server.insert("url".to_owned(), url.clone().into());
        }
        (None, Some((command, args))) => {
            server.insert("command".to_owned(), command.clone().into());
            if !args.is_empty() {
                server.insert("args".to_owned(), args.to_vec().into());
            }
        }
        _ => {
            return Err(UsageError(
                "give either --url URL or `-- COMMAND ARGS…`, not both".to_owned(),
            )
            .into());
        }
    }
    let mut env = toml::Table::new();
    for pair in &add.env {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(UsageError(format!("--env expects KEY=VALUE, got `{pair}`")).into());
        };
        env.insert(key.to_owned(), value.into());
    }
    if !env.is_empty() {
        server.insert("env".to_owned(), env.into());
    }
    let mut servers = toml::Table::new();
    servers.insert(add.name.clone(), server.into());
    let mut root = toml::Table::new();
    root.insert("mcp_servers".to_owned(), servers.into());
    let section = toml::to_string(&root).context("cannot write the server as TOML")?;
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&section);
    Ok(out)
}

/// `text` without the `[mcp_servers.<name>]` table (and its sub-tables),
/// or `None` when it has none.
fn remove_server(text: &str, name: &str) -> Option<String> {
    let header = format!("mcp_servers.{name}");
    let quoted = format!("mcp_servers.\"{name}\"");
    let mut out = Vec::new();
    let mut skipping = false;
    let mut removed = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            let key = trimmed.trim_matches(|c| c == '[' || c == ']').trim();
            skipping = [&header, &quoted]
                .iter()
                .any(|own| key == own.as_str() || key.starts_with(&format!("{own}.")));
            removed |= skipping;
        }
        if !skipping {
            out.push(line);
        }
    }
    removed.then(|| {
        let mut text = out.join("\n");
        text.push('\n');
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add_args(name: &str, command: &[&str], env: &[&str]) -> AddArgs {
        AddArgs {
            name: name.to_owned(),
            scope: Scope::User,
            url: None,
            env: env.iter().map(|pair| pair.to_string()).collect(),
            command: command.iter().map(|part| part.to_string()).collect(),
        }
    }

    #[test]
    fn add_appends_and_remove_cuts_only_that_server() {
        let start = "# my settings\nmodel = \"openai/x\"\n\n[mcp_servers.keep]\ncommand = \"k\"\n";
        let added =
            add_server(start, &add_args("fs", &["node", "fs.js", "/tmp"], &["A=1"])).unwrap();
        assert!(added.starts_with(start), "{added}");
        let table: toml::Table = added.parse().unwrap();
        assert_eq!(table["mcp_servers"]["fs"]["command"].as_str(), Some("node"));
        assert_eq!(table["mcp_servers"]["fs"]["env"]["A"].as_str(), Some("1"));
        assert!(add_server(&added, &add_args("fs", &["x"], &[])).is_err());
        let removed = remove_server(&added, "fs").unwrap();
        let table: toml::Table = removed.parse().unwrap();
        assert!(table["mcp_servers"].get("fs").is_none());
        assert!(table["mcp_servers"].get("keep").is_some());
        assert!(removed.starts_with("# my settings\n"));
        assert_eq!(remove_server(&removed, "fs"), None);
    }
}
