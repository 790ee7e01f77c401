//! `StructuredOutput`: how a workflow agent asked for a `schema` hands its
//! answer back, as Claude Code's children do — the tool's input is the
//! object, checked against the script's JSON Schema.
//!
//! A submission that breaks the schema is answered with what is wrong and
//! the agent tries again, up to [`MAX_ATTEMPTS`] times; then `agent()`
//! throws with the last error. One tool is made per `agent()` call and
//! added to that child's tools only.

use std::sync::{Arc, Mutex};

use alcove_protocol::ToolSpec;
use alcove_tools::{Access, Invocation, ToolContext, ToolOutput, TypedTool, Workspace};
use serde_json::Value;

/// Failed submissions before `agent()` throws.
pub(crate) const MAX_ATTEMPTS: u32 = 5;

/// What the agent submitted, read once it ended.
#[derive(Debug, Default)]
pub(crate) struct Submission {
    /// The accepted object.
    pub(crate) value: Option<Value>,
    /// Failed submissions so far.
    pub(crate) failures: u32,
    /// The last failure's reason.
    pub(crate) last_error: Option<String>,
}

/// The tool, for one call's schema.
pub(crate) struct StructuredOutput {
    spec: ToolSpec,
    validator: jsonschema::Validator,
    submission: Arc<Mutex<Submission>>,
}

impl StructuredOutput {
    /// The tool for `schema`, or why no object could meet it (checked
    /// before the agent starts).
    pub(crate) fn new(
        schema: &Value,
    ) -> Result<(StructuredOutput, Arc<Mutex<Submission>>), String> {
        preflight(schema)?;
        let validator = jsonschema::validator_for(schema)
            .map_err(|err| format!("agent(): the schema is not a valid JSON Schema: {err}"))?;
        let submission = Arc::new(Mutex::new(Submission::default()));
        let spec = ToolSpec {
            name: "StructuredOutput".to_owned(),
            description: "Return your final answer as structured data: the input is the answer \
                          itself and must meet the schema. Call it once, when you have the \
                          answer; a submission that breaks the schema is answered with what is \
                          wrong, so fix it and call again. Then end your turn."
                .to_owned(),
            input_schema: schema.clone().into(),
        };
        Ok((
            StructuredOutput {
                spec,
                validator,
                submission: submission.clone(),
            },
            submission,
        ))
    }
}

/// Refuses a schema no object can meet: the root must be an object
/// schema, and a `required` key cannot be ruled out by
/// `additionalProperties: false`.
fn preflight(schema: &Value) -> Result<(), String> {
    if schema.get("type").is_some_and(|kind| kind != "object") {
        return Err("agent(): opts.schema's root must be { type: 'object', … }".to_owned());
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        let properties = schema.get("properties").and_then(Value::as_object);
        let required = schema.get("required").and_then(Value::as_array);
        for key in required.into_iter().flatten().filter_map(Value::as_str) {
            if !properties.is_some_and(|properties| properties.contains_key(key)) {
                return Err(format!(
                    "agent(): the schema cannot be met: `{key}` is required but additionalProperties is false and it is not a property"
                ));
            }
        }
    }
    Ok(())
}

#[async_trait::async_trait]
impl TypedTool for StructuredOutput {
    type Input = Value;
    type Call = Value;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::ReadOnly
    }

    fn inspect(&self, input: Value, _workspace: &Workspace) -> Result<(Invocation, Value), String> {
        let invocation = Invocation {
            summary: "structured output".to_owned(),
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, input))
    }

    async fn call(&self, input: Value, _context: &ToolContext) -> ToolOutput {
        let errors: Vec<String> = self
            .validator
            .iter_errors(&input)
            .map(|error| {
                let at = error.instance_path().to_string();
                if at.is_empty() {
                    error.to_string()
                } else {
                    format!("at {at}: {error}")
                }
            })
            .collect();
        let mut submission = self
            .submission
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if errors.is_empty() {
            submission.value = Some(input);
            return ToolOutput::ok("Accepted. End your turn now.");
        }
        submission.failures += 1;
        let reason = errors.join("; ");
        submission.last_error = Some(reason.clone());
        if submission.failures >= MAX_ATTEMPTS {
            return ToolOutput::error(format!(
                "The object does not meet the schema: {reason}. That was the last of {MAX_ATTEMPTS} attempts; end your turn."
            ));
        }
        ToolOutput::error(format!(
            "The object does not meet the schema: {reason}. Fix it and call StructuredOutput again ({} of {MAX_ATTEMPTS} attempts used).",
            submission.failures
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_no_object_can_meet_is_refused_before_the_agent_starts() {
        let contradiction = json!({"type": "object", "required": ["a"], "additionalProperties": false, "properties": {"b": {}}});
        assert!(
            StructuredOutput::new(&contradiction)
                .err()
                .unwrap()
                .contains("`a` is required")
        );
        assert!(StructuredOutput::new(&json!({"type": "array"})).is_err());
        assert!(
            StructuredOutput::new(&json!({"type": "object", "properties": {"a": {"type": 7}}}))
                .is_err()
        );
        assert!(
            StructuredOutput::new(
                &json!({"type": "object", "required": ["a"], "properties": {"a": {}}})
            )
            .is_ok()
        );
    }
}
