//! Filesystem confinement with Landlock.
//!
//! Landlock grants, it never subtracts: a rule on `/` opens everything
//! beneath it. So a folder that holds a denied path is not granted whole;
//! its entries are granted one by one, all but the denied one, down to the
//! denied path (symlinks among them are skipped: what they point to is
//! granted, or not, where it lives). Listing such a folder stays allowed,
//! so the names of denied files can be seen, never their contents.
//!
//! Reads are granted from `/`; writes (and reads) in each writable folder;
//! a few device files (`/dev/null`, …) may be written everywhere.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

use crate::policy::LaunchPolicy;

/// The newest ABI this crate knows; older kernels get what they support
/// (Landlock's best-effort mode), and no Landlock at all is an error.
const ABI_WANTED: ABI = ABI::V10;

/// Device files every command may read and write.
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Locks the calling process (and so the command it becomes) into a
/// Landlock domain allowing what `policy` allows.
pub(crate) fn restrict(policy: &LaunchPolicy) -> Result<(), String> {
    enforce(prepare(policy)?.ruleset)
}

/// Locks the calling process into the domain `ruleset` describes.
pub(crate) fn enforce(ruleset: RulesetCreated) -> Result<(), String> {
    let status = ruleset
        .restrict_self()
        .map_err(|err| format!("Landlock: {err}"))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("this kernel does not enforce Landlock".to_owned());
    }
    Ok(())
}

/// A ruleset built for a policy, and what it was built from: the
/// session's holder keeps it for the next command with the same policy
/// while [`Prepared::still_fits`] (about 150 system calls a command).
pub(crate) struct Prepared {
    pub(crate) ruleset: RulesetCreated,
    /// Each path the rules depend on, and what it was then: the denied
    /// paths and writable roots (which file each was), and the folders
    /// whose entries were granted one by one (their entries, as listed for
    /// the rules: no second listing).
    seen: Vec<(PathBuf, Seen)>,
    /// Watches on the folders whose entries were granted one by one, set
    /// before they were listed: while no entry is made, removed or renamed
    /// there, a fit lists nothing (8.6 system calls fewer a confined
    /// command, bench/notes.md point 42). After an event the folders are
    /// listed again and compared with what the rules were built from, so a
    /// busy folder above the workspace (`/tmp`, a home folder), where files
    /// come and go all the time, keeps the ruleset until its entries really
    /// differ. `None` where inotify could not watch them all: each fit
    /// lists them then.
    listed_watch: Option<Inotify>,
}

/// What changes the entries of a listed folder, or the folder itself.
fn entry_changes() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

/// An inotify instance watching each of `folders` for [`entry_changes`],
/// or `None` where one cannot be made or a folder cannot be watched.
fn watch(folders: &[&Path]) -> Option<Inotify> {
    let inotify = Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK).ok()?;
    for folder in folders {
        inotify.add_watch(*folder, entry_changes()).ok()?;
    }
    Some(inotify)
}

/// What a path was when the rules were built: for a folder whose entries
/// were granted one by one, its entries (a modification time can stay the
/// same across changes made within one clock tick); for any other, which
/// file it was, if any.
#[derive(PartialEq)]
enum Seen {
    Entries(Vec<(std::ffi::OsString, bool, bool)>),
    Inode(Option<u64>),
}

impl Seen {
    fn now(path: &Path, listed: bool) -> Seen {
        if !listed {
            return Seen::Inode(path.symlink_metadata().ok().map(|meta| meta.ino()));
        }
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let kind = entry.file_type().ok()?;
                Some((entry.file_name(), kind.is_dir(), kind.is_symlink()))
            })
            .collect();
        entries.sort_unstable();
        Seen::Entries(entries)
    }
}

impl Prepared {
    /// Whether building the rules now would give the same rules: every
    /// denied path and writable root is the file it was, and every folder
    /// listed for them has the entries it had.
    pub(crate) fn still_fits(&self) -> bool {
        self.changed().is_empty()
    }

    /// The paths the rules were built from that differ now. A listed
    /// folder is listed again only after an event on the watches (read
    /// first, so a change made while comparing shows at the next fit).
    fn changed(&self) -> Vec<&Path> {
        // Nothing to read is the one answer that means no change.
        let quiet = self
            .listed_watch
            .as_ref()
            .is_some_and(|inotify| matches!(inotify.read_events(), Err(Errno::EAGAIN)));
        self.seen
            .iter()
            .filter(|(path, then)| {
                let listed = matches!(then, Seen::Entries(_));
                !(listed && quiet) && Seen::now(path, listed) != *then
            })
            .map(|(path, _)| path.as_path())
            .collect()
    }
}

/// Builds the ruleset for `policy` without applying it.
pub(crate) fn prepare(policy: &LaunchPolicy) -> Result<Prepared, String> {
    prepare_watching(policy, true)
}

/// [`prepare`], watching the listed folders when `watching` (and inotify
/// can), listing them again to see changes otherwise.
fn prepare_watching(policy: &LaunchPolicy, watching: bool) -> Result<Prepared, String> {
    let abi = ABI_WANTED;
    let fail = |err: landlock::RulesetError| format!("Landlock: {err}");
    // Most denied paths do not exist: one `lstat` says so, where resolving
    // the path takes a call per component.
    let deny: Vec<PathBuf> = policy
        .deny_read
        .iter()
        .filter(|path| path.symlink_metadata().is_ok())
        .filter_map(|path| path.canonicalize().ok())
        .collect();
    // The folders `expand` lists are the ones holding a denied path:
    // watched before they are listed, a change in between shows as an
    // event rather than being missed.
    let mut holding: Vec<&Path> = deny
        .iter()
        .flat_map(|path| path.ancestors().skip(1))
        .collect();
    holding.sort_unstable();
    holding.dedup();
    let listed_watch = watching.then(|| watch(&holding)).flatten();
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let mut grants = Vec::new();
    let mut listed = Vec::new();
    expand(Path::new("/"), true, read, &deny, &mut grants, &mut listed);
    for root in &policy.writable {
        if let Ok(root) = root.canonicalize() {
            let folder = root.is_dir();
            expand(&root, folder, all, &deny, &mut grants, &mut listed);
        }
    }
    // What the rules depend on: the denied paths and writable roots, and
    // the folders listed above (their entries were granted one by one).
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    listed.dedup_by(|a, b| a.0 == b.0);
    let seen = policy
        .deny_read
        .iter()
        .chain(&policy.writable)
        .map(|path| (path.clone(), Seen::now(path, false)))
        .chain(listed)
        .collect();
    for device in DEVICES {
        grants.push(Grant {
            path: PathBuf::from(device),
            folder: false,
            access: AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev,
        });
    }
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(fail)?
        .scope(Scope::from_all(abi))
        .map_err(fail)?
        .create()
        .map_err(fail)?;
    for Grant {
        path,
        folder,
        access,
    } in grants
    {
        let Ok(fd) = PathFd::new(&path) else {
            continue;
        };
        let access = if folder {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, access))
            .map_err(fail)?;
    }
    Ok(Prepared {
        ruleset,
        seen,
        listed_watch,
    })
}

/// A path to grant `access` beneath, and whether it is a folder (known
/// from its listing, so no call asks again).
struct Grant {
    path: PathBuf,
    folder: bool,
    access: BitFlags<AccessFs>,
}

/// Adds rules granting `access` beneath `root` (a folder when `folder`),
/// except beneath `deny`.
fn expand(
    root: &Path,
    folder: bool,
    access: BitFlags<AccessFs>,
    deny: &[PathBuf],
    grants: &mut Vec<Grant>,
    listed: &mut Vec<(PathBuf, Seen)>,
) {
    if deny.iter().any(|denied| root.starts_with(denied)) {
        return;
    }
    if !deny.iter().any(|denied| denied.starts_with(root)) {
        grants.push(Grant {
            path: root.to_owned(),
            folder,
            access,
        });
        return;
    }
    // A denied path lies inside: list this folder, grant each entry.
    grants.push(Grant {
        path: root.to_owned(),
        folder,
        access: access & AccessFs::ReadDir,
    });
    let mut entries: Vec<(std::ffi::OsString, bool, bool)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let kind = entry.file_type().ok()?;
            Some((entry.file_name(), kind.is_dir(), kind.is_symlink()))
        })
        .collect();
    entries.sort_unstable();
    for (name, is_dir, is_symlink) in &entries {
        if !is_symlink {
            expand(&root.join(name), *is_dir, access, deny, grants, listed);
        }
    }
    listed.push((root.to_owned(), Seen::Entries(entries)));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether nothing under `root` that the rules were built from
    /// changed: the folders above it (the temp folder, when the clone
    /// lives there) change under other processes, and a change there
    /// rightly asks for new rules; the test judges only what it changes.
    fn fits_under(prepared: &Prepared, root: &Path) -> bool {
        prepared
            .changed()
            .iter()
            .all(|path| !path.starts_with(root))
    }

    #[test]
    fn a_kept_ruleset_fits_until_a_path_it_was_built_from_changes() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("home")).unwrap();
        std::fs::create_dir(root.join("home/.ssh")).unwrap();
        let policy = |deny: Vec<PathBuf>| LaunchPolicy {
            mode: crate::SandboxMode::WorkspaceWrite,
            network: false,
            allow_loopback: false,
            network_holder: None,
            writable: vec![root.join("work")],
            deny_read: deny,
            limits: crate::ResourceLimits::NONE,
            guards: Vec::new(),
        };
        let listed = policy(vec![root.join("home/.ssh")]);
        let prepared = prepare(&listed).unwrap();
        assert!(fits_under(&prepared, &root));
        assert!(fits_under(&prepared, &root), "a fit reads nothing away");
        // The folders holding the denied path are watched.
        assert!(prepared.listed_watch.is_some());
        // Files that come and go there between two commands (a busy
        // folder) leave the rules as they were: the ruleset is kept.
        for n in 0..20 {
            let churn = root.join(format!("home/.tmp{n}"));
            std::fs::write(&churn, "").unwrap();
            std::fs::rename(&churn, root.join("home/.tmp-renamed")).unwrap();
            std::fs::remove_file(root.join("home/.tmp-renamed")).unwrap();
        }
        assert!(fits_under(&prepared, &root), "churn asked for new rules");
        // A new entry in a folder whose entries were granted one by one.
        std::fs::write(root.join("home/notes"), "").unwrap();
        assert!(!prepared.still_fits());
        let prepared = prepare(&listed).unwrap();
        assert!(fits_under(&prepared, &root));
        // An entry removed, or renamed, there.
        std::fs::rename(root.join("home/notes"), root.join("home/notes2")).unwrap();
        assert!(!prepared.still_fits());
        let prepared = prepare(&listed).unwrap();
        std::fs::remove_file(root.join("home/notes2")).unwrap();
        assert!(!prepared.still_fits());
        // Without a watch, the listing says the same.
        let unwatched = prepare_watching(&listed, false).unwrap();
        assert!(fits_under(&unwatched, &root));
        std::fs::write(root.join("home/notes"), "").unwrap();
        assert!(!unwatched.still_fits());
        // A denied path that did not exist, created since.
        let absent = policy(vec![root.join("home/.aws")]);
        let prepared = prepare(&absent).unwrap();
        std::fs::create_dir(root.join("home/.aws")).unwrap();
        assert!(!prepared.still_fits());
        // A writable root that did not exist, created since.
        let prepared = prepare(&absent).unwrap();
        std::fs::create_dir(root.join("work")).unwrap();
        assert!(!prepared.still_fits());
    }

    #[test]
    fn a_denied_folder_is_left_out_and_its_siblings_granted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for name in ["a", "secret", "b"] {
            std::fs::create_dir(root.join(name)).unwrap();
        }
        std::fs::create_dir(root.join("secret/inner")).unwrap();
        std::os::unix::fs::symlink(root.join("secret"), root.join("link")).unwrap();
        let mut grants = Vec::new();
        let read = AccessFs::from_read(ABI::V5);
        expand(
            &root,
            true,
            read,
            &[root.join("secret")],
            &mut grants,
            &mut Vec::new(),
        );
        let paths: Vec<&Path> = grants.iter().map(|grant| grant.path.as_path()).collect();
        assert!(paths.contains(&root.join("a").as_path()));
        assert!(paths.contains(&root.join("b").as_path()));
        assert!(
            !paths
                .iter()
                .any(|path| path.starts_with(root.join("secret")))
        );
        assert!(!paths.contains(&root.join("link").as_path()));
        // The folder itself may only be listed.
        let own = grants.iter().find(|grant| grant.path == root).unwrap();
        assert_eq!(own.access, BitFlags::from(AccessFs::ReadDir));
        assert!(own.folder);
        let a = grants.iter().find(|grant| grant.path == root.join("a"));
        assert!(a.is_some_and(|grant| grant.folder));
    }
}
