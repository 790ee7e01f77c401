//! A run's folder: `script.js`, `journal.jsonl` (one line per finished
//! agent, appended as it ends) and `run.json` (the run: args, budget, end).
//!
//! A run killed at any moment keeps every finished agent's answer: a resume
//! reads the journal back and replays each call whose prompt and options are
//! unchanged, so only the unfinished agents run again.

use std::collections::{HashMap, VecDeque};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::host::AgentCall;

/// One finished agent, as `journal.jsonl` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalRecord {
    /// The call's number in the run that journaled it.
    pub index: u32,
    /// The call's identity: a hash of its prompt and options.
    pub key: String,
    /// Its label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `answered`, `threw`, or a null reason.
    pub status: String,
    /// The answer (for `answered`), or the error or null's detail.
    #[serde(default)]
    pub value: Value,
    /// Budget tokens it used.
    #[serde(default)]
    pub tokens: u64,
}

/// `run.json`: what a resume needs to run the same script the same way, and
/// how the run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run id (`wf_…`).
    pub run_id: String,
    /// `meta.name`.
    pub name: String,
    /// The script file the run was started from.
    pub script_path: Option<PathBuf>,
    /// The args, as given (`null` when none).
    pub args: Value,
    /// The token budget, when one was set.
    pub budget: Option<u64>,
    /// The dollar budget, when one was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    /// `running`, or the end status.
    pub status: String,
    /// The script's return value, once completed.
    #[serde(default)]
    pub result: Value,
    /// Why it did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The agent counts at the end.
    #[serde(default)]
    pub agents: Value,
}

/// The identity of a call for resume: its prompt and every option that
/// changes what the agent does (not its label or phase).
pub fn call_key(call: &AgentCall) -> String {
    let identity = json!({
        "prompt": call.prompt,
        "schema": call.schema,
        "model": call.model,
        "effort": call.effort,
        "isolation": call.isolation,
        "agentType": call.agent_type,
    });
    let hash = xxhash_rust::xxh3::xxh3_64(identity.to_string().as_bytes());
    format!("{hash:016x}")
}

/// A run's folder.
#[derive(Debug)]
pub struct RunDir {
    dir: PathBuf,
    journal: Mutex<Option<std::fs::File>>,
}

impl RunDir {
    /// Opens (creating) the folder `dir`; the journal is appended to.
    pub fn open(dir: &Path) -> Result<RunDir, String> {
        std::fs::create_dir_all(dir)
            .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
        let path = dir.join("journal.jsonl");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|err| format!("cannot open {}: {err}", path.display()))?;
        Ok(RunDir {
            dir: dir.to_owned(),
            journal: Mutex::new(Some(file)),
        })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Appends one finished agent; a write error is returned, and the run
    /// goes on (the agent's answer is still the script's).
    pub fn append(&self, record: &JournalRecord) -> Result<(), String> {
        let mut line = serde_json::to_string(record).map_err(|err| err.to_string())?;
        line.push('\n');
        let mut guard = self
            .journal
            .lock()
            .map_err(|_| "the journal's lock was poisoned".to_owned())?;
        match guard.as_mut() {
            Some(file) => file
                .write_all(line.as_bytes())
                .map_err(|err| format!("journal.jsonl: {err}")),
            None => Err("journal.jsonl is closed".to_owned()),
        }
    }

    /// Writes `run.json` (through a temporary file, so it is never torn).
    pub fn write_run(&self, record: &RunRecord) -> Result<(), String> {
        let path = self.dir.join("run.json");
        let temporary = self.dir.join("run.json.tmp");
        let text = serde_json::to_vec_pretty(record).map_err(|err| err.to_string())?;
        std::fs::write(&temporary, text)
            .and_then(|()| std::fs::rename(&temporary, &path))
            .map_err(|err| format!("cannot write {}: {err}", path.display()))
    }

    /// Saves the script that runs.
    pub fn write_script(&self, source: &str) -> Result<PathBuf, String> {
        let path = self.dir.join("script.js");
        std::fs::write(&path, source)
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        Ok(path)
    }
}

/// `run.json` of the run in `dir`.
pub fn read_run(dir: &Path) -> Result<RunRecord, String> {
    let path = dir.join("run.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|err| format!("nothing to resume: {}: {err}", path.display()))?;
    serde_json::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))
}

/// The answers a resume may replay: for each call key, the answers in the
/// order their calls were made. A torn last line (a kill mid-write) is
/// skipped; failed and cancelled agents are not replayed.
pub fn read_answers(dir: &Path) -> Result<HashMap<String, VecDeque<JournalRecord>>, String> {
    let path = dir.join("journal.jsonl");
    let text = std::fs::read_to_string(&path)
        .map_err(|err| format!("nothing to resume: {}: {err}", path.display()))?;
    let mut records: Vec<JournalRecord> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<JournalRecord>(line).ok())
        .filter(|record| record.status == "answered")
        .collect();
    records.sort_by_key(|record| record.index);
    let mut answers: HashMap<String, VecDeque<JournalRecord>> = HashMap::new();
    for record in records {
        answers
            .entry(record.key.clone())
            .or_default()
            .push_back(record);
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_back_by_key_and_a_torn_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::open(dir.path()).unwrap();
        let call = AgentCall {
            prompt: "p".into(),
            ..AgentCall::default()
        };
        let key = call_key(&call);
        for (index, status) in [(1, "answered"), (0, "answered"), (2, "failed")] {
            let record = JournalRecord {
                index,
                key: key.clone(),
                label: None,
                status: status.into(),
                value: json!(index),
                tokens: 3,
            };
            run.append(&record).unwrap();
        }
        drop(run);
        let path = dir.path().join("journal.jsonl");
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"index\": 3, \"ke");
        std::fs::write(&path, text).unwrap();
        let answers = read_answers(dir.path()).unwrap();
        let values: Vec<Value> = answers[&key].iter().map(|r| r.value.clone()).collect();
        assert_eq!(values, vec![json!(0), json!(1)]);
    }

    #[test]
    fn the_key_ignores_label_and_phase_but_not_options() {
        let base = AgentCall {
            prompt: "p".into(),
            ..AgentCall::default()
        };
        let labelled = AgentCall {
            label: Some("x".into()),
            phase: Some("y".into()),
            index: 9,
            ..base.clone()
        };
        let other_model = AgentCall {
            model: Some("m".into()),
            ..base.clone()
        };
        assert_eq!(call_key(&base), call_key(&labelled));
        assert_ne!(call_key(&base), call_key(&other_model));
    }
}
