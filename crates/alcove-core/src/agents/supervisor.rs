//! The per-session supervisor: what every delegation of a session shares.
//!
//! Limits (depth, turns, concurrency, budgets), the definitions registry,
//! the concurrency slots (released by RAII whatever way a run ends), child
//! naming, where child transcripts go, and how a child gets a different
//! model. The synchronous `Agent` tool is one face of it; the asynchronous
//! collab tools will be another, on the same slots.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use alcove_model::Model;
use alcove_tools::Tool;
use tokio::sync::Semaphore;

use super::agent_tool::AgentTool;
use super::collab::{Collab, collab_tools};
use super::definitions::Definitions;
use super::registry::Registry;
use crate::{EventSink, PermissionGate, Runtime};

/// Limits on delegation.
#[derive(Debug, Clone, Copy)]
pub struct AgentLimits {
    /// How deep children may nest (the main agent is depth 0; 1 means children
    /// cannot delegate).
    pub max_depth: u32,
    /// A child's turn cap unless its definition sets one.
    pub max_turns: u32,
    /// How many children may run at once in the whole session.
    pub max_concurrent: usize,
    /// A child's wall-clock budget.
    pub timeout: Option<Duration>,
    /// A child's token budget (input plus output).
    pub max_tokens: Option<u64>,
    /// Whether the asynchronous tools (`spawn_agent`, …) are offered.
    pub collab: bool,
    /// The shortest wait `wait` accepts (shorter requests are raised to it).
    pub wait_min: Duration,
    /// The longest wait `wait` accepts (longer requests are cut to it).
    pub wait_max: Duration,
}

impl Default for AgentLimits {
    fn default() -> AgentLimits {
        AgentLimits {
            max_depth: 1,
            max_turns: 30,
            max_concurrent: 4,
            timeout: None,
            max_tokens: None,
            collab: true,
            wait_min: Duration::from_secs(10),
            wait_max: Duration::from_secs(300),
        }
    }
}

/// Builds a model client from `provider/name`, for children that ask for a
/// different model than their parent's.
pub type ModelFactory = dyn Fn(&str) -> Result<Arc<dyn Model>, String> + Send + Sync;

/// What every delegation of a session shares.
pub struct Supervisor {
    pub(crate) runtime: Runtime,
    pub(crate) limits: AgentLimits,
    pub(crate) definitions: Definitions,
    pub(crate) slots: Arc<Semaphore>,
    next_child: AtomicU64,
    pub(crate) transcripts: Option<PathBuf>,
    pub(crate) model_factory: Option<Arc<ModelFactory>>,
    pub(crate) project_instructions: String,
    /// The session's skills, shared by reference (seed 000, A6).
    pub(crate) skills: Arc<crate::Skills>,
    /// Spawned agents (the asynchronous face).
    pub(crate) registry: Registry,
    /// When set, spawned agents' submissions run this shell command (the
    /// process runner) instead of an in-process task.
    pub(crate) command: Option<String>,
    /// Secret values child transcripts must not contain.
    pub(crate) redactions: Vec<String>,
    /// Where children's events go besides their own transcripts (the front
    /// end's sinks); the session's events when unset.
    pub(crate) observers: Option<Arc<dyn EventSink>>,
}

impl Supervisor {
    /// A supervisor for a session whose shared parts are `runtime`.
    /// Child transcripts go under `transcripts` when given.
    pub fn new(
        runtime: Runtime,
        limits: AgentLimits,
        definitions: Definitions,
        transcripts: Option<PathBuf>,
    ) -> Supervisor {
        Supervisor {
            runtime,
            slots: Arc::new(Semaphore::new(limits.max_concurrent.max(1))),
            limits,
            definitions,
            next_child: AtomicU64::new(1),
            transcripts,
            model_factory: None,
            project_instructions: String::new(),
            skills: Arc::default(),
            registry: Registry::default(),
            command: None,
            redactions: Vec::new(),
            observers: None,
        }
    }

    /// Lets children ask for another model by `provider/name`.
    pub fn with_model_factory(mut self, factory: Arc<ModelFactory>) -> Supervisor {
        self.model_factory = Some(factory);
        self
    }

    /// Numbers new children from `first` on (a resumed session continues
    /// after the children it already had, so names and transcripts stay unique).
    pub fn with_first_child_number(self, first: u64) -> Supervisor {
        self.next_child.store(first.max(1), Ordering::Relaxed);
        self
    }

    /// Sends children's events to `observers` (the front end) and their own
    /// transcripts, instead of also to the session transcript.
    pub fn with_observers(mut self, observers: Arc<dyn EventSink>) -> Supervisor {
        self.observers = Some(observers);
        self
    }

    /// Secret values to redact from child transcripts, as in the session's.
    pub fn with_redactions(mut self, redactions: Vec<String>) -> Supervisor {
        self.redactions = redactions;
        self
    }

    /// Runs spawned agents' submissions through `command` (see `runner`).
    pub fn with_command(mut self, command: Option<String>) -> Supervisor {
        self.command = command.filter(|command| !command.trim().is_empty());
        self
    }

    /// Project instructions children receive in their system prompt.
    pub fn with_project_instructions(mut self, text: String) -> Supervisor {
        self.project_instructions = text;
        self
    }

    /// The session's skills: children whose pool has `Skill` see their
    /// catalog, and a definition's `skills:` are preloaded from them.
    pub fn with_skills(mut self, skills: Arc<crate::Skills>) -> Supervisor {
        self.skills = skills;
        self
    }

    /// The delegation limits.
    pub fn limits(&self) -> AgentLimits {
        self.limits
    }

    /// The known agent definitions.
    pub fn definitions(&self) -> &Definitions {
        &self.definitions
    }

    /// The tools of an agent at `depth` whose other tools are `pool` and
    /// whose calls pass `gate`: the pool, plus `Agent` and the collab tools
    /// while children may still nest below this depth.
    pub fn tools_for(
        self: &Arc<Self>,
        depth: u32,
        pool: Vec<Arc<dyn Tool>>,
        gate: &Arc<PermissionGate>,
    ) -> Vec<Arc<dyn Tool>> {
        let mut tools = pool.clone();
        if depth < self.limits.max_depth && gate.offers("Agent") {
            tools.push(Arc::new(AgentTool::new(
                self.clone(),
                pool.clone(),
                gate.clone(),
            )));
            if self.limits.collab && gate.offers("spawn_agent") {
                tools.extend(collab_tools(Collab {
                    supervisor: self.clone(),
                    pool,
                    gate: gate.clone(),
                }));
            }
        }
        tools
    }

    /// A fresh child name, unique in the session: `agent-1`, `agent-2`, …
    pub(crate) fn next_child_name(&self) -> String {
        format!("agent-{}", self.next_child.fetch_add(1, Ordering::Relaxed))
    }
}
