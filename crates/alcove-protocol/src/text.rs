//! Text that never changes once made, shared instead of copied, with room
//! for one digest of it.
//!
//! A tool result (a file read, a search's hits) is most of a long
//! conversation's bytes, and every request sends it again. The model
//! client keys the JSON it keeps for a message by a digest of the
//! message's content; computing that digest from the bytes on every
//! request made fingerprints a seventh of a turn's instructions at 100
//! messages (168 K of 1,094 K; bench/notes.md, point 37). A [`SharedText`] cannot be changed in place
//! (a rewrite makes a new one), so a digest computed once stays true for
//! as long as the text lives, and is kept beside it.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An immutable, cheaply cloned text; see the module's documentation.
#[derive(Clone)]
pub struct SharedText(Arc<Inner>);

struct Inner {
    text: Box<str>,
    /// The seed and digest, set at most once, by [`SharedText::digest`].
    digest: OnceLock<(u64, u64)>,
}

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

impl Serialize for SharedText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
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
    fn it_reads_and_writes_as_a_plain_json_string() {
        let text: SharedText = serde_json::from_str("\"line \\\"one\\\"\"").unwrap();
        assert_eq!(text, "line \"one\"");
        assert_eq!(
            serde_json::to_string(&text).unwrap(),
            "\"line \\\"one\\\"\""
        );
    }
}
