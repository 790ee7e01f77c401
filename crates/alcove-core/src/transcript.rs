//! The session transcript: an append-only JSONL record of every event but
//! the streamed text pieces (`text_delta`), whose text the `assistant_text`
//! and `message` events carry whole: a real model streams hundreds of pieces
//! a turn, and writing each (to the session's and the child's transcript)
//! was the largest per-turn cost of a child.
//!
//! Each event is one line, written and flushed as it happens, so a process
//! killed at any moment leaves a file whose complete lines all parse. The
//! one exception is a few bookkeeping events that the agent loop always
//! follows with another event before it waits for anything ([`held`]):
//! their line goes out in the same `write` as the next one's. A turn of a
//! child took ten writes, and in a 64-wide fan-out they were a tenth of
//! alcove's CPU (bench/notes.md). Events emitted together
//! ([`EventSink::emit_all`]: a reply's tool calls, announced before any
//! runs) go out in one `write` too. Lines
//! carry a `ts` (Unix milliseconds) beside the event's own fields. Replaying
//! the `message` events of an agent rebuilds its conversation. The secrets
//! of the session's [`Redactor`] (given with [`Transcript::with_redactor`])
//! are written as `[REDACTED]`.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use alcove_protocol::{AgentEvent, EventKind};

use crate::{EventSink, Redactor};

/// The file and a line buffer reused from event to event.
#[derive(Default)]
struct Writer {
    /// `None` after [`Transcript::release`] until the next event reopens it.
    file: Option<File>,
    /// The lines not yet written: the current one, after any [`held`] ones.
    line: Vec<u8>,
}

/// Whether `kind`'s line may wait for the next event's: only events the
/// agent loop always follows with another one, with no wait in between (a
/// reply's usage and text come just before its message, a turn that called
/// tools ends just before the next starts, the context estimate comes just
/// before the request). What waits is never a message: the conversation
/// itself is always on disk before anything is awaited.
fn held(kind: &EventKind) -> bool {
    match kind {
        EventKind::Usage { .. } | EventKind::AssistantText { .. } | EventKind::Context { .. } => {
            true
        }
        EventKind::TurnEnded { tool_calls, .. } => *tool_calls > 0,
        _ => false,
    }
}

/// A line buffer grown past this by a large event is given back after it.
const LINE_KEPT: usize = 64 * 1024;

/// An open transcript file.
pub struct Transcript {
    path: PathBuf,
    /// The open file and the buffer each line is built in.
    writer: Mutex<Writer>,
    failure: Mutex<Option<String>>,
    /// The session's secrets, never written.
    redactor: Arc<Redactor>,
}

impl Transcript {
    /// Creates (or appends to) the transcript at `path`, creating its folder.
    pub fn create(path: &Path) -> std::io::Result<Transcript> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Transcript {
            path: path.to_owned(),
            writer: Mutex::new(Writer {
                file: Some(file),
                line: Vec::new(),
            }),
            failure: Mutex::new(None),
            redactor: Arc::default(),
        })
    }

    /// The same transcript writing `[REDACTED]` wherever one of
    /// `redactor`'s secrets would appear.
    pub fn with_redactor(mut self, redactor: Arc<Redactor>) -> Transcript {
        self.redactor = redactor;
        self
    }

    /// The session's redactor, which this transcript writes through.
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// Where it is written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes the file until the next event, which reopens it for appending.
    /// An agent between submissions needs no descriptor: without this, a
    /// session that spawns hundreds of agents keeps one open per agent
    /// (issue 7's 200-children test counts them).
    pub fn release(&self) {
        if let Ok(mut writer) = self.writer.lock() {
            if !writer.line.is_empty() {
                let Writer { file, line } = &mut *writer;
                let due = line.len();
                if let Err(err) = self.write_out(file, line, due) {
                    self.note_failure(&err);
                }
            }
            writer.file = None;
        }
    }

    /// The first write error, if writing ever failed.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|failure| failure.clone())
    }

    /// Writes the lines of `events` (those a transcript keeps) in one
    /// write, after any held ones. Held events at the end, after the last
    /// event that is not held, wait for the next write. The first line
    /// that cannot be made is the error; the others are still written.
    fn write(&self, events: &[AgentEvent]) -> std::io::Result<()> {
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let mut writer = self
            .writer
            .lock()
            .map_err(|_| std::io::Error::other("transcript lock poisoned"))?;
        let Writer { file, line } = &mut *writer;
        // The lines up to here go out now.
        let mut due = 0;
        let mut failed = None;
        for event in events {
            if is_delta(&event.kind) {
                continue;
            }
            match self.push_line(event, ts, line) {
                Ok(()) if !held(&event.kind) => due = line.len(),
                Ok(()) => {}
                Err(err) => {
                    failed.get_or_insert(err);
                }
            }
        }
        if due > 0 {
            self.write_out(file, line, due)?;
        }
        failed.map_or(Ok(()), Err)
    }

    /// Appends `event`'s line (with `ts`, redacted) to `line`.
    fn push_line(&self, event: &AgentEvent, ts: u128, line: &mut Vec<u8>) -> std::io::Result<()> {
        let start = line.len();
        // The event is serialized once, straight to text, and `ts` is added
        // before its closing brace: going through a `serde_json::Value` to
        // insert it copied every event (whole tool results included) and was
        // a fifth of a wide fan-out's CPU (issue 7's benchmarks).
        if let Err(err) = serde_json::to_writer(&mut *line, event) {
            line.truncate(start);
            return Err(err.into());
        }
        if line.len() > start && line.last() == Some(&b'}') {
            line.pop();
            if line.len() > start + 1 {
                line.push(b',');
            }
            write!(line, "\"ts\":{ts}}}")?;
        }
        if let Some(redacted) = self.redactor.redact_json(&line[start..]) {
            line.truncate(start);
            line.extend_from_slice(redacted.as_bytes());
        }
        line.push(b'\n');
        Ok(())
    }

    /// Writes the first `due` bytes of the pending lines (whole lines),
    /// reopening a released file; the rest stay pending.
    fn write_out(
        &self,
        file: &mut Option<File>,
        line: &mut Vec<u8>,
        due: usize,
    ) -> std::io::Result<()> {
        let file = match file {
            Some(file) => file,
            released @ None => released.insert(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)?,
            ),
        };
        let written = file.write_all(&line[..due]).and_then(|()| file.flush());
        line.drain(..due);
        if line.is_empty() && line.capacity() > LINE_KEPT {
            *line = Vec::new();
        }
        written
    }

    fn note_failure(&self, err: &std::io::Error) {
        if let Ok(mut failure) = self.failure.lock() {
            failure.get_or_insert_with(|| {
                format!("cannot write transcript {}: {err}", self.path.display())
            });
        }
    }
}

impl Drop for Transcript {
    /// Writes a held line that no event followed.
    fn drop(&mut self) {
        self.release();
    }
}

/// Streamed pieces, left out of transcripts: the `message` holds them whole.
fn is_delta(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::TextDelta { .. } | EventKind::ThinkingDelta { .. }
    )
}

impl EventSink for Transcript {
    fn emit(&self, event: &AgentEvent) {
        if !is_delta(&event.kind) {
            self.emit_all(std::slice::from_ref(event));
        }
    }

    fn emit_all(&self, events: &[AgentEvent]) {
        if let Err(err) = self.write(events) {
            self.note_failure(&err);
        }
    }
}

/// Reads a transcript back. A last line cut short by a crash is skipped;
/// any other unreadable line is an error naming its number.
pub fn read_transcript(path: &Path) -> std::io::Result<Vec<AgentEvent>> {
    let reader = BufReader::new(File::open(path)?);
    let lines: Vec<String> = reader.lines().collect::<Result<_, _>>()?;
    let mut events = Vec::with_capacity(lines.len());
    for (idx, line) in lines.iter().enumerate() {
        match serde_json::from_str::<AgentEvent>(line) {
            Ok(event) => events.push(event),
            Err(_) if idx + 1 == lines.len() => break,
            Err(err) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{} line {}: {err}", path.display(), idx + 1),
                ));
            }
        }
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alcove_protocol::{AgentPath, EventKind, Message};

    fn usage() -> AgentEvent {
        AgentEvent {
            agent: AgentPath::main(),
            kind: EventKind::Usage {
                usage: alcove_protocol::Usage::default(),
            },
        }
    }

    fn user_says_hi() -> AgentEvent {
        AgentEvent {
            agent: AgentPath::main(),
            kind: EventKind::Message {
                message: Message::user_text("hi"),
            },
        }
    }

    #[test]
    fn events_round_trip_and_a_torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions/s.jsonl");
        let transcript = Transcript::create(&path).unwrap();
        let event = user_says_hi();
        transcript.emit(&event);
        transcript.emit(&event);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"agent\":\"main\",\"type\":\"mess")
            .unwrap();
        let events = read_transcript(&path).unwrap();
        assert_eq!(events, vec![event.clone(), event]);
        assert!(transcript.failure().is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.lines().next().unwrap().contains("\"ts\":"));
    }

    #[test]
    fn a_held_line_goes_out_with_the_next_event_or_on_release_or_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let transcript = Transcript::create(&path).unwrap();
        let usage = usage();
        let context = AgentEvent {
            agent: AgentPath::main(),
            kind: EventKind::Context {
                used: 10,
                window: 100,
            },
        };
        transcript.emit(&usage);
        transcript.emit(&user_says_hi());
        assert_eq!(
            read_transcript(&path).unwrap(),
            vec![usage.clone(), user_says_hi()]
        );
        transcript.emit(&usage);
        transcript.release();
        assert_eq!(read_transcript(&path).unwrap().len(), 3);
        transcript.emit(&context);
        drop(transcript);
        let events = read_transcript(&path).unwrap();
        assert_eq!(events.last(), Some(&context));
        assert_eq!(events.len(), 4);
    }

    #[test]
    fn events_emitted_together_are_on_disk_together_unless_the_last_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let transcript = Transcript::create(&path).unwrap();
        let started = |id: &str| AgentEvent {
            agent: AgentPath::main(),
            kind: EventKind::ToolCallStarted {
                id: id.to_owned(),
                name: "Read".to_owned(),
                input: serde_json::json!({"file_path": id}),
            },
        };
        let usage = usage();
        let delta = AgentEvent {
            agent: AgentPath::main(),
            kind: EventKind::TextDelta {
                text: "never kept".to_owned(),
            },
        };
        // A held line from before goes out first; a text piece is skipped.
        transcript.emit(&usage);
        transcript.emit_all(&[started("a"), delta, started("b")]);
        assert_eq!(
            read_transcript(&path).unwrap(),
            vec![usage.clone(), started("a"), started("b")]
        );
        // A held event at a batch's end waits for the next event.
        transcript.emit_all(&[started("c"), usage.clone()]);
        assert_eq!(read_transcript(&path).unwrap().len(), 4);
        transcript.emit(&user_says_hi());
        assert_eq!(
            read_transcript(&path).unwrap()[3..],
            [started("c"), usage, user_says_hi()]
        );
        assert!(transcript.failure().is_none());
    }

    #[test]
    fn a_released_transcript_reopens_and_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let transcript = Transcript::create(&path).unwrap();
        let event = user_says_hi();
        transcript.emit(&event);
        transcript.release();
        assert!(transcript.writer.lock().unwrap().file.is_none());
        transcript.emit(&event);
        assert_eq!(read_transcript(&path).unwrap(), vec![event.clone(), event]);
        assert!(transcript.failure().is_none());
    }

    #[test]
    fn secret_values_are_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let transcript = Transcript::create(&path)
            .unwrap()
            .with_redactor(Arc::new(Redactor::new(vec![
                "supersecretvalue".to_owned(),
                "short".to_owned(),
                "q\"uoted\\secret".to_owned(),
            ])));
        transcript.emit(&AgentEvent {
            agent: AgentPath::main(),
            kind: EventKind::Message {
                message: Message::user_text(
                    "token=supersecretvalue and q\"uoted\\secret, short stays",
                ),
            },
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("supersecretvalue") && !text.contains("uoted"),
            "{text}"
        );
        assert_eq!(text.matches("[REDACTED]").count(), 2, "{text}");
        assert!(text.contains("short stays"));
        assert_eq!(read_transcript(&path).unwrap().len(), 1);
    }
}
