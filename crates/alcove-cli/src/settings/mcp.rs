//! `[mcp_servers.<name>]`: MCP servers in Codex's shape. Servers add up
//! across the user's and the project's files (`mcp_setup.rs` reads each
//! layer, with `.mcp.json` and `.alcove/mcp.json`); a server's own keys
//! are its transport's and are not checked here.

use alcove_core::known_keys::KeyTree;

/// The keys `[mcp_servers]` accepts: any server name, anything inside.
pub(crate) fn known_keys() -> KeyTree {
    KeyTree::Map(Box::new(KeyTree::Open))
}
