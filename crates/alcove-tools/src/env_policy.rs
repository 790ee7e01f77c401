//! Which environment variables commands the agent runs may see.
//!
//! The agent's own process holds API keys; a model-written command (or a
//! prompt-injected one) must not be able to print them with `env`. By default
//! every variable that looks like a secret — `ANTHROPIC_API_KEY`,
//! `OPENAI_API_KEY`, `DATABASE_URL`, names ending in `_KEY`, `_TOKEN`,
//! `_SECRET`, `_PASSWORD`, `_PAT` or `_HEADERS` (`OTEL_EXPORTER_OTLP_HEADERS`
//! carries a collector's credentials), a `*_URL` whose value holds a
//! password (`scheme://user:pass@host`), and each configured provider's
//! `api_key_env` ([`EnvPolicy::secret_names`]) — is removed from the
//! environment of commands, hooks and MCP servers. Config can pass some
//! through by name (`[env] keep = [...]`) or turn scrubbing off
//! (`[env] scrub = false`). The same pattern says which values every sink
//! redacts ([`secret_values`]).

/// Names matched exactly (any case), besides the suffixes.
const SENSITIVE_NAMES: [&str; 8] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "API_KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "DATABASE_URL",
    "GITHUB_PAT",
];
/// Name endings (any case) that mark a secret.
const SENSITIVE_SUFFIXES: [&str; 6] =
    ["_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_PAT", "_HEADERS"];

/// Values shorter than this are never redacted: too likely to occur by
/// chance in ordinary text.
pub const MIN_SECRET_CHARS: usize = 8;

/// Whether a variable of this name looks like it holds a secret, whatever
/// its value.
pub fn is_sensitive_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SENSITIVE_SUFFIXES
        .iter()
        .any(|suffix| upper.ends_with(suffix))
        || SENSITIVE_NAMES.contains(&upper.as_str())
}

/// Whether the variable `name` holding `value` is a secret: by its name, or
/// a `*_URL` whose value carries a password (`scheme://user:pass@host`).
pub fn is_sensitive_env(name: &str, value: &str) -> bool {
    is_sensitive_env_name(name)
        || (name.to_ascii_uppercase().ends_with("_URL") && url_password(value).is_some())
}

/// The password of a URL written `scheme://user:pass@host…`, if it has one.
pub fn url_password(value: &str) -> Option<&str> {
    let (_, rest) = value.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (_, password) = userinfo.split_once(':')?;
    (!password.is_empty()).then_some(password)
}

/// Which variables are removed from a command's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Whether sensitive variables are removed at all.
    pub scrub: bool,
    /// Names passed through even though they look sensitive.
    pub keep: Vec<String>,
    /// Names that hold a secret whatever they are called: each configured
    /// provider's `api_key_env`.
    pub secret_names: Vec<String>,
}

impl Default for EnvPolicy {
    /// Scrub every sensitive variable, keep none.
    fn default() -> EnvPolicy {
        EnvPolicy {
            scrub: true,
            keep: Vec::new(),
            secret_names: Vec::new(),
        }
    }
}

impl EnvPolicy {
    /// Whether the variable `name`, holding `value`, is a secret by this
    /// policy (kept or not).
    pub fn is_secret(&self, name: &str, value: &str) -> bool {
        is_sensitive_env(name, value) || self.secret_names.iter().any(|secret| secret == name)
    }

    /// Whether the variable `name` holding `value` is removed.
    pub fn removes(&self, name: &str, value: &str) -> bool {
        self.scrub && self.is_secret(name, value) && !self.keep.iter().any(|kept| kept == name)
    }

    /// The names among `vars` (usually `std::env::vars_os()`) to remove.
    pub fn names_to_remove<I, K, V>(&self, vars: I) -> Vec<String>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<std::ffi::OsStr>,
        V: AsRef<std::ffi::OsStr>,
    {
        vars.into_iter()
            .filter_map(|(name, value)| {
                let name = name.as_ref().to_str()?;
                let value = value.as_ref().to_string_lossy();
                self.removes(name, &value).then(|| name.to_owned())
            })
            .collect()
    }

    /// The values of the secrets among `vars` that are long enough to be
    /// recognised ([`MIN_SECRET_CHARS`] or more), for redacting every sink:
    /// each secret variable's value and, for a URL, its password too. Kept
    /// and scrubbed alike: a variable passed through to commands is still a
    /// secret.
    pub fn secret_values<I, K, V>(&self, vars: I) -> Vec<String>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<std::ffi::OsStr>,
        V: AsRef<std::ffi::OsStr>,
    {
        let mut values = Vec::new();
        for (name, value) in vars {
            let (Some(name), Some(value)) = (name.as_ref().to_str(), value.as_ref().to_str())
            else {
                continue;
            };
            if !self.is_secret(name, value) {
                continue;
            }
            values.push(value.to_owned());
            values.extend(url_password(value).map(str::to_owned));
        }
        values.retain(|value| value.chars().count() >= MIN_SECRET_CHARS);
        values.sort();
        values.dedup();
        values
    }
}

/// [`EnvPolicy::secret_values`] of the default policy.
pub fn secret_values<I, K, V>(vars: I) -> Vec<String>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    EnvPolicy::default().secret_values(vars)
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
            "GITHUB_PAT",
            "GITLAB_PAT",
            "DATABASE_URL",
            "OTEL_EXPORTER_OTLP_HEADERS",
        ] {
            assert!(is_sensitive_env_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "KEYBOARD",
            "TOKENIZERS_PARALLELISM",
            "SSH_AUTH_SOCK",
            "PATTERN",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ] {
            assert!(!is_sensitive_env_name(name), "{name}");
        }
    }

    #[test]
    fn a_url_is_a_secret_when_it_holds_a_password() {
        assert!(is_sensitive_env(
            "REDIS_URL",
            "redis://app:s3cretpass@cache:6379/0"
        ));
        assert!(!is_sensitive_env("REDIS_URL", "redis://cache:6379/0"));
        assert!(!is_sensitive_env(
            "HOMEPAGE_URL",
            "https://example.com/a@b:c"
        ));
        assert!(!is_sensitive_env("REPO_URL", "ssh://git@example.com/repo"));
        assert_eq!(
            url_password("postgres://u:pw-long-enough@db/x"),
            Some("pw-long-enough")
        );
    }

    #[test]
    fn a_provider_key_variable_is_a_secret_whatever_its_name() {
        let policy = EnvPolicy {
            secret_names: vec!["LAB_CREDENTIAL".to_owned()],
            ..EnvPolicy::default()
        };
        let vars = [("LAB_CREDENTIAL", "lab-secret-value"), ("PATH", "/bin")];
        assert_eq!(policy.names_to_remove(vars), ["LAB_CREDENTIAL"]);
        assert_eq!(policy.secret_values(vars), ["lab-secret-value"]);
    }

    #[test]
    fn keep_passes_names_through_and_scrub_false_turns_it_off() {
        let policy = EnvPolicy {
            scrub: true,
            keep: vec!["GITHUB_TOKEN".to_owned()],
            secret_names: Vec::new(),
        };
        let vars = [("GITHUB_TOKEN", "x"), ("NPM_TOKEN", "y"), ("PATH", "/bin")];
        assert_eq!(policy.names_to_remove(vars), ["NPM_TOKEN"]);
        let off = EnvPolicy {
            scrub: false,
            ..EnvPolicy::default()
        };
        assert!(off.names_to_remove(vars).is_empty());
    }

    #[test]
    fn secret_values_are_the_long_ones() {
        let vars = [
            ("A_TOKEN", "short"),
            ("B_KEY", "longenough"),
            ("PATH", "/usr/local/bin"),
            ("DATABASE_URL", "postgres://app:hunter2-long@db/app"),
        ];
        assert_eq!(
            secret_values(vars),
            [
                "hunter2-long",
                "longenough",
                "postgres://app:hunter2-long@db/app"
            ]
        );
    }
}
