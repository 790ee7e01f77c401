//! A session's permission rules and environment policy, from config and flags.
//!
//! ```toml
//! permission_mode = "default"
//!
//! [permissions]
//! allow = ["Bash(git diff:*)", "Bash(cargo test:*)", "Edit(src/**)"]
//! ask   = ["Bash(git push:*)"]
//! deny  = ["Read(./secrets/**)", "Bash(rm:*)", "WebFetch"]
//!
//! [env]
//! keep  = ["GITHUB_TOKEN"]   # passed to Bash even though it looks secret
//! scrub = true               # false passes every variable through
//! ```
//!
//! Rule lists *add up* across the user file, the project file and `-c`
//! flags (a project file cannot drop the user's deny rules by writing an
//! empty list), and `--allow` / `--deny` add to them. Every rule remembers
//! where it came from, and a decision names it. An invalid rule is a usage
//! error naming the rule and its source.

use std::path::PathBuf;

use alcove_core::{PermissionGate, PermissionMode, Rule, RuleKind, RuleSet};
use alcove_tools::EnvPolicy;

use crate::config::Layer;
use crate::settings::Config;
use crate::settings::permissions::layer_rules;
use crate::{CommonArgs, UsageError};

/// The permission mode: `--permission-mode`, else config, else `default`.
pub(crate) fn mode(common: &CommonArgs, config: &Config) -> Result<PermissionMode, UsageError> {
    Ok(crate::settings::permissions::mode(
        common.permission_mode.as_deref(),
        config,
    )?)
}

/// What commands' environment keeps, from `[env]` (`settings::permissions`).
pub(crate) fn env_policy(config: &Config) -> EnvPolicy {
    crate::settings::permissions::env_policy(config)
}

/// The session's root gate: `mode`, the rules of every layer and flag, and
/// the home folder `~/` patterns resolve against.
pub(crate) fn gate(
    mode: PermissionMode,
    layers: &[Layer],
    common: &CommonArgs,
) -> Result<PermissionGate, UsageError> {
    Ok(PermissionGate::new(mode)
        .with_rules(rules(layers, common)?)
        .with_home(std::env::var_os("HOME").map(PathBuf::from)))
}

/// Flags first, then the layers from the most specific (`-c`, project) to
/// the user file, so a decision names the most specific matching rule.
pub(crate) fn rules(layers: &[Layer], common: &CommonArgs) -> Result<RuleSet, UsageError> {
    let mut set = RuleSet::default();
    let usage = |err: alcove_core::RuleError| UsageError(err.to_string());
    for text in &common.deny {
        set.add(RuleKind::Deny, Rule::parse(text, "--deny").map_err(usage)?);
    }
    for text in &common.allow {
        set.add(
            RuleKind::Allow,
            Rule::parse(text, "--allow").map_err(usage)?,
        );
    }
    for layer in layers.iter().rev() {
        for (kind, texts) in layer_rules(layer)? {
            for text in texts {
                set.add(kind, Rule::parse(&text, &layer.source).map_err(usage)?);
            }
        }
    }
    Ok(set)
}

/// The session's one redactor, for every sink: the values of the variables
/// `env` treats as secrets (8 characters or more) and the model's API key,
/// collected once.
pub(crate) fn redactor(env: &EnvPolicy, api_key: Option<&str>) -> alcove_core::Redactor {
    let mut values = env.secret_values(std::env::vars_os());
    values.extend(api_key.map(str::to_owned));
    alcove_core::Redactor::new(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(source: &str, text: &str) -> Layer {
        Layer {
            kind: crate::config::LayerKind::Flag,
            source: source.to_owned(),
            table: text.parse().unwrap(),
        }
    }

    fn common(allow: &[&str], deny: &[&str]) -> CommonArgs {
        use clap::Parser;
        let mut argv = vec!["alcove".to_owned()];
        for rule in allow {
            argv.extend(["--allow".to_owned(), rule.to_string()]);
        }
        for rule in deny {
            argv.extend(["--deny".to_owned(), rule.to_string()]);
        }
        crate::Cli::try_parse_from(argv).unwrap().common
    }

    #[test]
    fn rule_lists_add_up_across_layers_and_flags_with_their_sources() {
        let layers = [
            layer(
                "user /u/config.toml",
                "[permissions]\ndeny = [\"Bash(rm:*)\"]\n",
            ),
            layer(
                "project /p/.alcove/config.toml",
                "[permissions]\ndeny = []\nallow = [\"Edit(src/**)\"]\n",
            ),
        ];
        let set = rules(&layers, &common(&["Bash(echo:*)"], &["WebFetch"])).unwrap();
        let deny: Vec<(&str, &str)> = set
            .rules(RuleKind::Deny)
            .iter()
            .map(|rule| (rule.text(), rule.source()))
            .collect();
        assert_eq!(
            deny,
            [
                ("WebFetch", "--deny"),
                ("Bash(rm:*)", "user /u/config.toml")
            ]
        );
        let allow: Vec<&str> = set
            .rules(RuleKind::Allow)
            .iter()
            .map(|rule| rule.source())
            .collect();
        assert_eq!(allow, ["--allow", "project /p/.alcove/config.toml"]);
    }

    #[test]
    fn invalid_rules_and_lists_are_usage_errors_naming_them() {
        let err = rules(&[], &common(&["Bash(oops"], &[])).unwrap_err();
        assert!(
            err.0.contains("`Bash(oops`") && err.0.contains("--allow"),
            "{}",
            err.0
        );
        let bad = [layer("project p.toml", "[permissions]\nallow = \"Bash\"\n")];
        let err = rules(&bad, &common(&[], &[])).unwrap_err();
        assert!(
            err.0.contains("p.toml") && err.0.contains("permissions.allow"),
            "{}",
            err.0
        );
    }
}
