//! What the gate hides from reads: the paths a `Read(...)` deny rule or
//! `sandbox.deny_read` keeps from the file tools and from workspace walks
//! (Grep, Glob), judged by the entry's target and, for files with several
//! links, by inode. Kept apart from the call checks in `gate.rs`, which
//! use it through `read_denied`.

use std::path::{Path, PathBuf};

use alcove_tools::Workspace;

use serde_json::Value;

use super::PermissionGate;
use super::paths::PathContext;
use super::rules::CallFacts;

impl PermissionGate {
    /// Whether a search of `dirs` must skip some paths: a `Read(...)` deny
    /// rule applies, or a `sandbox.deny_read` entry lies inside one of them.
    pub fn hides_some_reads(&self, dirs: &[PathBuf]) -> bool {
        self.denies_some_reads()
            || self
                .access
                .as_ref()
                .is_some_and(|access| dirs.iter().any(|dir| access.denies_inside(dir)))
    }

    /// Whether a search must skip `path`: a `Read(...)` deny rule or
    /// `sandbox.deny_read` covers it, by name.
    pub fn hides(&self, path: &Path, workspace: &Workspace) -> bool {
        self.access
            .as_ref()
            .is_some_and(|access| access.read_denied(path, path).is_some())
            || self.read_denied(path, workspace)
    }

    /// Whether the file `path` really is must stay unread although its name
    /// passes: a symlink leading to a path [`PermissionGate::hides`] covers,
    /// or a second hard link of a `sandbox.deny_read` file. `kind` is the
    /// entry's type when a walk knows it (no `lstat` then).
    pub fn hides_target(
        &self,
        path: &Path,
        kind: Option<std::fs::FileType>,
        workspace: &Workspace,
    ) -> bool {
        if self
            .access
            .as_ref()
            .is_some_and(|access| access.entry_denied(path, kind).is_some())
        {
            return true;
        }
        let is_link = match kind {
            Some(kind) => kind.is_symlink(),
            None => path.symlink_metadata().is_ok_and(|meta| meta.is_symlink()),
        };
        is_link
            && self.denies_some_reads()
            && path
                .canonicalize()
                .is_ok_and(|real| self.read_denied(&real, workspace))
    }

    /// Whether any search must judge where its entries lead: some
    /// `sandbox.deny_read` entry or `Read(...)` deny rule exists.
    pub fn hides_some_targets(&self) -> bool {
        self.denies_some_reads()
            || self
                .access
                .as_ref()
                .is_some_and(|access| access.denies_reads())
    }

    /// Whether any `Read(...)` deny rule applies here or above.
    pub fn denies_some_reads(&self) -> bool {
        self.rules.denies_reads()
            || self
                .parent
                .as_ref()
                .is_some_and(|parent| parent.denies_some_reads())
    }

    /// Whether a `Read(...)` deny rule here or above covers `path`: searches
    /// skip such paths, so Grep and Glob cannot read around the rule.
    pub fn read_denied(&self, path: &Path, workspace: &Workspace) -> bool {
        let paths = [path.to_path_buf()];
        let facts = CallFacts {
            tool: "Read",
            input: &Value::Null,
            paths: &paths,
            shell: None,
            command: None,
            paths_context: PathContext {
                root: workspace.root(),
                home: self.home(),
            },
            workspace,
        };
        let mut level = Some(self);
        while let Some(gate) = level {
            if gate.rules.denies(&facts) {
                return true;
            }
            level = gate.parent.as_deref();
        }
        false
    }
}
