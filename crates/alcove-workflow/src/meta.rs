//! A workflow's `export const meta = {…}`, read without running the script.
//!
//! The dialect asks for `meta` as the first statement and a pure literal, so
//! the plan shown before a run (name, description, phases) and the list of
//! saved workflows never execute a line of a script. This module parses
//! that literal (JavaScript object syntax: bare keys, single quotes,
//! trailing commas, comments, template strings without `${}`) into JSON and
//! refuses anything else — variables, calls, spreads, computed keys.

use serde_json::{Map, Number, Value};

use crate::lexer::Cursor;

/// A workflow's declared metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// `meta.name`: the workflow's name (and its saved name).
    pub name: String,
    /// `meta.description`: one line shown to the user.
    pub description: String,
    /// `meta.whenToUse`, when given.
    pub when_to_use: Option<String>,
    /// `meta.phases[].title`, in order.
    pub phases: Vec<String>,
    /// The literal as JSON.
    pub raw: Value,
}

/// A script split into its `meta` and its body.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The metadata.
    pub meta: Meta,
    /// The body: the source after the `meta` statement, with the statement's
    /// lines kept as blank lines so error line numbers match the file.
    pub body: String,
}

/// Splits `source` into its `meta` literal and its body.
pub fn parse_script(source: &str) -> Result<Parsed, String> {
    let mut cursor = Cursor::new(source);
    cursor.skip_trivia();
    for word in ["export", "const", "meta"] {
        if !cursor.eat_word(word) {
            return Err(
                "a workflow starts with `export const meta = { name, description, … }` \
                 (its first statement, a pure literal)"
                    .to_owned(),
            );
        }
        cursor.skip_trivia();
    }
    if !cursor.eat_char('=') {
        return Err("`export const meta` must be followed by `= { … }`".to_owned());
    }
    cursor.skip_trivia();
    if cursor.peek() != Some('{') {
        return Err("`meta` must be an object literal".to_owned());
    }
    let raw = literal(&mut cursor)?;
    cursor.skip_spaces_on_line();
    cursor.eat_char(';');
    let end = cursor.offset();
    let meta = read_meta(raw)?;
    let lines = source[..end].matches('\n').count();
    let body = format!("{}{}", "\n".repeat(lines), &source[end..]);
    Ok(Parsed { meta, body })
}

fn read_meta(raw: Value) -> Result<Meta, String> {
    let text = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_owned);
    let name = text("name").filter(|name| !name.trim().is_empty());
    let Some(name) = name else {
        return Err("meta.name is required (a non-empty string)".to_owned());
    };
    let Some(description) = text("description") else {
        return Err("meta.description is required (a string)".to_owned());
    };
    let phases = match raw.get("phases") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(title) => Ok(title.clone()),
                Value::Object(fields) => fields
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| "meta.phases: each phase needs a `title`".to_owned()),
                _ => Err("meta.phases: each phase is `{ title, detail? }`".to_owned()),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("meta.phases must be an array".to_owned()),
    };
    Ok(Meta {
        name,
        description,
        when_to_use: text("whenToUse"),
        phases,
        raw,
    })
}

fn literal(cursor: &mut Cursor<'_>) -> Result<Value, String> {
    cursor.skip_trivia();
    let at = cursor.line();
    let not_literal = |what: &str| {
        Err(format!(
            "meta (line {at}) must be a pure literal: {what} is not allowed"
        ))
    };
    match cursor.peek() {
        Some('{') => {
            cursor.bump();
            let mut fields = Map::new();
            loop {
                cursor.skip_trivia();
                if cursor.eat_char('}') {
                    return Ok(Value::Object(fields));
                }
                let key = match cursor.peek() {
                    None => return Err("meta: unterminated literal".to_owned()),
                    Some('\'' | '"') => cursor.string()?,
                    Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => cursor.word(),
                    Some('[') => return not_literal("a computed key"),
                    Some('.') => return not_literal("a spread"),
                    _ => return not_literal("this key"),
                };
                cursor.skip_trivia();
                if !cursor.eat_char(':') {
                    return not_literal("a shorthand or method property");
                }
                let value = literal(cursor)?;
                fields.insert(key, value);
                cursor.skip_trivia();
                if !cursor.eat_char(',') {
                    cursor.skip_trivia();
                    if cursor.eat_char('}') {
                        return Ok(Value::Object(fields));
                    }
                    if cursor.peek().is_none() {
                        return Err("meta: unterminated literal".to_owned());
                    }
                    return not_literal("an expression");
                }
            }
        }
        Some('[') => {
            cursor.bump();
            let mut items = Vec::new();
            loop {
                cursor.skip_trivia();
                if cursor.eat_char(']') {
                    return Ok(Value::Array(items));
                }
                match cursor.peek() {
                    None => return Err("meta: unterminated literal".to_owned()),
                    Some('.') => return not_literal("a spread"),
                    _ => {}
                }
                items.push(literal(cursor)?);
                cursor.skip_trivia();
                if !cursor.eat_char(',') {
                    cursor.skip_trivia();
                    if cursor.eat_char(']') {
                        return Ok(Value::Array(items));
                    }
                    return not_literal("an expression");
                }
            }
        }
        Some('\'' | '"') => cursor.string().map(Value::String),
        Some('`') => cursor.plain_template().map(Value::String),
        Some(c) if c.is_ascii_digit() || c == '-' => {
            let number = cursor.number();
            match number.parse::<f64>().ok().and_then(Number::from_f64) {
                Some(n) if number.parse::<i64>().is_ok() => Ok(number
                    .parse::<i64>()
                    .map(Value::from)
                    .unwrap_or(Value::Number(n))),
                Some(n) => Ok(Value::Number(n)),
                None => not_literal("this number"),
            }
        }
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => {
            match cursor.word().as_str() {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                "null" => Ok(Value::Null),
                _ => not_literal("a variable or call"),
            }
        }
        _ => not_literal("this expression"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_with_js_syntax_is_read_as_json() {
        let source = "// header\nexport const meta = {\n  name: 'review', // the name\n  \"description\": `Find bugs`,\n  phases: [{ title: 'Find', detail: 'x' }, { title: 'Verify', }],\n  limit: -3, ratio: 0.5,\n};\nreturn 1\n";
        let parsed = parse_script(source).unwrap();
        assert_eq!(parsed.meta.name, "review");
        assert_eq!(parsed.meta.description, "Find bugs");
        assert_eq!(parsed.meta.phases, vec!["Find", "Verify"]);
        assert_eq!(parsed.meta.raw["limit"], -3);
        assert_eq!(parsed.body.lines().count(), 8, "{:?}", parsed.body);
        assert_eq!(parsed.body.lines().nth(7), Some("return 1"));
    }

    #[test]
    fn anything_but_a_literal_is_refused() {
        for (source, words) in [
            (
                "const x = 1\nexport const meta = {name: 'a', description: 'b'}",
                "first statement",
            ),
            (
                "export const meta = {name: NAME, description: 'b'}",
                "variable or call",
            ),
            (
                "export const meta = {name: 'a', description: f()}",
                "variable or call",
            ),
            ("export const meta = {...base, name: 'a'}", "spread"),
            ("export const meta = {[k]: 'a'}", "computed key"),
            (
                "export const meta = {name: `a${x}`, description: 'b'}",
                "interpolation",
            ),
            (
                "export const meta = {description: 'b'}",
                "meta.name is required",
            ),
            (
                "export const meta = {name: 'a'}",
                "meta.description is required",
            ),
            (
                "export const meta = {name: 'a', description: 'b'",
                "unterminated",
            ),
        ] {
            let err = parse_script(source).unwrap_err();
            assert!(err.contains(words), "{source}: {err}");
        }
    }
}
