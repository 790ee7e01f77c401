//! The lean schemas (issue 17) still describe every input the tools accept:
//! each sample a tool's own parser accepts validates against its schema, and
//! each sample the schema refuses, the tool refuses too. The validator here
//! covers the keywords the derived schemas use (type, properties, required,
//! enum, items, additionalProperties).
#![allow(clippy::unwrap_used)]

use alcove_tools::{Workspace, builtin_tools};
use serde_json::{Value, json};

fn type_ok(kind: &str, value: &Value) -> bool {
    match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "null" => value.is_null(),
        _ => false,
    }
}

/// Why `value` does not match `schema`, or `None`.
fn invalid(schema: &Value, value: &Value) -> Option<String> {
    match &schema["type"] {
        Value::String(kind) if !type_ok(kind, value) => {
            return Some(format!("{value} is not {kind}"));
        }
        Value::Array(kinds) if !kinds.iter().any(|k| type_ok(k.as_str().unwrap(), value)) => {
            return Some(format!("{value} is none of {kinds:?}"));
        }
        _ => {}
    }
    if let Some(values) = schema["enum"].as_array()
        && !values.contains(value)
    {
        return Some(format!("{value} is not one of {values:?}"));
    }
    if let Some(object) = value.as_object() {
        for name in schema["required"].as_array().into_iter().flatten() {
            if !object.contains_key(name.as_str().unwrap()) {
                return Some(format!("{name} is required"));
            }
        }
        for (key, field) in object {
            match schema["properties"].get(key) {
                Some(property) => {
                    if let Some(why) = invalid(property, field) {
                        return Some(format!("{key}: {why}"));
                    }
                }
                None if schema["additionalProperties"] == json!(false) => {
                    return Some(format!("{key} is not a property"));
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        return array.iter().find_map(|item| invalid(items, item));
    }
    None
}

#[test]
fn lean_schemas_accept_what_the_tools_accept() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    // (tool, input, accepted by the tool)
    let samples: Vec<(&str, Value, bool)> = vec![
        ("Read", json!({"file_path": "a.txt"}), true),
        (
            "Read",
            json!({"file_path": "a.txt", "offset": 3, "limit": 10}),
            true,
        ),
        ("Read", json!({"offset": 3}), false),
        ("Read", json!({"file_path": "a.txt", "limit": "ten"}), false),
        ("Glob", json!({"pattern": "**/*.rs"}), true),
        ("Glob", json!({"pattern": "*.rs", "path": "src"}), true),
        ("Glob", json!({"path": "src"}), false),
        ("Grep", json!({"pattern": "fn main"}), true),
        (
            "Grep",
            json!({"pattern": "x", "output_mode": "content", "-A": 2, "-B": 1, "-C": 0, "-i": true, "-n": false,
                   "glob": "*.rs", "type": "rust", "head_limit": 5, "multiline": true, "path": "src"}),
            true,
        ),
        (
            "Grep",
            json!({"pattern": "x", "output_mode": "everything"}),
            false,
        ),
        ("Grep", json!({"pattern": "x", "-A": "two"}), false),
        (
            "Write",
            json!({"file_path": "b.txt", "content": "hi"}),
            true,
        ),
        ("Write", json!({"file_path": "b.txt"}), false),
        (
            "Edit",
            json!({"file_path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": true}),
            true,
        ),
        (
            "Edit",
            json!({"file_path": "a.txt", "old_string": "a"}),
            false,
        ),
        (
            "Bash",
            json!({"command": "ls", "description": "list", "timeout": 1000}),
            true,
        ),
        ("Bash", json!({"command": "ls"}), true),
        ("Bash", json!({"timeout": 5}), false),
    ];
    let tools = builtin_tools::<()>();
    for (name, input, accepted) in samples {
        let tool = tools.iter().find(|t| t.spec().name == name).unwrap();
        let schema = &tool.spec().input_schema.to_value();
        let by_tool = alcove_tools::inspect(tool.as_ref(), &input, &workspace);
        let by_schema = invalid(schema, &input);
        assert_eq!(by_tool.is_ok(), accepted, "{name} {input}: {by_tool:?}");
        assert_eq!(
            by_schema.is_none(),
            accepted,
            "{name} {input}: the schema says {by_schema:?}"
        );
    }
}

#[test]
fn lean_schemas_have_no_null_unions_formats_or_titles() {
    for tool in builtin_tools::<()>() {
        let spec = tool.spec();
        let text = spec.input_schema.to_string();
        for needle in [
            "\"null\"",
            "\"format\"",
            "\"minimum\":0",
            "$schema",
            "Arguments of",
        ] {
            assert!(!text.contains(needle), "{}: {needle} in {text}", spec.name);
        }
        assert_eq!(
            spec.input_schema.to_value()["type"],
            "object",
            "{}",
            spec.name
        );
    }
}
