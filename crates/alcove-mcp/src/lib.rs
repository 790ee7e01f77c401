//! alcove's Model Context Protocol client.
//!
//! Users bring MCP servers configured for Claude Code (`.mcp.json`) or
//! Codex (`[mcp_servers.<name>]`); [`config`] reads both shapes into
//! [`ServerConfig`]s. A session starts them all in the background with
//! [`McpManager::start`]: one connection, one process per server for the
//! whole session, however many agents use it — every agent at every depth
//! gets the same [`McpTool`]s by reference, narrowed like built-in tools.
//! The connection (rmcp, stdio or streamable HTTP) lives in [`server`]:
//! a process group per server, stderr to a log file, tool timeouts with
//! `notifications/cancelled`, bounded restarts after a crash, and every
//! process group killed at the end.
//!
//! This crate never prints and never decides permissions: the tools it makes
//! go through alcove's one dispatch path (gate, hooks, approvals, result cap).
//! The one environment variable it reads is a server's `bearer_token_env`.

mod catalog;
pub mod config;
mod manager;
pub mod names;
mod resources;
pub mod server;
mod tool;

pub use config::{ServerConfig, ServerEntry, Transport};
pub use manager::{McpManager, ServerStatus};
pub use server::State;
pub use tool::McpTool;
