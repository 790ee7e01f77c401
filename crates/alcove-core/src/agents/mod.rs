//! Subagents: delegation to a child that runs the same loop in a fresh
//! conversation.
//!
//! - `supervisor`: what a session's delegations share (limits, leases,
//!   definitions, naming, the registry, host runs).
//! - `scope`: the caller's wiring, lent to a delegation tool per call.
//! - `lifecycle`: starting a child (lease, build, announce) and running one
//!   submission under its budgets (panic capture, the runner's stop).
//! - `life`: `ChildLife`, which owns a child from its lease to its one end
//!   record for every face and runner (the only `agent_ended` of the core).
//! - `child`: what a child is built from (gate, tools, model, sinks).
//! - `toolset`: which delegation tools an agent at a depth gets, and which
//!   of its parent's tools a child inherits.
//! - `budget`: the budget of the whole tree.
//! - `leases`: the slots and the tree budget a child leases for a submission.
//! - `agent_tool`: the synchronous `Agent` tool.
//! - `collab`: the asynchronous tools (`spawn_agent`, `send_input`, `wait`,
//!   `close_agent`, `resume_agent`); `submission`: their runs and ends;
//!   `registry`: spawned agents' records and state machine.
//! - `process_runner`: the process runner (`agents.command`); what it passes to an
//!   alcove child is the gate's `ParentPolicy`.
//! - `definitions`: the kinds of child (`general-purpose`, `explore`, …).
//! - `loader`: definitions from Markdown files with YAML front matter.
//! - `report`: the summary and the harness-written evidence footer.
//! - `delegation`: a child a front end starts for an outside caller
//!   (`alcove mcp serve`'s `delegate`), on the same lifecycle.
//! - `batch`: many tasks in one operation (`spawn_batch`, `alcove batch`).
//! - `host_runs`: runs a front end's tool left going in the background (a
//!   workflow), which `wait` and `close_agent` address by id.
//! - `worktree_child`: reading `isolation` and finishing a child's worktree
//!   into a line of evidence.

mod agent_tool;
pub mod batch;
mod budget;
mod child;
mod collab;
mod definitions;
mod delegation;
mod host_runs;
mod leases;
mod life;
mod lifecycle;
mod loader;
mod process_runner;
mod registry;
mod report;
mod scope;
mod start_error;
mod submission;
mod supervisor;
mod toolset;
mod worktree_child;

pub use budget::{TreeBudget, TreeUsage};
pub use definitions::{AgentDefinition, AgentPermissions, DEFAULT_AGENT_TYPE, Definitions};
pub use delegation::{CheckedDelegation, DelegationEnd, DelegationRequest};
pub use host_runs::{HostRun, HostRuns};
pub use loader::{DefinitionError, load_definitions, parse_definition};
pub use scope::{AgentScope, DynTool};
pub use supervisor::{AgentLimits, BatchRunnerFactory, ModelFactory, ProcessEnv, Supervisor};
