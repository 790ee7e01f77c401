//! What a report shows, as data: one lane per agent with its figures, its
//! timeline bars and its conversation, and the session's summary. This is
//! what the page embeds as JSON; every text in it is capped, so a result of
//! megabytes costs the page a few kilobytes (the transcript keeps it whole).

use serde::Serialize;
use serde_json::Value;

/// Text blocks (messages, thinking) longer than this keep their head and tail.
const TEXT_CAP: usize = 8 * 1024;
/// Tool inputs, results and diffs longer than this keep their head and tail.
const RESULT_CAP: usize = 4 * 1024;

/// The whole session.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Report {
    pub(crate) session_id: String,
    pub(crate) model: String,
    pub(crate) workspace: String,
    /// The first prompt of the main agent.
    pub(crate) task: String,
    /// How the session ended: a run status, or `interrupted` when the
    /// transcript holds no end (a crash, a kill).
    pub(crate) outcome: String,
    /// The session's error, when it failed.
    pub(crate) error: Option<String>,
    /// The main agent's last answer.
    pub(crate) answer: Option<String>,
    /// First and last timestamps (Unix ms) over every transcript.
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// Every agent, depth first (a parent before its children).
    pub(crate) agents: Vec<Lane>,
    /// Workflow runs, in the order they started: their agents' lanes as
    /// groups by phase.
    pub(crate) runs: Vec<WorkflowRun>,
    /// Failing commands anywhere in the tree.
    pub(crate) failed_commands: Vec<FailedCommand>,
    /// Lines of the transcripts that could not be read (a torn last line).
    pub(crate) unreadable_lines: usize,
    /// Problems met while reading (a missing child transcript, …).
    pub(crate) notes: Vec<String>,
    /// Whether costs were priced (`[pricing."provider/model"]`).
    pub(crate) priced: bool,
}

/// One agent of the tree.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Lane {
    /// `main`, `main/agent-1`, …
    pub(crate) path: String,
    /// The agent that started it (absent for `main`).
    pub(crate) parent: Option<String>,
    pub(crate) description: String,
    pub(crate) agent_type: String,
    pub(crate) depth: u32,
    /// A run status, or `unfinished` (started, never ended) or
    /// `interrupted` (the main agent's transcript holds no end).
    pub(crate) status: String,
    /// Model requests made.
    pub(crate) turns: u32,
    pub(crate) tokens: Tokens,
    /// Dollars, when the model is priced.
    pub(crate) cost: Option<f64>,
    /// When it started and ended (Unix ms); `end` is its last event when it
    /// never ended.
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// Its `[alcove evidence]` status line, from its end record (or, for
    /// an older transcript, its parent's tool result).
    pub(crate) evidence: Option<String>,
    /// The worktree branch its changes were committed on, and the
    /// `[alcove worktree]` line that said so.
    pub(crate) branch: Option<String>,
    pub(crate) worktree: Option<String>,
    /// Its own transcript.
    pub(crate) transcript: Option<String>,
    pub(crate) error: Option<String>,
    /// Timeline bars.
    pub(crate) spans: Vec<Span>,
    /// The conversation and the events worth showing in it.
    pub(crate) items: Vec<Item>,
}

/// A workflow run (`workflow_started` … `workflow_ended`) and its agents,
/// grouped by phase.
#[derive(Debug, Default, Serialize)]
pub(crate) struct WorkflowRun {
    /// `wf_…`
    pub(crate) id: String,
    /// The script's `meta.name`.
    pub(crate) name: String,
    /// The agent that started it.
    pub(crate) agent: String,
    /// Its end's status, or `unfinished` when the transcript holds no end.
    pub(crate) status: String,
    /// From its end: agents started, `agent()` calls that gave `null`, the
    /// one-line account, budget tokens used, dollars, why it did not
    /// complete.
    pub(crate) agents: u32,
    pub(crate) nulls: u32,
    pub(crate) summary: String,
    pub(crate) tokens: u64,
    pub(crate) usd: Option<f64>,
    pub(crate) error: Option<String>,
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// Its phases in the order they appeared (`phase()`, or an agent that
    /// named one); agents with no phase form a group with no title.
    pub(crate) phases: Vec<PhaseGroup>,
}

/// One phase of a run: its agents' lanes and their figures.
#[derive(Debug, Default, Serialize)]
pub(crate) struct PhaseGroup {
    /// The phase's title; `None` for the run's agents with no phase.
    pub(crate) title: Option<String>,
    /// Its agents' lane paths, in the order they started.
    pub(crate) agents: Vec<String>,
    /// Agents that ended with a status other than `completed`.
    pub(crate) not_completed: u32,
    /// Agents the transcripts show no end of.
    pub(crate) unfinished: u32,
    /// Every token its agents and their own children used.
    pub(crate) tokens: u64,
}

/// Tokens, each kind apart.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub(crate) struct Tokens {
    /// Uncached input.
    pub(crate) input: u64,
    pub(crate) cache_read: u64,
    pub(crate) cache_write: u64,
    pub(crate) output: u64,
}

impl Tokens {
    pub(crate) fn add(&mut self, other: &Tokens) {
        self.input += other.input;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.output += other.output;
    }

    /// Read from a `usage` object (`input_tokens`, `cache_read_tokens`, …).
    pub(crate) fn from_usage(usage: &Value) -> Tokens {
        let field = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
        Tokens {
            input: field("input_tokens"),
            cache_read: field("cache_read_tokens"),
            cache_write: field("cache_write_tokens"),
            output: field("output_tokens"),
        }
    }

    /// Every kind together.
    pub(crate) fn total(&self) -> u64 {
        self.input + self.cache_read + self.cache_write + self.output
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.input + self.cache_read + self.cache_write + self.output == 0
    }

    /// As the meter a price applies to.
    pub(crate) fn usage(&self) -> alcove_protocol::Usage {
        alcove_protocol::Usage {
            input_tokens: self.input,
            output_tokens: self.output,
            cache_read_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
        }
    }
}

/// What a timeline bar stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SpanKind {
    /// A model request, sent to its answer.
    Request,
    /// A tool call.
    Tool,
    /// A call that waits on other agents (`wait`, `Agent`, `spawn_batch`'s wait).
    Wait,
    /// Started by its parent, waiting for a slot until it began.
    Queued,
    /// A failed attempt's back-off before a retry.
    Retry,
    /// The history was compacted (a mark).
    Compaction,
}

/// One bar (or mark) of a lane.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Span {
    pub(crate) kind: SpanKind,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) label: String,
    /// A failed call or request.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) error: bool,
    /// It never finished (the transcript ends first).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) open: bool,
    /// The conversation item it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) item: Option<usize>,
}

/// One entry of a conversation.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "k", rename_all = "snake_case")]
pub(crate) enum Item {
    /// A message of the history.
    Message {
        role: String,
        ts: u64,
        blocks: Vec<Block>,
    },
    /// Something else worth showing: a compaction, a warning, a retry, a
    /// plan, streamed thinking, or an event kind this version does not know.
    Event { kind: String, ts: u64, text: String },
}

/// One content block of a message.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(crate) enum Block {
    Text {
        text: String,
    },
    Thinking {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        diff: Option<String>,
    },
    ToolResult {
        id: String,
        text: String,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        error: bool,
    },
    /// A block of a kind this version does not know, as its JSON.
    Other {
        kind: String,
        text: String,
    },
}

/// A command that failed (non-zero exit, killed, or not run).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FailedCommand {
    pub(crate) agent: String,
    pub(crate) command: String,
    /// `exit 3`, `killed`, `not run`.
    pub(crate) result: String,
    /// The first line of its output.
    pub(crate) output: String,
}

/// `text` cut to its first and last bytes within `cap`, saying how much
/// was left out.
pub(crate) fn capped(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_owned();
    }
    let mut head = cap * 3 / 4;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (cap - head);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n… [{} bytes not shown: the transcript has them] …\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// A message's text, capped.
pub(crate) fn text(text: &str) -> String {
    capped(text, TEXT_CAP)
}

/// A tool's input, result or diff, capped.
pub(crate) fn result(text: &str) -> String {
    capped(text, RESULT_CAP)
}

/// `value` as readable JSON, capped.
pub(crate) fn json_text(value: &Value) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
    result(&pretty)
}

/// The first line of `text`, at most 160 characters.
pub(crate) fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("");
    let mut short: String = line.chars().take(160).collect();
    if line.chars().count() > 160 {
        short.push('…');
    }
    short
}

/// The diff an `Edit` (old → new string), `MultiEdit` or `Write` (all new)
/// call's input describes, as `-`/`+`/` ` lines; `None` for other tools.
pub(crate) fn diff(tool: &str, input: &Value) -> Option<String> {
    let string = |value: &Value, name: &str| value.get(name)?.as_str().map(str::to_owned);
    let pairs: Vec<(String, String)> = match tool {
        "Edit" => vec![(string(input, "old_string")?, string(input, "new_string")?)],
        "MultiEdit" => input
            .get("edits")?
            .as_array()?
            .iter()
            .filter_map(|edit| Some((string(edit, "old_string")?, string(edit, "new_string")?)))
            .collect(),
        "Write" => vec![(String::new(), string(input, "content")?)],
        _ => return None,
    };
    let mut out = String::new();
    for (old, new) in &pairs {
        if !out.is_empty() {
            out.push_str("@@\n");
        }
        let lines = similar::TextDiff::from_lines(old.as_str(), new.as_str());
        for change in lines.iter_all_changes() {
            let sign = match change.tag() {
                similar::ChangeTag::Delete => '-',
                similar::ChangeTag::Insert => '+',
                similar::ChangeTag::Equal => ' ',
            };
            out.push(sign);
            out.push_str(change.value().trim_end_matches('\n'));
            out.push('\n');
        }
        if out.len() > RESULT_CAP * 2 {
            break;
        }
    }
    Some(result(&out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_text_keeps_head_and_tail_on_char_boundaries() {
        let long = format!("{}middle{}", "é".repeat(5000), "z".repeat(5000));
        let cut = capped(&long, 1000);
        assert!(cut.len() < 1200, "{}", cut.len());
        assert!(cut.starts_with('é') && cut.ends_with('z'));
        assert!(cut.contains("bytes not shown"));
        assert_eq!(capped("short", 1000), "short");
    }

    #[test]
    fn edits_become_line_diffs() {
        let input = json!({"file_path": "a", "old_string": "one\ntwo\n", "new_string": "one\n2\n"});
        assert_eq!(diff("Edit", &input).unwrap(), " one\n-two\n+2\n");
        let write = json!({"file_path": "a", "content": "x\n"});
        assert_eq!(diff("Write", &write).unwrap(), "+x\n");
        assert_eq!(diff("Read", &write), None);
    }
}
