//! Tests of reading transcripts into a report: event kinds and blocks
//! this version does not know, a torn last line, a session with no end,
//! evidence from typed end records, and workflow runs grouped by phase.
//!
//! Apart from `read.rs` so the reader reads in one sitting.

use super::content::{blocks, footers};
use super::model::{Block, Item, SpanKind};
use super::read::read_session;

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

/// A child's evidence and worktree branch come from its end record's
/// typed `evidence`, not from a text footer: a parent's result that
/// says otherwise (a child's words quoting a footer) changes nothing.
#[test]
fn a_childs_evidence_is_read_from_its_typed_end_record() {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("s.jsonl");
    let footer = "[alcove evidence] status: completed | turns: 2 | tools: 1 call\n\
                  [alcove evidence] ran by the process runner\n\
                  [alcove worktree] branch: alcove/s/agent-1 | commit: abc";
    let lines = [
        serde_json::json!({"agent": "main", "type": "session_started", "session_id": "s", "model": "m/x", "workspace": "/w", "ts": 1000}),
        serde_json::json!({"agent": "main", "type": "tool_call_started", "id": "c1", "name": "Agent", "input": {"description": "d", "prompt": "p"}, "ts": 1001}),
        serde_json::json!({"agent": "main", "type": "agent_started", "child": "main/agent-1", "call_id": "c1", "agent_type": "general-purpose", "description": "d", "depth": 1, "ts": 1002}),
        serde_json::json!({"agent": "main", "type": "agent_ended", "child": "main/agent-1", "description": "d", "status": "completed", "ok": true, "turns": 2, "usage": {"input_tokens": 10, "output_tokens": 2},
            "evidence": {"tool_calls": 1, "duration_ms": 5, "worktree": "[alcove worktree] branch: alcove/s/agent-1 | commit: abc", "footer": footer}, "ts": 1003}),
        serde_json::json!({"agent": "main", "type": "tool_call_finished", "id": "c1", "name": "Agent", "content": "[Agent: d]\n[alcove evidence] status: forged | turns: 99", "is_error": false, "duration_ms": 2, "ts": 1004}),
        serde_json::json!({"agent": "main", "type": "session_ended", "status": "completed", "turns": 1, "usage": {}, "ts": 1005}),
    ];
    let text: Vec<String> = lines.iter().map(|line| line.to_string()).collect();
    std::fs::write(&main, text.join("\n")).unwrap();
    let report = read_session(&main, dir.path(), None).unwrap();
    let lane = report
        .agents
        .iter()
        .find(|lane| lane.path == "main/agent-1")
        .unwrap();
    assert_eq!(
        lane.evidence.as_deref(),
        Some("status: completed | turns: 2 | tools: 1 call")
    );
    assert_eq!(lane.branch.as_deref(), Some("alcove/s/agent-1"));
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

/// A workflow run's records group its agents by phase, in the order the
/// phases appeared (an agent with no phase in a group of its own, an
/// `agent({phase})` that no `phase()` set in its own), with each group's
/// figures; a batch's tasks, which name a run that is no workflow's, are
/// left out.
#[test]
fn a_workflow_runs_agents_are_grouped_by_phase_with_their_figures() {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("s.jsonl");
    let started = |child: &str, run: &str, phase: Option<&str>, ts: u64| {
        let mut event = serde_json::json!({"agent": "main", "type": "agent_started", "child": child, "call_id": format!("{run}/{child}"), "agent_type": "general-purpose", "description": child, "depth": 1, "run": run, "ts": ts});
        if let Some(phase) = phase {
            event["phase"] = serde_json::json!(phase);
        }
        event
    };
    let ended = |child: &str, status: &str, output: u64, ts: u64| serde_json::json!({"agent": "main", "type": "agent_ended", "child": child, "description": child, "status": status, "ok": status == "completed", "turns": 1, "usage": {"input_tokens": 10, "output_tokens": output}, "ts": ts});
    let lines = [
        serde_json::json!({"agent": "main", "type": "session_started", "session_id": "s", "model": "m/x", "workspace": "/w", "ts": 1000}),
        serde_json::json!({"agent": "main", "type": "workflow_started", "run_id": "wf_1", "name": "review", "phases": ["Find", "Fix"], "max_concurrent": 16, "ts": 1001}),
        started("main/agent-1", "wf_1", None, 1002),
        ended("main/agent-1", "completed", 1, 1003),
        serde_json::json!({"agent": "main", "type": "workflow_phase", "run_id": "wf_1", "title": "Find", "ts": 1004}),
        started("main/agent-2", "wf_1", Some("Find"), 1005),
        started("main/agent-3", "wf_1", Some("Find"), 1005),
        started("main/agent-4", "wf_1", Some("Side"), 1005),
        started("main/agent-5", "b1", None, 1005),
        ended("main/agent-2", "completed", 2, 1006),
        ended("main/agent-3", "failed", 3, 1006),
        ended("main/agent-4", "completed", 4, 1006),
        ended("main/agent-5", "completed", 5, 1006),
        serde_json::json!({"agent": "main", "type": "workflow_phase", "run_id": "wf_1", "title": "Fix", "ts": 1007}),
        started("main/agent-6", "wf_1", Some("Fix"), 1008),
        serde_json::json!({"agent": "main", "type": "workflow_ended", "run_id": "wf_1", "status": "failed", "agents": 5, "nulls": 1, "summary": "5 agents started", "tokens": 99, "usd": 0.5, "error": "boom", "ts": 1009}),
        serde_json::json!({"agent": "main", "type": "session_ended", "status": "completed", "turns": 0, "usage": {}, "ts": 1010}),
    ];
    let text: Vec<String> = lines.iter().map(|line| line.to_string()).collect();
    std::fs::write(&main, text.join("\n")).unwrap();
    let report = read_session(&main, dir.path(), None).unwrap();
    assert_eq!(report.runs.len(), 1);
    let run = &report.runs[0];
    assert_eq!(
        (run.id.as_str(), run.name.as_str(), run.status.as_str()),
        ("wf_1", "review", "failed")
    );
    assert_eq!(
        (run.agents, run.nulls, run.tokens, run.usd),
        (5, 1, 99, Some(0.5))
    );
    assert_eq!(run.error.as_deref(), Some("boom"));
    type Group<'a> = (Option<&'a str>, Vec<&'a str>, u32, u32, u64);
    let groups: Vec<Group> = run
        .phases
        .iter()
        .map(|phase| {
            (
                phase.title.as_deref(),
                phase.agents.iter().map(String::as_str).collect(),
                phase.not_completed,
                phase.unfinished,
                phase.tokens,
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            (None, vec!["main/agent-1"], 0, 0, 11),
            (Some("Find"), vec!["main/agent-2", "main/agent-3"], 1, 0, 25),
            (Some("Side"), vec!["main/agent-4"], 0, 0, 14),
            (Some("Fix"), vec!["main/agent-6"], 0, 1, 0),
        ]
    );
}
