//! Where `Read` gets a text file's contents when the front end holds a
//! newer copy than the disk: an editor's unsaved buffer, which an ACP
//! client offers through `fs/read_text_file`. It is a seam of the one
//! `Read` tool, not a second tool: the call is looked up, validated,
//! gated (deny rules hold) and hooked as every call is, and only then is
//! the source asked for the text of the path the gate checked.

use std::path::Path;

/// A holder of files' text besides the disk.
#[async_trait::async_trait]
pub trait FileSource: Send + Sync {
    /// The text of `path` (absolute) as this source holds it, or `None`
    /// when it holds none or cannot say (the disk is read then). It must
    /// answer in bounded time: a peer that does not answer is `None`.
    async fn text(&self, path: &Path) -> Option<String>;
}
