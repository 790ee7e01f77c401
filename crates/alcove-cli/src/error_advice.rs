//! A model failure said as what to do: a refused key names the variable
//! or config entry it came from and how to set it; a missing model, a
//! quota and a billing error each get one line of cause and one of remedy,
//! with the provider's own message kept after them. Every place a failed
//! run reaches the user says it so: `exec`'s stderr, the UI's notice, the
//! plain mode's stderr and `session_ended`'s `error`.

use crate::settings::Config;

/// Where the key of `provider` (the `provider/model`'s first part) is
/// read: the variable, and the config entry that names it, if any.
fn key_source(provider: &str, config: &Config) -> (String, Option<String>) {
    if let Some(entry) = config.providers.get(provider) {
        let entry_name = format!("[providers.{provider}] api_key_env");
        return match &entry.api_key_env {
            Some(var) => (var.clone(), Some(entry_name)),
            None => ("a variable of your choice".to_owned(), Some(entry_name)),
        };
    }
    match provider {
        "anthropic" => ("ANTHROPIC_API_KEY".to_owned(), None),
        "openai" => ("OPENAI_API_KEY".to_owned(), None),
        other => (
            "a variable of your choice".to_owned(),
            Some(format!("[providers.{other}] api_key_env")),
        ),
    }
}

/// `error` (a failed run's) with a cause and a remedy in front when it is
/// one alcove knows; otherwise as it is.
pub(crate) fn explain(error: &str, model_name: &str, config: &Config) -> String {
    // Already explained (a UI turn's error reaches `session_ended` too).
    if error.contains(PROVIDER_SAID) {
        return error.to_owned();
    }
    let (provider, model) = model_name.split_once('/').unwrap_or((model_name, ""));
    let status = error
        .split_once("returned HTTP ")
        .and_then(|(_, rest)| rest.get(..3))
        .and_then(|code| code.parse::<u16>().ok());
    let lower = error.to_lowercase();
    let advice = match status {
        Some(401) | Some(403) => {
            let (var, entry) = key_source(provider, config);
            let from = match &entry {
                Some(entry) => format!("{var} (named by {entry} in config.toml)"),
                None => var.clone(),
            };
            Some((
                format!("{provider} refused the API key read from {from}."),
                format!(
                    "Remedy: set a valid key (`export {var}=…`), or choose another model with --model."
                ),
            ))
        }
        Some(402) => Some(billing(provider)),
        Some(429) if lower.contains("quota") || lower.contains("billing") => {
            Some(billing(provider))
        }
        Some(404) if lower.contains("model") => Some((
            format!("{provider} has no model `{model}` (or this key may not use it)."),
            "Remedy: pass --model provider/name with a model the provider lists, or set `model` \
             in config.toml."
                .to_owned(),
        )),
        Some(400) if lower.contains("credit balance") || lower.contains("billing") => {
            Some(billing(provider))
        }
        _ => None,
    };
    match advice {
        Some((cause, remedy)) => format!("{cause}\n{remedy}\n{PROVIDER_SAID}{error}"),
        None => error.to_owned(),
    }
}

/// What comes before the provider's own message.
const PROVIDER_SAID: &str = "The provider said: ";

fn billing(provider: &str) -> (String, String) {
    (
        format!("{provider} refused the request for the account's quota or billing."),
        "Remedy: check the account's plan and credit with the provider, or choose another model \
         with --model."
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_key_names_its_variable() {
        let config = Config::default();
        let text = explain(
            "openai returned HTTP 401: {\"error\": {\"message\": \"Incorrect API key\"}}",
            "openai/gpt-5",
            &config,
        );
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("OPENAI_API_KEY"), "{text}");
        assert!(
            lines[1].starts_with("Remedy: set a valid key (`export OPENAI_API_KEY=…`)"),
            "{text}"
        );
        assert!(lines[2].contains("Incorrect API key"), "{text}");
        let quota = explain(
            "openai returned HTTP 429: insufficient_quota: You exceeded your current quota",
            "openai/gpt-5",
            &config,
        );
        assert!(
            quota.contains("quota or billing") && quota.contains("exceeded"),
            "{quota}"
        );
        let missing = explain(
            "anthropic returned HTTP 404: {\"type\":\"not_found_error\",\"message\":\"model: nope\"}",
            "anthropic/nope",
            &config,
        );
        assert!(
            missing.starts_with("anthropic has no model `nope`"),
            "{missing}"
        );
        assert_eq!(
            explain("cannot connect to x: y", "openai/m", &config),
            "cannot connect to x: y"
        );
        assert_eq!(explain(&text, "openai/gpt-5", &config), text);
    }
}
