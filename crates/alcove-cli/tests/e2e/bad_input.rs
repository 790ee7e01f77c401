//! Bad input through the real binary (issue 7): every built-in tool fed wrong
//! types, missing fields, huge values, `..` paths, symlinks out of the
//! workspace, binary files and invalid UTF-8 file names; config and
//! agent-definition files with syntax errors; hook scripts that time out,
//! print garbage or exit oddly. Where `faults` and `reliability` break the
//! model server and the processes, this suite breaks the input, and proves
//! that it ends as a clear error — never a panic, a hang or a lost call, and
//! never a write outside the workspace.
//!
//! Every run goes through [`Case::run`], which makes those checks itself:
//! alcove works in `ws/` of the test's folder (`--cd ws`), and everything
//! else in that folder — `outside/` with its sentinel file, targets of the
//! symlinks — is snapshotted before the run and compared after it; stderr
//! never says "panicked"; the JSON events (of a run that got past its
//! configuration) and every transcript parse and pair each tool_use with one
//! result.
//!
//! - `tool_args`: wrong types, missing fields and huge values, tool by tool.
//! - `paths`: `..`, symlinks out, deny rules through links, binary files,
//!   named pipes, invalid UTF-8 names.
//! - `files`: broken config, settings and agent-definition files, and a
//!   definition that asks for more than its parent has.
//! - `hooks`: hooks that time out, print garbage, exit 1/3/255 or die by a signal.

mod files;
mod hooks;
mod paths;
mod tool_args;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alcove_testkit::{FakeServer, Script};
use serde_json::Value;

use crate::support::{Outcome, assert_nothing_lost, exec, read_jsonl, setup};

/// The permission flags most cases run with.
const ACCEPT_EDITS: [&str; 2] = ["--permission-mode", "acceptEdits"];
const BYPASS: [&str; 2] = ["--permission-mode", "bypassPermissions"];

/// A fake server and a test folder holding the workspace `ws/` and an
/// `outside/` folder that no run may change.
pub(crate) struct Case {
    pub(crate) env: alcove_testkit::TestEnv,
    pub(crate) server: FakeServer,
}

impl Case {
    pub(crate) fn new(script: Script) -> Case {
        let (env, server) = setup(script);
        std::fs::create_dir_all(env.path("ws")).unwrap();
        std::fs::create_dir_all(env.path("outside")).unwrap();
        std::fs::write(env.path("outside/sentinel.txt"), "untouched\n").unwrap();
        Case { env, server }
    }

    /// A case whose script needs its paths (symlink targets, absolute paths).
    pub(crate) fn build(script: impl FnOnce(&Case) -> Script) -> Case {
        let mut case = Case::new(Script::new());
        case.server = FakeServer::start(script(&case));
        case
    }

    /// The absolute path of `rel` inside the workspace.
    pub(crate) fn ws(&self, rel: &str) -> PathBuf {
        self.env.path("ws").join(rel)
    }

    /// The absolute path of `rel` in the folder no run may write to.
    pub(crate) fn outside(&self, rel: &str) -> PathBuf {
        self.env.path("outside").join(rel)
    }

    /// Writes a file into the workspace, creating its folders.
    pub(crate) fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.ws(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Runs `alcove exec --cd ws --json ARGS`, checks it stayed sound (see
    /// the module doc) and returns what it printed.
    pub(crate) fn run(&self, args: &[&str]) -> Outcome {
        let before = snapshot_outside(self.env.workspace());
        let mut all = vec!["--cd", "ws", "--json"];
        all.extend_from_slice(args);
        let out = exec(&self.env, &self.server, &all);
        assert!(
            !out.stderr.contains("panicked"),
            "alcove panicked: {}",
            out.stderr
        );
        assert_eq!(
            snapshot_outside(self.env.workspace()),
            before,
            "a file outside the workspace changed"
        );
        if out.code != 2 {
            assert_nothing_lost(&out.events());
        }
        assert_transcripts_whole(self.env.home());
        out
    }

    /// The tool results the conversation starting with `prompt` got on its
    /// `request`-th request (0-based): (content, is_error), in call order
    /// (less those of `ToolSearch` loads).
    pub(crate) fn results(&self, prompt: &str, request: usize) -> Vec<(String, bool)> {
        let requests = self.server.requests_for(prompt);
        assert!(
            requests.len() > request,
            "only {} requests for {prompt:?}",
            requests.len()
        );
        crate::support::results_but_loads(&requests[request])
            .into_iter()
            .map(|(_, content, is_error)| (content, is_error))
            .collect()
    }

    /// Everything but folders under the workspace, relative and sorted
    /// (symlinks are listed, not followed).
    pub(crate) fn ws_files(&self) -> Vec<String> {
        let root = self.ws("");
        let mut out: Vec<String> = walk(&root)
            .into_iter()
            .filter(|(_, held)| held != DIR)
            .map(|(path, _)| {
                Path::new(&path)
                    .strip_prefix(&root)
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        out.sort();
        out
    }
}

/// Everything in the test folder except the workspace, as [`walk`] records it.
fn snapshot_outside(folder: &Path) -> BTreeMap<String, Vec<u8>> {
    let ws = folder.join("ws");
    walk(folder)
        .into_iter()
        .filter(|(path, _)| !Path::new(path).starts_with(&ws))
        .collect()
}

/// What [`walk`] records for a folder.
const DIR: &[u8] = b"\0folder";

/// Path → what it holds, for everything below `dir`: a file's bytes, a
/// symlink's target (not followed), [`DIR`] for a folder, the type of
/// anything else (a pipe is never opened). Names are shown lossily, which is
/// enough to see a change.
fn walk(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let key = path.to_string_lossy().into_owned();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(key, format!("-> {}", target.display()).into_bytes());
            } else if meta.is_dir() {
                out.insert(key, DIR.to_vec());
                stack.push(path);
            } else if meta.is_file() {
                out.insert(key, std::fs::read(&path).unwrap());
            } else {
                out.insert(key, format!("{:?}", meta.file_type()).into_bytes());
            }
        }
    }
    out
}

/// Every transcript under the home (sessions and children) parses and
/// pairs each tool_use with one result.
fn assert_transcripts_whole(home: &Path) {
    let mut dirs = vec![home.join("sessions")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "jsonl") {
                assert_nothing_lost(&read_jsonl(&path));
            }
        }
    }
}

/// The messages of the `warning` events.
pub(crate) fn warnings(out: &Outcome) -> Vec<String> {
    out.events()
        .iter()
        .filter(|event| event["type"] == "warning")
        .map(|event| event["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Asserts that a result is an error whose text contains every one of `needles`.
#[track_caller]
pub(crate) fn assert_error(result: &(String, bool), needles: &[&str]) {
    assert!(result.1, "expected an error result, got {:?}", result.0);
    for needle in needles {
        assert!(
            result.0.contains(needle),
            "{needle:?} is not in {:?}",
            result.0
        );
    }
}

/// The final event: `session_ended`, with its status.
pub(crate) fn end_status(out: &Outcome) -> Value {
    let events = out.events();
    let last = events.last().cloned().unwrap_or_default();
    assert_eq!(last["type"], "session_ended", "{last}");
    last["status"].clone()
}
