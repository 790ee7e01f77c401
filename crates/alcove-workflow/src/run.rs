//! A run's state: the caps, the budget, the journal, the counts — what
//! every `agent()` call passes through before and after its host runs it.
//!
//! The script runtime (`script.rs`) calls [`RunState::agent`] with the
//! call's JSON; everything about how many agents run, what the budget lets
//! start, what a resume replays and how the run ends is decided here, in
//! plain Rust, testable without a JavaScript engine.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::host::{AgentCall, AgentOutcome, Host, NullReason, RunEvent};
use crate::journal::{JournalRecord, RunDir, call_key};

/// A run's caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Agents running at once (extra calls queue).
    pub concurrency: usize,
    /// Agents per run, replayed ones included; the next `agent()` throws.
    pub max_agents: u32,
    /// Items one `parallel()` or `pipeline()` call takes.
    pub max_items: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            concurrency: 16,
            max_agents: 1_000,
            max_items: 4_096,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndStatus {
    /// The script returned.
    Completed,
    /// The script threw.
    Failed,
    /// The budget refused an agent: the run stopped starting them.
    BudgetExhausted,
    /// The provider refused the tree: nothing more could start.
    Halted,
    /// The run was stopped.
    Cancelled,
}

impl EndStatus {
    /// The status's name.
    pub fn as_str(self) -> &'static str {
        match self {
            EndStatus::Completed => "completed",
            EndStatus::Failed => "failed",
            EndStatus::BudgetExhausted => "budget_exhausted",
            EndStatus::Halted => "halted",
            EndStatus::Cancelled => "cancelled",
        }
    }
}

/// What a run's agents did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Agents started live.
    pub started: u32,
    /// Calls answered from the journal of an earlier run.
    pub replayed: u32,
    /// Live agents that answered.
    pub answered: u32,
    /// Calls that threw (a schema never met, a bad option, the cap).
    pub threw: u32,
    /// `agent()` calls refused because the budget was spent (they threw).
    pub refused_by_budget: u32,
    /// `null` answers, by reason.
    pub null_failed: u32,
    /// `null`: cancelled.
    pub null_cancelled: u32,
    /// `null`: a budget refused the agent as it started.
    pub null_budget: u32,
    /// `null`: the provider halted the tree.
    pub null_halted: u32,
}

impl Counts {
    /// How many calls gave the script `null`.
    pub fn nulls(&self) -> u32 {
        self.null_failed + self.null_cancelled + self.null_budget + self.null_halted
    }

    /// One line: "12 agents (2 replayed): 10 answered, 2 null (1 failed, 1 cancelled)".
    pub fn describe(&self) -> String {
        let mut line = format!(
            "{} agents started, {} answered",
            self.started, self.answered
        );
        if self.replayed > 0 {
            line.push_str(&format!(", {} replayed from the journal", self.replayed));
        }
        if self.nulls() > 0 {
            let reasons: Vec<String> = [
                (self.null_failed, "failed"),
                (self.null_cancelled, "cancelled"),
                (self.null_budget, "refused by a budget"),
                (self.null_halted, "halted by the provider"),
            ]
            .iter()
            .filter(|(count, _)| *count > 0)
            .map(|(count, why)| format!("{count} {why}"))
            .collect();
            line.push_str(&format!(", {} null ({})", self.nulls(), reasons.join(", ")));
        }
        if self.threw > 0 {
            line.push_str(&format!(", {} threw", self.threw));
        }
        if self.refused_by_budget > 0 {
            line.push_str(&format!(
                ", {} refused: the budget was spent",
                self.refused_by_budget
            ));
        }
        line
    }
}

/// A run's end record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunEnd {
    /// How it ended.
    pub status: EndStatus,
    /// The script's return value (`null` unless completed).
    pub result: Value,
    /// Why it did not complete.
    pub error: Option<String>,
    /// What its agents did.
    pub agents: Counts,
    /// Budget tokens its agents used.
    pub tokens: u64,
    /// What its agents cost, in dollars, where their prices are known.
    pub usd: Option<f64>,
}

/// Everything a run shares between its `agent()` calls.
pub(crate) struct RunState {
    pub(crate) host: Arc<dyn Host>,
    pub(crate) limits: Limits,
    pub(crate) budget: Option<u64>,
    budget_usd: Option<f64>,
    pub(crate) cancel: CancellationToken,
    slots: Arc<Semaphore>,
    next_index: AtomicU32,
    spent: AtomicU64,
    counts: Mutex<Counts>,
    phase: Mutex<Option<String>>,
    halted: Mutex<Option<String>>,
    answers: Mutex<HashMap<String, VecDeque<JournalRecord>>>,
    dir: Option<RunDir>,
    journal_error: Mutex<Option<String>>,
    handle: tokio::runtime::Handle,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RunState {
    pub(crate) fn new(
        host: Arc<dyn Host>,
        limits: Limits,
        (budget, budget_usd): (Option<u64>, Option<f64>),
        cancel: CancellationToken,
        dir: Option<RunDir>,
        answers: HashMap<String, VecDeque<JournalRecord>>,
        handle: tokio::runtime::Handle,
    ) -> RunState {
        RunState {
            host,
            slots: Arc::new(Semaphore::new(limits.concurrency.max(1))),
            limits,
            budget,
            budget_usd,
            cancel,
            next_index: AtomicU32::new(0),
            spent: AtomicU64::new(0),
            counts: Mutex::new(Counts::default()),
            phase: Mutex::new(None),
            halted: Mutex::new(None),
            answers: Mutex::new(answers),
            dir,
            journal_error: Mutex::new(None),
            handle,
        }
    }

    /// Budget tokens the run's agents used so far.
    pub(crate) fn spent(&self) -> u64 {
        self.spent.load(Ordering::SeqCst)
    }

    pub(crate) fn set_phase(&self, title: String) {
        *lock(&self.phase) = Some(title.clone());
        self.host.event(RunEvent::Phase(title));
    }

    pub(crate) fn log(&self, message: String) {
        self.host.event(RunEvent::Log(message));
    }

    /// `agent(prompt, opts)`: the call's JSON in, `{"value"}` or
    /// `{"error"}` out (the script's prelude throws the error).
    pub(crate) async fn agent(self: Arc<Self>, request: String) -> String {
        let reply = match self.agent_value(&request).await {
            Ok(value) => json!({ "value": value }),
            Err(message) => json!({ "error": message }),
        };
        reply.to_string()
    }

    async fn agent_value(&self, request: &str) -> Result<Value, String> {
        let mut call: AgentCall =
            serde_json::from_str(request).map_err(|err| format!("agent(prompt, opts): {err}"))?;
        if let Some(isolation) = call.isolation.as_deref()
            && isolation != "worktree"
        {
            return Err(format!(
                "agent(): isolation `{isolation}` is not known; use 'worktree' or leave it out"
            ));
        }
        if call
            .schema
            .as_ref()
            .is_some_and(|schema| !schema.is_object())
        {
            return Err("agent(): opts.schema must be a JSON Schema object".to_owned());
        }
        let index = self.next_index.fetch_add(1, Ordering::SeqCst);
        if index >= self.limits.max_agents {
            lock(&self.counts).threw += 1;
            return Err(format!(
                "this run has made its {} agent() calls, the cap per run",
                self.limits.max_agents
            ));
        }
        call.index = index;
        if call.phase.is_none() {
            call.phase = lock(&self.phase).clone();
        }
        let label = call.label.clone().unwrap_or_else(|| short(&call.prompt));
        let key = call_key(&call);
        let replay = lock(&self.answers)
            .get_mut(&key)
            .and_then(VecDeque::pop_front);
        if let Some(record) = replay {
            lock(&self.counts).replayed += 1;
            self.journal(&call, &key, "answered", record.value.clone(), 0);
            self.host.event(RunEvent::AgentEnded {
                index,
                label,
                status: "replayed".to_owned(),
                tokens: 0,
            });
            return Ok(record.value);
        }
        if self.cancel.is_cancelled() {
            return Ok(self.stopped(&label, index));
        }
        self.check_budget()?;
        let permit = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Ok(self.stopped(&label, index)),
            permit = self.slots.clone().acquire_owned() => permit.map_err(|err| err.to_string())?,
        };
        // The run may have been stopped, or its budget spent, while this
        // call waited for a slot.
        if self.cancel.is_cancelled() {
            return Ok(self.stopped(&label, index));
        }
        self.check_budget()?;
        call.tokens = self.budget.map(|total| total.saturating_sub(self.spent()));
        lock(&self.counts).started += 1;
        self.host.event(RunEvent::AgentStarted {
            index,
            label: label.clone(),
            phase: call.phase.clone(),
        });
        let host = self.host.clone();
        let cancel = self.cancel.child_token();
        let running = call.clone();
        let outcome = match self
            .handle
            .spawn(async move { host.agent(running, cancel).await })
            .await
        {
            Ok(outcome) => outcome,
            Err(err) => AgentOutcome::Null {
                reason: NullReason::Failed,
                detail: format!("the agent's task ended abnormally: {err}"),
                tokens: 0,
            },
        };
        drop(permit);
        self.spent.fetch_add(outcome.tokens(), Ordering::SeqCst);
        self.settle(&call, &key, &label, outcome)
    }

    /// Counts, journals and announces an agent's end; the script's value.
    fn settle(
        &self,
        call: &AgentCall,
        key: &str,
        label: &str,
        outcome: AgentOutcome,
    ) -> Result<Value, String> {
        let tokens = outcome.tokens();
        let (status, result) = match outcome {
            AgentOutcome::Answer { value, .. } => {
                lock(&self.counts).answered += 1;
                self.journal(call, key, "answered", value.clone(), tokens);
                ("answered".to_owned(), Ok(value))
            }
            AgentOutcome::Null { reason, detail, .. } => {
                // An agent stopped because the provider halted the tree
                // was halted, not cancelled by anyone.
                let reason = match reason {
                    NullReason::Cancelled if lock(&self.halted).is_some() => NullReason::Halted,
                    reason => reason,
                };
                {
                    let mut counts = lock(&self.counts);
                    match reason {
                        NullReason::Failed => counts.null_failed += 1,
                        NullReason::Cancelled => counts.null_cancelled += 1,
                        NullReason::Budget => counts.null_budget += 1,
                        NullReason::Halted => counts.null_halted += 1,
                    }
                }
                if reason == NullReason::Halted {
                    lock(&self.halted).get_or_insert(detail.clone());
                    self.cancel.cancel();
                }
                self.journal(call, key, reason.as_str(), Value::String(detail), tokens);
                (reason.as_str().to_owned(), Ok(Value::Null))
            }
            AgentOutcome::Error { message, .. } => {
                lock(&self.counts).threw += 1;
                self.journal(call, key, "threw", Value::String(message.clone()), tokens);
                ("threw".to_owned(), Err(message))
            }
        };
        self.host.event(RunEvent::AgentEnded {
            index: call.index,
            label: label.to_owned(),
            status,
            tokens,
        });
        result
    }

    /// A call made or waiting after the run was stopped: `null`.
    fn stopped(&self, label: &str, index: u32) -> Value {
        let halted = lock(&self.halted).is_some();
        let reason = if halted {
            NullReason::Halted
        } else {
            NullReason::Cancelled
        };
        {
            let mut counts = lock(&self.counts);
            if halted {
                counts.null_halted += 1;
            } else {
                counts.null_cancelled += 1;
            }
        }
        self.host.event(RunEvent::AgentEnded {
            index,
            label: label.to_owned(),
            status: reason.as_str().to_owned(),
            tokens: 0,
        });
        Value::Null
    }

    fn check_budget(&self) -> Result<(), String> {
        if let Some(total) = self.budget {
            let spent = self.spent();
            if spent >= total {
                lock(&self.counts).refused_by_budget += 1;
                return Err(format!(
                    "the run's budget is spent ({spent} of {total} tokens): no more agents start"
                ));
            }
        }
        if let Some(limit) = self.budget_usd {
            let spent = self.host.spent_usd().unwrap_or(0.0);
            if spent >= limit {
                lock(&self.counts).refused_by_budget += 1;
                return Err(format!(
                    "the run's budget is spent (${spent:.4} of ${limit:.4}): no more agents start"
                ));
            }
        }
        Ok(())
    }

    fn journal(&self, call: &AgentCall, key: &str, status: &str, value: Value, tokens: u64) {
        let Some(dir) = &self.dir else { return };
        let record = JournalRecord {
            index: call.index,
            key: key.to_owned(),
            label: call.label.clone(),
            status: status.to_owned(),
            value,
            tokens,
        };
        if let Err(err) = dir.append(&record) {
            lock(&self.journal_error).get_or_insert(err);
        }
    }

    /// The end record, given how the script finished.
    pub(crate) fn end(&self, script: Result<Value, String>) -> RunEnd {
        let counts = lock(&self.counts).clone();
        let halted = lock(&self.halted).clone();
        let budget_hit = counts.refused_by_budget > 0 || counts.null_budget > 0;
        let (status, error) = match (&script, halted) {
            (_, Some(reason)) => (EndStatus::Halted, Some(reason)),
            (Err(err), None) if self.cancel.is_cancelled() => {
                (EndStatus::Cancelled, Some(err.clone()))
            }
            (Ok(_), None) if self.cancel.is_cancelled() => {
                (EndStatus::Cancelled, Some("the run was stopped".to_owned()))
            }
            (Err(err), None) if budget_hit => (EndStatus::BudgetExhausted, Some(err.clone())),
            (Ok(_), None) if budget_hit => (
                EndStatus::BudgetExhausted,
                Some("the budget refused some agents".to_owned()),
            ),
            (Err(err), None) => (EndStatus::Failed, Some(err.clone())),
            (Ok(_), None) => (EndStatus::Completed, None),
        };
        let error = match (error, lock(&self.journal_error).clone()) {
            (Some(error), Some(journal)) => Some(format!("{error} ({journal})")),
            (error, journal) => error.or(journal.filter(|_| status != EndStatus::Completed)),
        };
        RunEnd {
            status,
            result: script.unwrap_or(Value::Null),
            error,
            agents: counts,
            tokens: self.spent(),
            usd: self.host.spent_usd(),
        }
    }
}

/// A prompt's first words, for a label.
fn short(prompt: &str) -> String {
    let line = prompt.lines().next().unwrap_or("").trim();
    if line.chars().count() <= 48 {
        line.to_owned()
    } else {
        let cut: String = line.chars().take(47).collect();
        format!("{cut}…")
    }
}
