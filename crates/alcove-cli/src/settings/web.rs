//! `[web]`: the search service behind `WebSearch`. No default (the tool
//! is offered only when a URL is set), no environment variable.

use serde::Deserialize;

/// `[web]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct WebEntry {
    /// A SearXNG-compatible endpoint (`https://search.example/search`):
    /// `WebSearch` is offered only when it is set.
    pub(crate) search_url: Option<String>,
}

/// The search endpoint, when one is set (and not blank).
pub(crate) fn search_url(entry: &WebEntry) -> Option<&str> {
    entry
        .search_url
        .as_deref()
        .filter(|url| !url.trim().is_empty())
}
