//! A tool call as the loop hands it to dispatch: typed, not a tuple.
//!
//! The model's arguments are either a JSON value or text that is not JSON
//! (the model clients keep such text raw); the two are different variants
//! here, so no tool ever mistakes broken arguments for a JSON string.

use serde_json::Value;

/// One tool call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The model's id for the call.
    pub id: String,
    /// The tool it names.
    pub name: String,
    /// Its arguments.
    pub input: CallInput,
}

/// A call's arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum CallInput {
    /// Arguments that parsed as JSON.
    Json(Value),
    /// Arguments the model wrote that are not JSON, kept as written.
    Invalid(String),
}

impl ToolCall {
    /// The call as a `tool_use` block holds it: the model clients keep
    /// arguments that are not JSON as a JSON string, and tool arguments are
    /// always an object, so a string is always the invalid case.
    pub fn from_use(id: &str, name: &str, input: &Value) -> ToolCall {
        ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            input: match input {
                Value::String(raw) => CallInput::Invalid(raw.clone()),
                value => CallInput::Json(value.clone()),
            },
        }
    }

    /// The arguments as events and hooks show them (invalid ones as the raw text).
    pub fn input_value(&self) -> Value {
        match &self.input {
            CallInput::Json(value) => value.clone(),
            CallInput::Invalid(raw) => Value::String(raw.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_string_where_arguments_belong_is_the_invalid_variant() {
        let call = ToolCall::from_use("c1", "Read", &json!("{not json"));
        assert_eq!(call.input, CallInput::Invalid("{not json".to_owned()));
        assert_eq!(call.input_value(), json!("{not json"));
        let call = ToolCall::from_use("c2", "Read", &json!({"file_path": "a"}));
        assert_eq!(call.input, CallInput::Json(json!({"file_path": "a"})));
    }
}
