//! What a command may touch: the sandbox mode, one agent's scope, and the
//! resolved policy the launcher applies.
//!
//! The mode and the network switch are per agent (a child gets the stricter
//! of its own and its parent's); folders, limits and loopback are the
//! session's. [`LaunchPolicy`] is everything resolved to absolute paths and
//! travels to the launcher as one JSON argument.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::git_guard::Guard;
use crate::limits::ResourceLimits;

/// How much a command may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Reads allowed (but for `deny_read`), writes only to a private temp folder.
    ReadOnly,
    /// Reads allowed (but for `deny_read`), writes inside the workspace, its
    /// git folders, the system temp folder and `writable_roots`.
    #[default]
    WorkspaceWrite,
    /// No confinement (resource limits still apply).
    Off,
}

impl SandboxMode {
    /// Parses `workspace-write`, `read-only` or `off` (underscores accepted).
    pub fn parse(text: &str) -> Option<SandboxMode> {
        match text.trim().replace('_', "-").to_ascii_lowercase().as_str() {
            "workspace-write" => Some(SandboxMode::WorkspaceWrite),
            "read-only" => Some(SandboxMode::ReadOnly),
            "off" => Some(SandboxMode::Off),
            _ => None,
        }
    }

    /// The name used in config and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::Off => "off",
        }
    }

    fn rank(self) -> u8 {
        match self {
            SandboxMode::Off => 0,
            SandboxMode::WorkspaceWrite => 1,
            SandboxMode::ReadOnly => 2,
        }
    }

    /// The stricter of the two.
    pub fn stricter(self, other: SandboxMode) -> SandboxMode {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

/// The sandbox one agent's commands run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxScope {
    /// What the commands may write.
    pub mode: SandboxMode,
    /// Whether they may use the network.
    pub network: bool,
}

impl Default for SandboxScope {
    /// `workspace-write` without network: the documented default.
    fn default() -> Self {
        SandboxScope {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
        }
    }
}

impl SandboxScope {
    /// No confinement at all (what `--sandbox off` gives).
    pub const OFF: SandboxScope = SandboxScope {
        mode: SandboxMode::Off,
        network: true,
    };

    /// A child's scope: the stricter of this one and what its definition asks.
    /// A child never gets the network its parent lacks.
    pub fn narrowed(self, mode: Option<SandboxMode>, network: Option<bool>) -> SandboxScope {
        SandboxScope {
            mode: self.mode.stricter(mode.unwrap_or(self.mode)),
            network: self.network && network.unwrap_or(self.network),
        }
    }

    /// Whether commands are confined at all.
    pub fn is_confined(self) -> bool {
        self.mode != SandboxMode::Off
    }
}

/// Everything the launcher applies to itself before it runs the command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchPolicy {
    /// The mode (`off` applies only the limits).
    pub mode: SandboxMode,
    /// Whether the network stays reachable.
    pub network: bool,
    /// With the network off: whether the command's network namespace has
    /// its loopback up.
    pub allow_loopback: bool,
    /// With the network off: the process holding the session's network
    /// namespace, which the command joins ([`crate::shared_net`]); without
    /// one, the command gets a namespace of its own.
    #[serde(default)]
    pub network_holder: Option<u32>,
    /// Folders (and files) the command may write, absolute.
    pub writable: Vec<PathBuf>,
    /// Folders and files the command may not read, absolute.
    pub deny_read: Vec<PathBuf>,
    /// Resource limits.
    pub limits: ResourceLimits,
    /// Paths bound over themselves in the command's own mount namespace,
    /// read-only but for pinned folders: what git would run later
    /// ([`crate::git_guard`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<Guard>,
}

#[cfg(test)]
impl LaunchPolicy {
    /// A policy of `mode` with no network, folders or limits (tests).
    pub(crate) fn bare(mode: SandboxMode) -> LaunchPolicy {
        LaunchPolicy {
            mode,
            network: false,
            allow_loopback: false,
            network_holder: None,
            writable: Vec::new(),
            deny_read: Vec::new(),
            limits: crate::ResourceLimits::NONE,
            guards: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_order() {
        assert_eq!(
            SandboxMode::parse("workspace_write"),
            Some(SandboxMode::WorkspaceWrite)
        );
        assert_eq!(SandboxMode::parse("READ-ONLY"), Some(SandboxMode::ReadOnly));
        assert_eq!(SandboxMode::parse("none"), None);
        assert_eq!(
            SandboxMode::Off.stricter(SandboxMode::ReadOnly),
            SandboxMode::ReadOnly
        );
        assert_eq!(
            SandboxMode::ReadOnly.stricter(SandboxMode::Off),
            SandboxMode::ReadOnly
        );
    }

    #[test]
    fn a_child_never_loosens_its_parents_scope() {
        let parent = SandboxScope {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
        };
        let child = parent.narrowed(Some(SandboxMode::Off), Some(true));
        assert_eq!(child, parent);
        let child = parent.narrowed(Some(SandboxMode::ReadOnly), None);
        assert_eq!(child.mode, SandboxMode::ReadOnly);
        let open = SandboxScope::OFF.narrowed(None, Some(false));
        assert!(!open.network);
    }
}
