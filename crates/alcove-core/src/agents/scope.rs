//! The caller's wiring, lent to a delegation tool for one call.
//!
//! A tool never captures its caller's state when it is built: dispatch lends
//! the calling agent's scope to each call of a `ScopedTool`, typed, and
//! `Agent` and the collab tools read the caller's gate, tools, depth, path,
//! cancellation and event sinks from it. So one set of delegation tools serves every agent,
//! and nothing a child holds points back at the supervisor strongly (which
//! made an `Arc` cycle: Supervisor → Registry → Record → Child → tools →
//! collab tool → Supervisor).

use std::sync::Arc;

use alcove_protocol::AgentPath;
use alcove_tools::Tool;

use super::toolset::DELEGATION_TOOLS;
use crate::{AgentRun, EventSink, Runtime};

/// A tool as every agent's pool holds it: a [`Tool`] for an agent's scope.
pub type DynTool = dyn Tool<AgentScope>;

/// Who is calling: the calling agent's runtime and run. Dispatch lends it,
/// typed, to the tools that act for their caller (`alcove_tools::ScopedTool`:
/// `Agent`, the collab and batch tools, `WebFetch`); every pool holds
/// `dyn Tool<AgentScope>`, so a tool that needs it cannot be offered without it.
pub struct AgentScope {
    pub(crate) runtime: Runtime,
    pub(crate) run: AgentRun,
}

impl AgentScope {
    /// The scope of `run`, for one call.
    pub(crate) fn lend(runtime: &Runtime, run: &AgentRun) -> AgentScope {
        AgentScope {
            runtime: runtime.clone(),
            run: run.clone(),
        }
    }

    /// The calling agent's shared parts (a front end's tool starting
    /// children of its caller builds them from these).
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The calling agent's run: its path, depth, gate, tools, cancellation.
    pub fn run(&self) -> &AgentRun {
        &self.run
    }

    pub(crate) fn path(&self) -> &AgentPath {
        &self.run.path
    }

    pub(crate) fn depth(&self) -> u32 {
        self.run.depth
    }

    /// The caller's tools without the delegation tools: what its children may inherit.
    pub(crate) fn pool(&self) -> Vec<Arc<dyn Tool<AgentScope>>> {
        self.run
            .tools
            .iter()
            .filter(|tool| {
                let name = tool.spec().name.as_str();
                // ToolSearch is made again for each agent's own deferred tools.
                !DELEGATION_TOOLS.contains(&name) && name != crate::deferred::TOOL_SEARCH
            })
            .cloned()
            .collect()
    }

    /// Where the caller's descendants' events go, `root` at the top.
    pub(crate) fn lineage(&self, root: &Arc<dyn EventSink>) -> Arc<dyn EventSink> {
        self.run.lineage.clone().unwrap_or_else(|| root.clone())
    }
}
