//! How `exec` shows a run: JSON lines, TRACE lines, or short progress lines.
//!
//! All three are renderings of the same event stream. stdout carries only
//! the answer (or, with `--json`, the events); everything else goes to
//! stderr.

use std::io::Write;

use alcove_core::EventSink;
use alcove_protocol::{AgentEvent, EventKind, RunStatus};

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
                let reason = if *status == RunStatus::Failed {
                    "error"
                } else {
                    status.as_str()
                };
                format!("agent.end description={description} ok={ok} reason={reason}")
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
            EventKind::Message { .. }
            | EventKind::TextDelta { .. }
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
                _ = writeln!(
                    out,
                    "{prefix}• {name} {}",
                    one_line(&input.to_string(), 100)
                );
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
                    usage.total()
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
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    if flat.chars().count() <= limit {
        return flat;
    }
    let mut cut: String = flat.chars().take(limit).collect();
    cut.push('…');
    cut
}
