//! The per-session supervisor: what every delegation of a session shares.
//!
//! Limits (depth, turns, concurrency, budgets), the definitions registry,
//! the slots and the tree budget (a room of their own, `leases`), child
//! naming, where child transcripts go, how a child gets a different model,
//! and the registry of spawned agents. Nothing per-agent lives here: a
//! delegation tool learns who called it from the scope dispatch lends it
//! (`scope`), and a child's life is its `ChildLife`'s (`life`).
//! Both faces — `Agent` (synchronous) and the collab tools (asynchronous) —
//! start children through the same `Supervisor::start_child`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use alcove_model::{Halt, Model, ProviderHealth};
use tokio_util::sync::CancellationToken;

use super::batch::Batches;
use super::budget::TreeBudget;
use super::definitions::Definitions;
use super::host_runs::HostRuns;
use super::leases::Leases;
use super::registry::Registry;
use crate::EventSink;

/// Limits on delegation.
#[derive(Debug, Clone, Copy)]
pub struct AgentLimits {
    /// How deep children may nest (the main agent is depth 0; 1 means children
    /// cannot delegate).
    pub max_depth: u32,
    /// A child's turn cap unless its definition sets one.
    pub max_turns: u32,
    /// How many spawned (`spawn_agent`) children may run at once in the
    /// whole session (seed 001's limit).
    pub max_concurrent: usize,
    /// How many synchronous `Agent` children may run at once in the whole
    /// session: high enough that one message's `Agent` calls run in one wave.
    pub max_parallel: usize,
    /// A child's wall-clock budget.
    pub timeout: Option<Duration>,
    /// A child's token budget (input plus output).
    pub max_tokens: Option<u64>,
    /// What all children of the session may use together, in tokens.
    pub tree_max_tokens: Option<u64>,
    /// What all children of the session may use together, in turns.
    pub tree_max_turns: Option<u32>,
    /// Whether the asynchronous tools (`spawn_agent`, …) are offered.
    pub collab: bool,
    /// The shortest wait `wait` accepts (shorter requests are raised to it).
    pub wait_min: Duration,
    /// The longest wait `wait` accepts (longer requests are cut to it).
    pub wait_max: Duration,
    /// Whether `exec` waits for spawned agents still running when the main
    /// agent ends, and gives it one more run with their results.
    pub wait_on_exit: bool,
}

impl Default for AgentLimits {
    fn default() -> AgentLimits {
        AgentLimits {
            max_depth: 1,
            max_turns: 30,
            max_concurrent: 4,
            max_parallel: 16,
            timeout: None,
            max_tokens: None,
            tree_max_tokens: None,
            tree_max_turns: None,
            collab: true,
            wait_min: Duration::from_secs(10),
            wait_max: Duration::from_secs(300),
            wait_on_exit: true,
        }
    }
}

/// Builds a model client from `provider/name`, for children that ask for a
/// different model than their parent's.
pub type ModelFactory = dyn Fn(&str) -> Result<Arc<dyn Model>, String> + Send + Sync;

/// What every delegation of a session shares.
pub struct Supervisor {
    pub(crate) limits: AgentLimits,
    pub(crate) definitions: Definitions,
    /// The slots and the tree budget children lease (`leases`).
    pub(crate) leases: Leases,
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
    pub(crate) redactor: Arc<crate::Redactor>,
    /// Where the main agent's descendants' events go besides their own
    /// transcripts (the front end's sinks); the main agent's sink when unset.
    pub(crate) observers: Option<Arc<dyn EventSink>>,
    /// Batches started by `spawn_batch`.
    pub(crate) batches: Batches,
    /// Runs a front end's tool started in the background (a workflow).
    pub(crate) host_runs: HostRuns,
    /// Where `spawn_batch` tasks run when not in this process (the front
    /// end's choice: a command, Slurm).
    pub(crate) batch_runner: Option<Arc<BatchRunnerFactory>>,
    /// Variables a process-runner child's command gets besides the policy
    /// (the front end's: the trace it continues).
    pub(crate) process_env: Option<Arc<ProcessEnv>>,
    /// The cancellation token of every child now running, by path, so a
    /// front end can stop one child (and its descendants) alone.
    pub(crate) running: RunningChildren,
    /// The gate between the session's agents and their model provider,
    /// shared with every model client of the session (`alcove_model`).
    pub(crate) provider_health: Option<Arc<ProviderHealth>>,
}

/// The tokens of the children now running (see [`Supervisor::cancel_agent`]).
#[derive(Default)]
pub(crate) struct RunningChildren(
    std::sync::Mutex<std::collections::HashMap<alcove_protocol::AgentPath, CancellationToken>>,
);

impl RunningChildren {
    /// Records a child that was just announced (forgetting those cancelled).
    pub(crate) fn insert(&self, path: alcove_protocol::AgentPath, cancel: CancellationToken) {
        if let Ok(mut running) = self.0.lock() {
            running.retain(|_, token| !token.is_cancelled());
            running.insert(path, cancel);
        }
    }

    /// Forgets a child that ended.
    pub(crate) fn remove(&self, path: &alcove_protocol::AgentPath) {
        if let Ok(mut running) = self.0.lock() {
            running.remove(path);
        }
    }
}

/// The environment variables for the process that runs `child`, started by
/// the tool call `call_id` of the agent at `parent` (a spawned agent's
/// submission or a batch task run as a command).
pub type ProcessEnv = dyn Fn(&alcove_protocol::AgentPath, &str, &alcove_protocol::AgentPath) -> Vec<(String, String)>
    + Send
    + Sync;

/// Builds the command a batch's tasks run as (a process, a Slurm step): a
/// layer below the child lifecycle, which gives every task its slot, lease,
/// announcement, the parent's policy and charter, and one end record.
pub type BatchRunnerFactory = dyn Fn() -> Arc<dyn super::batch::TaskCommand> + Send + Sync;

impl Supervisor {
    /// A supervisor for a session's delegations. Child transcripts go under
    /// `transcripts` when given.
    pub fn new(
        limits: AgentLimits,
        definitions: Definitions,
        transcripts: Option<PathBuf>,
    ) -> Supervisor {
        Supervisor {
            leases: Leases::new(&limits),
            limits,
            definitions,
            next_child: AtomicU64::new(1),
            transcripts,
            model_factory: None,
            project_instructions: String::new(),
            skills: Arc::default(),
            registry: Registry::default(),
            command: None,
            redactor: Arc::default(),
            observers: None,
            batches: Batches::new(limits.max_concurrent),
            host_runs: HostRuns::default(),
            batch_runner: None,
            process_env: None,
            running: RunningChildren::default(),
            provider_health: None,
        }
    }

    /// Cancels the running child at `path` and, through the cancellation
    /// tree, its descendants; its parent reads its report as for any
    /// cancelled child and goes on. A spawned agent's submission now
    /// running stops whatever it does (a model request, a tool, a remote
    /// process) and is recorded `cancelled`. Returns whether such a child ran.
    pub fn cancel_agent(&self, path: &alcove_protocol::AgentPath) -> bool {
        if let Ok(mut records) = self.registry.records.lock() {
            let submission = records
                .values_mut()
                .filter(|record| record.child.path == *path)
                .find_map(|record| record.running.as_mut());
            if let Some(submission) = submission {
                submission.cancelled = true;
                submission.cancel.cancel();
                return true;
            }
        }
        let token = self
            .running
            .0
            .lock()
            .ok()
            .and_then(|running| running.get(path).cloned());
        match token {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Shares the session's provider gate: once it is shut (the provider
    /// refused the session for good) no child starts and no batch task.
    pub fn with_provider_health(mut self, health: Arc<ProviderHealth>) -> Supervisor {
        self.provider_health = Some(health);
        self
    }

    /// Why the provider refused the session, once it did.
    pub fn provider_halt(&self) -> Option<Halt> {
        self.provider_health
            .as_ref()
            .and_then(|health| health.halt())
    }

    /// Gives each process-runner child's command the variables `env` names.
    pub fn with_process_env(mut self, env: Arc<ProcessEnv>) -> Supervisor {
        self.process_env = Some(env);
        self
    }

    /// Runs `spawn_batch` tasks through the runner `factory` builds
    /// (instead of in this process, or `agents.command`).
    pub fn with_batch_runner(mut self, factory: Option<Arc<BatchRunnerFactory>>) -> Supervisor {
        self.batch_runner = factory;
        self
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

    /// Sends the main agent's descendants' events to `observers` (the front
    /// end) and their own transcripts, instead of also to the session transcript.
    pub fn with_observers(mut self, observers: Arc<dyn EventSink>) -> Supervisor {
        self.observers = Some(observers);
        self
    }

    /// Secret values to redact from child transcripts, as in the session's.
    pub fn with_redactor(mut self, redactor: Arc<crate::Redactor>) -> Supervisor {
        self.redactor = redactor;
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

    /// The runs front-end tools left going in the background, which
    /// `wait` and `close_agent` address by id.
    pub fn host_runs(&self) -> &HostRuns {
        &self.host_runs
    }

    /// The known agent definitions.
    pub fn definitions(&self) -> &Definitions {
        &self.definitions
    }

    /// The tree's budget and what its children used, when a limit is set
    /// (for `/status`).
    pub fn tree_budget(&self) -> Option<Arc<TreeBudget>> {
        let tree = &self.leases.tree;
        tree.is_bounded().then(|| tree.clone())
    }

    /// A fresh child name, unique in the session: `agent-1`, `agent-2`, …
    pub(crate) fn next_child_name(&self) -> String {
        format!("agent-{}", self.next_child.fetch_add(1, Ordering::Relaxed))
    }
}

/// The supervisor a delegation tool serves, while its session lasts.
pub(crate) fn upgrade(supervisor: &Weak<Supervisor>) -> Result<Arc<Supervisor>, String> {
    supervisor
        .upgrade()
        .ok_or_else(|| "the session is closing; no agent can start".to_owned())
}
