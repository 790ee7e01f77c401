//! The keys a settings type accepts, read from its `Deserialize` impl, so
//! the list of known keys cannot drift from the structs.
//!
//! Config files and front matter are checked against these trees: a key
//! the type would ignore is named with the nearest known one
//! (`max_turn` → `max_turns`, `thinking` → `model_options.<provider>.thinking`).
//!
//! How: serde's derived impls hand every field name (aliases included) to
//! `deserialize_struct`. [`KeyTree::of`] deserializes the type from a
//! tracer once per node: each pass follows one path of fields (a map's
//! values at the placeholder key `*`) and records what kind of value it
//! finds at the path's end. A `#[serde(flatten)]` struct, an untagged enum
//! or a free-form value is recorded as open: anything under it is accepted.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};

/// The key of a map's values in a [`KeyTree`] path.
pub const ANY_KEY: &str = "*";

/// What a type accepts at one place.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyTree {
    /// A scalar, a list or an enum: no keys below it are checked.
    Leaf,
    /// Anything (free-form tables, flattened or untagged types).
    Open,
    /// A struct: these fields only.
    Fields(BTreeMap<String, KeyTree>),
    /// A table with keys of the user's choosing, each value of this kind.
    Map(Box<KeyTree>),
}

/// A key that `tree` does not know, where it is, and the nearest known key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// The dotted path of the key as written.
    pub path: String,
    /// The nearest known key, dotted, with `<name>` for a map's key.
    pub suggestion: Option<String>,
}

impl KeyTree {
    /// The keys `T` accepts.
    pub fn of<T: DeserializeOwned>() -> KeyTree {
        trace_node::<T>(&mut Vec::new(), 0)
    }

    /// Adds (or replaces) a top-level field: sections read from the raw
    /// tables by their consumers.
    pub fn with_field(mut self, name: &str, tree: KeyTree) -> KeyTree {
        if let KeyTree::Fields(fields) = &mut self {
            fields.insert(name.to_owned(), tree);
        }
        self
    }

    /// Checks `path` (the keys leading to a written key): `None` when the
    /// type accepts it, otherwise the key with a suggestion.
    pub fn check(&self, path: &[&str]) -> Option<UnknownKey> {
        let mut node = self;
        for (depth, key) in path.iter().enumerate() {
            match node {
                KeyTree::Open | KeyTree::Leaf => return None,
                KeyTree::Map(value) => node = value,
                KeyTree::Fields(fields) => match fields.get(*key) {
                    Some(next) => node = next,
                    None => {
                        return Some(UnknownKey {
                            path: path.join("."),
                            suggestion: self.suggest(&path[..depth], key),
                        });
                    }
                },
            }
        }
        None
    }

    /// The nearest known key to `key` written under `parent`: a sibling
    /// within a small edit distance, else a key of that name elsewhere,
    /// else the closest key anywhere.
    fn suggest(&self, parent: &[&str], key: &str) -> Option<String> {
        let mut all = Vec::new();
        self.paths(&mut Vec::new(), &mut all);
        let prefix: Vec<String> = parent.iter().map(|part| (*part).to_owned()).collect();
        let close = |candidate: &str| {
            let distance =
                strsim::damerau_levenshtein(&key.to_lowercase(), &candidate.to_lowercase());
            (distance <= 2.max(key.chars().count() / 3)).then_some(distance)
        };
        let written = |path: &[String]| -> String {
            path.iter()
                .map(|part| if part == ANY_KEY { "<name>" } else { part })
                .collect::<Vec<_>>()
                .join(".")
        };
        let under_parent = |path: &[String]| {
            path.len() == prefix.len() + 1
                && path
                    .iter()
                    .zip(&prefix)
                    .all(|(known, written)| known == written || known == ANY_KEY)
        };
        let sibling = all
            .iter()
            .filter(|path| under_parent(path))
            .filter_map(|path| Some((close(path.last()?)?, path)))
            .min_by_key(|(distance, _)| *distance);
        if let Some((_, path)) = sibling {
            return Some(written(path));
        }
        let same_name = all
            .iter()
            .filter(|path| path.last().is_some_and(|last| last == key))
            .min_by_key(|path| path.len());
        if let Some(path) = same_name {
            return Some(written(path));
        }
        all.iter()
            .filter_map(|path| Some((close(path.last()?)?, path)))
            .min_by_key(|(distance, path)| (*distance, path.len()))
            .map(|(_, path)| written(path))
    }

    /// Every known path below this node.
    fn paths(&self, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match self {
            KeyTree::Fields(fields) => {
                for (name, child) in fields {
                    prefix.push(name.clone());
                    out.push(prefix.clone());
                    child.paths(prefix, out);
                    prefix.pop();
                }
            }
            KeyTree::Map(value) => {
                prefix.push(ANY_KEY.to_owned());
                value.paths(prefix, out);
                prefix.pop();
            }
            KeyTree::Leaf | KeyTree::Open => {}
        }
    }
}

/// The node at `path`, and below it.
fn trace_node<T: DeserializeOwned>(path: &mut Vec<String>, depth: usize) -> KeyTree {
    // Settings types are shallow; the bound only guards a recursive type.
    if depth > 8 {
        return KeyTree::Open;
    }
    match trace_kind::<T>(path) {
        Kind::Leaf => KeyTree::Leaf,
        Kind::Open => KeyTree::Open,
        Kind::Fields(names) => {
            let mut fields = BTreeMap::new();
            for &name in names {
                path.push(name.to_owned());
                fields.insert(name.to_owned(), trace_node::<T>(path, depth + 1));
                path.pop();
            }
            KeyTree::Fields(fields)
        }
        Kind::Map => {
            path.push(ANY_KEY.to_owned());
            let value = trace_node::<T>(path, depth + 1);
            path.pop();
            KeyTree::Map(Box::new(value))
        }
    }
}

/// What one pass found at the end of its path.
#[derive(Debug, Clone)]
enum Kind {
    Leaf,
    Open,
    Fields(&'static [&'static str]),
    Map,
}

fn trace_kind<T: DeserializeOwned>(path: &[String]) -> Kind {
    let found = std::cell::Cell::new(None);
    // Deserialization of the placeholder values may fail (a validator
    // refusing `""`); what was found is recorded before that.
    let _ = T::deserialize(Tracer {
        path,
        found: &found,
    });
    found.take().unwrap_or(Kind::Open)
}

#[derive(Debug)]
struct TraceError(String);

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TraceError {}

impl de::Error for TraceError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        TraceError(msg.to_string())
    }
}

/// A deserializer that walks `path` and records what it finds there.
struct Tracer<'a> {
    path: &'a [String],
    found: &'a std::cell::Cell<Option<Kind>>,
}

impl Tracer<'_> {
    fn record(&self, kind: Kind) {
        self.found.set(Some(kind));
    }

    fn at_end(&self) -> bool {
        self.path.is_empty()
    }

    /// A value at the end of the path, or in the way of it: a leaf.
    fn leaf(&self) {
        if self.at_end() {
            self.record(Kind::Leaf);
        }
    }
}

/// A map of at most one entry: the next key of the path and its value.
struct OneEntry<'a> {
    entry: Option<(&'a str, Tracer<'a>)>,
    value: Option<Tracer<'a>>,
}

impl<'de> de::MapAccess<'de> for OneEntry<'_> {
    type Error = TraceError;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, TraceError> {
        let Some((key, value)) = self.entry.take() else {
            return Ok(None);
        };
        self.value = Some(value);
        let key: de::value::StrDeserializer<'_, TraceError> = key.into_deserializer();
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, TraceError> {
        match self.value.take() {
            Some(value) => seed.deserialize(value),
            None => Err(TraceError("no value".to_owned())),
        }
    }
}

impl<'a> Tracer<'a> {
    fn entry(self) -> OneEntry<'a> {
        OneEntry {
            entry: self.path.split_first().map(|(key, rest)| {
                (
                    key.as_str(),
                    Tracer {
                        path: rest,
                        found: self.found,
                    },
                )
            }),
            value: None,
        }
    }
}

macro_rules! leaf {
    ($($method:ident => $visit:ident($value:expr)),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
            self.leaf();
            visitor.$visit($value)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Tracer<'_> {
    type Error = TraceError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        if self.at_end() {
            self.record(Kind::Open);
        }
        visitor.visit_unit()
    }

    leaf! {
        deserialize_bool => visit_bool(false),
        deserialize_i8 => visit_i64(0),
        deserialize_i16 => visit_i64(0),
        deserialize_i32 => visit_i64(0),
        deserialize_i64 => visit_i64(0),
        deserialize_u8 => visit_u64(0),
        deserialize_u16 => visit_u64(0),
        deserialize_u32 => visit_u64(0),
        deserialize_u64 => visit_u64(0),
        deserialize_f32 => visit_f64(0.0),
        deserialize_f64 => visit_f64(0.0),
        deserialize_char => visit_char('a'),
        deserialize_str => visit_str(""),
        deserialize_string => visit_str(""),
        deserialize_bytes => visit_bytes(&[]),
        deserialize_byte_buf => visit_bytes(&[]),
        deserialize_identifier => visit_str(""),
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        self.leaf();
        visitor.visit_unit()
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        self.leaf();
        visitor.visit_unit()
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_some(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.leaf();
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        self.leaf();
        visitor.visit_seq(de::value::SeqDeserializer::<
            std::iter::Empty<bool>,
            TraceError,
        >::new(std::iter::empty()))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        if self.at_end() {
            self.record(Kind::Map);
            return visitor.visit_map(OneEntry {
                entry: None,
                value: None,
            });
        }
        if self.path[0] != ANY_KEY {
            return Err(TraceError("a map's key is not traced".to_owned()));
        }
        visitor.visit_map(self.entry())
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        if self.at_end() {
            self.record(Kind::Fields(fields));
            return visitor.visit_map(OneEntry {
                entry: None,
                value: None,
            });
        }
        visitor.visit_map(self.entry())
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.leaf();
        Err(TraceError("enums are leaves".to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Default, Deserialize)]
    #[serde(default)]
    #[allow(dead_code)]
    struct Options {
        thinking: Option<u32>,
        effort: Option<String>,
    }

    #[derive(Debug, Default, Deserialize)]
    #[serde(default)]
    #[allow(dead_code)]
    struct Settings {
        max_turns: Option<u32>,
        #[serde(alias = "permissionMode")]
        permission_mode: Option<String>,
        model_options: BTreeMap<String, Options>,
        free: Option<serde_json::Value>,
        list: Vec<String>,
    }

    #[test]
    fn the_tree_follows_the_struct_with_aliases_maps_and_open_values() {
        let tree = KeyTree::of::<Settings>();
        assert_eq!(tree.check(&["max_turns"]), None);
        assert_eq!(tree.check(&["permissionMode"]), None);
        assert_eq!(tree.check(&["model_options", "openai", "thinking"]), None);
        assert_eq!(tree.check(&["free", "anything", "below"]), None);
        assert_eq!(tree.check(&["list"]), None);
        let unknown = |path: &[&str]| tree.check(path).and_then(|key| key.suggestion);
        assert_eq!(unknown(&["max_turn"]).as_deref(), Some("max_turns"));
        assert_eq!(
            unknown(&["permision_mode"]).as_deref(),
            Some("permission_mode")
        );
        assert_eq!(
            unknown(&["thinking"]).as_deref(),
            Some("model_options.<name>.thinking")
        );
        assert_eq!(
            unknown(&["model_options", "openai", "thinkin"]).as_deref(),
            Some("model_options.<name>.thinking")
        );
        assert_eq!(unknown(&["zzzzzzzzzzzz"]), None);
        assert!(tree.check(&["zzzzzzzzzzzz"]).is_some());
    }
}
