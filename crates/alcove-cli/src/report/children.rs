//! What a parent's transcript says about its children: each child's start
//! (`agent_started`: who started it, for which call, its transcript) and
//! end (`agent_ended`: status, turns, tokens, typed evidence), joined with
//! the child's own lane when the report is assembled.
//!
//! Apart from `read.rs`, which applies each event to its agent's lane.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::model::{self, Tokens};
use super::read::{Reader, str_of, u64_of};

/// What the parent's transcript says about a child.
#[derive(Debug, Default)]
pub(super) struct ChildStart {
    pub(super) parent: String,
    pub(super) call_id: String,
    pub(super) description: String,
    pub(super) agent_type: String,
    pub(super) depth: u32,
    pub(super) transcript: Option<PathBuf>,
    /// When it began (its `agent_started`).
    pub(super) started: u64,
    /// Its place among the starts read so far (siblings keep this order).
    pub(super) order: usize,
    /// When the parent's call that asked for it began.
    pub(super) requested: Option<u64>,
    pub(super) ended: Option<ChildEnd>,
}

#[derive(Debug)]
pub(super) struct ChildEnd {
    pub(super) status: String,
    pub(super) turns: u32,
    pub(super) tokens: Tokens,
    pub(super) ts: u64,
    /// From the end record's typed `evidence`: its `[alcove evidence]`
    /// status line (without the prefix) and its `[alcove worktree]` line.
    pub(super) evidence: Option<String>,
    pub(super) worktree: Option<String>,
}

impl Reader {
    /// An `agent_started` written by `agent` in `file`; `requested` is when
    /// the call that asked for the child began.
    pub(super) fn child_started(
        &mut self,
        agent: &str,
        file: &Path,
        requested: Option<u64>,
        event: &Value,
        ts: u64,
    ) {
        let str_field = |name: &str| str_of(event, name);
        let u64_field = |name: &str| u64_of(event, name);
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
        let order = self.children.len();
        let start = self.children.entry(child).or_default();
        // A spawned agent's later submissions keep their first start.
        if start.started == 0 {
            self.discovered.extend(transcript.clone());
            *start = ChildStart {
                parent: agent.to_owned(),
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

    /// An `agent_ended`.
    pub(super) fn child_ended(&mut self, event: &Value, ts: u64) {
        let str_field = |name: &str| str_of(event, name);
        let u64_field = |name: &str| u64_of(event, name);

        let child = self.children.entry(str_field("child")).or_default();
        let tokens = Tokens::from_usage(event.get("usage").unwrap_or(&Value::Null));
        let turns = u32::try_from(u64_field("turns")).unwrap_or(u32::MAX);
        let ended = child.ended.get_or_insert(ChildEnd {
            status: String::new(),
            turns: 0,
            tokens: Tokens::default(),
            ts,
            evidence: None,
            worktree: None,
        });
        ended.status = str_field("status");
        ended.turns += turns;
        ended.tokens.add(&tokens);
        ended.ts = ts;
        // The record's typed evidence (a spawned agent's last
        // submission's, as `wait` said last).
        if let Some(evidence) = event.get("evidence").filter(|value| value.is_object()) {
            let text = |name: &str| evidence.get(name).and_then(Value::as_str);
            ended.evidence = text("footer").and_then(|footer| {
                footer
                    .lines()
                    .find_map(|line| line.strip_prefix("[alcove evidence] status: "))
                    .map(|rest| model::capped(&format!("status: {rest}"), 2048))
            });
            ended.worktree = text("worktree").map(|line| model::capped(line, 2048));
        }
    }
}
