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

use super::model::{
    self, Block, FailedCommand, Item, Lane, Report, Span, SpanKind, Tokens, first_line,
};
use crate::config::Price;

/// Tool calls that wait on other agents rather than work themselves.
const WAITING_TOOLS: &[&str] = &["Agent", "wait"];

/// A child that began this long after its parent's call asked for it is
/// drawn as waiting to start: `agent_started` comes once the child got its
/// slot, its share of the tree budget and its worktree when it has one, so
/// the gap is that wait plus the building of the child (a shorter gap is
/// only the building).
const SLOT_WAIT_SHOWN_MS: u64 = 20;

/// What the parent's transcript says about a child.
#[derive(Debug, Default)]
struct ChildStart {
    parent: String,
    call_id: String,
    description: String,
    agent_type: String,
    depth: u32,
    transcript: Option<PathBuf>,
    /// When it began (its `agent_started`).
    started: u64,
    /// Its place among the starts read so far (siblings keep this order).
    order: usize,
    /// When the parent's call that asked for it began.
    requested: Option<u64>,
    ended: Option<ChildEnd>,
}

#[derive(Debug)]
struct ChildEnd {
    status: String,
    turns: u32,
    tokens: Tokens,
    ts: u64,
}

/// An `[alcove evidence]` footer (and `[alcove worktree]` line) found in a
/// tool result.
#[derive(Debug)]
struct Footer {
    agent: String,
    call_id: String,
    evidence: Option<String>,
    transcript: Option<String>,
    worktree: Option<String>,
}

/// One agent's lane while its events are read.
#[derive(Debug, Default)]
struct LaneState {
    lane: Lane,
    /// The transcript its events come from (events of it in another file
    /// are a copy).
    source: usize,
    /// The open model request's span.
    request: Option<usize>,
    /// Open tool calls: span index and command, by call id.
    tools: HashMap<String, (usize, Option<String>)>,
    /// When each call began, by id (children's slot waits start there).
    call_starts: HashMap<String, u64>,
    /// The message item holding each tool_use, by id.
    uses: HashMap<String, usize>,
    /// Streamed thinking not yet followed by its message.
    thinking: String,
    thinking_ts: u64,
    /// Runs started (`session_started`) and ended (`session_ended`).
    runs_started: u32,
    runs_ended: u32,
    costs: Option<f64>,
    first_ts: u64,
    last_ts: u64,
}

/// The reading of a whole session.
#[derive(Default)]
struct Reader {
    report: Report,
    lanes: BTreeMap<String, LaneState>,
    children: BTreeMap<String, ChildStart>,
    footers: Vec<Footer>,
    files: Vec<PathBuf>,
    /// Child transcripts named by starts read since the last file ended.
    discovered: Vec<PathBuf>,
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
        let str_field = |name: &str| {
            event
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let u64_field = |name: &str| event.get(name).and_then(Value::as_u64).unwrap_or(0);
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
                let child = str_field("child");
                let call_id = str_field("call_id");
                let transcript = event
                    .get("transcript")
                    .and_then(Value::as_str)
                    .map(PathBuf::from)
                    .filter(|path| path.exists())
                    .or_else(|| {
                        let name = format!("{}.jsonl", child.replace('/', "--"));
                        let folder = file.with_extension("");
                        [folder.join(&name), file.with_file_name(&name)]
                            .into_iter()
                            .find(|path| path.exists())
                    });
                let requested = state.call_starts.get(&call_id).copied();
                let order = self.children.len();
                let start = self.children.entry(child).or_default();
                // A spawned agent's later submissions keep their first start.
                if start.started == 0 {
                    self.discovered.extend(transcript.clone());
                    *start = ChildStart {
                        parent: agent.clone(),
                        call_id,
                        description: str_field("description"),
                        agent_type: str_field("agent_type"),
                        depth: u32::try_from(u64_field("depth")).unwrap_or(u32::MAX),
                        transcript,
                        started: ts,
                        order,
                        requested,
                        ended: None,
                    };
                }
            }
            "agent_ended" => {
                let child = self.children.entry(str_field("child")).or_default();
                let tokens = Tokens::from_usage(event.get("usage").unwrap_or(&Value::Null));
                let turns = u32::try_from(u64_field("turns")).unwrap_or(u32::MAX);
                let ended = child.ended.get_or_insert(ChildEnd {
                    status: String::new(),
                    turns: 0,
                    tokens: Tokens::default(),
                    ts,
                });
                ended.status = str_field("status");
                ended.turns += turns;
                ended.tokens.add(&tokens);
                ended.ts = ts;
            }
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

    /// Joins what the transcripts said into the report.
    fn finish(mut self, price: Option<Price>) -> Report {
        let mut report = std::mem::take(&mut self.report);
        let mut lanes = std::mem::take(&mut self.lanes);
        // Children that left no event of their own still get a lane.
        for (path, child) in &self.children {
            lanes.entry(path.clone()).or_insert_with(|| {
                report.notes.push(format!(
                    "no transcript holds the events of {path}{}",
                    child
                        .transcript
                        .as_ref()
                        .map(|path| format!(" ({})", path.display()))
                        .unwrap_or_default()
                ));
                LaneState {
                    lane: Lane {
                        path: path.clone(),
                        ..Lane::default()
                    },
                    ..LaneState::default()
                }
            });
        }
        report.start = lanes
            .values()
            .map(|state| state.first_ts)
            .chain(self.children.values().map(|child| child.started))
            .filter(|ts| *ts > 0)
            .min()
            .unwrap_or(0);
        report.end = lanes
            .values()
            .map(|state| state.last_ts)
            .chain(
                self.children
                    .values()
                    .filter_map(|child| child.ended.as_ref().map(|end| end.ts)),
            )
            .max()
            .unwrap_or(report.start);
        for (path, state) in &mut lanes {
            let lane = &mut state.lane;
            lane.start = state.first_ts;
            lane.end = state.last_ts;
            if path == "main" {
                lane.description = "main agent".to_owned();
                if state.runs_ended == 0 || state.runs_started > state.runs_ended {
                    lane.status = "interrupted".to_owned();
                }
                report.outcome = lane.status.clone();
                report.error = lane.error.clone();
                lane.cost = state.costs;
            } else if let Some(child) = self.children.get(path) {
                lane.parent = Some(child.parent.clone());
                lane.description = child.description.clone();
                lane.agent_type = child.agent_type.clone();
                lane.depth = child.depth;
                if let Some(transcript) = &child.transcript {
                    lane.transcript = Some(transcript.display().to_string());
                }
                if child.started > 0 && (lane.start == 0 || child.started < lane.start) {
                    lane.start = child.started;
                }
                if let (Some(requested), true) = (child.requested, child.started > 0)
                    && child.started >= requested + SLOT_WAIT_SHOWN_MS
                {
                    lane.spans.insert(
                        0,
                        Span {
                            kind: SpanKind::Queued,
                            start: requested,
                            end: child.started,
                            label: "waiting to start (a slot, the budget, a worktree)".to_owned(),
                            error: false,
                            open: false,
                            item: None,
                        },
                    );
                    lane.start = lane.start.min(requested);
                }
                match &child.ended {
                    Some(end) => {
                        lane.status = end.status.clone();
                        lane.end = lane.end.max(end.ts);
                        if lane.tokens.is_empty() {
                            lane.tokens = end.tokens;
                        }
                        if lane.turns == 0 {
                            lane.turns = end.turns;
                        }
                    }
                    None => lane.status = "unfinished".to_owned(),
                }
            } else {
                // A transcript in the session's folder no start named.
                lane.parent = path.rsplit_once('/').map(|(parent, _)| parent.to_owned());
                lane.depth = path.matches('/').count() as u32;
                lane.status = "unfinished".to_owned();
            }
            let cut_short = matches!(lane.status.as_str(), "unfinished" | "interrupted");
            let lane_end = if cut_short {
                report.end.max(lane.end)
            } else {
                lane.end
            };
            for span in lane.spans.iter_mut().filter(|span| span.open) {
                span.end = lane_end.max(span.start);
            }
            if lane.end < lane.start {
                lane.end = lane.start;
            }
            if let Some(price) = &price {
                lane.cost = Some(price.cost(&lane.tokens.usage()));
                report.priced = true;
            } else if lane.cost.is_some() {
                report.priced = true;
            }
        }
        for footer in self.footers {
            let by_transcript = footer.transcript.as_ref().and_then(|transcript| {
                self.children
                    .iter()
                    .find(|(_, child)| {
                        child
                            .transcript
                            .as_ref()
                            .is_some_and(|path| path.display().to_string() == *transcript)
                    })
                    .map(|(path, _)| path.clone())
            });
            let by_call = || {
                self.children
                    .iter()
                    .find(|(_, child)| {
                        child.parent == footer.agent && child.call_id == footer.call_id
                    })
                    .map(|(path, _)| path.clone())
            };
            let Some(child) = by_transcript.or_else(by_call) else {
                continue;
            };
            if let Some(state) = lanes.get_mut(&child) {
                if footer.evidence.is_some() {
                    state.lane.evidence = footer.evidence;
                }
                if let Some(worktree) = footer.worktree {
                    state.lane.branch = worktree
                        .split_once("branch: ")
                        .map(|(_, rest)| rest.split(" |").next().unwrap_or(rest).trim().to_owned());
                    state.lane.worktree = Some(worktree);
                }
            }
        }
        let order: HashMap<String, usize> = self
            .children
            .iter()
            .map(|(path, child)| (path.clone(), child.order))
            .collect();
        report.agents = depth_first(lanes, &order);
        report
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

/// The lanes in tree order: each parent, then its children in the order
/// they were started (`order`; a lane no start named comes last).
fn depth_first(lanes: BTreeMap<String, LaneState>, order: &HashMap<String, usize>) -> Vec<Lane> {
    let mut by_parent: BTreeMap<String, Vec<Lane>> = BTreeMap::new();
    let mut roots = Vec::new();
    let known: HashSet<String> = lanes.keys().cloned().collect();
    for (_, state) in lanes {
        match state.lane.parent.clone() {
            Some(parent) if known.contains(&parent) => {
                by_parent.entry(parent).or_default().push(state.lane);
            }
            _ => roots.push(state.lane),
        }
    }
    roots.sort_by_key(|lane| (lane.path != "main", lane.start));
    let mut ordered = Vec::new();
    let mut stack: Vec<Lane> = roots.into_iter().rev().collect();
    while let Some(lane) = stack.pop() {
        if let Some(mut children) = by_parent.remove(&lane.path) {
            children.sort_by_key(|child| {
                std::cmp::Reverse((
                    order.get(&child.path).copied().unwrap_or(usize::MAX),
                    child.start,
                    child.path.clone(),
                ))
            });
            stack.extend(children);
        }
        ordered.push(lane);
    }
    // Lanes under a parent that never appeared (a cycle cannot happen:
    // paths only grow), kept rather than lost.
    ordered.extend(by_parent.into_values().flatten());
    ordered
}

/// A message's content blocks, capped; unknown kinds kept as their JSON.
fn blocks(content: Option<&Value>) -> Vec<Block> {
    let Some(content) = content else {
        return Vec::new();
    };
    if let Some(text) = content.as_str() {
        return vec![Block::Text {
            text: model::text(text),
        }];
    }
    let str_of = |block: &Value, name: &str| {
        block
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    content
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|block| match block.get("type").and_then(Value::as_str) {
            Some("text") => Block::Text {
                text: model::text(&str_of(block, "text")),
            },
            Some("thinking") => Block::Thinking {
                text: model::text(&str_of(block, "thinking")),
            },
            Some("tool_use") => {
                let name = str_of(block, "name");
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                Block::ToolUse {
                    id: str_of(block, "id"),
                    diff: model::diff(&name, &input),
                    input: model::json_text(&input),
                    name,
                }
            }
            Some("tool_result") => Block::ToolResult {
                id: str_of(block, "tool_use_id"),
                text: match block.get("content") {
                    Some(Value::String(text)) => model::result(text),
                    Some(other) => model::json_text(other),
                    None => String::new(),
                },
                error: block
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            Some("image") => Block::Other {
                kind: "image".to_owned(),
                text: format!(
                    "[an image, {}, {} bytes of base64]",
                    str_of(block, "media_type"),
                    str_of(block, "data").len()
                ),
            },
            Some("redacted_thinking") => Block::Thinking {
                text: "[redacted thinking]".to_owned(),
            },
            other => {
                let mut fields = block.clone();
                // Opaque payloads (encrypted reasoning, …) say only their size.
                if let Some(object) = fields.as_object_mut() {
                    for (_, value) in object.iter_mut() {
                        if let Some(text) = value.as_str()
                            && text.len() > 512
                        {
                            *value = Value::String(format!("[{} characters]", text.len()));
                        }
                    }
                }
                Block::Other {
                    kind: other.unwrap_or("block").to_owned(),
                    text: model::json_text(&fields),
                }
            }
        })
        .collect()
}

/// A short one-line view of a tool call's input: its command, path or
/// pattern when it has one, else its JSON.
fn input_summary(input: &Value) -> String {
    for key in [
        "command",
        "file_path",
        "pattern",
        "description",
        "path",
        "url",
    ] {
        if let Some(text) = input.get(key).and_then(Value::as_str) {
            return first_line(text);
        }
    }
    let text = input.to_string();
    if text == "{}" || text == "null" {
        String::new()
    } else {
        first_line(&text)
    }
}

/// The `[alcove evidence]` footers of a tool result: in its text, or in the
/// strings of a JSON result (`wait` returns reports inside JSON).
fn footers(agent: &str, call_id: &str, content: &str) -> Vec<Footer> {
    let mut texts = Vec::new();
    match serde_json::from_str::<Value>(content) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => collect_strings(&value, &mut texts),
        _ => texts.push(content.to_owned()),
    }
    let mut found = Vec::new();
    for text in texts {
        let mut footer = Footer {
            agent: agent.to_owned(),
            call_id: call_id.to_owned(),
            evidence: None,
            transcript: None,
            worktree: None,
        };
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("[alcove evidence] ") {
                footer.transcript = rest
                    .rsplit(" | ")
                    .find_map(|part| part.strip_prefix("transcript: "))
                    .map(str::to_owned);
                footer.evidence = Some(model::capped(rest, 2048));
            } else if line.starts_with("[alcove worktree] ") {
                footer.worktree = Some(model::capped(line, 2048));
            }
        }
        if footer.evidence.is_some() || footer.worktree.is_some() {
            found.push(footer);
        }
    }
    found
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) if text.contains("[alcove ") => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(fields) => fields.values().for_each(|item| collect_strings(item, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transcript with events and blocks of kinds other helpers may add
    /// (thinking, plans), a compaction, a retry, an unknown kind and a torn
    /// last line, for a session that never ended.
    #[test]
    fn unknown_kinds_are_shown_and_a_session_without_an_end_is_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("s.jsonl");
        let lines = [
            serde_json::json!({"agent": "main", "type": "session_started", "session_id": "s", "model": "m/x", "workspace": "/w", "ts": 1000}),
            serde_json::json!({"agent": "main", "type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "the task"}]}, "ts": 1001}),
            serde_json::json!({"agent": "main", "type": "turn_started", "turn": 1, "ts": 1001}),
            serde_json::json!({"agent": "main", "type": "model_request", "turn": 1, "messages": 1, "tools": 3, "ts": 1002}),
            serde_json::json!({"agent": "main", "type": "model_retry", "attempt": 1, "delay_ms": 50, "reason": "HTTP 529", "ts": 1010}),
            serde_json::json!({"agent": "main", "type": "thinking_delta", "text": "let me ", "ts": 1070}),
            serde_json::json!({"agent": "main", "type": "thinking_delta", "text": "think", "ts": 1071}),
            serde_json::json!({"agent": "main", "type": "usage", "usage": {"input_tokens": 10, "cache_read_tokens": 5, "cache_write_tokens": 2, "output_tokens": 3}, "ts": 1080}),
            serde_json::json!({"agent": "main", "type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}, {"type": "mystery", "payload": 1}]}, "ts": 1081}),
            serde_json::json!({"agent": "main", "type": "plan_updated", "todos": [{"content": "step one", "status": "in_progress"}], "ts": 1082}),
            serde_json::json!({"agent": "main", "type": "compacted", "trigger": "auto", "messages_before": 9, "messages_after": 3, "tokens_before": 900, "tokens_after": 300, "replaced": 6, "summary": "the gist", "ts": 1090}),
            serde_json::json!({"agent": "main", "type": "tool_call_started", "id": "t1", "name": "Bash", "input": {"command": "sleep 100"}, "ts": 1100}),
        ];
        let mut text: String = lines.iter().map(|line| format!("{line}\n")).collect();
        text.push_str("{\"agent\":\"main\",\"type\":\"mess");
        std::fs::write(&main, text).unwrap();
        let report = read_session(&main, &dir.path().join("s"), None).unwrap();
        assert_eq!(report.outcome, "interrupted");
        assert_eq!(report.task, "the task");
        assert_eq!(report.unreadable_lines, 1);
        let lane = &report.agents[0];
        assert_eq!(lane.status, "interrupted");
        assert_eq!(
            (
                lane.tokens.input,
                lane.tokens.cache_read,
                lane.tokens.cache_write,
                lane.tokens.output
            ),
            (10, 5, 2, 3)
        );
        let kinds: Vec<String> = lane
            .items
            .iter()
            .map(|item| match item {
                Item::Message { role, .. } => role.clone(),
                Item::Event { kind, .. } => kind.clone(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "user",
                "model_retry",
                "thinking",
                "assistant",
                "plan_updated",
                "compacted"
            ]
        );
        let Item::Event { text, .. } = &lane.items[4] else {
            panic!()
        };
        assert!(text.contains("step one"), "{text}");
        let Item::Message { blocks, .. } = &lane.items[3] else {
            panic!()
        };
        assert!(matches!(&blocks[1], Block::Other { kind, .. } if kind == "mystery"));
        let spans: Vec<(SpanKind, bool)> = lane
            .spans
            .iter()
            .map(|span| (span.kind, span.open))
            .collect();
        assert_eq!(
            spans,
            [
                (SpanKind::Request, false),
                (SpanKind::Retry, false),
                (SpanKind::Compaction, false),
                (SpanKind::Tool, true),
            ]
        );
        assert_eq!(lane.spans[0].end, 1080);
    }

    #[test]
    fn footers_are_found_in_text_and_in_json_results() {
        let text = "[Agent: x]\ndone\n\n[alcove worktree] branch: alcove/s/agent-1 | commit: abc\n[alcove evidence] status: completed | turns: 1 | transcript: /t/main--agent-1.jsonl";
        let found = footers("main", "c1", text);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].transcript.as_deref(),
            Some("/t/main--agent-1.jsonl")
        );
        assert!(
            found[0]
                .worktree
                .as_deref()
                .unwrap()
                .contains("alcove/s/agent-1")
        );
        let json = serde_json::json!({"details": {"agent-2": {"report": text}}}).to_string();
        assert_eq!(footers("main", "c2", &json).len(), 1);
        assert!(footers("main", "c3", "plain result").is_empty());
    }

    #[test]
    fn unknown_blocks_are_kept_and_opaque_payloads_shortened() {
        let content = serde_json::json!([
            {"type": "text", "text": "hi"},
            {"type": "reasoning", "id": "r1", "encrypted_content": "x".repeat(2000)},
        ]);
        let blocks = blocks(Some(&content));
        assert_eq!(blocks.len(), 2);
        match &blocks[1] {
            Block::Other { kind, text } => {
                assert_eq!(kind, "reasoning");
                assert!(
                    text.contains("[2000 characters]") && text.contains("r1"),
                    "{text}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
