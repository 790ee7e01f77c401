//! The environment variables that set config keys, applied in one place:
//! as a layer between the config files and `-c` (flags > `-c` >
//! environment > project file > user file > defaults). Consumers read the
//! merged config, never these variables, so `ALCOVE_SUBAGENT_MAX_AGENTS`
//! cannot override `-c agents.max_concurrent=…` or `alcove batch
//! --concurrency`.

/// A variable, the key it sets, and how its text becomes the value (`None`:
/// the variable is ignored).
pub(crate) struct EnvSetting {
    pub(crate) var: &'static str,
    pub(crate) key: &'static str,
    parse: fn(&str) -> Option<toml::Value>,
}

/// Every variable that sets a config key.
pub(crate) const ENV_SETTINGS: [EnvSetting; 4] = [
    EnvSetting {
        var: "ALCOVE_MODEL",
        key: "model",
        parse: text,
    },
    EnvSetting {
        var: "ALCOVE_SUBAGENT_MAX_AGENTS",
        key: "agents.max_concurrent",
        parse: positive,
    },
    EnvSetting {
        var: "ALCOVE_SUBAGENT_COMMAND",
        key: "agents.command",
        parse: text,
    },
    EnvSetting {
        var: "ALCOVE_ENABLE_COLLAB_TOOLS",
        key: "agents.collab",
        parse: switch,
    },
];

fn text(value: &str) -> Option<toml::Value> {
    Some(toml::Value::String(value.to_owned()))
}

fn positive(value: &str) -> Option<toml::Value> {
    value
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|number| *number > 0)
        .map(toml::Value::Integer)
}

/// `0` is off; anything else is on (seed 001's switch).
fn switch(value: &str) -> Option<toml::Value> {
    Some(toml::Value::Boolean(value.trim() != "0"))
}

/// The variables that are set (and not blank), each with its key and value.
pub(crate) fn values() -> Vec<(&'static EnvSetting, toml::Value)> {
    ENV_SETTINGS
        .iter()
        .filter_map(|setting| {
            let raw = std::env::var(setting.var)
                .ok()
                .filter(|value| !value.trim().is_empty())?;
            Some((setting, (setting.parse)(&raw)?))
        })
        .collect()
}

/// The environment's layer, as a table to merge (keys are at most one
/// section deep).
pub(crate) fn table() -> toml::Table {
    let mut table = toml::Table::new();
    for (setting, value) in values() {
        match setting.key.split_once('.') {
            None => {
                table.insert(setting.key.to_owned(), value);
            }
            Some((section, key)) => {
                let entry = table
                    .entry(section.to_owned())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                if let toml::Value::Table(inner) = entry {
                    inner.insert(key.to_owned(), value);
                }
            }
        }
    }
    table
}
