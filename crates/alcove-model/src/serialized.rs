//! Serialized history messages, kept between requests.
//!
//! Every turn sends the whole history again, and escaping it into JSON was
//! most of a long session's per-turn instructions (the profile in
//! bench/notes.md). A message does not change once it is in the history,
//! so its JSON is kept, keyed by a fingerprint of its content, and reused
//! by the next request: only new (or changed) messages are escaped again.
//! Keying by content, not by position or address, keeps it correct when
//! compaction rewrites the history and when several agents (children share
//! their parent's client) send different histories through one client.
//!
//! Fingerprints are xxh3 with a seed drawn once per process (SipHash was a
//! sixth of a long session's instructions; a per-process seed keeps text a
//! model or a file chose from aiming at a collision).
//!
//! The memory is bounded: entries live in two generations of at most
//! [`GENERATION_BYTES`] each; when the newer fills up, the older is dropped
//! and whatever the next requests still use moves forward again.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use alcove_protocol::{SharedText, ToolSpec};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use xxhash_rust::xxh3::Xxh3;

/// The most JSON bytes one generation holds.
pub(crate) const GENERATION_BYTES: usize = 1 << 20;

/// A message's JSON, shared between the cache and the request being sent.
#[derive(Clone)]
pub(crate) struct Shared(Arc<RawValue>);

impl Serialize for Shared {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// A piece of a request body: built now, or its JSON from an earlier
/// request.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Piece<T> {
    Fresh(T),
    Cached(Shared),
}

/// The cache: one per client, shared by every agent using the client.
#[derive(Default)]
pub(crate) struct SerializedCache {
    generations: Mutex<Generations>,
    /// The JSON of the tool arrays sent lately, by identity: an agent
    /// sends the same `Arc` every turn, and holding it here keeps its
    /// address from being reused for other tools. (Fingerprinting the
    /// schemas on every request was 2–4 % of the instructions.)
    tools: Mutex<VecDeque<(Arc<[ToolSpec]>, Shared)>>,
}

/// How many tool arrays [`SerializedCache::tools`] keeps: one per agent
/// type in use at once, about.
const TOOL_ARRAYS_KEPT: usize = 8;

#[derive(Default)]
struct Generations {
    newer: HashMap<u64, Shared>,
    newer_bytes: usize,
    older: HashMap<u64, Shared>,
}

impl std::fmt::Debug for SerializedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SerializedCache")
    }
}

impl SerializedCache {
    /// The JSON of the value whose fingerprint is `key`, from the cache or
    /// made by serializing `value`; `None` when it cannot be serialized
    /// (the caller then sends the value itself).
    pub(crate) fn get_or_insert(&self, key: u64, value: &impl Serialize) -> Option<Shared> {
        self.get_or_make(key, || SerializedCache::piece(value))
    }

    /// `value` as a piece of a body: its JSON, kept under `key`, or the
    /// value itself when it cannot be serialized.
    pub(crate) fn piece_of<T: Serialize>(&self, key: u64, value: T) -> Piece<T> {
        self.get_or_insert(key, &value)
            .map_or(Piece::Fresh(value), Piece::Cached)
    }

    /// The JSON kept under `key`, or made by `make` and kept.
    pub(crate) fn get_or_make(
        &self,
        key: u64,
        make: impl FnOnce() -> Option<Shared>,
    ) -> Option<Shared> {
        if let Ok(mut generations) = self.generations.lock() {
            if let Some(found) = generations.newer.get(&key) {
                return Some(found.clone());
            }
            if let Some(found) = generations.older.remove(&key) {
                generations.insert(key, found.clone());
                return Some(found);
            }
        }
        let made = make()?;
        if let Ok(mut generations) = self.generations.lock() {
            generations.insert(key, made.clone());
        }
        Some(made)
    }
}

impl SerializedCache {
    /// The JSON of `tools`, from the cache when this very array was sent
    /// before, or made by `make` (`None` when it cannot be made).
    pub(crate) fn tools(
        &self,
        tools: &Arc<[ToolSpec]>,
        make: impl FnOnce() -> Option<Shared>,
    ) -> Option<Shared> {
        if let Ok(kept) = self.tools.lock()
            && let Some((_, json)) = kept.iter().find(|(kept, _)| Arc::ptr_eq(kept, tools))
        {
            return Some(json.clone());
        }
        let made = make()?;
        if let Ok(mut kept) = self.tools.lock() {
            // Another request with these tools may have kept theirs meanwhile
            // (the JSON is made outside the lock: it takes a while).
            if let Some((_, json)) = kept.iter().find(|(kept, _)| Arc::ptr_eq(kept, tools)) {
                return Some(json.clone());
            }
            if kept.len() == TOOL_ARRAYS_KEPT {
                kept.pop_front();
            }
            kept.push_back((tools.clone(), made.clone()));
        }
        Some(made)
    }

    /// Serializes `value` into a piece of a body.
    pub(crate) fn piece(value: &impl Serialize) -> Option<Shared> {
        Some(Shared(Arc::from(
            serde_json::value::to_raw_value(value).ok()?,
        )))
    }
}

impl Generations {
    fn insert(&mut self, key: u64, value: Shared) {
        let bytes = value.0.get().len();
        if self.newer_bytes + bytes > GENERATION_BYTES {
            self.older = std::mem::take(&mut self.newer);
            self.newer_bytes = 0;
        }
        self.newer_bytes += bytes;
        self.newer.insert(key, value);
    }
}

/// The piece for a request's tool array, `None` when it has no tools:
/// with a `cache`, its JSON from there when this very array was sent
/// before, else made from `shape` (the array in the wire's shape).
pub(crate) fn tools_piece<T: Serialize>(
    cache: Option<&SerializedCache>,
    tools: &Arc<[ToolSpec]>,
    shape: impl Fn() -> T,
) -> Option<Piece<T>> {
    if tools.is_empty() {
        return None;
    }
    Some(match cache {
        Some(cache) => cache
            .tools(tools, || SerializedCache::piece(&shape()))
            .map_or_else(|| Piece::Fresh(shape()), Piece::Cached),
        None => Piece::Fresh(shape()),
    })
}

/// The seed of fingerprints, drawn once per process.
fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| fastrand::u64(..))
}

/// A hasher for fingerprints, seeded once per process.
pub(crate) fn hasher() -> Xxh3 {
    Xxh3::with_seed(seed())
}

/// A fingerprint's part for a text (its digest and length), hashed in one
/// pass: a message's texts (a file read, a long tool result) are most of
/// its bytes, and streaming them through [`hasher`] copied them through
/// its buffer as well (fingerprints: 12 % fewer instructions a turn;
/// bench/notes.md, point 35).
pub(crate) fn text_digest(text: &str) -> (u64, usize) {
    (
        xxhash_rust::xxh3::xxh3_64_with_seed(text.as_bytes(), seed()),
        text.len(),
    )
}

/// [`text_digest`] of a tool result, whose bytes are hashed once in its
/// life: the text cannot change, and keeps its digest
/// ([`SharedText::digest`]); every request after the first finds it there.
pub(crate) fn shared_digest(text: &SharedText) -> (u64, usize) {
    let digest = text.digest(seed(), |text, seed| {
        xxhash_rust::xxh3::xxh3_64_with_seed(text.as_bytes(), seed)
    });
    (digest, text.len())
}

/// Feeds a JSON value to a hasher, structure included (a string and an
/// array of its characters differ).
pub(crate) fn hash_value(value: &Value, state: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(state),
        Value::Bool(flag) => (1u8, flag).hash(state),
        Value::Number(number) => (2u8, number).hash(state),
        Value::String(text) => (3u8, text_digest(text)).hash(state),
        Value::Array(items) => {
            (4u8, items.len()).hash(state);
            for item in items {
                hash_value(item, state);
            }
        }
        Value::Object(map) => {
            (5u8, map.len()).hash(state);
            for (key, item) in map {
                key.hash(state);
                hash_value(item, state);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Serialize)]
    struct Note<'a> {
        text: &'a str,
    }

    fn tool_array(name: &str) -> Arc<[ToolSpec]> {
        vec![ToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: json!({"type": "object"}).into(),
        }]
        .into()
    }

    #[test]
    fn a_tool_array_is_served_by_identity_and_at_most_eight_are_kept() {
        let cache = SerializedCache::default();
        let made = std::cell::Cell::new(0);
        let make = |tools: &Arc<[ToolSpec]>| {
            cache.tools(tools, || {
                made.set(made.get() + 1);
                SerializedCache::piece(&tools[0].name)
            })
        };
        let first = tool_array("a");
        make(&first);
        make(&first);
        assert_eq!(made.get(), 1, "the same array is made once");
        // Equal content in another array is made again: only identity counts.
        make(&tool_array("a"));
        assert_eq!(made.get(), 2);
        for n in 0..8 {
            make(&tool_array(&n.to_string()));
        }
        make(&first);
        assert_eq!(made.get(), 11, "the oldest array was let go");
    }

    #[test]
    fn a_cached_value_is_served_again_and_a_new_key_is_serialized() {
        let cache = SerializedCache::default();
        let first = cache.get_or_insert(
            1,
            &Note {
                text: "a \"quoted\" line",
            },
        );
        assert_eq!(
            first.map(|shared| shared.0.get().to_owned()),
            Some(r#"{"text":"a \"quoted\" line"}"#.to_owned())
        );
        // Same key: the cached JSON, whatever the value (keys are fingerprints).
        let again = cache.get_or_insert(1, &Note { text: "other" });
        assert_eq!(
            again.map(|s| s.0.get().to_owned()).as_deref(),
            Some(r#"{"text":"a \"quoted\" line"}"#)
        );
        let other = cache.get_or_insert(2, &Note { text: "other" });
        assert_eq!(
            other.map(|s| s.0.get().to_owned()).as_deref(),
            Some(r#"{"text":"other"}"#)
        );
    }

    #[test]
    fn memory_stays_within_two_generations() {
        let cache = SerializedCache::default();
        let big = "x".repeat(GENERATION_BYTES / 4);
        for key in 0..40 {
            cache.get_or_insert(key, &Note { text: &big });
        }
        let generations = cache.generations.lock().unwrap();
        let held: usize = generations
            .newer
            .values()
            .chain(generations.older.values())
            .map(|shared| shared.0.get().len())
            .sum();
        assert!(held <= 2 * GENERATION_BYTES, "{held} bytes held");
        assert!(
            generations.newer.contains_key(&39),
            "the newest entry is kept"
        );
    }

    #[test]
    fn fingerprints_tell_structures_apart() {
        let hash = |value: &Value| {
            let mut state = hasher();
            hash_value(value, &mut state);
            state.finish()
        };
        assert_ne!(hash(&json!("ab")), hash(&json!(["a", "b"])));
        assert_ne!(hash(&json!({"a": 1})), hash(&json!({"a": "1"})));
        assert_ne!(hash(&json!([[1], 2])), hash(&json!([1, [2]])));
        assert_ne!(hash(&json!("text one")), hash(&json!("text two")));
        assert_ne!(text_digest("ab"), text_digest("ba"));
        assert_eq!(
            hash(&json!({"a": [1, null]})),
            hash(&json!({"a": [1, null]}))
        );
    }
}
