//! Subagents: delegation to a child that runs the same loop in a fresh
//! conversation.
//!
//! - `supervisor`: what a session's delegations share (limits, slots,
//!   definitions, naming, transcripts).
//! - `agent_tool`: the synchronous `Agent` tool.
//! - `definitions`: the kinds of child (`general-purpose`, `explore`, …).
//! - `report`: the summary and the harness-written evidence footer.

mod agent_tool;
mod child;
mod definitions;
mod report;
mod supervisor;

pub use definitions::{AgentDefinition, DEFAULT_AGENT_TYPE, Definitions};
pub use supervisor::{AgentLimits, ModelFactory, Supervisor};
