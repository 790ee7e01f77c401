//! The one way alcove runs git itself, kept inside the charter.
//!
//! alcove's own git (worktrees, snapshots, merges, `alcove worktrees`)
//! runs outside the command sandbox, in a repository whose git folder
//! sandboxed commands may write. So every call goes through [`run`], which
//! turns off what git would otherwise run from that folder (hooks,
//! `core.fsmonitor`, the untracked cache's helper, commit signing), and
//! first refuses a git folder that leads elsewhere ([`check_git_dirs`]): a
//! `commondir` in a repository's own git folder, or a linked worktree whose
//! pointers do not agree, would make git take its config (filters
//! included) and hooks from a folder a command wrote.
//!
//! The user's system and global config still apply (a command cannot write
//! them); the network is never used by these calls.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Config given on the command line (git's strongest level) to every call.
const OVERRIDES: [&str; 9] = [
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "core.sshCommand=false",
    "protocol.allow=never",
    "gc.auto=0",
    "maintenance.auto=false",
];

/// Runs `git -C dir args…` with [`OVERRIDES`], `GIT_DIR`-style variables
/// cleared and `index` (when given) as its index file; an error when the
/// repository's git folders lead elsewhere or git cannot start.
pub(crate) fn run(dir: &Path, args: &[&str], index: Option<&Path>) -> Result<Output, String> {
    check_git_dirs(dir)?;
    let mut command = Command::new("git");
    command.arg("-C").arg(dir);
    for setting in OVERRIDES {
        command.args(["-c", setting]);
    }
    command
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_COMMON_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_NO_LAZY_FETCH", "1");
    if let Some(index) = index {
        command.env("GIT_INDEX_FILE", index);
    }
    command
        .output()
        .map_err(|err| format!("cannot run git: {err}"))
}

/// Refuses a repository (the one holding `dir`) whose git folders lead
/// outside it: a `commondir` in a repository's own `.git` folder (git never
/// writes one there), or a `.git` file naming a linked worktree's folder
/// that is not `<common>/worktrees/<name>` of the common folder its
/// `commondir` names, or whose common folder has a `commondir` of its own.
/// A folder in no repository passes (git then says so itself).
pub(crate) fn check_git_dirs(dir: &Path) -> Result<(), String> {
    let Some(dot_git) = dir
        .ancestors()
        .map(|dir| dir.join(".git"))
        .find(|path| path.symlink_metadata().is_ok())
    else {
        return Ok(());
    };
    if dot_git.is_dir() {
        return no_commondir(&dot_git);
    }
    let text = std::fs::read_to_string(&dot_git)
        .map_err(|err| refused(&dot_git, &format!("it cannot be read ({err})")))?;
    let Some(named) = text.trim().strip_prefix("gitdir:") else {
        return Err(refused(
            &dot_git,
            "it is neither a folder nor a `gitdir:` file",
        ));
    };
    let base = dot_git.parent().unwrap_or(Path::new("/"));
    let own = real(&base.join(named.trim()), &dot_git)?;
    let commondir = own.join("commondir");
    if commondir.symlink_metadata().is_err() {
        // A submodule's or a separate git folder: the repository's own.
        return Ok(());
    }
    let pointed = std::fs::read_to_string(&commondir)
        .map_err(|err| refused(&commondir, &format!("it cannot be read ({err})")))?;
    let common = real(&own.join(pointed.trim()), &commondir)?;
    if own.parent() != Some(common.join("worktrees").as_path()) {
        return Err(refused(
            &commondir,
            &format!(
                "it names {} as the common git folder, but this worktree's own folder {} is \
                 not one of its worktrees",
                common.display(),
                own.display()
            ),
        ));
    }
    no_commondir(&common)
}

/// Refuses a `commondir` in a repository's own (common) git folder.
fn no_commondir(git_dir: &Path) -> Result<(), String> {
    let planted = git_dir.join("commondir");
    if planted.symlink_metadata().is_err() {
        return Ok(());
    }
    let target = std::fs::read_to_string(&planted).unwrap_or_default();
    Err(refused(
        &planted,
        &format!(
            "a repository's own git folder never has one, and it would make git take its \
             config and hooks from {:?}; remove the file if you did not make it",
            target.trim()
        ),
    ))
}

fn real(path: &Path, named_in: &Path) -> Result<PathBuf, String> {
    path.canonicalize().map_err(|err| {
        refused(
            named_in,
            &format!(
                "the git folder it names, {}, is not there ({err})",
                path.display()
            ),
        )
    })
}

fn refused(path: &Path, why: &str) -> String {
    format!(
        "alcove refuses to run git in this repository: {}: {why}",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(status.status.success(), "{status:?}");
    }

    #[test]
    fn a_planted_commondir_is_refused_and_a_real_linked_worktree_passes() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "start"]);
        assert_eq!(check_git_dirs(&repo), Ok(()));
        let tree = dir.path().join("tree");
        git(&repo, &["worktree", "add", "-q", tree.to_str().unwrap()]);
        assert_eq!(check_git_dirs(&tree), Ok(()));
        assert!(run(&tree, &["status", "--short"], None).is_ok_and(|out| out.status.success()));

        // A linked worktree's `commondir` pointed elsewhere.
        let own = repo.join(".git/worktrees/tree");
        let copy = dir.path().join("copy");
        std::fs::create_dir(&copy).unwrap();
        std::fs::write(own.join("commondir"), format!("{}\n", copy.display())).unwrap();
        let refused = check_git_dirs(&tree).unwrap_err();
        assert!(refused.contains("not one of its worktrees"), "{refused}");

        // A `commondir` planted in the repository's own git folder.
        std::fs::write(repo.join(".git/commondir"), format!("{}\n", copy.display())).unwrap();
        let refused = run(&repo, &["status"], None).unwrap_err();
        assert!(refused.contains(".git/commondir"), "{refused}");
    }
}
