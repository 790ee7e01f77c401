//! The workspace root and path resolution (stub, being written).

use std::path::{Path, PathBuf};

/// The folder an agent works in. Relative paths resolve against its root.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Opens a workspace at `root`, which must exist.
    pub fn new(root: &Path) -> std::io::Result<Workspace> {
        Ok(Workspace {
            root: root.canonicalize()?,
        })
    }

    /// The canonical absolute root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path the model gave against the root, normalising `.` and `..`.
    pub fn resolve(&self, path: &str) -> PathBuf {
        self.root.join(path)
    }

    /// Whether `path` (absolute) lies inside the root once `..` and symlinks are resolved.
    pub fn contains(&self, path: &Path) -> bool {
        path.starts_with(&self.root)
    }
}
