//! What git would run later, kept out of a command's reach.
//!
//! A command in `workspace-write` may write the repository's git folder
//! (`git add` and `git commit` need it), and so could plant a hook
//! (`.git/hooks/pre-commit`) or a `core.hooksPath` / `core.fsmonitor` in
//! `.git/config`, which the user's next `git` would run outside any
//! sandbox. Landlock only grants, so it cannot take `hooks` back out of a
//! writable `.git`. Instead each such command gets a mount namespace of its
//! own (its user namespace allows one) in which those paths are bound over
//! themselves read-only; the user's own view of the files is untouched.
//!
//! [`git_guards`] (alcove's side) lists the paths: the git folder itself,
//! bound writable over itself so it is a mount point the command can
//! neither rename nor replace, then its `hooks` (made when missing) and
//! `config` read-only; for a linked worktree, its `.git` file and its
//! `commondir` (which say where the repository is) as well, and the common
//! folder's hooks and config; every submodule's under `modules/`.
//! [`Binds`] is the command's side: the paths as C strings, made before
//! the process that becomes the command starts, and [`Binds::apply`], which
//! makes only system calls (the holder's child may not allocate,
//! [`crate::spawn`]). What this leaves open is written in `docs/sandbox.md`.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::libc;
use serde::{Deserialize, Serialize};

/// One path bound over itself in the command's mount namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guard {
    /// The path, absolute; it exists when the policy is made.
    pub path: PathBuf,
    /// Whether the command may still write beneath it (a folder pinned as
    /// a mount point only).
    #[serde(default)]
    pub writable: bool,
}

impl Guard {
    fn read_only(path: PathBuf) -> Guard {
        Guard {
            path,
            writable: false,
        }
    }

    fn pinned(path: PathBuf) -> Guard {
        Guard {
            path,
            writable: true,
        }
    }
}

/// How deep submodules' git folders are looked for (`modules/a/modules/b`).
const SUBMODULE_DEPTH: usize = 3;

/// The guards for a command in `workspace`, for `workspace-write`, in the
/// order they are bound (a folder before what is bound beneath it).
pub fn git_guards(workspace: &Path) -> Vec<Guard> {
    let Some(dot_git) = workspace
        .ancestors()
        .map(|dir| dir.join(".git"))
        .find(|path| path.exists())
    else {
        return Vec::new();
    };
    let mut guards = Vec::new();
    if dot_git.is_dir() {
        guard_git_dir(&dot_git, &mut guards, SUBMODULE_DEPTH);
        return guards;
    }
    // A linked worktree: `.git` is a file naming its own git folder, whose
    // `commondir` names the repository's.
    let Some(own) = crate::git_dirs(workspace).into_iter().next() else {
        return Vec::new();
    };
    guards.push(Guard::read_only(dot_git));
    let commondir = own.join("commondir");
    let common = std::fs::read_to_string(&commondir)
        .ok()
        .map(|text| own.join(text.trim()));
    if commondir.is_file() {
        guards.push(Guard::read_only(commondir));
    }
    let config_worktree = own.join("config.worktree");
    if config_worktree.is_file() {
        guards.push(Guard::read_only(config_worktree));
    }
    match common.and_then(|common| common.canonicalize().ok()) {
        Some(common) => guard_git_dir(&common, &mut guards, SUBMODULE_DEPTH),
        None => guard_git_dir(&own, &mut guards, SUBMODULE_DEPTH),
    }
    guards
}

/// Files git reads from a git folder that a mount cannot guard when they
/// are missing (a bind needs a path that exists) and that the folder,
/// writable for git's own lock files, lets a command create.
const PLANTABLE: [&str; 3] = ["commondir", "config", "config.worktree"];

/// The [`PLANTABLE`] files missing, when the command starts, from each git
/// folder `guards` pin: a command that creates one is undone by
/// [`undo_plants`] as it ends.
pub fn plantable(guards: &[Guard]) -> Vec<PathBuf> {
    guards
        .iter()
        .filter(|guard| guard.writable)
        .flat_map(|guard| PLANTABLE.iter().map(|name| guard.path.join(name)))
        .filter(|path| path.symlink_metadata().is_err())
        .collect()
}

/// Removes each of `missing` that exists now (a command made it) and
/// returns those it found. A `commondir` in a repository's own git folder
/// would make every later git, the user's and alcove's, take its config and
/// hooks from a folder of the command's choosing.
pub fn undo_plants(missing: &[PathBuf]) -> Vec<PathBuf> {
    missing
        .iter()
        .filter(|path| path.symlink_metadata().is_ok())
        .inspect(|path| {
            if std::fs::remove_file(path).is_err() {
                let _ = std::fs::remove_dir_all(path);
            }
        })
        .cloned()
        .collect()
}

/// Pins `git_dir` and guards its hooks and config, then its submodules'.
fn guard_git_dir(git_dir: &Path, guards: &mut Vec<Guard>, depth: usize) {
    guards.push(Guard::pinned(git_dir.to_owned()));
    let hooks = git_dir.join("hooks");
    // A hook folder made now is one git itself would make (`git init`); one
    // left missing could be made by the command.
    if hooks.is_dir() || std::fs::create_dir(&hooks).is_ok() {
        guards.push(Guard::read_only(hooks));
    }
    for file in ["config", "config.worktree"] {
        let path = git_dir.join(file);
        if path.is_file() {
            guards.push(Guard::read_only(path));
        }
    }
    if depth == 0 {
        return;
    }
    let Ok(modules) = std::fs::read_dir(git_dir.join("modules")) else {
        return;
    };
    for module in modules.flatten() {
        let path = module.path();
        if path.join("config").is_file() {
            guard_git_dir(&path, guards, depth - 1);
        }
    }
}

/// A policy's guards, ready for the process that becomes the command.
pub(crate) struct Binds {
    paths: Vec<(CString, bool)>,
}

impl Binds {
    /// The guards as C strings; an error for a path with a NUL byte.
    pub(crate) fn new(guards: &[Guard]) -> Result<Binds, String> {
        let paths = guards
            .iter()
            .map(|guard| {
                CString::new(guard.path.as_os_str().as_bytes())
                    .map(|path| (path, guard.writable))
                    .map_err(|_| format!("{} contains a NUL byte", guard.path.display()))
            })
            .collect::<Result<_, _>>()?;
        Ok(Binds { paths })
    }

    /// Whether there is nothing to bind (no mount namespace needed).
    pub(crate) fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Binds each path over itself, read-only unless pinned only. The
    /// calling process must be in a mount namespace of its own whose
    /// mounts do not propagate back. System calls only, but for the
    /// message of a failure.
    #[allow(unsafe_code)]
    pub(crate) fn apply(&self) -> Result<(), String> {
        for (path, writable) in &self.paths {
            let failed = |what: &str| {
                format!(
                    "cannot make {} {what}: {}",
                    path.to_string_lossy(),
                    Errno::last()
                )
            };
            // SAFETY (both calls): plain system calls on null-terminated
            // strings this value owns; a null data pointer is allowed.
            let bound = unsafe {
                libc::mount(
                    path.as_ptr(),
                    path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                )
            };
            if bound != 0 {
                return Err(failed("a mount point"));
            }
            if *writable {
                continue;
            }
            let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | locked_flags(path);
            // SAFETY: as above.
            let remounted = unsafe {
                libc::mount(
                    std::ptr::null(),
                    path.as_ptr(),
                    std::ptr::null(),
                    flags,
                    std::ptr::null(),
                )
            };
            if remounted != 0 {
                return Err(failed("read-only"));
            }
        }
        Ok(())
    }
}

/// The flags of the mount `path` is on that a remount must keep: in a
/// mount namespace owned by a user namespace of its own, the kernel locks
/// `nosuid`, `nodev`, `noexec` and the atime flags of every inherited
/// mount, and refuses a remount that would drop one.
#[allow(unsafe_code)]
fn locked_flags(path: &std::ffi::CStr) -> libc::c_ulong {
    // SAFETY: `stat` is written by the call, read only when it succeeded.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return 0;
    }
    [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ]
    .into_iter()
    .filter(|(st, _)| stat.f_flag & st != 0)
    .fold(0, |flags, (_, ms)| flags | ms)
}

/// Moves the calling (single-threaded) launcher into a mount namespace of
/// its own: in its user namespace when it has one (the network steps made
/// it), or in a new one mapping its ids to themselves; its mounts then
/// stop propagating to the host's.
pub(crate) fn own_mount_namespace() -> Result<(), String> {
    use nix::sched::{CloneFlags, unshare};
    if unshare(CloneFlags::CLONE_NEWNS).is_err() {
        let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
            .map_err(|err| format!("cannot create a mount namespace (unshare: {err})"))?;
        crate::net::map_ids(uid, gid)?;
    }
    nix::mount::mount(
        None::<&str>,
        "/",
        None::<&str>,
        nix::mount::MsFlags::MS_REC | nix::mount::MsFlags::MS_SLAVE,
        None::<&str>,
    )
    .map_err(|err| format!("cannot keep mounts private (mount: {err})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_pins_its_git_folder_and_guards_hooks_config_and_submodules() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("modules/sub/hooks")).unwrap();
        std::fs::write(git.join("config"), "").unwrap();
        std::fs::write(git.join("modules/sub/config"), "").unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        let guards = git_guards(&dir.path().join("src"));
        let expected = vec![
            Guard::pinned(git.clone()),
            Guard::read_only(git.join("hooks")),
            Guard::read_only(git.join("config")),
            Guard::pinned(git.join("modules/sub")),
            Guard::read_only(git.join("modules/sub/hooks")),
            Guard::read_only(git.join("modules/sub/config")),
        ];
        assert_eq!(guards, expected);
        assert!(
            git.join("hooks").is_dir(),
            "the missing hooks folder is made"
        );
    }

    #[test]
    fn a_linked_worktree_guards_its_pointers_and_the_common_folder() {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path().join("repo/.git");
        let own = common.join("worktrees/wt");
        std::fs::create_dir_all(common.join("hooks")).unwrap();
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(common.join("config"), "").unwrap();
        std::fs::write(own.join("commondir"), "../..\n").unwrap();
        let tree = dir.path().join("wt");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join(".git"), format!("gitdir: {}\n", own.display())).unwrap();
        let common = common.canonicalize().unwrap();
        assert_eq!(
            git_guards(&tree),
            vec![
                Guard::read_only(tree.join(".git")),
                Guard::read_only(own.join("commondir")),
                Guard::pinned(common.clone()),
                Guard::read_only(common.join("hooks")),
                Guard::read_only(common.join("config")),
            ]
        );
    }
}
