//! Lean tool schemas: what a model needs to call a tool, nothing more.
//!
//! schemars describes an `Option<u64>` as `{"type": ["integer", "null"],
//! "format": "uint64", "minimum": 0}`. Every byte of a schema is sent with
//! every request, and on a CPU model every token of it is prefill before
//! the first answer (issue 17: `Grep` alone was 842 tokens). A field that
//! is optional is already left out of `required`, so the `null` in the
//! type adds nothing a model needs; nor do the integer formats, a minimum
//! of 0, a `default` or the derived "Arguments of X" title. The arguments are still
//! parsed by serde, which accepts `null` for an optional field.

use serde_json::Value;

/// The lean schema of `T`, derived now, its keys in sorted order: the same
/// text whether or not serde_json keeps insertion order (its
/// `preserve_order` feature, which a dependency of the binary turns on for
/// the whole build).
pub(crate) fn lean_schema_of<T: schemars::JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    lean(&mut schema);
    sorted(schema)
}

/// `value` with every object's keys in sorted order.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key, sorted(value)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Stops a debug build whose kept schema text `kept` (the file `path`) is
/// not `T`'s lean schema, or, with `ALCOVE_BLESS_SCHEMAS` set, writes the
/// file anew.
#[cfg(debug_assertions)]
pub(crate) fn check_kept<T: schemars::JsonSchema>(kept: &str, path: &str) {
    let derived = lean_schema_of::<T>().to_string();
    if derived == kept.trim_end() {
        return;
    }
    if std::env::var_os("ALCOVE_BLESS_SCHEMAS").is_some() {
        if let Err(error) = std::fs::write(path, format!("{derived}\n")) {
            eprintln!("alcove: cannot write {path}: {error}");
        }
        return;
    }
    panic!(
        "{path} is not the lean schema of {}: run `ALCOVE_BLESS_SCHEMAS=1 cargo test` to write it anew",
        std::any::type_name::<T>()
    );
}

/// Strips `schema` (a derived input schema) down to what a model needs:
/// no `$schema`, no top-level title or description, no `null` in types or
/// enums, no `anyOf` with a `null` branch, no `format`, no `minimum` of 0,
/// no `default`, no `additionalProperties: false` (serde still refuses
/// unknown fields), and `$defs` written in place of their `$ref`s.
pub(crate) fn lean(schema: &mut Value) {
    if let Value::Object(map) = schema {
        for key in ["$schema", "title", "description"] {
            map.remove(key);
        }
    }
    lean_node(schema);
    inline_definitions(schema);
}

/// How deep definitions are written into each other; a recursive type
/// keeps its `$defs` and `$ref`s.
const MAX_INLINE_DEPTH: usize = 4;

/// Writes each `{"$ref": "#/$defs/X", ...}` as X itself (the reference's
/// own keys, such as its description, win), and drops `$defs` when no
/// reference is left.
fn inline_definitions(schema: &mut Value) {
    let Some(Value::Object(definitions)) =
        schema.as_object_mut().and_then(|map| map.remove("$defs"))
    else {
        return;
    };
    let mut left = false;
    inline_refs(schema, &definitions, 0, &mut left);
    if left && let Value::Object(map) = schema {
        map.insert("$defs".to_owned(), Value::Object(definitions));
    }
}

fn inline_refs(
    node: &mut Value,
    definitions: &serde_json::Map<String, Value>,
    depth: usize,
    left: &mut bool,
) {
    match node {
        Value::Object(map) => {
            let target = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|reference| reference.strip_prefix("#/$defs/"))
                .and_then(|name| definitions.get(name));
            match target {
                Some(Value::Object(definition)) if depth < MAX_INLINE_DEPTH => {
                    map.remove("$ref");
                    for (key, value) in definition {
                        map.entry(key.clone()).or_insert_with(|| value.clone());
                    }
                    inline_refs(node, definitions, depth + 1, left);
                    return;
                }
                Some(_) => *left = true,
                None => {}
            }
            map.values_mut()
                .for_each(|value| inline_refs(value, definitions, depth, left));
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|value| inline_refs(value, definitions, depth, left)),
        _ => {}
    }
}

/// Leans one schema node, then the schemas inside it (never a map of
/// properties as if it were a schema: a property may be called `format`).
fn lean_node(node: &mut Value) {
    let Value::Object(map) = node else {
        return;
    };
    map.remove("format");
    if map.get("additionalProperties") == Some(&Value::Bool(false)) {
        map.remove("additionalProperties");
    }
    // Defaults are in the descriptions where they matter.
    map.remove("default");
    if map.get("minimum").and_then(Value::as_f64) == Some(0.0) {
        map.remove("minimum");
    }
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".to_owned(), only);
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    // `anyOf: [X, {"type": "null"}]` is X.
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        branches.retain(|b| b.get("type").is_none_or(|t| t != "null"));
        if branches.len() == 1 {
            let only = branches.remove(0);
            map.remove("anyOf");
            if let Value::Object(inner) = only {
                for (key, value) in inner {
                    map.entry(key).or_insert(value);
                }
            }
            // The merged branch may itself hold what is leaned.
            lean_node(node);
            return;
        }
    }
    for (key, value) in map.iter_mut() {
        match key.as_str() {
            "properties" | "$defs" | "definitions" | "patternProperties" => {
                if let Value::Object(schemas) = value {
                    schemas.values_mut().for_each(lean_node);
                }
            }
            "items" | "additionalProperties" | "not" | "contains" => lean_node(value),
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(schemas) = value {
                    schemas.iter_mut().for_each(lean_node);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn optional_integers_lose_null_format_and_minimum() {
        let mut schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "GrepInput",
            "description": "Arguments of `Grep`.",
            "type": "object",
            "properties": {
                "-A": {"description": "after", "type": ["integer", "null"], "format": "uint32", "minimum": 0},
                "mode": {"type": ["string", "null"], "enum": ["a", "b", null]},
                "kind": {"anyOf": [{"$ref": "#/$defs/Kind"}, {"type": "null"}], "description": "k"},
                "count": {"type": "integer", "minimum": 1},
                "format": {"type": ["string", "null"], "default": null},
            },
            "required": ["pattern"],
            "additionalProperties": false,
            "$defs": {"Kind": {"description": "a kind", "type": "string", "enum": ["x", "y"]}},
        });
        lean(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "-A": {"description": "after", "type": "integer"},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                    "kind": {"description": "k", "type": "string", "enum": ["x", "y"]},
                    "count": {"type": "integer", "minimum": 1},
                    "format": {"type": "string"},
                },
                "required": ["pattern"],
            })
        );
    }

    #[test]
    fn a_recursive_definition_keeps_its_defs() {
        let mut schema = json!({
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Tree"}},
            "$defs": {"Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}},
        });
        lean(&mut schema);
        assert!(schema["$defs"]["Tree"].is_object(), "{schema}");
        assert_eq!(schema["properties"]["tree"]["type"], "object", "{schema}");
    }
}
