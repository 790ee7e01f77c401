//! Making a server's tools acceptable to every provider: names of the form
//! `mcp__<server>__<tool>` within 64 characters of `[A-Za-z0-9_-]`
//! (shortened reproducibly, with a hash of the full name), and input schemas
//! that are JSON objects (a schema without a top-level `type: object` is
//! completed or wrapped).

use serde_json::{Map, Value, json};

/// The longest tool name providers accept (Anthropic's and OpenAI's limit).
pub const MAX_TOOL_NAME: usize = 64;

/// The key a non-object schema is wrapped under; calls are unwrapped again.
pub const WRAPPED_KEY: &str = "value";

/// `mcp__<server>__<tool>`, with characters providers refuse replaced by `_`
/// and, when too long, cut and suffixed with a hash of the full name so two
/// long names never collide by chance and the same name always maps the same way.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("mcp__{server}__{tool}");
    let clean: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_TOOL_NAME && clean == full {
        return clean;
    }
    let hash = format!("{:08x}", fnv1a(full.as_bytes()) as u32);
    if clean.len() <= MAX_TOOL_NAME {
        // Replaced characters could make two names equal: keep them apart.
        let keep = MAX_TOOL_NAME - hash.len() - 1;
        return if clean.len() + hash.len() < MAX_TOOL_NAME {
            format!("{clean}_{hash}")
        } else {
            format!("{}_{hash}", &clean[..keep])
        };
    }
    format!("{}_{hash}", &clean[..MAX_TOOL_NAME - hash.len() - 1])
}

/// The schema to offer for a tool, and whether arguments are wrapped under
/// [`WRAPPED_KEY`].
pub fn input_schema(schema: &Map<String, Value>) -> (Value, bool) {
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "object" => (Value::Object(schema.clone()), false),
        None if !schema.contains_key("anyOf")
            && !schema.contains_key("oneOf")
            && !schema.contains_key("allOf") =>
        {
            let mut completed = schema.clone();
            completed.insert("type".to_owned(), json!("object"));
            if !completed.contains_key("properties") {
                completed.insert("properties".to_owned(), json!({}));
            }
            (Value::Object(completed), false)
        }
        _ => (
            json!({
                "type": "object",
                "properties": { WRAPPED_KEY: schema },
                "required": [WRAPPED_KEY],
            }),
            true,
        ),
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_clean_names_are_kept() {
        assert_eq!(tool_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(
            tool_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
    }

    #[test]
    fn long_or_odd_names_are_shortened_reproducibly() {
        let long = "a_tool_with_a_remarkably_long_name_that_goes_on_and_on_and_on";
        let name = tool_name("server", long);
        assert_eq!(name.len(), MAX_TOOL_NAME);
        assert_eq!(name, tool_name("server", long));
        assert_ne!(name, tool_name("server", &format!("{long}2")));
        assert!(name.starts_with("mcp__server__a_tool_with"));
        let dotted = tool_name("s", "files.read");
        assert!(dotted.starts_with("mcp__s__files_read_"), "{dotted}");
        assert_ne!(dotted, tool_name("s", "files_read"));
        assert!(
            dotted
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }

    #[test]
    fn schemas_become_objects() {
        let object = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(
            input_schema(object.as_object().unwrap()),
            (object.clone(), false)
        );
        let bare = json!({"properties": {"a": {"type": "string"}}});
        let (completed, wrapped) = input_schema(bare.as_object().unwrap());
        assert!(!wrapped);
        assert_eq!(completed["type"], "object");
        let string = json!({"type": "string"});
        let (wrapper, wrapped) = input_schema(string.as_object().unwrap());
        assert!(wrapped);
        assert_eq!(wrapper["properties"]["value"], string);
        assert_eq!(
            input_schema(&Map::new()).0,
            json!({"type": "object", "properties": {}})
        );
    }
}
