//! `Session::end`: the one way a session ends, in every front end (exec,
//! the UI, acp, batch, and resume, which runs through them).
//!
//! Why it exists: each front end assembled its own end, and they differed —
//! `alcove batch` ran no SessionEnd hook and emitted no `session_ended`.
//! The steps, in order: spawned agents and batches still running are
//! closed (a warning names them), background commands are stopped, the
//! sinks have reported, MCP servers are stopped, the SessionEnd hooks run
//! with the reason, and `session_ended` is the last event of the transcript.

use alcove_protocol::{AgentPath, EventKind, RunStatus, Usage};

use super::Session;

/// How a session (or one segment of it, in the UI) ended.
pub(crate) struct SessionEnd<'a> {
    /// The SessionEnd hooks' `reason` (`other`, `clear`, `model_switch`, …).
    pub(crate) reason: &'a str,
    /// How the main agent's last run ended.
    pub(crate) status: RunStatus,
    /// The main agent's turns.
    pub(crate) turns: u32,
    /// What the session used.
    pub(crate) usage: Usage,
    /// Why it failed, when it did.
    pub(crate) error: Option<String>,
    /// The main agent's final text.
    pub(crate) result: Option<String>,
}

impl SessionEnd<'_> {
    /// A session that ran no agent of its own (`alcove batch`, `acp`).
    pub(crate) fn quiet(reason: &str) -> SessionEnd<'_> {
        SessionEnd {
            reason,
            status: RunStatus::Completed,
            turns: 0,
            usage: Usage::default(),
            error: None,
            result: None,
        }
    }
}

impl Session {
    /// A failed run's error with its cause and remedy in front, when it is
    /// one `error_advice` knows.
    pub(crate) fn explain(&self, error: &str) -> String {
        crate::error_advice::explain(error, &self.model_name, &self.config)
    }

    /// Ends the session (see the module). Returns the ids of the spawned
    /// agents and batches that were still running and were closed.
    pub(crate) async fn end(&self, end: SessionEnd<'_>) -> Vec<String> {
        let still_running = self.supervisor.close_all().await;
        if !still_running.is_empty() {
            self.runtime.emit(
                &AgentPath::main(),
                EventKind::Warning {
                    message: format!(
                        "the session ended while spawned agents were still running; closed: {}",
                        still_running.join(", ")
                    ),
                },
            );
        }
        // A model switch goes on with the same commands (the UI's driver).
        if end.reason != "model_switch" {
            self.stop_background().await;
        }
        self.reported().await;
        self.mcp.shutdown().await;
        self.runtime.hooks.session_end(end.reason).await;
        // The whole tree's usage, from every agent's `usage` events; the
        // caller's figure when no event was counted (a session whose only
        // run was a compaction).
        let tree = self.tally.totals();
        let usage = if tree.by_agent.is_empty() {
            end.usage
        } else {
            tree.usage
        };
        self.runtime.emit(
            &AgentPath::main(),
            EventKind::SessionEnded {
                status: end.status,
                turns: end.turns,
                usage,
                // Said as what to do, as every front end shows it.
                error: end.error.map(|error| self.explain(&error)),
                cost: crate::context_setup::cost(&self.config, &self.model_name, &usage),
                session_id: Some(self.id.clone()),
                result: end.result.filter(|text| !text.is_empty()),
                is_error: end.status != RunStatus::Completed,
                duration_ms: Some(
                    u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX),
                ),
                agents: tree.by_agent,
                children_incomplete: tree.children_incomplete,
            },
        );
        still_running
    }
}
