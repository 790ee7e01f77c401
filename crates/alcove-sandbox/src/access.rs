//! The one answer to "what may an agent read or write?", compiled once from
//! the sandbox config and consulted on both sides: by the permission gate
//! for alcove's own file tools (Read, Glob, Grep, Write, Edit) and by
//! [`crate::Confinement`] for the Landlock domain a command runs in. So
//! `Read ~/.ssh/id_ed25519` and `cat ~/.ssh/id_ed25519`, `Write /etc/x`
//! and `echo > /etc/x`, get the same answer in every permission mode.
//!
//! - Reads: everything but `sandbox.deny_read`. For commands only while
//!   they are confined; alcove's own tools honour it in every sandbox mode
//!   (they are alcove's code, nothing stops them from doing so).
//! - Writes, sandbox `workspace-write`: the workspace, its git folders, the
//!   temp folders and `sandbox.writable_roots` ([`workspace_write_folders`]);
//!   `read-only`: nothing (a command's private temp folder is its own);
//!   `off`: no boundary of the sandbox's (the permission mode decides).
//!
//! Paths are judged where they really land: the caller passes the path
//! with `..` and symlinks resolved, so a link inside the workspace that
//! points into a denied folder is denied, as Landlock (which checks the
//! file reached, not the name) denies it to a command. A walk judges each
//! entry the same way ([`AccessPolicy::entry_denied`]): a symlink by its
//! target, and a file with several hard links by its (device, inode), since
//! a second name of a denied file is the denied file.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::policy::SandboxMode;

/// Read and write boundaries of a session, from `[sandbox]`.
#[derive(Debug, Clone, Default)]
pub struct AccessPolicy {
    /// `sandbox.deny_read` as configured, then the canonical form of each
    /// entry that exists and differs (a denied folder reached through a
    /// link is still denied).
    deny_read: Vec<PathBuf>,
    /// `sandbox.writable_roots`, absolute.
    writable_roots: Vec<PathBuf>,
    /// The files under `deny_read` with more than one hard link, by
    /// (device, inode), with the entry covering them: found at the first
    /// question that needs them ([`AccessPolicy::hard_link_denied`]).
    linked: Arc<OnceLock<HashMap<(u64, u64), PathBuf>>>,
}

/// How many entries of the `deny_read` folders are looked at for files
/// with several hard links (a credential folder holds a few dozen).
const LINKED_SCAN_LIMIT: usize = 20_000;

impl AccessPolicy {
    /// Compiles the policy: `deny_read` and `writable_roots` absolute.
    pub fn new(deny_read: &[PathBuf], writable_roots: &[PathBuf]) -> AccessPolicy {
        let mut denied = deny_read.to_vec();
        for entry in deny_read {
            if let Ok(real) = entry.canonicalize()
                && !denied.contains(&real)
            {
                denied.push(real);
            }
        }
        AccessPolicy {
            deny_read: denied,
            writable_roots: writable_roots.to_vec(),
            linked: Arc::default(),
        }
    }

    /// Whether `deny_read` has any entry (walks then judge each entry).
    pub fn denies_reads(&self) -> bool {
        !self.deny_read.is_empty()
    }

    /// The `deny_read` entry covering the file a walked entry really is:
    /// for a symlink (`kind` says so, or an `lstat` when `None`), where it
    /// leads; for a regular file, its (device, inode) when it has several
    /// hard links ([`AccessPolicy::hard_link_denied`]). The name itself is
    /// the caller's to judge ([`AccessPolicy::read_denied`]).
    pub fn entry_denied(&self, path: &Path, kind: Option<std::fs::FileType>) -> Option<&Path> {
        let kind = match kind {
            Some(kind) => kind,
            None => path.symlink_metadata().ok()?.file_type(),
        };
        if kind.is_symlink() {
            let real = path.canonicalize().ok()?;
            return self
                .read_denied(&real, &real)
                .or_else(|| self.hard_link_denied(&real));
        }
        if kind.is_file() {
            return self.hard_link_denied(path);
        }
        None
    }

    /// The `deny_read` entry holding another hard link of the regular file
    /// `path`, if any. Only files with more than one link are looked up, and
    /// the denied files with more than one link are found once, at the first
    /// such question of the session: a confined command cannot link a file
    /// out of a denied folder (Landlock refuses linking across folders it
    /// has not granted), so only links the user made count, and those made
    /// before the first search are the ones seen.
    pub fn hard_link_denied(&self, path: &Path) -> Option<&Path> {
        if self.deny_read.is_empty() {
            return None;
        }
        let linked = self.linked.get_or_init(|| linked_files(&self.deny_read));
        if linked.is_empty() {
            return None;
        }
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_file() || meta.nlink() < 2 {
            return None;
        }
        linked.get(&(meta.dev(), meta.ino())).map(PathBuf::as_path)
    }

    /// The `deny_read` entry covering `path` (absolute, as named) or
    /// `real` (where it lands), if any.
    pub fn read_denied(&self, path: &Path, real: &Path) -> Option<&Path> {
        self.deny_read
            .iter()
            .find(|entry| path.starts_with(entry) || real.starts_with(entry))
            .map(PathBuf::as_path)
    }

    /// Whether a `deny_read` entry lies inside `dir` (a search of `dir`
    /// must then skip it).
    pub fn denies_inside(&self, dir: &Path) -> bool {
        self.deny_read.iter().any(|entry| entry.starts_with(dir))
    }

    /// Why a write to `real` (where the path really lands) is refused for
    /// an agent whose commands run in `mode` in `workspace`; `None` when
    /// the sandbox lets it be written (or draws no boundary: `off`).
    pub fn write_refused(
        &self,
        mode: SandboxMode,
        workspace: &Path,
        real: &Path,
    ) -> Option<String> {
        match mode {
            SandboxMode::Off => None,
            SandboxMode::ReadOnly => Some(
                "the agent runs in the read-only sandbox, where neither its commands nor its \
                 file tools may write"
                    .to_owned(),
            ),
            SandboxMode::WorkspaceWrite => {
                let folders = workspace_write_folders(workspace, &self.writable_roots);
                let inside = folders.iter().any(|folder| {
                    real.starts_with(folder)
                        || folder
                            .canonicalize()
                            .is_ok_and(|folder| real.starts_with(folder))
                });
                (!inside).then(|| {
                    format!(
                        "it is outside the folders the workspace-write sandbox lets commands and \
                         file tools write ({}; sandbox.writable_roots adds more)",
                        folders
                            .iter()
                            .map(|folder| folder.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
            }
        }
    }
}

/// The regular files with more than one hard link under each of `entries`
/// (files or folders; links are not followed), by (device, inode).
fn linked_files(entries: &[PathBuf]) -> HashMap<(u64, u64), PathBuf> {
    let mut found = HashMap::new();
    let mut budget = LINKED_SCAN_LIMIT;
    let mut pending: Vec<(PathBuf, &PathBuf)> = entries.iter().map(|e| (e.clone(), e)).collect();
    while let Some((path, entry)) = pending.pop() {
        if budget == 0 {
            break;
        }
        budget -= 1;
        let Ok(meta) = path.symlink_metadata() else {
            continue;
        };
        if meta.is_file() && meta.nlink() > 1 {
            found.insert((meta.dev(), meta.ino()), entry.clone());
        } else if meta.is_dir()
            && let Ok(listing) = std::fs::read_dir(&path)
        {
            pending.extend(listing.flatten().map(|child| (child.path(), entry)));
        }
    }
    found
}

/// What a `workspace-write` command may write: the workspace, its git
/// folders, the temp folders and `writable_roots`.
pub(crate) fn workspace_write_folders(
    workspace: &Path,
    writable_roots: &[PathBuf],
) -> Vec<PathBuf> {
    let mut writable = vec![workspace.to_owned()];
    writable.extend(crate::git_dirs(workspace));
    writable.push(std::env::temp_dir());
    writable.push(PathBuf::from("/tmp"));
    writable.push(PathBuf::from("/dev/shm"));
    writable.extend(writable_roots.iter().cloned());
    writable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denied_folder_is_denied_by_name_and_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::create_dir(&secret).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        // Configured through the link: the folder itself is denied too.
        let policy = AccessPolicy::new(std::slice::from_ref(&link), &[]);
        let key = secret.canonicalize().unwrap().join("key");
        assert!(policy.read_denied(&key, &key).is_some());
        assert!(policy.read_denied(&link.join("key"), &key).is_some());
        let other = dir.path().join("other");
        assert!(policy.read_denied(&other, &other).is_none());
        assert!(policy.denies_inside(dir.path()));
        assert!(!policy.denies_inside(&other));
    }

    #[test]
    fn a_walked_link_or_second_hard_link_is_judged_by_the_denied_file_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::create_dir(&secret).unwrap();
        std::fs::write(secret.join("key"), "KEY").unwrap();
        std::fs::write(secret.join("other"), "x").unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        std::os::unix::fs::symlink(secret.join("key"), work.join("soft")).unwrap();
        std::fs::hard_link(secret.join("key"), work.join("hard")).unwrap();
        std::fs::write(work.join("plain"), "x").unwrap();
        std::fs::hard_link(work.join("plain"), work.join("plain2")).unwrap();
        let policy = AccessPolicy::new(std::slice::from_ref(&secret), &[]);
        assert!(policy.entry_denied(&work.join("soft"), None).is_some());
        assert!(policy.entry_denied(&work.join("hard"), None).is_some());
        assert!(policy.entry_denied(&work.join("plain"), None).is_none());
        assert!(policy.entry_denied(&work.join("plain2"), None).is_none());
        assert!(policy.entry_denied(&work, None).is_none());
        assert!(
            AccessPolicy::default()
                .entry_denied(&work.join("hard"), None)
                .is_none()
        );
    }

    #[test]
    fn writes_follow_the_sandbox_mode() {
        let workspace = tempfile::tempdir().unwrap();
        let root = workspace.path().canonicalize().unwrap();
        let policy = AccessPolicy::new(&[], &[PathBuf::from("/opt/cache")]);
        let inside = root.join("a.txt");
        let mode = SandboxMode::WorkspaceWrite;
        assert_eq!(policy.write_refused(mode, &root, &inside), None);
        assert_eq!(
            policy.write_refused(mode, &root, Path::new("/opt/cache/x")),
            None
        );
        assert!(
            policy
                .write_refused(mode, &root, Path::new("/etc/passwd"))
                .is_some()
        );
        assert!(
            policy
                .write_refused(SandboxMode::ReadOnly, &root, &inside)
                .is_some()
        );
        assert_eq!(
            policy.write_refused(SandboxMode::Off, &root, Path::new("/etc/passwd")),
            None
        );
    }
}
