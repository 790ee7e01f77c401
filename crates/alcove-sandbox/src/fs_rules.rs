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

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope,
};

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
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let mut grants = Vec::new();
    expand(Path::new("/"), true, read, &deny, &mut grants);
    for root in &policy.writable {
        if let Ok(root) = root.canonicalize() {
            let folder = root.is_dir();
            expand(&root, folder, all, &deny, &mut grants);
        }
    }
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
    let status = ruleset.restrict_self().map_err(fail)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("this kernel does not enforce Landlock".to_owned());
    }
    Ok(())
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
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        expand(&entry.path(), kind.is_dir(), access, deny, grants);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        expand(&root, true, read, &[root.join("secret")], &mut grants);
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
