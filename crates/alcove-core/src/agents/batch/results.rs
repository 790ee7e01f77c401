//! `results.jsonl`: one line per task end, appended and written through at
//! once, so a batch killed at any moment loses no finished task.
//!
//! The file is the batch's memory: a rerun with the same folder reads it
//! and skips every task whose last line says `completed`. Lines are only
//! ever appended (a retried task gets a newer line; the last one wins).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use alcove_protocol::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::task::TaskState;

/// One task's end, as written to results.jsonl.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResultRecord {
    /// The batch id.
    pub batch: String,
    /// The task id.
    pub task: String,
    /// The task's description.
    pub description: String,
    /// How the task ended.
    pub state: TaskState,
    /// The run status behind the state (`completed`, `max_turns`, …).
    #[serde(default)]
    pub status: Option<String>,
    /// 1 for the first run, 2 for the first retry, …
    pub attempt: u32,
    /// The first line of the child's own words (or of the error).
    #[serde(default)]
    pub first_line: String,
    /// The child's full report (summary and evidence footer).
    #[serde(default)]
    pub report: String,
    /// What the harness saw the child do (files written, commands).
    #[serde(default)]
    pub evidence: Value,
    /// Tokens used.
    #[serde(default)]
    pub usage: Usage,
    /// Model turns made.
    #[serde(default)]
    pub turns: u32,
    /// Unix milliseconds when the task started (absent when it never did).
    #[serde(default)]
    pub started_at_ms: Option<u64>,
    /// Unix milliseconds when it ended.
    pub ended_at_ms: u64,
    /// Wall-clock milliseconds it ran.
    #[serde(default)]
    pub elapsed_ms: u64,
    /// The child's transcript.
    #[serde(default)]
    pub transcript: Option<PathBuf>,
    /// The Slurm job id, when it ran as a Slurm job step.
    #[serde(default)]
    pub job_id: Option<String>,
    /// Why it did not complete.
    #[serde(default)]
    pub error: Option<String>,
}

/// The open results file of one batch.
pub struct ResultsFile {
    path: PathBuf,
    file: Mutex<File>,
}

impl ResultsFile {
    /// Opens (creating) `dir/results.jsonl` for appending.
    pub fn open(dir: &Path) -> std::io::Result<ResultsFile> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("results.jsonl");
        let mut file = OpenOptions::new().create(true).append(true).open(&path)?;
        // A line torn by a kill ends where the next record would start.
        let torn =
            std::fs::read(&path).is_ok_and(|bytes| bytes.last().is_some_and(|b| *b != b'\n'));
        if torn {
            file.write_all(b"\n")?;
        }
        Ok(ResultsFile {
            path,
            file: Mutex::new(file),
        })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record as one write (a line, newline included).
    pub fn append(&self, record: &ResultRecord) -> Result<(), String> {
        let mut line = serde_json::to_string(record).map_err(|err| err.to_string())?;
        line.push('\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| "the results file is unavailable".to_owned())?;
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|err| format!("cannot write {}: {err}", self.path.display()))
    }
}

/// The last record of each task in `dir/results.jsonl` (none when the file
/// does not exist). A torn last line (the writer was killed mid-write) is
/// skipped.
pub fn read_results(dir: &Path) -> Result<HashMap<String, ResultRecord>, String> {
    let path = dir.join("results.jsonl");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
    };
    let mut last = HashMap::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        if let Ok(record) = serde_json::from_str::<ResultRecord>(line) {
            last.insert(record.task.clone(), record);
        }
    }
    Ok(last)
}

/// Unix milliseconds now.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(task: &str, state: TaskState) -> ResultRecord {
        ResultRecord {
            batch: "b".into(),
            task: task.into(),
            description: "d".into(),
            state,
            status: None,
            attempt: 1,
            first_line: "line one".into(),
            report: "[Agent: d]\nline one\nline two".into(),
            evidence: Value::Null,
            usage: Usage::default(),
            turns: 1,
            started_at_ms: None,
            ended_at_ms: 0,
            elapsed_ms: 0,
            transcript: None,
            job_id: None,
            error: None,
        }
    }

    #[test]
    fn the_last_line_of_a_task_wins_and_a_torn_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let file = ResultsFile::open(dir.path()).unwrap();
        file.append(&record("a", TaskState::Failed)).unwrap();
        file.append(&record("b", TaskState::Completed)).unwrap();
        file.append(&record("a", TaskState::Completed)).unwrap();
        drop(file);
        let mut raw = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("results.jsonl"))
            .unwrap();
        raw.write_all(b"{\"batch\":\"b\",\"task\":\"c\",\"sta")
            .unwrap();
        let results = read_results(dir.path()).unwrap();
        assert_eq!(results.len(), 2);
        // The next writer starts on a fresh line.
        ResultsFile::open(dir.path())
            .unwrap()
            .append(&record("c", TaskState::Completed))
            .unwrap();
        assert_eq!(
            read_results(dir.path()).unwrap()["c"].state,
            TaskState::Completed
        );
        assert_eq!(results["a"].state, TaskState::Completed);
    }

    #[test]
    fn a_missing_file_means_no_results() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_results(dir.path()).unwrap().is_empty());
    }
}
