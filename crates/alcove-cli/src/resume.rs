//! Finding earlier sessions and rebuilding their conversations.
//!
//! A session's transcript (`<data dir>/sessions/<id>.jsonl`) is the only
//! record of it, so resuming is replaying: the `message` events of agent
//! `main`, in order, are the conversation. `alcove resume`, `alcove exec
//! --resume` and the interactive picker all start here.
//!
//! A resumed session keeps its id and appends to the same transcript, which
//! then holds a second `session_started` line where the continuation began
//! (see `FrontEnd::resume`).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::SystemTime;

use alcove_protocol::{AgentEvent, AgentPath, ContentBlock, EventKind, Message, Role};

use alcove_core::{read_transcript, replay_compaction};
use anyhow::Context;

use crate::UsageError;
use crate::config::Dirs;
use crate::session::Session;

/// The note appended to a conversation whose last turn did not finish, so
/// the next request alternates roles and has a result for every tool call.
pub(crate) const INTERRUPTED_NOTE: &str = "[The previous turn was interrupted before it finished.]";

/// One session found on disk.
#[derive(Debug, Clone)]
pub(crate) struct SessionInfo {
    /// The session id (the transcript's file stem).
    pub(crate) id: String,
    /// The workspace it ran in.
    pub(crate) workspace: String,
    /// When the transcript was last written.
    pub(crate) modified: SystemTime,
    /// The first prompt, on one line.
    pub(crate) title: String,
}

/// The sessions under `data`, most recent first; only those whose workspace
/// is `workspace` when it is given.
pub(crate) fn list_sessions(data: &Path, workspace: Option<&Path>) -> Vec<SessionInfo> {
    let Ok(entries) = std::fs::read_dir(data.join("sessions")) else {
        return Vec::new();
    };
    let wanted = workspace.map(|path| path.display().to_string());
    let mut sessions: Vec<SessionInfo> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .filter_map(|path| read_info(&path))
        .filter(|info| {
            wanted
                .as_ref()
                .is_none_or(|wanted| *wanted == info.workspace)
        })
        .collect();
    sessions.sort_by_key(|info| std::cmp::Reverse(info.modified));
    sessions
}

/// Finds a session by id, or by a prefix of an id that only one session has.
pub(crate) fn find_session(data: &Path, id: &str) -> anyhow::Result<SessionInfo> {
    let exact = data.join("sessions").join(format!("{id}.jsonl"));
    if let Some(info) = read_info(&exact) {
        return Ok(info);
    }
    let matches: Vec<SessionInfo> = list_sessions(data, None)
        .into_iter()
        .filter(|info| info.id.starts_with(id))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(UsageError(format!(
            "no session `{id}` under {}; `alcove resume` lists the sessions of this folder",
            data.join("sessions").display()
        ))
        .into()),
        _ => Err(UsageError(format!(
            "`{id}` is the start of {} session ids; give more of it",
            matches.len()
        ))
        .into()),
    }
}

/// Makes a history that ended mid-turn valid to continue: every tool call
/// gets a result and the last message is the assistant's. Returns the
/// messages it appended, which the caller records in the transcript.
///
/// A session whose last request did not fit the context window
/// (`ended_by_overflow`) was not interrupted: its history ends with a whole
/// turn's results, and the loop compacts it before its next request, so it
/// gets no note (which would misdescribe the failure and grow the history).
pub(crate) fn repair_history(history: &mut Vec<Message>, ended_by_overflow: bool) -> Vec<Message> {
    let mut appended = Vec::new();
    if let Some(last) = history.last()
        && last.role == Role::Assistant
    {
        // Results would follow in a user message, so none of these has one.
        let missing: Vec<ContentBlock> = last
            .tool_uses()
            .map(|(id, _, _)| ContentBlock::ToolResult {
                tool_use_id: id.to_owned(),
                content: "The session stopped before this call returned a result.".into(),
                is_error: true,
            })
            .collect();
        if !missing.is_empty() {
            appended.push(Message {
                role: Role::User,
                content: missing,
            });
        }
    }
    if ended_by_overflow {
        history.extend(appended.iter().cloned());
        return appended;
    }
    if history
        .last()
        .is_some_and(|message| message.role == Role::User)
        || appended
            .last()
            .is_some_and(|message| message.role == Role::User)
    {
        appended.push(Message::assistant_text(INTERRUPTED_NOTE));
    }
    history.extend(appended.iter().cloned());
    appended
}

/// The conversation an opened session continues (`Session::history`, read
/// back from its transcript when it was resumed), made valid to continue;
/// the repair is recorded in the transcript, and the plan it held is
/// announced again (`plan_updated`).
pub(crate) fn continue_history(session: &Session) -> Vec<Message> {
    let mut history = session.history.clone();
    for message in repair_history(&mut history, session.ended_by_overflow) {
        session
            .runtime
            .emit(&AgentPath::main(), EventKind::Message { message });
    }
    // The plan the session had is shown again (the history holds it).
    if let Some(todos) = alcove_core::latest_plan(&history) {
        session
            .runtime
            .emit(&AgentPath::main(), EventKind::PlanUpdated { todos });
    }
    history
}

/// How long ago `time` was, briefly: `just now`, `5m ago`, `3h ago`, `2d ago`.
pub(crate) fn ago(time: SystemTime) -> String {
    let secs = SystemTime::now()
        .duration_since(time)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0);
    match secs {
        0..60 => "just now".to_owned(),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86_400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

/// Reads a transcript's id, workspace and first prompt without loading it all.
fn read_info(path: &Path) -> Option<SessionInfo> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let reader = BufReader::new(File::open(path).ok()?);
    let mut info: Option<SessionInfo> = None;
    for line in reader.lines().take(200) {
        let Ok(line) = line else { break };
        let Ok(event) = serde_json::from_str::<AgentEvent>(&line) else {
            continue;
        };
        match (&mut info, event.kind) {
            (
                None,
                EventKind::SessionStarted {
                    session_id,
                    workspace,
                    ..
                },
            ) => {
                info = Some(SessionInfo {
                    id: session_id,
                    workspace,
                    modified,
                    title: String::new(),
                });
            }
            (Some(info), EventKind::Message { message })
                if event.agent.as_str() == "main" && message.role == Role::User =>
            {
                let text = message.text();
                if !text.trim().is_empty() {
                    info.title = text.split_whitespace().collect::<Vec<_>>().join(" ");
                    break;
                }
            }
            _ => {}
        }
    }
    info
}

/// One more than the highest `agent-N` among a session's child transcripts
/// (1 for a new session).
pub(crate) fn next_child_number(children: &std::path::Path) -> u64 {
    let highest = std::fs::read_dir(children)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".jsonl")?;
            stem.rsplit("agent-").next()?.parse::<u64>().ok()
        })
        .max()
        .unwrap_or(0);
    highest + 1
}

/// What a resumed session continues from.
#[derive(Debug, Default)]
pub(crate) struct Resumed {
    pub(crate) history: Vec<Message>,
    pub(crate) ended_by_overflow: bool,
}

/// The main agent's history recorded in session `id`'s transcript: its
/// `message` events in order, with each `compacted` event applied where it
/// happened, so a compacted session continues from the compacted history.
pub(crate) fn resumed_history(dirs: &Dirs, id: &str) -> anyhow::Result<Resumed> {
    if id.is_empty() || id.contains(['/', '\\']) || id.starts_with('.') {
        return Err(UsageError(format!("`{id}` is not a session id")).into());
    }
    let path = dirs.data.join("sessions").join(format!("{id}.jsonl"));
    if !path.exists() {
        return Err(UsageError(format!(
            "no session `{id}`: {} does not exist",
            path.display()
        ))
        .into());
    }
    let events =
        read_transcript(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut resumed = Resumed::default();
    for event in events
        .into_iter()
        .filter(|event| event.agent == AgentPath::main())
    {
        match event.kind {
            EventKind::Message { message } => resumed.history.push(message),
            EventKind::Compacted {
                cleared,
                replaced,
                summary,
                ..
            } => replay_compaction(&mut resumed.history, &cleared, replaced, summary.as_deref()),
            // A run that made no request (`exec --compact` alone) did not
            // change how the history ends.
            EventKind::SessionEnded { turns: 0, .. } => {}
            EventKind::SessionEnded { error, .. } => {
                resumed.ended_by_overflow = error.as_deref().is_some_and(ended_by_overflow);
            }
            _ => {}
        }
    }
    Ok(resumed)
}

/// Whether a run's error says its request did not fit the context window
/// (the loop's own wording, `compaction::Context::too_long`).
pub(crate) fn ended_by_overflow(error: &str) -> bool {
    error.starts_with("the conversation does not fit")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_history_cut_mid_call_gets_results_and_a_closing_note() {
        let mut history = vec![
            Message::user_text("hi"),
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: "t1".to_owned(),
                    name: "Bash".to_owned(),
                    input: json!({"command": "ls"}),
                }],
            },
        ];
        let appended = repair_history(&mut history, false);
        assert_eq!(appended.len(), 2);
        assert_eq!(history.len(), 4);
        assert_eq!(history[3].role, Role::Assistant);
        assert!(matches!(
            &history[2].content[0],
            ContentBlock::ToolResult { tool_use_id, is_error: true, .. } if tool_use_id == "t1"
        ));
    }

    #[test]
    fn a_finished_history_is_left_alone() {
        let mut history = vec![Message::user_text("hi"), Message::assistant_text("hello")];
        assert!(repair_history(&mut history, false).is_empty());
        let mut dangling = vec![Message::user_text("hi")];
        assert_eq!(repair_history(&mut dangling, false).len(), 1);
        assert_eq!(dangling[1].text(), INTERRUPTED_NOTE);
        // A request that did not fit was no interruption: no note.
        let mut overflowed = vec![Message::user_text("hi")];
        assert!(repair_history(&mut overflowed, true).is_empty());
    }

    #[test]
    fn sessions_are_found_by_workspace_and_id_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        for (id, workspace) in [("aaaa-1", "/w/one"), ("bbbb-2", "/w/two")] {
            let events = [
                AgentEvent {
                    agent: AgentPath::main(),
                    kind: EventKind::SessionStarted {
                        session_id: id.to_owned(),
                        model: "m".to_owned(),
                        workspace: workspace.to_owned(),
                        transcript: None,
                    },
                },
                AgentEvent {
                    agent: AgentPath::main(),
                    kind: EventKind::Message {
                        message: Message::user_text(format!("task\nof {id}")),
                    },
                },
            ];
            let text: String = events
                .iter()
                .map(|event| serde_json::to_string(event).unwrap() + "\n")
                .collect();
            std::fs::write(sessions.join(format!("{id}.jsonl")), text).unwrap();
        }
        let found = list_sessions(dir.path(), Some(Path::new("/w/two")));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].title, "task of bbbb-2");
        assert_eq!(find_session(dir.path(), "aaa").unwrap().id, "aaaa-1");
        assert!(find_session(dir.path(), "zzz").is_err());
    }
}
