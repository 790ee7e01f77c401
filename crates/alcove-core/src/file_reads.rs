//! Which files each agent has read, and as they were then.
//!
//! `Edit` replaces text the model quotes from a file; a model that never
//! read the file (a small model's first move on "fix the bug in calc.py"
//! was an Edit with nothing to quote) or read it before something else
//! changed it quotes from memory and fails, or worse, succeeds on stale
//! text. So, as Claude Code does, dispatch refuses an edit of a file the
//! agent has not read, or that changed on disk since it did, with an error
//! saying to Read it first. A successful Read records the file's
//! modification time and size; a successful write by the agent itself
//! (Edit, Write) records the new ones, since the agent knows that text.
//! Kept per agent path for the session, so an interactive session's next
//! prompt, or a spawned agent's next input, still knows what it read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use alcove_protocol::AgentPath;

/// Files remembered per agent, at most; past it the agent's record starts
/// again (it then reads a file again before editing it).
const MAX_FILES_PER_AGENT: usize = 4096;

/// What a file was when it was read: enough to see that it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

impl Stamp {
    /// The stamp of a regular file (anything else is the tool's to refuse).
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok().filter(|meta| meta.is_file())?;
        Some(Stamp {
            modified: meta.modified().ok(),
            len: meta.len(),
        })
    }
}

/// The session's record of the files each agent has read.
#[derive(Debug, Default)]
pub struct FileReads {
    agents: Mutex<HashMap<AgentPath, HashMap<PathBuf, Stamp>>>,
}

/// Why an edit of a file must wait for a Read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotRead {
    /// The agent has not read it.
    Never,
    /// It changed on disk since the agent read it.
    Changed,
}

impl FileReads {
    /// Notes that `agent` now knows `path` as it is on disk.
    pub(crate) fn record(&self, agent: &AgentPath, path: &Path) {
        let Some(stamp) = Stamp::of(path) else {
            return;
        };
        let Ok(mut agents) = self.agents.lock() else {
            return;
        };
        let files = agents.entry(agent.clone()).or_default();
        if files.len() >= MAX_FILES_PER_AGENT && !files.contains_key(path) {
            files.clear();
        }
        files.insert(path.to_path_buf(), stamp);
    }

    /// Whether `agent` may edit `path`: `Err` when it has not read the file,
    /// or the file changed since. A path that is not a regular file passes
    /// (the tool says it does not exist, or is not a file).
    pub(crate) fn check(&self, agent: &AgentPath, path: &Path) -> Result<(), NotRead> {
        let Some(now) = Stamp::of(path) else {
            return Ok(());
        };
        let Ok(agents) = self.agents.lock() else {
            return Ok(());
        };
        match agents.get(agent).and_then(|files| files.get(path)) {
            None => Err(NotRead::Never),
            Some(then) if *then != now => Err(NotRead::Changed),
            Some(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_needs_a_read_of_the_file_as_it_is_now() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("calc.py");
        std::fs::write(&file, "x = 1\n").unwrap();
        let reads = FileReads::default();
        let main = AgentPath::main();
        let child = main.child("agent-1");
        assert_eq!(reads.check(&main, &file), Err(NotRead::Never));
        reads.record(&main, &file);
        assert_eq!(reads.check(&main, &file), Ok(()));
        // Another agent's read is not this one's.
        assert_eq!(reads.check(&child, &file), Err(NotRead::Never));
        std::fs::write(&file, "x = 22\n").unwrap();
        assert_eq!(reads.check(&main, &file), Err(NotRead::Changed));
        reads.record(&main, &file);
        assert_eq!(reads.check(&main, &file), Ok(()));
        assert_eq!(reads.check(&main, &dir.path().join("new.py")), Ok(()));
    }
}
