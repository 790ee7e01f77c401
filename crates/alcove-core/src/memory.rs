//! The agent's memory file, `.agents/memory/MEMORY.md` (seed 000, L9): notes
//! the model keeps across sessions, injected into the main agent's system
//! prompt as an `## Agent Memory` section.
//!
//! Which file is which: `AGENTS.md` (or `CLAUDE.md`) and the personal,
//! usually git-ignored `CLAUDE.local.md` are the user's project instructions
//! (`context.rs`); `MEMORY.md` is the agent's own notebook, written with the
//! ordinary Write/Edit tools through the gate (or a `# line` typed in the UI).
//!
//! The file is re-read only when its modification time or size changes, so
//! the system prompt — the start of every request, which providers cache —
//! stays byte-for-byte the same between changes.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// The memory section holds at most this many bytes of the file.
pub const MEMORY_CAP: usize = 32 * 1024;

/// The memory file's place in a workspace.
pub const MEMORY_FILE: &str = ".agents/memory/MEMORY.md";

/// What identifies one version of the file: modification time and size
/// (`None` when it does not exist).
type Stamp = Option<(Option<SystemTime>, u64)>;

/// A workspace's memory file and its last rendering.
#[derive(Debug)]
pub struct Memory {
    path: PathBuf,
    cached: Mutex<Option<(Stamp, String)>>,
}

impl Memory {
    /// The memory of the workspace at `root`.
    pub fn new(root: &Path) -> Memory {
        Memory {
            path: root.join(MEMORY_FILE),
            cached: Mutex::new(None),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `## Agent Memory` section, re-read only when the file changed
    /// since the last call.
    pub fn section(&self) -> String {
        let stamp = std::fs::metadata(&self.path)
            .ok()
            .map(|meta| (meta.modified().ok(), meta.len()));
        let Ok(mut cached) = self.cached.lock() else {
            return self.render();
        };
        if let Some((seen, text)) = cached.as_ref()
            && *seen == stamp
        {
            return text.clone();
        }
        let text = self.render();
        *cached = Some((stamp, text.clone()));
        text
    }

    /// The file's text (empty when it does not exist).
    pub fn read(&self) -> String {
        std::fs::read_to_string(&self.path).unwrap_or_default()
    }

    /// Appends `line` to the file as a list item, creating it (and its
    /// folders) when needed.
    pub fn append(&self, line: &str) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let existing = self.read();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let separator = if existing.is_empty() || existing.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        writeln!(file, "{separator}- {}", line.trim())
    }

    fn render(&self) -> String {
        let text = self.read();
        let mut section = format!(
            "\n## Agent Memory\n\nYour notes from earlier sessions, kept in {}. Update that file with \
             Write or Edit when you learn something worth remembering about this project (commands, \
             conventions, the user's preferences); keep it short.\n\n",
            self.path.display()
        );
        let body = text.trim();
        if body.is_empty() {
            section.push_str("(currently empty)\n");
            return section;
        }
        if body.len() > MEMORY_CAP {
            let end = crate::dispatch::cut(body, MEMORY_CAP).len();
            section.push_str(&body[..end]);
            section.push_str(&format!(
                "\n\n[memory cut at {MEMORY_CAP} bytes: {} of {} bytes not shown]\n",
                body.len() - end,
                body.len()
            ));
        } else {
            section.push_str(body);
            section.push('\n');
        }
        section
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_always_there_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        let memory = Memory::new(dir.path());
        assert!(memory.section().contains("(currently empty)"));
        memory.append("use cargo nextest").unwrap();
        memory.append("  prefer small modules ").unwrap();
        assert_eq!(
            memory.read(),
            "- use cargo nextest\n- prefer small modules\n"
        );
        assert!(memory.section().contains("- prefer small modules"));
        std::fs::write(memory.path(), "y".repeat(40 * 1024)).unwrap();
        let section = memory.section();
        assert!(
            section.contains("[memory cut at 32768 bytes"),
            "{}",
            &section[..200]
        );
        assert!(section.len() < MEMORY_CAP + 1024);
    }

    #[test]
    fn an_unchanged_stamp_is_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let memory = Memory::new(dir.path());
        memory.append("first").unwrap();
        let before = memory.section();
        let modified = std::fs::metadata(memory.path())
            .unwrap()
            .modified()
            .unwrap();
        // Same size, same modification time: the cached section stays.
        std::fs::write(memory.path(), "- FIRST\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(memory.path())
            .unwrap()
            .set_modified(modified)
            .unwrap();
        assert_eq!(memory.section(), before);
        std::fs::write(memory.path(), "- second\n").unwrap();
        assert!(memory.section().contains("- second"));
    }
}
