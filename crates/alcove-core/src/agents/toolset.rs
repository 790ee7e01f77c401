//! The builder of an agent's toolset: which delegation tools an agent at
//! a depth gets (`Supervisor::tools_for`), and which of its parent's tools a
//! child inherits (`child_pool`: never the delegation tools, which come
//! again only bound to the child's own depth).
//!
//! A room of its own so the supervisor keeps only what a session's
//! delegations share (limits, slots, registry, batches).

use std::sync::{Arc, Weak};

use alcove_tools::Tool;

use super::agent_tool::AgentTool;
use super::batch::batch_tools;
use super::collab::collab_tools;
use super::definitions::AgentDefinition;
use super::scope::AgentScope;
use super::supervisor::Supervisor;
use crate::PermissionGate;

/// Tools a child never inherits: delegation is offered again only through
/// fresh tools bound to the child's own depth (a workflow, a front end's
/// `Workflow` tool, is the main agent's only).
pub(crate) const DELEGATION_TOOLS: [&str; 9] = [
    "Agent",
    "spawn_agent",
    "spawn_batch",
    "retry_batch",
    "send_input",
    "wait",
    "close_agent",
    "resume_agent",
    "Workflow",
];

impl Supervisor {
    /// The tools of an agent at `depth` whose other tools are `pool` and
    /// whose calls pass `gate`: the pool, plus `Agent` and the collab tools
    /// while children may still nest below this depth. The delegation tools
    /// hold the supervisor weakly and nothing of their caller's.
    pub fn tools_for(
        self: &Arc<Self>,
        depth: u32,
        pool: Vec<Arc<dyn Tool<AgentScope>>>,
        gate: &Arc<PermissionGate>,
    ) -> Vec<Arc<dyn Tool<AgentScope>>> {
        let mut tools = pool;
        if depth < self.limits.max_depth && gate.offers("Agent") {
            let weak: Weak<Supervisor> = Arc::downgrade(self);
            tools.push(Arc::new(AgentTool::new(weak.clone(), &self.definitions)));
            if self.limits.collab && gate.offers("spawn_agent") {
                tools.extend(collab_tools(&weak, self.command.is_some()));
                if gate.offers("spawn_batch") {
                    tools.extend(batch_tools(&weak, self.batch_runner.is_some()));
                }
            }
        }
        tools
    }
}

/// The child's tools — the parent's minus the delegation tools, within the
/// definition's lists, then within `tool_names` when given and non-empty —
/// and the `tool_names` that matched nothing.
pub(super) fn child_pool(
    parent_pool: &[Arc<dyn Tool<AgentScope>>],
    definition: &AgentDefinition,
    tool_names: Option<&[String]>,
) -> (Vec<Arc<dyn Tool<AgentScope>>>, Vec<String>) {
    let allowed = |name: &str| {
        !DELEGATION_TOOLS.contains(&name)
            && definition
                .tools
                .as_ref()
                .is_none_or(|tools| tools.iter().any(|tool| tool == name))
            && !definition.disallowed_tools.iter().any(|tool| tool == name)
    };
    let mut pool: Vec<Arc<dyn Tool<AgentScope>>> = parent_pool
        .iter()
        .filter(|tool| allowed(&tool.spec().name))
        .cloned()
        .collect();
    let mut ignored = Vec::new();
    if let Some(names) = tool_names.filter(|names| !names.is_empty()) {
        pool.retain(|tool| names.iter().any(|name| *name == tool.spec().name));
        ignored = names
            .iter()
            .filter(|name| {
                !DELEGATION_TOOLS.contains(&name.as_str())
                    && name.as_str() != crate::deferred::TOOL_SEARCH
                    && !parent_pool.iter().any(|tool| tool.spec().name == **name)
            })
            .cloned()
            .collect();
    }
    (pool, ignored)
}
