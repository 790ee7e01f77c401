//! Tool-call arguments cut short by their closing characters.
//!
//! Small models (and servers that stop a reply at its token limit) drop
//! the end of a call's arguments: `{"file_path": "pyproject.toml",
//! "offset": 1` without its `}`. Where the repair is unambiguous — the text
//! as written is the start of a JSON document, and only closing quotes,
//! brackets and braces are missing — the completed arguments are used; the
//! call then runs only if they fit the tool's schema, and its result says
//! what was added. Anything else (a value missing, a stray comma, a quote
//! where none belongs) stays an error for the model to correct.
//!
//! `partial-json-fixer` finds the closers (it keeps the prefix as written
//! and appends what the open strings, arrays and objects need); serde_json
//! decides that the text is a prefix of JSON before, and that the
//! completion parses after. What the crate does to anything but a clean
//! prefix (filling a missing value with `null`, dropping a trailing comma)
//! is refused here, since it changes what the model wrote.

use serde_json::Value;

/// Arguments completed by appending closers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Repaired {
    /// The completed arguments, a JSON object.
    pub(crate) value: Value,
    /// What was appended to the text the model wrote, e.g. `"}`.
    pub(crate) appended: String,
}

/// `raw` completed, when it is a JSON object cut short and nothing but
/// closing quotes, brackets and braces is missing.
pub(crate) fn complete(raw: &str) -> Option<Repaired> {
    // A prefix of a JSON text fails only by ending early; any other error
    // is a mistake inside what was written.
    match serde_json::from_str::<Value>(raw) {
        Err(error) if error.is_eof() => {}
        _ => return None,
    }
    if !raw.trim_start().starts_with('{') {
        return None;
    }
    let fixed = partial_json_fixer::fix_json(raw);
    let appended = fixed.strip_prefix(raw)?;
    if appended.is_empty()
        || !appended
            .chars()
            .all(|c| matches!(c, '"' | ']' | '}') || c.is_whitespace())
    {
        return None;
    }
    let value: Value = serde_json::from_str(&fixed).ok()?;
    value.is_object().then(|| Repaired {
        value,
        appended: appended.trim().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_closers_are_appended() {
        let repaired =
            complete(r#"{"file_path": "pyproject.toml", "limit": 2000, "offset": 1"#).unwrap();
        assert_eq!(
            repaired.value,
            json!({"file_path": "pyproject.toml", "limit": 2000, "offset": 1})
        );
        assert_eq!(repaired.appended, "}");
        let repaired = complete(r#"{"file_path": "a.txt"#).unwrap();
        assert_eq!(repaired.value, json!({"file_path": "a.txt"}));
        assert_eq!(repaired.appended, "\"}");
        let repaired = complete(r#"{"command": "ls", "args": ["-l", "src"#).unwrap();
        assert_eq!(
            repaired.value,
            json!({"command": "ls", "args": ["-l", "src"]})
        );
        assert_eq!(repaired.appended, "\"]}");
        let repaired = complete(r#"{"old_string": "a {\"b\": [", "x": {"y": 1"#).unwrap();
        assert_eq!(
            repaired.value,
            json!({"old_string": "a {\"b\": [", "x": {"y": 1}})
        );
    }

    #[test]
    fn anything_else_is_left_alone() {
        for raw in [
            r#"{"file_path": "a", "limit": "#,
            r#"{"file_path": "a", "limit""#,
            r#"{"file_path": "a","#,
            r#"{"a": tru"#,
            r#"{"a": 12."#,
            r#"{"a": "x\"#,
            r#"{file_path: "a""#,
            r#"{"file_path": "a" "limit": 3"#,
            r#"{"file_path": "a"}"#,
            r#"{"file_path": "a"}}"#,
            r#"["a", "b""#,
            r#""a"#,
            "",
            "not json",
        ] {
            assert_eq!(complete(raw), None, "{raw}");
        }
    }
}
