//! What goes back to the parent: the child's summary and the harness's own
//! evidence.
//!
//! The summary is the child's words; the footer line is alcove's, built from
//! the events it observed (status, turns, tokens, wall time, files written,
//! commands and their exit codes, the transcript). A run that was cut short
//! says so in the first line and in the footer, whatever the child claims.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use alcove_protocol::{AgentEvent, AgentPath, EventKind, RunStatus};
use alcove_tools::ToolOutput;

use crate::{AgentOutcome, EventSink};

/// Summaries longer than this keep only their tail.
pub(crate) const SUMMARY_BUDGET: usize = 32 * 1024;

/// Watches a child's events (and its descendants') for what it did.
pub(crate) struct Evidence {
    child: AgentPath,
    workspace: std::path::PathBuf,
    state: Mutex<EvidenceState>,
}

#[derive(Default)]
struct EvidenceState {
    pending: HashMap<String, (String, String)>,
    wrote: BTreeSet<String>,
    commands: Vec<(String, String)>,
}

impl Evidence {
    pub(crate) fn new(child: AgentPath, workspace: &Path) -> Evidence {
        Evidence {
            child,
            workspace: workspace.to_owned(),
            state: Mutex::new(EvidenceState::default()),
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
            EventKind::ToolCallStarted { id, name, input } => {
                let detail =
                    match name.as_str() {
                        "Write" | "Edit" => input
                            .get("file_path")
                            .and_then(|path| path.as_str())
                            .map(|path| {
                                let absolute = self.workspace.join(path);
                                absolute
                                    .strip_prefix(&self.workspace)
                                    .unwrap_or(&absolute)
                                    .display()
                                    .to_string()
                            }),
                        "Bash" => input
                            .get("command")
                            .and_then(|command| command.as_str())
                            .map(str::to_owned),
                        _ => None,
                    };
                if let Some(detail) = detail {
                    state
                        .pending
                        .insert(format!("{}#{id}", event.agent), (name.clone(), detail));
                }
            }
            EventKind::ToolCallFinished {
                id,
                content,
                is_error,
                ..
            } => {
                let Some((name, detail)) = state.pending.remove(&format!("{}#{id}", event.agent))
                else {
                    return;
                };
                if name == "Bash" {
                    state
                        .commands
                        .push((detail, exit_status(content, *is_error)));
                } else if !is_error {
                    state.wrote.insert(detail);
                }
            }
            _ => {}
        }
    }
}

/// How a Bash call ended, read from its result.
fn exit_status(content: &str, is_error: bool) -> String {
    if !is_error {
        return "exit 0".to_owned();
    }
    if let Some(code) = content
        .rsplit("Exit code: ")
        .next()
        .filter(|_| content.contains("Exit code: "))
    {
        let code: String = code.chars().take_while(char::is_ascii_digit).collect();
        if !code.is_empty() {
            return format!("exit {code}");
        }
    }
    if content.starts_with("Permission denied") || content.starts_with("Blocked by") {
        return "refused".to_owned();
    }
    if content.contains("timed out") {
        return "timed out".to_owned();
    }
    "failed".to_owned()
}

/// Everything the report is built from.
pub(crate) struct ReportInput<'a> {
    pub(crate) description: &'a str,
    pub(crate) outcome: &'a AgentOutcome,
    pub(crate) max_turns: u32,
    pub(crate) budget_note: Option<String>,
    pub(crate) elapsed: Duration,
    pub(crate) ignored_tools: &'a [String],
    pub(crate) transcript: Option<&'a Path>,
}

/// Builds the tool result the parent sees.
pub(crate) fn report(input: &ReportInput<'_>, evidence: &Evidence) -> ToolOutput {
    let outcome = input.outcome;
    let footer = footer(input, evidence);
    let summary = outcome.last_text();
    let status = outcome.status;
    match (status, summary) {
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
            ToolOutput::ok(format!(
                "{first_line}\n{}\n\n{footer}",
                tail(&summary, SUMMARY_BUDGET)
            ))
        }
    }
}

fn footer(input: &ReportInput<'_>, evidence: &Evidence) -> String {
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
    };
    let mut parts = vec![
        format!("status: {status}"),
        format!("turns: {}", outcome.turns),
        format!(
            "tokens: {} in / {} out",
            outcome.usage.input_tokens, outcome.usage.output_tokens
        ),
        format!("time: {:.1}s", input.elapsed.as_secs_f64()),
    ];
    if let Ok(state) = evidence.state.lock() {
        let wrote: Vec<&str> = state.wrote.iter().map(String::as_str).collect();
        parts.push(format!(
            "files written: {}",
            if wrote.is_empty() {
                "none".to_owned()
            } else {
                wrote.join(", ")
            }
        ));
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
    if !input.ignored_tools.is_empty() {
        parts.push(format!(
            "unknown tool_names ignored: {}",
            input.ignored_tools.join(", ")
        ));
    }
    if let Some(path) = input.transcript {
        parts.push(format!("transcript: {}", path.display()));
    }
    format!("[alcove evidence] {}", parts.join(" | "))
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
    fn exit_status_reads_the_bash_result() {
        assert_eq!(exit_status("ok", false), "exit 0");
        assert_eq!(exit_status("boom\nExit code: 3", true), "exit 3");
        assert_eq!(exit_status("Permission denied: Bash (x)", true), "refused");
        assert_eq!(
            exit_status("Command timed out after 5 ms", true),
            "timed out"
        );
    }
}
