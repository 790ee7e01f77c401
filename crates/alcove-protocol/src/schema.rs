//! A tool's input schema, kept as the JSON text it is sent as.
//!
//! Every request carries every tool's schema, and a session starts many
//! agents with the same tools. Kept as a `serde_json::Value`, each schema
//! was built key by key at start, copied map by map into each agent's tool
//! set, and escaped again to count its bytes and to write the request:
//! two fifths of the instructions before alcove's first request
//! (bench/notes.md, issue 16). As text it is shared by reference, measured
//! by its length and written as it is.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON Schema as JSON text; cloning shares it.
#[derive(Clone)]
pub struct Schema(Arc<RawValue>);

impl Schema {
    /// The schema `json` is the text of, or `None` when it is not JSON.
    pub fn from_json(json: &str) -> Option<Schema> {
        let raw: Box<RawValue> = serde_json::from_str(json).ok()?;
        Some(Schema(Arc::from(raw)))
    }

    /// The schema `value` describes.
    pub fn from_value(value: &Value) -> Schema {
        let raw =
            serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned());
        Schema(Arc::from(raw))
    }

    /// The schema as JSON text.
    pub fn json(&self) -> &str {
        self.0.get()
    }

    /// The schema as a JSON value, for code that looks inside it.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.json()).unwrap_or(Value::Null)
    }
}

impl From<Value> for Schema {
    fn from(value: Value) -> Schema {
        Schema::from_value(&value)
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.json() == other.json()
    }
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.json())
    }
}

impl std::fmt::Display for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.json())
    }
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Schema, D::Error> {
        Value::deserialize(deserializer).map(Schema::from)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn the_text_is_written_as_it_is_and_read_back_as_the_same_schema() {
        let schema = Schema::from_json(r#"{"type":"object","required":["path"]}"#).unwrap();
        let written = serde_json::to_string(&json!({"input_schema": schema})).unwrap();
        // Compared as JSON: the keys' order is serde_json's (sorted, or as
        // written when a dependency turns on its `preserve_order`).
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&written).unwrap(),
            json!({"input_schema": {"required": ["path"], "type": "object"}})
        );
        let direct = serde_json::to_string(&schema).unwrap();
        assert_eq!(direct, r#"{"type":"object","required":["path"]}"#);
        let back: Schema = serde_json::from_str(&direct).unwrap();
        assert_eq!(back.to_value(), schema.to_value());
    }

    #[test]
    fn text_that_is_not_json_is_refused() {
        assert!(Schema::from_json("{\"type\":").is_none());
        assert!(Schema::from_json("").is_none());
    }
}
