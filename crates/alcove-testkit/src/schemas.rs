//! The providers' published request schemas (`schemas/`, generated from
//! the official SDKs' request types at pinned versions; `schemas/README.md`
//! names them): with the `published-schemas` feature, a strict server
//! checks every model request against its wire's schema and refuses one
//! that breaks it, as the real API refuses a field it does not know or a
//! block of the wrong shape, so every end-to-end test checks the bodies
//! it makes alcove send.

use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

use crate::record::Protocol;
use crate::strict::{Rejection, bad_request};

const ANTHROPIC: &str = include_str!("../schemas/anthropic-messages.json");
const RESPONSES: &str = include_str!("../schemas/openai-responses.json");
const CHAT: &str = include_str!("../schemas/openai-chat-completions.json");

/// The schema's file name, for messages.
fn file(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Anthropic => "anthropic-messages.json",
        Protocol::Responses => "openai-responses.json",
        Protocol::OpenAi => "openai-chat-completions.json",
    }
}

/// The compiled schema of a wire (built once per process).
fn validator(protocol: Protocol) -> Result<&'static Validator, String> {
    static VALIDATORS: [OnceLock<Result<Validator, String>>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let (slot, text) = match protocol {
        Protocol::Anthropic => (&VALIDATORS[0], ANTHROPIC),
        Protocol::Responses => (&VALIDATORS[1], RESPONSES),
        Protocol::OpenAi => (&VALIDATORS[2], CHAT),
    };
    slot.get_or_init(|| {
        let schema: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        jsonschema::validator_for(&schema).map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| format!("fake server: schemas/{} does not load: {e}", file(protocol)))
}

/// Every way `body` breaks the published request schema of `protocol`,
/// one line each (`at /json/pointer: what`); empty when it fits.
pub fn violations(protocol: Protocol, body: &Value) -> Vec<String> {
    match validator(protocol) {
        Ok(validator) => validator
            .iter_errors(body)
            .map(|error| format!("at {}: {}", error.instance_path(), cut(&error.to_string())))
            .collect(),
        Err(message) => vec![message],
    }
}

/// `text` cut to a readable length (an error about a union quotes the
/// whole value that fit none of its members).
fn cut(text: &str) -> String {
    const MOST: usize = 300;
    match text.char_indices().nth(MOST) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// What a strict server says of a body that breaks its schema.
pub(crate) fn validate(protocol: Protocol, body: &Value) -> Result<(), Rejection> {
    let broken = violations(protocol, body);
    if broken.is_empty() {
        return Ok(());
    }
    Err(bad_request(format!(
        "Invalid request: the body does not fit the published request schema (alcove-testkit schemas/{}): {}",
        file(protocol),
        broken.join("; ")
    )))
}
