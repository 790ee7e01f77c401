//! `--output-format text|json|stream-json`: what a headless run prints on
//! stdout, in Claude Code's words. `text` is the final answer, `stream-json`
//! the event lines of `--json` (docs/events.md), and `json` one result
//! object when the session ends ([`result_object`]).

use alcove_core::AgentOutcome;
use alcove_protocol::RunStatus;
use clap::ValueEnum;

/// What `exec` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// The final answer.
    Text,
    /// One JSON object when the session ends.
    Json,
    /// Every event as a JSON line (as `--json`).
    StreamJson,
}

/// The one object `--output-format json` prints: how the session ended,
/// the final answer, and what it used. The names are Claude Code's
/// (`type`, `subtype`, `is_error`, `result`, `num_turns`, `session_id`,
/// `total_cost_usd`, `usage`), so scripts written for it read it.
pub(crate) fn result_object(
    session_id: &str,
    outcome: &AgentOutcome,
    cost: Option<f64>,
    duration: std::time::Duration,
) -> serde_json::Value {
    let subtype = match outcome.status {
        RunStatus::Completed => "success",
        RunStatus::MaxTurns => "error_max_turns",
        RunStatus::Aborted => "error_interrupted",
        RunStatus::Budget => "error_budget",
        RunStatus::Failed => "error_during_execution",
        RunStatus::Halted => "error_provider_halted",
    };
    serde_json::json!({
        "type": "result",
        "subtype": subtype,
        "is_error": outcome.status != RunStatus::Completed,
        "result": outcome.last_text().unwrap_or_default(),
        "error": outcome.error,
        "session_id": session_id,
        "num_turns": outcome.turns,
        "duration_ms": u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
        "total_cost_usd": cost,
        "usage": outcome.usage,
    })
}
