//! Which environment variables commands the agent runs may see.
//!
//! The agent's own process holds API keys; a model-written command (or a
//! prompt-injected one) must not be able to print them with `env`. By default
//! every variable that looks like a secret — `ANTHROPIC_API_KEY`,
//! `OPENAI_API_KEY`, and names ending in `_KEY`, `_TOKEN`, `_SECRET` or
//! `_PASSWORD` — is removed from the environment of Bash commands. Config
//! can pass some through by name (`[env] keep = [...]`) or turn scrubbing off
//! (`[env] scrub = false`).

/// Names matched exactly (any case), besides the suffixes.
const SENSITIVE_NAMES: [&str; 6] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "API_KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
];
/// Name endings (any case) that mark a secret.
const SENSITIVE_SUFFIXES: [&str; 4] = ["_KEY", "_TOKEN", "_SECRET", "_PASSWORD"];

/// Whether a variable of this name looks like it holds a secret.
pub fn is_sensitive_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SENSITIVE_SUFFIXES
        .iter()
        .any(|suffix| upper.ends_with(suffix))
        || SENSITIVE_NAMES.contains(&upper.as_str())
}

/// Which variables are removed from a command's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Whether sensitive variables are removed at all.
    pub scrub: bool,
    /// Names passed through even though they look sensitive.
    pub keep: Vec<String>,
}

impl Default for EnvPolicy {
    /// Scrub every sensitive variable, keep none.
    fn default() -> EnvPolicy {
        EnvPolicy {
            scrub: true,
            keep: Vec::new(),
        }
    }
}

impl EnvPolicy {
    /// Whether the variable `name` is removed.
    pub fn removes(&self, name: &str) -> bool {
        self.scrub && is_sensitive_env_name(name) && !self.keep.iter().any(|kept| kept == name)
    }

    /// The names among `vars` (usually `std::env::vars_os()`) to remove.
    pub fn names_to_remove<I, K, V>(&self, vars: I) -> Vec<String>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<std::ffi::OsStr>,
    {
        vars.into_iter()
            .filter_map(|(name, _)| name.as_ref().to_str().map(str::to_owned))
            .filter(|name| self.removes(name))
            .collect()
    }
}

/// The values of the sensitive variables among `vars` that are long enough
/// to be recognised (8 characters or more), for redacting transcripts and
/// logs. Kept and scrubbed alike: a variable passed through to commands is
/// still a secret.
pub fn secret_values<I, K, V>(vars: I) -> Vec<String>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    let mut values: Vec<String> = vars
        .into_iter()
        .filter(|(name, _)| name.as_ref().to_str().is_some_and(is_sensitive_env_name))
        .filter_map(|(_, value)| value.as_ref().to_str().map(str::to_owned))
        .filter(|value| value.chars().count() >= 8)
        .collect();
    values.sort();
    values.dedup();
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_recognised_by_name() {
        for name in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "MY_SERVICE_TOKEN",
            "aws_secret",
            "DB_PASSWORD",
            "GITHUB_TOKEN",
            "token",
        ] {
            assert!(is_sensitive_env_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "KEYBOARD",
            "TOKENIZERS_PARALLELISM",
            "SSH_AUTH_SOCK",
        ] {
            assert!(!is_sensitive_env_name(name), "{name}");
        }
    }

    #[test]
    fn keep_passes_names_through_and_scrub_false_turns_it_off() {
        let policy = EnvPolicy {
            scrub: true,
            keep: vec!["GITHUB_TOKEN".to_owned()],
        };
        let vars = [("GITHUB_TOKEN", "x"), ("NPM_TOKEN", "y"), ("PATH", "/bin")];
        assert_eq!(policy.names_to_remove(vars), ["NPM_TOKEN"]);
        let off = EnvPolicy {
            scrub: false,
            keep: Vec::new(),
        };
        assert!(off.names_to_remove(vars).is_empty());
    }

    #[test]
    fn secret_values_are_the_long_ones() {
        let vars = [
            ("A_TOKEN", "short"),
            ("B_KEY", "longenough"),
            ("PATH", "/usr/local/bin"),
        ];
        assert_eq!(secret_values(vars), ["longenough"]);
    }
}
