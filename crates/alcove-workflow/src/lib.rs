//! Workflows: Claude Code's workflow-script dialect — `agent()`,
//! `parallel()`, `pipeline()`, `phase()`, `log()`, `args`, `budget`,
//! `workflow()` — run in an embedded JavaScript engine.
//!
//! This crate holds the dialect (reading `meta`, the static checks), the
//! engine and the run's rules (caps, budget, journal, resume, end states).
//! It knows nothing of alcove's agents: a [`Host`] starts each agent, and
//! alcove-cli's host runs it as a child through alcove's one child
//! lifecycle. The engine is built when a run starts and dropped when it
//! ends.

mod check;
mod host;
mod journal;
mod lexer;
mod meta;
mod run;
mod script;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

pub use check::{CallSite, call_sites, check_source};
pub use host::{AgentCall, AgentOutcome, Host, NullReason, RunEvent};
pub use journal::{JournalRecord, RunDir, RunRecord, call_key, read_answers, read_run};
pub use meta::{Meta, parse_script};
pub use run::{Counts, EndStatus, Limits, RunEnd};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A script, read and checked, not yet run.
#[derive(Debug, Clone)]
pub struct Workflow {
    /// Its `meta`.
    pub meta: Meta,
    /// The whole source.
    pub source: String,
    /// The body after `meta`.
    pub body: String,
    /// Its `agent(` call sites, for the plan.
    pub call_sites: Vec<CallSite>,
}

impl Workflow {
    /// Reads `meta` and checks the body; nothing runs.
    pub fn parse(source: &str) -> Result<Workflow, String> {
        let parsed = parse_script(source)?;
        check_source(&parsed.body)?;
        Ok(Workflow {
            call_sites: call_sites(&parsed.body),
            meta: parsed.meta,
            source: source.to_owned(),
            body: parsed.body,
        })
    }
}

/// How to run a workflow.
#[derive(Debug, Default)]
pub struct RunOptions {
    /// The script's `args` (`undefined` when `None`).
    pub args: Option<Value>,
    /// The token budget (`budget.total`), counted in budget tokens.
    pub budget: Option<u64>,
    /// The dollar budget, counted by [`Host::spent_usd`]: no agent starts
    /// once it is spent.
    pub budget_usd: Option<f64>,
    /// The caps.
    pub limits: Limits,
    /// Stops the run: running agents are cancelled, waiting calls give `null`.
    pub cancel: CancellationToken,
    /// Where finished agents are journaled (none: not journaled).
    pub dir: Option<RunDir>,
    /// The answers an earlier run journaled, which matching calls replay.
    pub replay: HashMap<String, VecDeque<JournalRecord>>,
}

/// Runs `workflow` to its end. Agents run on the caller's tokio runtime,
/// the script on a thread of its own.
pub async fn run(workflow: &Workflow, host: Arc<dyn Host>, options: RunOptions) -> RunEnd {
    let state = Arc::new(run::RunState::new(
        host,
        options.limits,
        (options.budget, options.budget_usd),
        options.cancel,
        options.dir,
        options.replay,
        tokio::runtime::Handle::current(),
    ));
    let script = script::run_body(state.clone(), workflow.body.clone(), options.args).await;
    state.end(script)
}
