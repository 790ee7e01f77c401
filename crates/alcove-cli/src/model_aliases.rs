//! Model aliases in agent definitions, skills and commands.
//!
//! Claude Code files say `model: sonnet`, `opus` or `haiku` (a family, not a
//! model). When the session's provider speaks the Anthropic protocol, a
//! family maps to its current model through [`FAMILIES`]; `[model_aliases]`
//! in config overrides or extends that for any provider
//! (`opus = "anthropic/claude-opus-4-5"`). `provider/name` is used as
//! written. Anything else runs on the parent's model, with one warning per
//! session listing what was not understood (not one per file).

use std::collections::{BTreeMap, BTreeSet};

use alcove_model::WireProtocol;

/// The current model of each Claude family, for the Anthropic protocol.
pub(crate) const FAMILIES: &[(&str, &str)] = &[
    ("opus", "claude-opus-4-5"),
    ("sonnet", "claude-sonnet-4-5"),
    ("haiku", "claude-haiku-4-5"),
];

/// Resolves the `model` fields of one session's files.
pub(crate) struct Aliases {
    table: BTreeMap<String, String>,
    unresolved: BTreeSet<String>,
}

impl Aliases {
    /// The aliases for a session on provider `id` speaking `protocol`, with
    /// `configured` (`[model_aliases]`) on top.
    pub(crate) fn new(
        id: &str,
        protocol: WireProtocol,
        configured: &BTreeMap<String, String>,
    ) -> Aliases {
        let mut table = BTreeMap::new();
        if protocol == WireProtocol::Anthropic {
            for (family, model) in FAMILIES {
                table.insert((*family).to_owned(), format!("{id}/{model}"));
            }
        }
        for (alias, spec) in configured {
            table.insert(alias.to_lowercase(), spec.clone());
        }
        Aliases {
            table,
            unresolved: BTreeSet::new(),
        }
    }

    /// `spec` as `provider/name`, or `None` (the parent's model).
    pub(crate) fn resolve(&mut self, spec: &str) -> Option<String> {
        let spec = spec.trim();
        if spec.is_empty() || spec == "inherit" {
            return None;
        }
        if spec.contains('/') {
            return Some(spec.to_owned());
        }
        match self.table.get(&spec.to_lowercase()) {
            Some(model) => Some(model.clone()),
            None => {
                self.unresolved.insert(spec.to_owned());
                None
            }
        }
    }

    /// Every alias and the `provider/name` it stands for (an ACP client's
    /// model choices).
    pub(crate) fn table(&self) -> &BTreeMap<String, String> {
        &self.table
    }

    /// The session's one warning about models that were not understood.
    pub(crate) fn warning(&self) -> Option<String> {
        if self.unresolved.is_empty() {
            return None;
        }
        let names: Vec<&str> = self.unresolved.iter().map(String::as_str).collect();
        Some(format!(
            "model {} in agent definitions, skills or commands has no meaning for this provider; \
             those use the parent's model (map them under [model_aliases] in config.toml, e.g. {} = \"provider/name\")",
            names.join(", "),
            names[0]
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_map_on_anthropic_and_config_wins() {
        let mut configured = BTreeMap::new();
        configured.insert("opus".to_owned(), "anthropic/claude-opus-custom".to_owned());
        let mut aliases = Aliases::new("anthropic", WireProtocol::Anthropic, &configured);
        assert_eq!(
            aliases.resolve("sonnet").as_deref(),
            Some("anthropic/claude-sonnet-4-5")
        );
        assert_eq!(
            aliases.resolve("Opus").as_deref(),
            Some("anthropic/claude-opus-custom")
        );
        assert_eq!(aliases.resolve("inherit"), None);
        assert_eq!(
            aliases.resolve("openai/gpt-x").as_deref(),
            Some("openai/gpt-x")
        );
        assert_eq!(aliases.warning(), None);

        let mut other = Aliases::new("openai", WireProtocol::OpenAi, &BTreeMap::new());
        for _ in 0..150 {
            assert_eq!(other.resolve("sonnet"), None);
        }
        assert_eq!(other.resolve("haiku"), None);
        let warning = other.warning().unwrap();
        assert!(warning.starts_with("model haiku, sonnet "), "{warning}");
    }
}
