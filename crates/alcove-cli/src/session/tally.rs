//! What the whole tree of a session used, counted from the events every
//! agent emits, for the last line of a session (`session_ended`).
//!
//! Why it exists: `session_ended` counted the main agent's usage only
//! (4,328 of the 10,738 tokens a two-child session's own `usage` events add
//! up to). This sink sees the same events the front end does — the main
//! agent's and every descendant's — so the session's usage is by
//! construction the sum of the `usage` events a script reads.

use std::collections::BTreeMap;
use std::sync::Mutex;

use alcove_core::EventSink;
use alcove_protocol::{AgentEvent, EventKind, Usage};

#[derive(Default)]
struct Counted {
    by_agent: BTreeMap<String, Usage>,
    children_incomplete: u32,
}

/// The tree's usage by agent, and the child runs that did not complete.
#[derive(Default)]
pub(crate) struct TreeTally {
    counted: Mutex<Counted>,
}

/// What [`TreeTally::totals`] returns.
pub(crate) struct TreeTotals {
    /// Every agent's usage added up.
    pub(crate) usage: Usage,
    /// Usage by agent path.
    pub(crate) by_agent: BTreeMap<String, Usage>,
    /// Child runs (an `Agent` call, a spawned agent's submission, a batch
    /// task) that ended without completing.
    pub(crate) children_incomplete: u32,
}

impl TreeTally {
    /// The totals so far.
    pub(crate) fn totals(&self) -> TreeTotals {
        let counted = self
            .counted
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut usage = Usage::default();
        for agent in counted.by_agent.values() {
            usage.add(*agent);
        }
        TreeTotals {
            usage,
            by_agent: counted.by_agent.clone(),
            children_incomplete: counted.children_incomplete,
        }
    }
}

impl EventSink for TreeTally {
    fn emit(&self, event: &AgentEvent) {
        let mut counted = self
            .counted
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match &event.kind {
            EventKind::Usage { usage } => counted
                .by_agent
                .entry(event.agent.as_str().to_owned())
                .or_default()
                .add(*usage),
            EventKind::AgentEnded { ok: false, .. } => counted.children_incomplete += 1,
            _ => {}
        }
    }
}
