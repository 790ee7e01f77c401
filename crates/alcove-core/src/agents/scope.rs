//! The caller's wiring, lent to a delegation tool for one call.
//!
//! A tool never captures its caller's state when it is built: dispatch lends
//! the calling agent's scope through `ToolContext::scope`, and `Agent` and the
//! collab tools read the caller's gate, tools, depth, path, cancellation and
//! event sinks from it. So one set of delegation tools serves every agent,
//! and nothing a child holds points back at the supervisor strongly (which
//! made an `Arc` cycle: Supervisor → Registry → Record → Child → tools →
//! collab tool → Supervisor).

use std::sync::Arc;

use alcove_protocol::AgentPath;
use alcove_tools::{Scope, Tool, ToolContext};

use super::child::DELEGATION_TOOLS;
use crate::{AgentRun, EventSink, Runtime};

/// Who is calling: the calling agent's runtime and run.
pub(crate) struct AgentScope {
    pub(crate) runtime: Runtime,
    pub(crate) run: AgentRun,
}

impl AgentScope {
    /// The scope of `run`, for one call's `ToolContext`.
    pub(crate) fn lend(runtime: &Runtime, run: &AgentRun) -> Scope {
        Arc::new(AgentScope {
            runtime: runtime.clone(),
            run: run.clone(),
        })
    }

    /// The scope a delegation tool was lent, or why there is none.
    pub(crate) fn of(context: &ToolContext) -> Result<&AgentScope, String> {
        context
            .scope
            .as_ref()
            .and_then(|scope| scope.downcast_ref::<AgentScope>())
            .ok_or_else(|| {
                "delegation needs the calling agent's scope, and none was given".to_owned()
            })
    }

    pub(crate) fn path(&self) -> &AgentPath {
        &self.run.path
    }

    pub(crate) fn depth(&self) -> u32 {
        self.run.depth
    }

    /// The caller's tools without the delegation tools: what its children may inherit.
    pub(crate) fn pool(&self) -> Vec<Arc<dyn Tool>> {
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
