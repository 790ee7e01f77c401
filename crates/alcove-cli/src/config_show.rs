//! `alcove config show`: the merged configuration, each value with where it
//! came from — a built-in default (each section's `describe`), the user
//! file, the project file, an `ALCOVE_*` environment variable or a flag —
//! printed from the same layers, in the same precedence, as a session
//! reads them.

use std::collections::BTreeMap;
use std::path::Path;

use clap::{Args, Subcommand};

use crate::config::{Dirs, Layer};
use crate::settings::Config;
use crate::{CommonArgs, UsageError, context_setup, permission_setup, provider};

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

pub(crate) async fn run(common: &CommonArgs, args: &ConfigArgs) -> anyhow::Result<u8> {
    let workspace = common.workspace()?;
    let dirs = Dirs::from_env().map_err(|err| UsageError(format!("{err:#}")))?;
    if let ConfigCommand::Check = args.command {
        let (text, code) = crate::config_check::run(&dirs, workspace.root(), &common.overrides);
        write_out(&text)?;
        return Ok(code);
    }
    let usage = |err: anyhow::Error| UsageError(format!("{err:#}"));
    // The same checks a session makes: a broken file or rule is exit 2 here too.
    let settings =
        crate::trust::ProjectSettings::of(common, &dirs, workspace.root()).map_err(usage)?;
    let merged = settings.config().map_err(usage)?;
    let layers = settings.layers.clone();
    permission_setup::mode(common, &merged)?;
    let rules = permission_setup::rules(&layers, common)?;
    let mut text = render(workspace.root(), &layers, common, &rules);
    if let Some(notice) = settings.notice() {
        text.push_str(&format!("# {notice}\n"));
    }
    text.push_str(&context_lines(common, &merged).await?);
    write_out(&text)?;
    Ok(0)
}

/// Writes `text` to stdout; a reader that has gone (`alcove config show |
/// head -1`) is no error: what it did not read, it did not want.
fn write_out(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        result => Ok(result?),
    }
}

/// The model's context window and compaction threshold, and where the
/// window figure came from, as comments (they are derived, not set).
async fn context_lines(common: &CommonArgs, config: &Config) -> anyhow::Result<String> {
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
    common: &CommonArgs,
    rules: &alcove_core::RuleSet,
) -> String {
    let mut values = BTreeMap::new();
    for (key, value) in crate::settings::defaults() {
        values.insert(key, (value, "default".to_owned()));
    }
    // Unknown keys are not settings: they are listed apart, at the end.
    let known = crate::config_check::known_keys();
    let mut ignored = Vec::new();
    for layer in layers {
        for old in crate::config_check::deprecated_in(&layer.table) {
            ignored.push(format!(
                "# deprecated: {} is read as {}; write that  # {}\n",
                old.old, old.new, layer.source
            ));
        }
        for path in crate::config_check::unknown_paths(&known, &layer.table) {
            ignored.push(format!(
                "# ignored (unknown key): {}  # {}\n",
                path.join("."),
                layer.source
            ));
        }
    }
    // The one precedence (`config::in_precedence`), as the session merges.
    let mut ordered = layers.to_vec();
    crate::config::in_precedence(&mut ordered);
    for layer in &ordered {
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
    use crate::config::LayerKind;

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
                table: "[agents]\nmax_depth = 2\nmax_tokens = 300\n".parse().unwrap(),
            },
            Layer {
                kind: LayerKind::Flag,
                source: "-c max_turns=9".to_owned(),
                table: "max_turns = 9\n".parse().unwrap(),
            },
            // Listed last, but below `-c` in the precedence.
            Layer {
                kind: LayerKind::Env,
                source: "env ALCOVE_MODEL".to_owned(),
                table: "model = \"openai/b\"\nmax_turns = 8\n".parse().unwrap(),
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
        let rules = permission_setup::rules(&layers, &common).unwrap();
        let text = render(Path::new("/w"), &layers, &common, &rules);
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
        assert!(
            text.contains(
                "# deprecated: agents.max_tokens is read as agents.token_budget; write that  # project /w/.alcove/config.toml"
            ),
            "{text}"
        );
        let parsed: Result<toml::Table, _> = text.parse();
        assert!(parsed.is_ok(), "the output is TOML: {parsed:?}\n{text}");
    }
}
