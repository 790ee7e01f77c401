//! Subagents: delegation to a child that runs the same loop in a fresh
//! conversation.
//!
//! - `supervisor`: what a session's delegations share (limits, slots,
//!   definitions, naming, transcripts).
//! - `agent_tool`: the synchronous `Agent` tool.
//! - `definitions`: the kinds of child (`general-purpose`, `explore`, …).
//! - `loader`: definitions from Markdown files with YAML front matter.
//! - `report`: the summary and the harness-written evidence footer.

mod agent_tool;
mod child;
mod collab;
mod definitions;
mod loader;
mod registry;
mod report;
mod runner;
mod submission;
mod supervisor;

pub use definitions::{AgentDefinition, AgentPermissions, DEFAULT_AGENT_TYPE, Definitions};
pub use loader::{DefinitionError, load_definitions, parse_definition};
pub use supervisor::{AgentLimits, ModelFactory, Supervisor};
