//! `alcove config show`: the merged configuration, each value with where it
//! came from — a built-in default, the user file, the project file, an
//! `ALCOVE_*` environment variable or a flag.
//!
//! Also home of [`Layer`]: the config files and `-c` flags as separate
//! tables, for the settings that add up across layers instead of replacing
//! each other (permission rules).

use std::collections::BTreeMap;
use std::path::Path;

use alcove_core::AgentLimits;
use clap::{Args, Subcommand};

use crate::config::{self, Dirs};
use crate::{CommonArgs, UsageError, context_setup, permission_setup, provider, session};

/// `alcove config` arguments.
#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Print the merged configuration and where each value came from.
    Show,
    /// List unknown keys and wrong values in the config files, `-c` flags,
    /// agent definitions and skills; exit 1 when there is any.
    Check,
}

/// One config file, or one `-c` flag, as a table.
#[derive(Debug, Clone)]
pub(crate) struct Layer {
    /// Whose settings these are: what a folder's trust decides on.
    pub(crate) kind: LayerKind,
    /// `user /path/config.toml`, `project /ws/.alcove/config.toml`, `-c key=value`.
    pub(crate) source: String,
    pub(crate) table: toml::Table,
}

/// Where a layer came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LayerKind {
    /// The user's own file.
    User(std::path::PathBuf),
    /// A file in the workspace: what a cloned repository controls, held
    /// to the folder's trust (`trust.rs`).
    Project(std::path::PathBuf),
    /// A `-c` flag.
    Flag,
}

impl LayerKind {
    /// The file the layer was read from, if any.
    pub(crate) fn file(&self) -> Option<&Path> {
        match self {
            LayerKind::User(path) | LayerKind::Project(path) => Some(path),
            LayerKind::Flag => None,
        }
    }
}

/// The file and `-c` layers, lowest first (files that do not exist are skipped).
pub(crate) fn layers(
    dirs: &Dirs,
    workspace: &Path,
    overrides: &[String],
) -> anyhow::Result<Vec<Layer>> {
    let mut layers = Vec::new();
    // Claude Code's settings files sit just below alcove's of the same kind
    // (their warnings are the session's: `claude_settings::warnings`).
    let mut ignored = Vec::new();
    for kind in [
        LayerKind::User(dirs.config.join("config.toml")),
        LayerKind::Project(workspace.join(".alcove/config.toml")),
    ] {
        let Some(path) = kind.file() else { continue };
        let whose = match kind {
            LayerKind::User(_) => {
                layers.extend(crate::claude_settings::user_layer(&mut ignored));
                "user"
            }
            _ => {
                layers.extend(crate::claude_settings::project_layers(
                    workspace,
                    &mut ignored,
                ));
                "project"
            }
        };
        if let Some(table) = config::read_table(path)? {
            layers.push(Layer {
                source: format!("{whose} {}", path.display()),
                kind,
                table,
            });
        }
    }
    for item in overrides {
        layers.push(Layer {
            kind: LayerKind::Flag,
            source: format!("-c {item}"),
            table: config::parse_override(item)?,
        });
    }
    Ok(layers)
}

pub(crate) async fn run(common: &CommonArgs, args: &ConfigArgs) -> anyhow::Result<u8> {
    let workspace = common.workspace()?;
    let dirs = Dirs::from_env().map_err(|err| UsageError(format!("{err:#}")))?;
    if let ConfigCommand::Check = args.command {
        return Ok(crate::config_check::run(
            &dirs,
            workspace.root(),
            &common.overrides,
        ));
    }
    let usage = |err: anyhow::Error| UsageError(format!("{err:#}"));
    // The same checks a session makes: a broken file or rule is exit 2 here too.
    let settings =
        crate::trust::ProjectSettings::of(common, &dirs, workspace.root()).map_err(usage)?;
    let mut merged = settings.config().map_err(usage)?;
    let layers = settings.layers.clone();
    crate::claude_settings::apply_mode(&mut merged, &layers);
    permission_setup::mode(common, &merged)?;
    let rules = permission_setup::rules(&layers, common)?;
    let env: Vec<(String, String)> = crate::env_settings::values()
        .into_iter()
        .map(|(setting, value)| {
            (
                format!("env {}", setting.var),
                format!("{}={value}", setting.key),
            )
        })
        .collect();
    print!(
        "{}",
        render(workspace.root(), &layers, &env, common, &rules)
    );
    if let Some(notice) = settings.notice() {
        println!("# {notice}");
    }
    print!("{}", context_lines(common, &merged).await?);
    Ok(0)
}

/// The model's context window and compaction threshold, and where the
/// window figure came from, as comments (they are derived, not set).
async fn context_lines(common: &CommonArgs, config: &config::Config) -> anyhow::Result<String> {
    let spec = common.model.clone().or_else(|| config.model.clone());
    let Some(spec) = spec else {
        return Ok(
            "# context window: no model is configured (one is found when a session starts)
"
            .to_owned(),
        );
    };
    let mut provider = match provider::resolve_spec(&spec, config) {
        Ok(provider) => provider,
        Err(err) => {
            return Ok(format!(
                "# context window: unknown ({err})
"
            ));
        }
    };
    crate::model_options::apply(&mut provider, config);
    let window = context_setup::window(config, &provider).await;
    let limits = context_setup::limits(config, window.tokens)?;
    let profile = crate::agent_setup::choose_profile(config, &provider, &window)?;
    let surface = if profile.profile.defers_tools() {
        "rarely used tools by name only, loaded with ToolSearch"
    } else {
        "every tool in full, no ToolSearch"
    };
    Ok(format!(
        "# wire of {spec}: {}
# context window of {spec}: {} tokens  # {}
# compacts when a request would pass {} tokens (auto_compact_at)
# tool profile of {spec}: {} ({surface})  # {}
",
        wire(&provider),
        window.tokens,
        window.source,
        limits.compact_at,
        profile.profile.as_str(),
        profile.why
    ))
}

/// The wire a provider speaks, with the reasoning it asks for.
fn wire(provider: &alcove_model::ProviderConfig) -> String {
    let name = match provider.protocol {
        alcove_model::WireProtocol::Anthropic => "Anthropic Messages",
        alcove_model::WireProtocol::OpenAi => "OpenAI Chat Completions",
        alcove_model::WireProtocol::OpenAiResponses => "OpenAI Responses",
    };
    let mut reasoning = Vec::new();
    if let Some(effort) = provider.effort.as_ref().filter(|_| provider.reasons) {
        reasoning.push(format!("reasoning effort {effort}"));
    }
    if let Some(summary) = &provider.reasoning_summary {
        reasoning.push(format!("summary {summary}"));
    }
    if reasoning.is_empty() {
        name.to_owned()
    } else {
        format!("{name} ({})", reasoning.join(", "))
    }
}

/// The built-in defaults, from the constants the session uses.
fn defaults() -> toml::Table {
    let agents = AgentLimits::default();
    let retry = alcove_model::RetryPolicy::default();
    let millis = |duration: std::time::Duration| {
        toml::Value::Integer(i64::try_from(duration.as_millis()).unwrap_or(i64::MAX))
    };
    let mut table = toml::Table::new();
    let mut put = |key: &str, value: toml::Value| {
        insert_dotted(&mut table, key, value);
    };
    put("permission_mode", "default".into());
    put("max_turns", i64::from(session::DEFAULT_MAX_TURNS).into());
    put("max_tokens", i64::from(session::DEFAULT_MAX_TOKENS).into());
    put(
        "max_tool_calls_per_reply",
        i64::try_from(alcove_core::DEFAULT_MAX_TOOL_CALLS_PER_REPLY)
            .unwrap_or(i64::MAX)
            .into(),
    );
    put("tool_profile", "auto".into());
    put("agents.max_depth", i64::from(agents.max_depth).into());
    put("agents.max_turns", i64::from(agents.max_turns).into());
    put(
        "agents.max_concurrent",
        i64::try_from(agents.max_concurrent)
            .unwrap_or(i64::MAX)
            .into(),
    );
    put(
        "agents.max_parallel",
        i64::try_from(agents.max_parallel)
            .unwrap_or(i64::MAX)
            .into(),
    );
    put("agents.collab", agents.collab.into());
    put("retry.max_retries", i64::from(retry.max_retries).into());
    put("retry.base_delay_ms", millis(retry.base_delay));
    put("retry.max_delay_ms", millis(retry.max_delay));
    put(
        "retry.first_byte_timeout_ms",
        millis(retry.first_byte_timeout),
    );
    put("retry.idle_timeout_ms", millis(retry.idle_timeout));
    put(
        "hooks.max_stop_continuations",
        i64::from(session::STOP_HOOK_LIMIT).into(),
    );
    put("env.scrub", true.into());
    put("env.keep", toml::Value::Array(Vec::new()));
    put("sandbox.mode", "workspace-write".into());
    put("sandbox.network", false.into());
    put("sandbox.allow_loopback", false.into());
    put("sandbox.auto_allow", true.into());
    let limits = alcove_tools::ResourceLimits::default();
    for (key, value) in [
        ("limits.cpu_secs", limits.cpu_secs),
        ("limits.address_space_mb", limits.address_space_mb),
        ("limits.processes", limits.processes),
        ("limits.file_size_mb", limits.file_size_mb),
        ("limits.open_files", limits.open_files),
    ] {
        let value = value
            .and_then(|value| i64::try_from(value).ok())
            .unwrap_or(0);
        put(key, value.into());
    }
    table
}

fn insert_dotted(table: &mut toml::Table, key: &str, value: toml::Value) {
    let mut parts: Vec<&str> = key.split('.').collect();
    let Some(last) = parts.pop() else { return };
    let mut cursor = table;
    for part in parts {
        let entry = cursor
            .entry(part.to_owned())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(inner) = entry else {
            return;
        };
        cursor = inner;
    }
    cursor.insert(last.to_owned(), value);
}

/// Every leaf of `table` under `prefix`, as dotted keys; the rule lists are left out.
fn flatten(
    prefix: &str,
    table: &toml::Table,
    source: &str,
    out: &mut BTreeMap<String, (toml::Value, String)>,
) {
    for (key, value) in table {
        let dotted = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) if !inner.is_empty() => flatten(&dotted, inner, source, out),
            _ if matches!(
                dotted.as_str(),
                "permissions.allow" | "permissions.ask" | "permissions.deny"
            ) => {}
            value => {
                out.insert(dotted, (value.clone(), source.to_owned()));
            }
        }
    }
}

fn render(
    workspace: &Path,
    layers: &[Layer],
    env: &[(String, String)],
    common: &CommonArgs,
    rules: &alcove_core::RuleSet,
) -> String {
    let mut values = BTreeMap::new();
    flatten("", &defaults(), "default", &mut values);
    // Unknown keys are not settings: they are listed apart, at the end.
    let known = crate::config_check::known_keys();
    let mut ignored = Vec::new();
    for layer in layers {
        for path in crate::config_check::unknown_paths(&known, &layer.table) {
            ignored.push(format!(
                "# ignored (unknown key): {}  # {}\n",
                path.join("."),
                layer.source
            ));
        }
    }
    for layer in layers.iter().filter(|layer| layer.kind != LayerKind::Flag) {
        flatten_known(&known, layer, &mut values);
    }
    for (source, assignment) in env {
        if let Some((key, value)) = assignment.split_once('=') {
            let value = format!("v = {value}")
                .parse::<toml::Table>()
                .ok()
                .and_then(|mut table| table.remove("v"))
                .unwrap_or_else(|| toml::Value::String(value.to_owned()));
            values.insert(key.to_owned(), (value, source.clone()));
        }
    }
    for layer in layers.iter().filter(|layer| layer.kind == LayerKind::Flag) {
        flatten_known(&known, layer, &mut values);
    }
    if let Some(model) = &common.model {
        values.insert(
            "model".to_owned(),
            (model.clone().into(), "flag --model".to_owned()),
        );
    }
    if let Some(mode) = &common.permission_mode {
        values.insert(
            "permission_mode".to_owned(),
            (mode.clone().into(), "flag --permission-mode".to_owned()),
        );
    }
    if let Some(mode) = &common.sandbox {
        values.insert(
            "sandbox.mode".to_owned(),
            (mode.clone().into(), "flag --sandbox".to_owned()),
        );
    }

    let mut out = format!(
        "# alcove configuration for {}\n# layers, later wins: default < user file < project file < env < -c < flags\n",
        workspace.display()
    );
    let width = values
        .iter()
        .map(|(key, (value, _))| key.len() + value.to_string().len() + 3)
        .max()
        .unwrap_or(0)
        .min(72);
    for (key, (value, source)) in &values {
        let line = format!("{key} = {value}");
        out.push_str(&format!("{line:<width$}  # {source}\n"));
    }
    for kind in [
        alcove_core::RuleKind::Allow,
        alcove_core::RuleKind::Ask,
        alcove_core::RuleKind::Deny,
    ] {
        let list = rules.rules(kind);
        out.push_str(&format!("permissions.{} = [", kind.as_str()));
        if list.is_empty() {
            out.push_str("]\n");
            continue;
        }
        out.push('\n');
        for rule in list {
            let item = format!("    {},", toml::Value::String(rule.text().to_owned()));
            out.push_str(&format!("{item:<width$}  # {}\n", rule.source()));
        }
        out.push_str("]\n");
    }
    out.extend(ignored);
    out
}

/// The leaves of a layer that are settings alcove knows.
fn flatten_known(
    known: &alcove_core::known_keys::KeyTree,
    layer: &Layer,
    values: &mut BTreeMap<String, (toml::Value, String)>,
) {
    let mut table = layer.table.clone();
    for path in crate::config_check::unknown_paths(known, &layer.table) {
        remove_path(&mut table, &path);
    }
    flatten("", &table, &layer.source, values);
}

/// Removes the key at `path` from `table`, and the tables it leaves empty.
fn remove_path(table: &mut toml::Table, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        table.remove(first.as_str());
        return;
    }
    if let Some(toml::Value::Table(inner)) = table.get_mut(first.as_str()) {
        remove_path(inner, rest);
        if inner.is_empty() {
            table.remove(first.as_str());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_says_where_it_came_from() {
        let layers = vec![
            Layer {
                kind: LayerKind::User("/u/config.toml".into()),
                source: "user /u/config.toml".to_owned(),
                table: "model = \"anthropic/a\"\nmax_turns = 7\n[permissions]\ndeny = [\"Bash(rm:*)\"]\n"
                    .parse()
                    .unwrap(),
            },
            Layer {
                kind: LayerKind::Project("/w/.alcove/config.toml".into()),
                source: "project /w/.alcove/config.toml".to_owned(),
                table: "[agents]\nmax_depth = 2\n".parse().unwrap(),
            },
            Layer {
                kind: LayerKind::Flag,
                source: "-c max_turns=9".to_owned(),
                table: "max_turns = 9\n".parse().unwrap(),
            },
        ];
        use clap::Parser;
        let common = crate::Cli::try_parse_from([
            "alcove",
            "--permission-mode",
            "plan",
            "--allow",
            "Bash(echo:*)",
        ])
        .unwrap()
        .common;
        let env = vec![("env ALCOVE_MODEL".to_owned(), "model=openai/b".to_owned())];
        let rules = permission_setup::rules(&layers, &common).unwrap();
        let text = render(Path::new("/w"), &layers, &env, &common, &rules);
        let line = |key: &str| {
            text.lines()
                .find(|line| line.starts_with(&format!("{key} = ")))
                .unwrap_or_else(|| panic!("no {key} in\n{text}"))
                .to_owned()
        };
        assert!(
            line("model").contains("\"openai/b\"") && line("model").ends_with("# env ALCOVE_MODEL")
        );
        assert!(line("max_turns").ends_with("# -c max_turns=9"), "{text}");
        assert!(line("max_tokens").ends_with("# default"), "{text}");
        assert!(
            line("agents.max_depth").contains("= 2")
                && line("agents.max_depth").ends_with("/w/.alcove/config.toml")
        );
        assert!(line("permission_mode").ends_with("# flag --permission-mode"));
        assert!(
            text.contains("\"Bash(echo:*)\",") && text.contains("# --allow"),
            "{text}"
        );
        assert!(text.contains("# user /u/config.toml"), "{text}");
        let parsed: Result<toml::Table, _> = text.parse();
        assert!(parsed.is_ok(), "the output is TOML: {parsed:?}\n{text}");
    }
}
