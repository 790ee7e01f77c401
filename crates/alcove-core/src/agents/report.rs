//! What goes back to the parent: the child's summary and the harness's own
//! evidence.
//!
//! The summary is the child's words, framed as data like a fetched page
//! (`alcove_tools::frame_untrusted`); the footer line is alcove's, built from
//! the events it observed (status, turns, tokens, wall time, files written,
//! commands and their exit codes, the transcript). A run that was cut short
//! says so in the first line and in the footer, whatever the child claims.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use alcove_protocol::{AgentEvent, AgentPath, Effects, EventKind, RunStatus};
use alcove_tools::ToolOutput;

use crate::{AgentOutcome, EventSink};

/// Summaries longer than this keep only their tail.
pub(crate) const SUMMARY_BUDGET: usize = 32 * 1024;

/// Watches a child's events (and its descendants', which its lineage sink
/// passes on) for what it did, from the effects tools report, never from
/// result text.
pub(crate) struct Evidence {
    child: AgentPath,
    state: Mutex<EvidenceState>,
}

#[derive(Default)]
struct EvidenceState {
    /// Commands of calls still running, by `agent#call id`.
    pending: HashMap<String, String>,
    calls: usize,
    read: BTreeSet<String>,
    wrote: BTreeSet<String>,
    commands: Vec<(String, String)>,
}

impl Evidence {
    pub(crate) fn new(child: AgentPath) -> Evidence {
        Evidence {
            child,
            state: Mutex::new(EvidenceState::default()),
        }
    }

    /// What was seen so far, as data: tool calls, files read and written,
    /// commands with how they ended (results.jsonl's `evidence`): the
    /// fields [`Evidence::fill`] writes into the typed record.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let mut record = alcove_protocol::ChildEvidence::default();
        self.fill(&mut record);
        serde_json::json!({
            "tool_calls": record.tool_calls,
            "files_read": record.files_read,
            "files_written": record.files_written,
            "commands": record.commands,
        })
    }

    /// What was seen so far, into the typed record: tool calls, files
    /// read and written, commands with how they ended.
    pub(crate) fn fill(&self, record: &mut alcove_protocol::ChildEvidence) {
        let Ok(state) = self.state.lock() else {
            return;
        };
        record.tool_calls = state.calls;
        record.files_read = state.read.iter().cloned().collect();
        record.files_written = state.wrote.iter().cloned().collect();
        record.commands = state
            .commands
            .iter()
            .map(|(command, result)| alcove_protocol::CommandRun {
                command: command.clone(),
                result: result.clone(),
            })
            .collect();
    }

    /// Forgets what was seen: a spawned agent's next submission reports
    /// its own calls only.
    pub(crate) fn reset(&self) {
        if let Ok(mut state) = self.state.lock() {
            *state = EvidenceState::default();
        }
    }

    fn is_ours(&self, agent: &AgentPath) -> bool {
        let child = self.child.as_str();
        agent.as_str() == child
            || agent
                .as_str()
                .strip_prefix(child)
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

impl EventSink for Evidence {
    fn emit(&self, event: &AgentEvent) {
        if !self.is_ours(&event.agent) {
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        match &event.kind {
            EventKind::ToolCallStarted { id, input, .. } => {
                if let Some(command) = input.get("command").and_then(|command| command.as_str()) {
                    state
                        .pending
                        .insert(format!("{}#{id}", event.agent), command.to_owned());
                }
            }
            EventKind::ToolCallFinished {
                id,
                is_error,
                effects,
                ..
            } => {
                state.calls += 1;
                let command = state.pending.remove(&format!("{}#{id}", event.agent));
                state.read.extend(effects.files_read.iter().cloned());
                state.wrote.extend(effects.files_written.iter().cloned());
                if let Some(command) = command {
                    state
                        .commands
                        .push((command, command_status(effects, *is_error)));
                }
            }
            _ => {}
        }
    }
}

/// How a command call ended, from its effects: its exit code, killed after
/// it printed (a timeout or cancel), or never run (refused or failed to start).
fn command_status(effects: &Effects, is_error: bool) -> String {
    match (effects.exit_code, effects.bytes) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(_)) => "killed".to_owned(),
        (None, None) if is_error => "not run".to_owned(),
        (None, None) => "ran".to_owned(),
    }
}

/// Everything the report is built from.
pub(crate) struct ReportInput<'a> {
    pub(crate) description: &'a str,
    pub(crate) outcome: &'a AgentOutcome,
    pub(crate) max_turns: u32,
    pub(crate) budget_note: Option<String>,
    pub(crate) elapsed: Duration,
    pub(crate) ignored_tools: &'a [String],
    /// Warnings for the parent (an unknown model replaced, …).
    pub(crate) warnings: &'a [String],
    pub(crate) transcript: Option<&'a Path>,
    /// What the whole tree used, when a tree budget is set.
    pub(crate) tree: Option<String>,
}

/// Builds the tool result the parent sees: the child's words (or why
/// there are none), then `footer` (the harness's lines).
pub(crate) fn report(input: &ReportInput<'_>, footer: &str) -> ToolOutput {
    let outcome = input.outcome;
    let summary = outcome.last_text();
    let status = outcome.status;
    match (status, summary) {
        (RunStatus::Halted, _) => ToolOutput::error(format!(
            "Agent halted: {}\n\n{footer}",
            outcome
                .error
                .as_deref()
                .unwrap_or("the model provider refused the session")
        )),
        (RunStatus::Failed, _) => ToolOutput::error(format!(
            "Agent failed: {}\n\n{footer}",
            outcome.error.as_deref().unwrap_or("unknown error")
        )),
        (RunStatus::Aborted, _) => ToolOutput::error(format!("Agent aborted\n\n{footer}")),
        (_, None) => ToolOutput::error(format!(
            "Agent finished without text ({})\n\n{footer}",
            status.as_str()
        )),
        (_, Some(summary)) => {
            let first_line = match status {
                RunStatus::Completed => format!("[Agent: {}]", input.description),
                RunStatus::MaxTurns => format!(
                    "[Agent: {}] (incomplete: stopped by the turn cap of {} before finishing)",
                    input.description, input.max_turns
                ),
                _ => format!(
                    "[Agent: {}] (incomplete: {})",
                    input.description,
                    input.budget_note.as_deref().unwrap_or("a budget ran out")
                ),
            };
            let source = format!("agent \"{}\"", input.description);
            ToolOutput::ok(format!(
                "{first_line}\n{}\n\n{footer}",
                alcove_tools::frame_untrusted(&source, &tail(&summary, SUMMARY_BUDGET))
            ))
        }
    }
}

/// The harness's evidence lines: warnings, then `[alcove evidence] status:
/// … | transcript: …` (what `wait` returns beside a spawned agent's text).
pub(crate) fn footer(input: &ReportInput<'_>, evidence: &Evidence) -> String {
    let outcome = input.outcome;
    let status = match outcome.status {
        RunStatus::Completed => "completed".to_owned(),
        RunStatus::MaxTurns => "incomplete: max_turns".to_owned(),
        RunStatus::Budget => {
            format!(
                "incomplete: budget ({})",
                input.budget_note.as_deref().unwrap_or("exceeded")
            )
        }
        RunStatus::Aborted => "aborted".to_owned(),
        RunStatus::Failed => "failed".to_owned(),
        RunStatus::Halted => "halted".to_owned(),
    };
    let mut parts = vec![
        format!("status: {status}"),
        format!("turns: {}", outcome.turns),
        tokens_line(&outcome.usage),
        format!("time: {:.1}s", input.elapsed.as_secs_f64()),
    ];
    if let Ok(state) = evidence.state.lock() {
        parts.push(format!(
            "tools: {} call{}",
            state.calls,
            if state.calls == 1 { "" } else { "s" }
        ));
        parts.push(format!("files read: {}", list(&state.read, READ_SHOWN)));
        parts.push(format!("files written: {}", list(&state.wrote, usize::MAX)));
        let ran: Vec<String> = state
            .commands
            .iter()
            .map(|(command, status)| format!("`{}` ({status})", one_line(command)))
            .collect();
        parts.push(format!(
            "commands: {}",
            if ran.is_empty() {
                "none".to_owned()
            } else {
                ran.join(", ")
            }
        ));
    }
    parts.extend(crate::plan::footer_part(&outcome.messages));
    if !input.ignored_tools.is_empty() {
        parts.push(format!(
            "unknown tool_names ignored: {}",
            input.ignored_tools.join(", ")
        ));
    }
    if let Some(tree) = &input.tree {
        parts.push(tree.clone());
    }
    if let Some(path) = input.transcript {
        parts.push(format!("transcript: {}", path.display()));
    }
    let mut footer = String::new();
    for warning in input.warnings {
        footer.push_str(&format!("[alcove warning] {warning}\n"));
    }
    footer.push_str(&format!("[alcove evidence] {}", parts.join(" | ")));
    footer
}

/// How many files read the footer names before it only counts.
const READ_SHOWN: usize = 10;

/// `none`, or the first `shown` entries and how many more there are.
fn list(items: &BTreeSet<String>, shown: usize) -> String {
    if items.is_empty() {
        return "none".to_owned();
    }
    let mut text = items
        .iter()
        .take(shown)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > shown {
        text.push_str(&format!(" and {} more", items.len() - shown));
    }
    text
}

fn one_line(command: &str) -> String {
    let flat = command.replace('\n', " ");
    if flat.chars().count() <= 80 {
        return flat;
    }
    let mut cut: String = flat.chars().take(80).collect();
    cut.push('…');
    cut
}

/// The last `budget` bytes of `text`, cut on a char boundary, saying so when cut.
fn tail(text: &str, budget: usize) -> String {
    if text.len() <= budget {
        return text.to_owned();
    }
    let mut start = text.len() - budget;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!(
        "[summary cut: its first {start} bytes are not shown]\n{}",
        &text[start..]
    )
}

/// `tokens: 1500 (1200 in / 300 out)`: the meter's figure (what every
/// budget counts), then its parts, with cache reads and writes apart when
/// the provider reported any.
fn tokens_line(usage: &alcove_protocol::Usage) -> String {
    let mut line = format!(
        "tokens: {} ({} in",
        usage.budget_tokens(),
        usage.input_tokens
    );
    if usage.cache_read_tokens > 0 || usage.cache_write_tokens > 0 {
        line.push_str(&format!(
            " + {} cache read + {} cache write",
            usage.cache_read_tokens, usage.cache_write_tokens
        ));
    }
    line.push_str(&format!(" / {} out)", usage.output_tokens));
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_summaries_keep_their_tail_on_a_char_boundary() {
        let text = format!("{}{}", "é".repeat(20), "end");
        let cut = tail(&text, 10);
        assert!(cut.ends_with("end"));
        assert!(cut.starts_with("[summary cut: its first "));
        assert_eq!(tail("short", 10), "short");
    }

    #[test]
    fn a_command_status_is_read_from_effects_never_from_text() {
        let effects = |exit_code, bytes| Effects {
            exit_code,
            bytes,
            ..Effects::default()
        };
        assert_eq!(command_status(&effects(Some(0), Some(3)), false), "exit 0");
        assert_eq!(command_status(&effects(Some(3), Some(0)), true), "exit 3");
        assert_eq!(command_status(&effects(None, Some(10)), true), "killed");
        assert_eq!(command_status(&effects(None, None), true), "not run");
    }

    #[test]
    fn evidence_counts_calls_and_files_of_the_child_and_its_descendants_only() {
        let evidence = Evidence::new(AgentPath::main().child("agent-1"));
        let finished = |agent: AgentPath, id: &str, effects: Effects| AgentEvent {
            agent,
            kind: EventKind::ToolCallFinished {
                id: id.to_owned(),
                name: "Anything".to_owned(),
                content: "Exit code: 9".into(),
                is_error: false,
                duration_ms: 1,
                effects,
            },
        };
        let child = AgentPath::main().child("agent-1");
        let read = Effects {
            files_read: vec!["a.rs".to_owned()],
            ..Effects::default()
        };
        let wrote = Effects {
            files_written: vec!["b.rs".to_owned()],
            ..Effects::default()
        };
        evidence.emit(&finished(child.clone(), "1", read));
        evidence.emit(&finished(child.child("agent-2"), "2", wrote.clone()));
        evidence.emit(&finished(AgentPath::main().child("agent-10"), "3", wrote));
        let state = evidence.state.lock().unwrap();
        assert_eq!(state.calls, 2);
        assert_eq!(state.read.iter().collect::<Vec<_>>(), ["a.rs"]);
        assert_eq!(state.wrote.iter().collect::<Vec<_>>(), ["b.rs"]);
        assert!(state.commands.is_empty(), "no command was started");
    }
}
