//! Reading a session's transcripts into a [`Report`]: the session's own,
//! then each child's (named by the `agent_started` that began it, or found
//! in `sessions/<session id>/`), one line at a time.
//!
//! Lines are read as plain JSON rather than as `AgentEvent`s, so an event
//! kind or content block this version does not know (one a newer alcove
//! writes) is shown as it is instead of failing the report, and a line that
//! does not parse (the torn last line of a killed process) is counted and
//! skipped. Nothing is held but the capped texts the page shows.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::children::ChildStart;
use super::content::{Footer, blocks, footers, input_summary};
use super::model::{
    self, Block, FailedCommand, Item, Lane, Report, Span, SpanKind, Tokens, first_line,
};
use super::runs::Runs;
use crate::settings::model::Price;

/// Tool calls that wait on other agents rather than work themselves.
const WAITING_TOOLS: &[&str] = &["Agent", "wait"];

/// One agent's lane while its events are read.
#[derive(Debug, Default)]
pub(super) struct LaneState {
    pub(super) lane: Lane,
    /// The transcript its events come from (events of it in another file
    /// are a copy).
    pub(super) source: usize,
    /// The open model request's span.
    pub(super) request: Option<usize>,
    /// Open tool calls: span index and command, by call id.
    pub(super) tools: HashMap<String, (usize, Option<String>)>,
    /// When each call began, by id (children's slot waits start there).
    pub(super) call_starts: HashMap<String, u64>,
    /// The message item holding each tool_use, by id.
    pub(super) uses: HashMap<String, usize>,
    /// Streamed thinking not yet followed by its message.
    pub(super) thinking: String,
    pub(super) thinking_ts: u64,
    /// Runs started (`session_started`) and ended (`session_ended`).
    pub(super) runs_started: u32,
    pub(super) runs_ended: u32,
    pub(super) costs: Option<f64>,
    pub(super) first_ts: u64,
    pub(super) last_ts: u64,
}

/// The reading of a whole session.
#[derive(Default)]
pub(super) struct Reader {
    pub(super) report: Report,
    pub(super) lanes: BTreeMap<String, LaneState>,
    pub(super) children: BTreeMap<String, ChildStart>,
    pub(super) footers: Vec<Footer>,
    pub(super) files: Vec<PathBuf>,
    /// Child transcripts named by starts read since the last file ended.
    pub(super) discovered: Vec<PathBuf>,
    /// Workflow runs and the agents of each.
    pub(super) runs: Runs,
}

/// Reads session `main` (its transcript) and its children's transcripts
/// (`children`: the session's folder), pricing tokens at `price`.
pub(crate) fn read_session(
    main: &Path,
    children: &Path,
    price: Option<Price>,
) -> anyhow::Result<Report> {
    let mut reader = Reader::default();
    let mut queue = VecDeque::from([main.to_owned()]);
    let mut seen = HashSet::new();
    let mut first = true;
    loop {
        while let Some(path) = queue.pop_front() {
            if !seen.insert(path.clone()) {
                continue;
            }
            match reader.read_file(&path) {
                Ok(()) => {}
                Err(err) if first => {
                    return Err(anyhow::anyhow!("cannot read {}: {err}", path.display()));
                }
                Err(err) => reader
                    .report
                    .notes
                    .push(format!("cannot read {}: {err}", path.display())),
            }
            first = false;
            queue.extend(reader.discovered.drain(..));
        }
        // Transcripts of the session's folder no start named (a start lost
        // with a torn line, a child of a child process).
        let mut rest: Vec<PathBuf> = std::fs::read_dir(children)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
            .filter(|path| !seen.contains(path))
            .collect();
        if rest.is_empty() {
            break;
        }
        rest.sort();
        queue.extend(rest);
    }
    Ok(reader.finish(price))
}

impl Reader {
    fn read_file(&mut self, path: &Path) -> std::io::Result<()> {
        let source = self.files.len();
        self.files.push(path.to_owned());
        // The agent of a child transcript's events, from its name
        // (`main--agent-1.jsonl`), for one no start named.
        let mut reader = BufReader::new(File::open(path)?);
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                break;
            }
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Value>(&line) {
                Ok(event) if event.is_object() => self.event(source, path, event),
                _ => self.report.unreadable_lines += 1,
            }
        }
        Ok(())
    }

    /// Applies one event to its agent's lane.
    fn event(&mut self, source: usize, file: &Path, event: Value) {
        let Some(agent) = event
            .get("agent")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            self.report.unreadable_lines += 1;
            return;
        };
        let ts = event.get("ts").and_then(Value::as_u64).unwrap_or(0);
        let state = self
            .lanes
            .entry(agent.clone())
            .or_insert_with(|| LaneState {
                source,
                lane: Lane {
                    path: agent.clone(),
                    transcript: Some(file.display().to_string()),
                    ..Lane::default()
                },
                ..LaneState::default()
            });
        if state.source != source {
            return;
        }
        if ts > 0 {
            if state.first_ts == 0 {
                state.first_ts = ts;
            }
            state.last_ts = state.last_ts.max(ts);
        }
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        let str_field = |name: &str| str_of(&event, name);
        let u64_field = |name: &str| u64_of(&event, name);
        // A run's records make its group, and are shown in the
        // conversation of the agent that started it as any other event.
        if kind.starts_with("workflow_") {
            self.runs.record(&agent, kind, ts, &event);
        }
        match kind {
            "session_started" => {
                state.runs_started += 1;
                if self.report.session_id.is_empty() {
                    self.report.session_id = str_field("session_id");
                    self.report.model = str_field("model");
                    self.report.workspace = str_field("workspace");
                }
            }
            "message" => {
                let Some(message) = event.get("message") else {
                    return;
                };
                let role = message
                    .get("role")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let blocks = blocks(message.get("content"));
                let has_thinking = blocks.iter().any(|b| matches!(b, Block::Thinking { .. }));
                if !state.thinking.is_empty() {
                    let thinking = std::mem::take(&mut state.thinking);
                    if !has_thinking {
                        state.lane.items.push(Item::Event {
                            kind: "thinking".to_owned(),
                            ts: state.thinking_ts,
                            text: model::text(&thinking),
                        });
                    }
                }
                let item = state.lane.items.len();
                for block in &blocks {
                    if let Block::ToolUse { id, .. } = block {
                        state.uses.insert(id.clone(), item);
                    }
                }
                if agent == "main" {
                    let text: String = blocks
                        .iter()
                        .filter_map(|block| match block {
                            Block::Text { text } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    if role == "user" && self.report.task.is_empty() && !text.trim().is_empty() {
                        self.report.task = text.clone();
                    }
                    if role == "assistant" && !text.trim().is_empty() {
                        self.report.answer = Some(text);
                    }
                }
                state.lane.items.push(Item::Message { role, ts, blocks });
            }
            "turn_started" => state.lane.turns += 1,
            "model_request" => {
                close_request(state, ts);
                state.request = Some(state.lane.spans.len());
                state.lane.spans.push(Span {
                    kind: SpanKind::Request,
                    start: ts,
                    end: ts,
                    label: format!("model request (turn {})", u64_field("turn")),
                    error: false,
                    open: true,
                    item: Some(state.lane.items.len()),
                });
            }
            "usage" => {
                state.lane.tokens.add(&Tokens::from_usage(
                    event.get("usage").unwrap_or(&Value::Null),
                ));
                close_request(state, ts);
            }
            "assistant_text" => close_request(state, ts),
            "text_delta" | "context" | "turn_ended" => {}
            "thinking_delta" => {
                if state.thinking.is_empty() {
                    state.thinking_ts = ts;
                }
                if state.thinking.len() < 64 * 1024 {
                    state.thinking.push_str(&str_field("text"));
                }
            }
            "model_retry" => {
                let reason = str_field("reason");
                state.lane.spans.push(Span {
                    kind: SpanKind::Retry,
                    start: ts,
                    end: ts + u64_field("delay_ms"),
                    label: format!("retry {}: {}", u64_field("attempt"), first_line(&reason)),
                    error: true,
                    open: false,
                    item: Some(state.lane.items.len()),
                });
                state.lane.items.push(Item::Event {
                    kind: "model_retry".to_owned(),
                    ts,
                    text: model::result(&format!(
                        "attempt {} failed, retrying in {} ms: {reason}",
                        u64_field("attempt"),
                        u64_field("delay_ms")
                    )),
                });
            }
            "compacted" => {
                let text = format!(
                    "compacted ({}): {} → {} messages, about {} → {} tokens{}",
                    str_field("trigger"),
                    u64_field("messages_before"),
                    u64_field("messages_after"),
                    u64_field("tokens_before"),
                    u64_field("tokens_after"),
                    event
                        .get("summary")
                        .and_then(Value::as_str)
                        .map(|summary| format!("\n\nsummary:\n{summary}"))
                        .unwrap_or_default()
                );
                state.lane.spans.push(Span {
                    kind: SpanKind::Compaction,
                    start: ts,
                    end: ts,
                    label: first_line(&text),
                    error: false,
                    open: false,
                    item: Some(state.lane.items.len()),
                });
                state.lane.items.push(Item::Event {
                    kind: "compacted".to_owned(),
                    ts,
                    text: model::text(&text),
                });
            }
            "tool_call_started" => {
                let id = str_field("id");
                let name = str_field("name");
                let input = event.get("input").cloned().unwrap_or(Value::Null);
                let command = input
                    .get("command")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let kind = if WAITING_TOOLS.contains(&name.as_str()) {
                    SpanKind::Wait
                } else {
                    SpanKind::Tool
                };
                let label = match input_summary(&input) {
                    summary if summary.is_empty() => name,
                    summary => format!("{name} {summary}"),
                };
                state.call_starts.insert(id.clone(), ts);
                state
                    .tools
                    .insert(id.clone(), (state.lane.spans.len(), command));
                state.lane.spans.push(Span {
                    kind,
                    start: ts,
                    end: ts,
                    label,
                    error: false,
                    open: true,
                    item: state.uses.get(&id).copied(),
                });
            }
            "tool_call_finished" => {
                let id = str_field("id");
                let is_error = event
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let content = str_field("content");
                let effects = event.get("effects");
                let exit_code = effects
                    .and_then(|effects| effects.get("exit_code"))
                    .and_then(Value::as_i64);
                let printed = effects.and_then(|effects| effects.get("bytes")).is_some();
                if let Some((span, command)) = state.tools.remove(&id) {
                    if let Some(span) = state.lane.spans.get_mut(span) {
                        span.end = ts.max(span.start);
                        span.error = is_error;
                        span.open = false;
                    }
                    let failed = match exit_code {
                        Some(0) => None,
                        Some(code) => Some(format!("exit {code}")),
                        None if is_error && printed => Some("killed".to_owned()),
                        None if is_error => Some("not run".to_owned()),
                        None => None,
                    };
                    if let (Some(command), Some(result)) = (command, failed) {
                        self.report.failed_commands.push(FailedCommand {
                            agent: agent.clone(),
                            command: model::capped(&command, 400),
                            result,
                            output: first_line(&content),
                        });
                    }
                }
                if content.contains("[alcove ") {
                    self.footers.extend(footers(&agent, &id, &content));
                }
            }
            "agent_started" => {
                self.runs.agent_started(&event, ts);
                let call_id = str_field("call_id");
                let requested = state.call_starts.get(&call_id).copied();
                self.child_started(&agent, file, requested, &event, ts);
            }
            "agent_ended" => self.child_ended(&event, ts),
            "warning" => state.lane.items.push(Item::Event {
                kind: "warning".to_owned(),
                ts,
                text: model::text(&str_field("message")),
            }),
            "session_ended" => {
                close_request(state, ts);
                state.runs_ended += 1;
                state.lane.status = str_field("status");
                state.lane.error = event.get("error").and_then(Value::as_str).map(model::text);
                if let Some(cost) = event.get("cost").and_then(Value::as_f64) {
                    *state.costs.get_or_insert(0.0) += cost;
                }
            }
            other => {
                // A kind this version does not know: shown as its fields.
                let mut fields = event.clone();
                if let Some(object) = fields.as_object_mut() {
                    for key in ["agent", "type", "ts"] {
                        object.remove(key);
                    }
                }
                state.lane.items.push(Item::Event {
                    kind: if other.is_empty() { "event" } else { other }.to_owned(),
                    ts,
                    text: model::json_text(&fields),
                });
            }
        }
    }
}

/// Ends the open model request at `ts`.
fn close_request(state: &mut LaneState, ts: u64) {
    if let Some(span) = state.request.take()
        && let Some(span) = state.lane.spans.get_mut(span)
    {
        span.end = ts.max(span.start);
        span.open = false;
    }
}

/// `event`'s string field `name`, or "".
pub(super) fn str_of(event: &Value, name: &str) -> String {
    event
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// `event`'s number field `name`, or 0.
pub(super) fn u64_of(event: &Value, name: &str) -> u64 {
    event.get(name).and_then(Value::as_u64).unwrap_or(0)
}
