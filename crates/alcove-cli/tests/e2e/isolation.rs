//! Issue 12: isolation of commands (sandbox), their resources (limits) and
//! children's files (worktrees), with the kernel's real facilities and real
//! git.

mod access;
mod git_charter;
mod holder;
mod limits;
mod outliving;
mod sandbox;
mod walks;
mod worktrees;

use std::path::Path;
use std::process::Command;

use alcove_testkit::Block;
use serde_json::json;

/// A `Bash` call of `command`.
pub(crate) fn bash(command: &str) -> Block {
    Block::tool_call("Bash", json!({ "command": command }))
}

/// Runs git in `dir`; panics with its stderr on failure.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Makes `dir` a repository with one commit of what it holds.
pub(crate) fn init_repo(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", "start"]);
}
