//! How `exec` shows a run: JSON lines, TRACE lines, or short progress lines.
//!
//! All three are renderings of the same event stream. stdout carries only
//! the answer (or, with `--json`, the events); everything else goes to
//! stderr.

use std::io::Write;

use alcove_core::EventSink;
use alcove_protocol::{AgentEvent, EventKind};

/// `--json`: every event as one JSON object per line on stdout.
pub(crate) struct JsonLines;

impl EventSink for JsonLines {
    fn emit(&self, event: &AgentEvent) {
        if let Ok(mut line) = serde_json::to_vec(event) {
            line.push(b'\n');
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(&line);
            let _ = stdout.flush();
        }
    }
}

/// `TRACE=1`: `[trace] <stage> k=v …` lines on stderr, as in seed 000.
pub(crate) struct Trace;

impl EventSink for Trace {
    fn emit(&self, event: &AgentEvent) {
        let agent = &event.agent;
        let line = match &event.kind {
            EventKind::TurnStarted { turn } => {
                format!("query.turn_start turn={turn} agent={agent}")
            }
            EventKind::ModelRequest {
                turn,
                messages,
                tools,
            } => {
                format!("model.request turn={turn} messages={messages} tools={tools} agent={agent}")
            }
            EventKind::ModelRetry {
                attempt,
                delay_ms,
                reason,
            } => {
                format!(
                    "model.retry attempt={attempt} delay_ms={delay_ms} reason={reason} agent={agent}"
                )
            }
            EventKind::StreamRestarted { reason } => {
                format!("model.restart reason={reason} agent={agent}")
            }
            EventKind::Usage { usage } => format!(
                "model.usage input_tokens={} output_tokens={} cache_read_tokens={} cache_write_tokens={} agent={agent}",
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens
            ),
            EventKind::Context { used, window } => {
                format!("context used={used} window={window} agent={agent}")
            }
            EventKind::Compacted {
                trigger,
                tokens_before,
                tokens_after,
                cleared,
                replaced,
                ..
            } => format!(
                "context.compacted trigger={trigger} tokens_before={tokens_before} tokens_after={tokens_after} cleared={} summarised={replaced} agent={agent}",
                cleared.len()
            ),
            EventKind::ToolCallStarted { id, name, .. } => {
                format!("tool.start name={name} id={id} agent={agent}")
            }
            EventKind::ToolCallFinished {
                id,
                name,
                is_error,
                duration_ms,
                content,
                ..
            } => {
                if let Some(collab) = collab_trace(name, content, *is_error) {
                    eprintln!("[trace] {collab} agent={agent}");
                }
                format!(
                    "tool.end name={name} id={id} ok={} duration_ms={duration_ms} agent={agent}",
                    !is_error
                )
            }
            EventKind::TurnEnded { turn, tool_calls } => {
                let reason = if *tool_calls > 0 {
                    "tool_use"
                } else {
                    "completed"
                };
                format!("query.turn_end reason={reason} turn={turn} agent={agent}")
            }
            EventKind::AgentStarted {
                description, depth, ..
            } => {
                format!("agent.start description={description} depth={depth}")
            }
            EventKind::AgentEnded {
                description,
                status,
                ok,
                ..
            } => {
                let reason = if status.is_failure() {
                    "error"
                } else {
                    status.as_str()
                };
                format!("agent.end description={description} ok={ok} reason={reason}")
            }
            EventKind::WorkflowStarted { run_id, name, .. } => {
                format!("workflow.start run={run_id} name={name} agent={agent}")
            }
            EventKind::WorkflowPhase { run_id, title } => {
                format!("workflow.phase run={run_id} title={title} agent={agent}")
            }
            EventKind::WorkflowEnded {
                run_id,
                status,
                agents,
                ..
            } => {
                format!("workflow.end run={run_id} status={status} agents={agents} agent={agent}")
            }
            EventKind::SessionStarted {
                session_id, model, ..
            } => {
                format!("session.start id={session_id} model={model}")
            }
            EventKind::SessionEnded { status, turns, .. } => {
                format!("session.end status={} turns={turns}", status.as_str())
            }
            EventKind::Warning { message } => format!("warning message={message} agent={agent}"),
            EventKind::PlanUpdated { todos } => format!(
                "plan.update done={} steps={} agent={agent}",
                alcove_protocol::completed_count(todos),
                todos.len()
            ),
            EventKind::BackgroundStarted { id, pid, .. } => format!(
                "bash.background_start id={id} pid={} agent={agent}",
                pid.unwrap_or_default()
            ),
            EventKind::BackgroundEnded {
                id,
                exit_code,
                killed,
            } => format!(
                "bash.background_end id={id} exit_code={} killed={killed} agent={agent}",
                exit_code.map_or_else(|| "none".to_owned(), |code| code.to_string())
            ),
            EventKind::Message { .. }
            | EventKind::TextDelta { .. }
            | EventKind::ThinkingDelta { .. }
            | EventKind::AssistantText { .. } => return,
        };
        eprintln!("[trace] {line}");
    }
}

/// `agent.spawn` / `agent.wait` / `agent.close` lines, read from the
/// results of the collab tools.
fn collab_trace(tool: &str, content: &str, is_error: bool) -> Option<String> {
    let stage = match tool {
        "spawn_agent" => "agent.spawn",
        "wait" => "agent.wait",
        "close_agent" => "agent.close",
        "send_input" => "agent.send",
        "resume_agent" => "agent.resume",
        _ => return None,
    };
    if is_error {
        return Some(format!("{stage} ok=false error={}", one_line(content, 120)));
    }
    let result: serde_json::Value = serde_json::from_str(content).ok()?;
    if tool == "wait" {
        let states: Vec<String> = result["status"]
            .as_object()
            .map(|status| {
                status
                    .iter()
                    .map(|(id, state)| format!("{id}:{}", state.as_str().unwrap_or("?")))
                    .collect()
            })
            .unwrap_or_default();
        return Some(format!(
            "{stage} states={} timed_out={}",
            states.join(","),
            result["timed_out"]
        ));
    }
    let id = result["agent_id"].as_str().unwrap_or("?");
    let status = result["status"].as_str().unwrap_or("?");
    Some(format!("{stage} id={id} status={status}"))
}

/// The default: one short line per tool call, retry and warning on stderr.
pub(crate) struct Progress;

/// Writes `lines` to stderr in one write: `eprintln!` writes each piece of
/// its format separately, several system calls per line, and a wide
/// fan-out prints a line per child tool call (and announces a reply's
/// calls together, [`EventSink::emit_all`]).
fn write_stderr(lines: &str) {
    use std::io::Write as _;
    if !lines.is_empty() {
        let _ = std::io::stderr().write_all(lines.as_bytes());
    }
}

/// `[agent] ` before a line about another agent than the main one.
struct AgentPrefix<'a>(&'a alcove_protocol::AgentPath);

impl std::fmt::Display for AgentPrefix<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_str() {
            "main" => Ok(()),
            agent => write!(f, "[{agent}] "),
        }
    }
}

impl Progress {
    /// Appends `event`'s line to `out`, if it has one: most events print
    /// none.
    fn push_line(event: &AgentEvent, out: &mut String) {
        use std::fmt::Write as _;
        let prefix = AgentPrefix(&event.agent);
        match &event.kind {
            EventKind::ToolCallStarted { name, input, .. } => {
                _ = writeln!(out, "{prefix}• {name} {}", json_line(input, 100));
            }
            EventKind::ToolCallFinished {
                name,
                content,
                is_error: true,
                ..
            } => {
                _ = writeln!(out, "{prefix}  ✗ {name}: {}", one_line(content, 160));
            }
            EventKind::ModelRetry {
                attempt,
                delay_ms,
                reason,
            } => {
                _ = writeln!(
                    out,
                    "{prefix}model request failed (attempt {attempt}): {reason}; retrying in {delay_ms} ms"
                );
            }
            EventKind::StreamRestarted { reason } => {
                _ = writeln!(
                    out,
                    "{prefix}model stream broke ({reason}); sending the request again"
                );
            }
            EventKind::AgentStarted {
                child,
                description,
                agent_type,
                ..
            } => {
                _ = writeln!(
                    out,
                    "{prefix}▸ {child} ({agent_type}) started: {}",
                    one_line(description, 80)
                );
            }
            EventKind::AgentEnded {
                child,
                status,
                turns,
                usage,
                ..
            } => {
                _ = writeln!(
                    out,
                    "{prefix}◂ {child} {} after {turns} turns, {} tokens",
                    status.as_str(),
                    usage.budget_tokens()
                );
            }
            EventKind::Compacted {
                trigger,
                tokens_before,
                tokens_after,
                summary,
                ..
            } => {
                let how = if summary.is_some() {
                    "summarised"
                } else {
                    "old tool results cleared"
                };
                _ = writeln!(
                    out,
                    "{prefix}context compacted ({trigger}, {how}): about {tokens_before} → {tokens_after} tokens"
                );
            }
            EventKind::Warning { message } => {
                _ = writeln!(out, "{prefix}warning: {message}");
            }
            _ => {}
        }
    }
}

impl EventSink for Progress {
    fn emit(&self, event: &AgentEvent) {
        let mut line = String::new();
        Progress::push_line(event, &mut line);
        write_stderr(&line);
    }

    fn emit_all(&self, events: &[AgentEvent]) {
        let mut lines = String::new();
        for event in events {
            Progress::push_line(event, &mut lines);
        }
        write_stderr(&lines);
    }
}

fn one_line(text: &str, limit: usize) -> String {
    let mut line = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == limit {
            line.push('…');
            break;
        }
        line.push(if c == '\n' { ' ' } else { c });
    }
    line
}

/// `value` as JSON on one line, cut at `limit` characters. Only the head
/// the line shows is encoded: a `Write` call's whole file was encoded to
/// show a hundred characters of it.
fn json_line(value: &serde_json::Value, limit: usize) -> String {
    // Four bytes a character at most, and one character more than shown,
    // so a character cut at the end is never one the line shows.
    let mut head = Head {
        bytes: Vec::new(),
        room: limit.saturating_add(1).saturating_mul(4),
    };
    // Encoding stops with an error once the head is full; what it wrote is kept.
    let _ = serde_json::to_writer(&mut head, value);
    one_line(&String::from_utf8_lossy(&head.bytes), limit)
}

/// A writer that keeps its first `room` bytes and then refuses more.
struct Head {
    bytes: Vec<u8>,
    room: usize,
}

impl std::io::Write for Head {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.room == 0 {
            return Err(std::io::Error::other("the line is full"));
        }
        let taken = buf.len().min(self.room);
        self.bytes.extend_from_slice(&buf[..taken]);
        self.room -= taken;
        Ok(taken)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The first line of `text`, at most 200 characters: an error or a result
/// where one line is shown (a span's status, a run's end notice).
pub(crate) fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line as it was made before: the whole value encoded, then cut.
    fn whole_then_cut(value: &serde_json::Value, limit: usize) -> String {
        let flat: String = value
            .to_string()
            .chars()
            .map(|c| if c == '\n' { ' ' } else { c })
            .collect();
        if flat.chars().count() <= limit {
            return flat;
        }
        flat.chars().take(limit).chain(['…']).collect()
    }

    #[test]
    fn a_line_encodes_only_its_head_and_reads_as_the_whole_cut() {
        let long: String = "é€😀a\n\"".repeat(5_000);
        for value in [
            serde_json::json!({"file_path": "a.txt"}),
            serde_json::json!({"file_path": "a.txt", "content": long}),
            serde_json::json!({"content": "😀".repeat(99)}),
            serde_json::json!({"content": "😀".repeat(100)}),
            serde_json::json!("x".repeat(100)),
            serde_json::json!("x".repeat(98)),
        ] {
            for limit in [0, 1, 10, 100] {
                assert_eq!(json_line(&value, limit), whole_then_cut(&value, limit));
            }
        }
        assert_eq!(one_line("a\nb", 10), "a b");
        assert_eq!(one_line("abc", 2), "ab…");
    }
}
