//! Whether a call's arguments fit a tool's input schema, shallowly.
//!
//! Two places need the answer without running the tool: arguments repaired
//! after they were cut short run only when they fit (`repair.rs`), and a
//! call naming the wrong tool runs as, or is answered with, the tools its
//! arguments fit (`tool_lookup.rs`). The check reads the schema's top level, which is
//! all a tool's input schema has that matters here: every `required`
//! property present, no property the schema does not list (when it lists
//! them), and each value of the JSON type its property names.

use alcove_protocol::ToolSpec;
use serde_json::Value;

/// Whether `arguments` (a JSON object) fit `spec`'s input schema.
pub(crate) fn fits(spec: &ToolSpec, arguments: &Value) -> bool {
    let Value::Object(arguments) = arguments else {
        return false;
    };
    let schema = spec.input_schema.to_value();
    let required = schema["required"].as_array().into_iter().flatten();
    if !required
        .filter_map(Value::as_str)
        .all(|name| arguments.contains_key(name))
    {
        return false;
    }
    let Some(properties) = schema["properties"].as_object() else {
        return true;
    };
    arguments.iter().all(|(name, value)| {
        properties
            .get(name)
            .is_some_and(|property| type_fits(&property["type"], value))
    })
}

/// The names of the parameters `spec`'s input schema requires (read from
/// the schema's text without building it: this runs for every call).
pub(crate) fn required(spec: &ToolSpec) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct TopLevel {
        #[serde(default)]
        required: Vec<String>,
    }
    serde_json::from_str::<TopLevel>(spec.input_schema.json())
        .map(|top| top.required)
        .unwrap_or_default()
}

/// Whether `value` is of the JSON type `wanted` names (a name, a list of
/// names, or nothing said).
fn type_fits(wanted: &Value, value: &Value) -> bool {
    match wanted {
        Value::String(name) => is_type(name, value),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .any(|name| is_type(name, value)),
        _ => true,
    }
}

fn is_type(name: &str, value: &Value) -> bool {
    match name {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_spec() -> ToolSpec {
        ToolSpec {
            name: "Read".into(),
            description: String::new(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "offset": {"type": "integer"},
                    "limit": {"type": "integer"},
                },
                "required": ["file_path"],
            })
            .into(),
        }
    }

    #[test]
    fn required_listed_and_typed_properties_decide() {
        let spec = read_spec();
        assert!(fits(&spec, &json!({"file_path": "a"})));
        assert!(fits(&spec, &json!({"file_path": "a", "offset": 3})));
        assert!(!fits(&spec, &json!({"offset": 3})), "required missing");
        assert!(
            !fits(&spec, &json!({"file_path": "a", "mode": "x"})),
            "not listed"
        );
        assert!(!fits(&spec, &json!({"file_path": 7})), "wrong type");
        assert!(!fits(&spec, &json!({"file_path": "a", "offset": 1.5})));
        assert!(!fits(&spec, &json!("a")), "not an object");
        let open = ToolSpec {
            input_schema: json!({"type": "object"}).into(),
            ..read_spec()
        };
        assert!(fits(&open, &json!({"anything": [1]})));
    }
}
