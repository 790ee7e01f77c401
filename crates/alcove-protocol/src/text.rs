//! Text that never changes once made, shared instead of copied, with room
//! for one digest of it and for its JSON.
//!
//! A tool result (a file read, a search's hits) is most of a long
//! conversation's bytes, and every request sends it again. The model
//! client keys the JSON it keeps for a message by a digest of the
//! message's content; computing that digest from the bytes on every
//! request made fingerprints a seventh of a turn's instructions at 100
//! messages (168 K of 1,094 K; bench/notes.md, point 37). A [`SharedText`] cannot be changed in place
//! (a rewrite makes a new one), so a digest computed once stays true for
//! as long as the text lives, and is kept beside it.
//!
//! The same holds for its JSON: a tool result was escaped three times, for
//! the transcript's `tool_call_finished` and `message` lines and for the
//! next request, and escaping was a quarter of a long session's per-turn
//! instructions (bench/notes.md, point 40). A text of [`JSON_KEPT_FROM`]
//! bytes or more is escaped once, at its first serialization, and the
//! JSON is kept beside it (the text's size again, for as long as it
//! lives).

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// An immutable, cheaply cloned text; see the module's documentation.
#[derive(Clone)]
pub struct SharedText(Arc<Inner>);

struct Inner {
    text: Box<str>,
    /// The seed and digest, set at most once, by [`SharedText::digest`].
    digest: OnceLock<(u64, u64)>,
    /// The text as a JSON string, quoted and escaped, made at its first
    /// serialization when it is long enough to be worth keeping.
    json: OnceLock<Box<RawValue>>,
}

/// The length from which a text keeps its JSON: shorter ones are escaped
/// each time, which costs less than the allocation that keeping needs.
pub(crate) const JSON_KEPT_FROM: usize = 512;

impl SharedText {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0.text
    }

    /// The digest `compute` gives for this text under `seed`, computed at
    /// the first call and remembered with the seed. `compute` and `seed`
    /// together are the digest function: every caller passes the model
    /// client's (xxh3, seeded once per process), and a digest remembered
    /// under another seed is not used. The text cannot change, so the
    /// remembered value stays the digest of what it holds.
    pub fn digest(&self, seed: u64, compute: impl FnOnce(&str, u64) -> u64) -> u64 {
        if let Some(&(kept_seed, digest)) = self.0.digest.get() {
            if kept_seed == seed {
                return digest;
            }
            return compute(&self.0.text, seed);
        }
        let digest = compute(&self.0.text, seed);
        // Another thread may have set it meanwhile: to the same value.
        let _ = self.0.digest.set((seed, digest));
        digest
    }

    /// The text as a JSON string, escaped at the first call and kept; `None`
    /// for a short text (or one serde_json cannot encode).
    fn kept_json(&self) -> Option<&RawValue> {
        if self.0.text.len() < JSON_KEPT_FROM {
            return None;
        }
        if let Some(json) = self.0.json.get() {
            return Some(json);
        }
        let json = serde_json::value::to_raw_value(self.as_str()).ok()?;
        // Another thread may have set it meanwhile: to the same text.
        Some(self.0.json.get_or_init(|| json))
    }
}

impl Deref for SharedText {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0.text
    }
}

impl From<String> for SharedText {
    fn from(text: String) -> SharedText {
        SharedText(Arc::new(Inner {
            text: text.into_boxed_str(),
            digest: OnceLock::new(),
            json: OnceLock::new(),
        }))
    }
}

impl From<&str> for SharedText {
    fn from(text: &str) -> SharedText {
        SharedText::from(text.to_owned())
    }
}

impl PartialEq for SharedText {
    fn eq(&self, other: &SharedText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for SharedText {}

impl PartialEq<&str> for SharedText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A JSON string. serde_json writes the kept JSON as it is (to text) or
/// reads it back (to a `Value`); the text only ever goes to JSON.
impl Serialize for SharedText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.kept_json() {
            Some(json) => json.serialize(serializer),
            None => serializer.serialize_str(self.as_str()),
        }
    }
}

impl<'de> Deserialize<'de> for SharedText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SharedText, D::Error> {
        String::deserialize(deserializer).map(SharedText::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_computed_once_and_shared_by_clones() {
        let text = SharedText::from("a file's lines");
        let copy = text.clone();
        let mut calls = 0;
        let first = text.digest(1, |text, seed| {
            calls += 1;
            text.len() as u64 + seed
        });
        let again = copy.digest(1, |_, _| {
            calls += 1;
            0
        });
        assert_eq!((first, again, calls), (15, 15, 1));
        // Under another seed the kept digest is not used.
        assert_eq!(copy.digest(2, |_, seed| seed * 100), 200);
        assert_eq!(copy.digest(1, |_, _| 0), 15);
        // A text made anew, even equal, has its own digest to compute.
        assert_eq!(SharedText::from("a file's lines").digest(1, |_, _| 7), 7);
    }

    #[test]
    fn a_long_text_is_escaped_once_and_written_as_the_same_json_string() {
        let line = "a \"quoted\"\tword\u{1}\n";
        let long = line.repeat(JSON_KEPT_FROM / line.len() + 1);
        let escaped = serde_json::to_string(long.as_str()).unwrap();
        let text = SharedText::from(long.as_str());
        let copy = text.clone();
        assert!(text.0.json.get().is_none());
        assert_eq!(serde_json::to_string(&text).unwrap(), escaped);
        // The clone shares what the first serialization kept.
        assert_eq!(
            copy.0.json.get().map(|json| json.get()),
            Some(escaped.as_str())
        );
        assert_eq!(serde_json::to_string(&copy).unwrap(), escaped);
        // Inside a struct, to a `Value`, and back.
        let value =
            serde_json::to_value(std::collections::BTreeMap::from([("content", &copy)])).unwrap();
        assert_eq!(value["content"], serde_json::Value::String(long.clone()));
        let back: SharedText = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, long.as_str());
    }

    #[test]
    fn a_short_text_keeps_no_json() {
        let text = SharedText::from("short");
        assert_eq!(serde_json::to_string(&text).unwrap(), "\"short\"");
        assert!(text.0.json.get().is_none());
    }

    #[test]
    fn it_reads_and_writes_as_a_plain_json_string() {
        let text: SharedText = serde_json::from_str("\"line \\\"one\\\"\"").unwrap();
        assert_eq!(text, "line \"one\"");
        assert_eq!(
            serde_json::to_string(&text).unwrap(),
            "\"line \\\"one\\\"\""
        );
    }
}
