//! The model as an ACP session config option: `configOptions` (category
//! `model`) in `session/new` and `session/load`, `session/set_config_option`
//! to change it. The choices are the session's model (`--model`,
//! `ALCOVE_MODEL` or config), config's `model`, and every model alias of
//! the provider and config (`opus`, `sonnet`, `haiku` on the Anthropic
//! protocol, `[model_aliases]`), each named by its alias with the
//! `provider/name` it stands for; any `provider/name` is taken too, as the
//! TUI's `/model` takes it. The chosen model's client is built when it is
//! chosen (a provider without its key is refused then) and runs the next
//! prompts and the children they start; the conversation goes on.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
};
use alcove_model::Model;

use crate::session::Session;

/// The option's id.
pub(crate) const MODEL_OPTION: &str = "model";

/// The model a session's next prompt runs on.
pub(crate) struct Chosen {
    /// Its `provider/name`.
    pub(crate) spec: String,
    /// Its client, when it is not the session's own.
    pub(crate) client: Option<Arc<dyn Model>>,
}

impl Chosen {
    /// The session's own model.
    pub(crate) fn of(session: &Session) -> Chosen {
        Chosen {
            spec: session.model_name.clone(),
            client: None,
        }
    }
}

/// Each choice: (`provider/name`, the name shown).
fn choices(session: &Session, current: &str) -> Vec<(String, String)> {
    let mut choices: Vec<(String, String)> = Vec::new();
    let mut add = |spec: &str, name: String| {
        if !choices.iter().any(|(known, _)| known == spec) {
            choices.push((spec.to_owned(), name));
        }
    };
    add(&session.model_name, session.model_name.clone());
    if let Some(configured) = session.config.model.as_deref()
        && configured.contains('/')
    {
        add(configured, configured.to_owned());
    }
    for (alias, spec) in &session.model_aliases {
        add(spec, format!("{alias} ({spec})"));
    }
    add(current, current.to_owned());
    choices
}

/// The option as it stands, `current` chosen.
pub(crate) fn option(session: &Session, current: &str) -> SessionConfigOption {
    let options: Vec<SessionConfigSelectOption> = choices(session, current)
        .into_iter()
        .map(|(spec, name)| SessionConfigSelectOption::new(spec, name))
        .collect();
    SessionConfigOption::select(MODEL_OPTION, "Model", current.to_owned(), options)
        .description("The model the next prompts run on (the conversation goes on)".to_owned())
        .category(SessionConfigOptionCategory::Model)
}

/// The `provider/name` `value` chooses: a listed one, an alias, or any
/// `provider/name`.
pub(crate) fn spec_of(session: &Session, value: &str) -> Result<String, String> {
    let value = value.trim();
    if value.contains('/') {
        return Ok(value.to_owned());
    }
    if let Some(spec) = session.model_aliases.get(&value.to_lowercase()) {
        return Ok(spec.clone());
    }
    let known: Vec<String> = choices(session, &session.model_name)
        .into_iter()
        .map(|(spec, _)| spec)
        .chain(session.model_aliases.keys().cloned())
        .collect();
    Err(format!(
        "unknown model `{value}`: choose one of {} or write provider/name",
        known.join(", ")
    ))
}
