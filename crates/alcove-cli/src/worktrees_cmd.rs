//! `alcove merge` and `alcove worktrees`: bringing a worktree child's branch
//! into the workspace, and finding and cleaning what children left.
//!
//! `alcove merge <branch|agent>` applies the branch's changes to the working
//! tree file by file (the user's uncommitted changes stay; a conflict leaves
//! markers in that file and is listed; exit 1). `alcove worktrees` lists
//! alcove's branches and the worktrees still on disk (a child that never
//! ended: a crash, a kill); `--clean` removes those worktrees and their
//! branches, and `--all` removes every alcove branch too.

use std::path::PathBuf;

use alcove_core::isolation::worktree::{self, Merged};
use clap::Args;

use crate::{CommonArgs, UsageError};

/// `alcove merge` arguments.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The branch (`alcove/<session>/<agent>`) or just the agent (`agent-1`).
    branch: String,
}

/// `alcove worktrees` arguments.
#[derive(Debug, Args)]
pub(crate) struct WorktreesArgs {
    /// Remove the worktrees children left (and their branches).
    #[arg(long)]
    clean: bool,
    /// With --clean: remove every alcove branch, merged or not.
    #[arg(long, requires = "clean")]
    all: bool,
}

fn workspace(common: &CommonArgs) -> anyhow::Result<PathBuf> {
    Ok(common.workspace()?.root().to_owned())
}

pub(crate) fn merge(common: &CommonArgs, args: &MergeArgs) -> anyhow::Result<u8> {
    let workspace = workspace(common)?;
    match worktree::merge(&workspace, &args.branch).map_err(UsageError)? {
        Merged::Clean(files) => {
            println!("merged {}: {}", args.branch, files.join(", "));
            Ok(0)
        }
        Merged::Conflicts { applied, conflicts } => {
            if !applied.is_empty() {
                println!("applied: {}", applied.join(", "));
            }
            println!(
                "conflicts (resolve the markers, or keep your version): {}",
                conflicts.join(", ")
            );
            Ok(1)
        }
    }
}

pub(crate) fn worktrees(common: &CommonArgs, args: &WorktreesArgs) -> anyhow::Result<u8> {
    let workspace = workspace(common)?;
    let leftovers = worktree::leftovers(&workspace).map_err(UsageError)?;
    if leftovers.is_empty() {
        println!("no alcove worktrees or branches");
        return Ok(0);
    }
    let mut failed = false;
    let mut kept = Vec::new();
    for leftover in &leftovers {
        let state = match &leftover.path {
            Some(path) => format!("worktree left at {}", path.display()),
            None => "branch".to_owned(),
        };
        let remove = args.clean && (args.all || leftover.path.is_some());
        if remove {
            match worktree::remove(&workspace, leftover) {
                Ok(()) => println!("removed {} ({state})", leftover.branch),
                Err(reason) => {
                    failed = true;
                    eprintln!("alcove: cannot remove {}: {reason}", leftover.branch);
                }
            }
        } else if args.clean {
            kept.push(leftover.branch.as_str());
            println!("kept {} ({state})", leftover.branch);
        } else {
            println!("{} ({state})", leftover.branch);
        }
    }
    if !kept.is_empty() {
        eprintln!(
            "alcove: kept {} branch(es) with no worktree, whose work may not be merged: {}. \
             `alcove merge <branch>` applies one; `alcove worktrees --clean --all` removes them",
            kept.len(),
            kept.join(", ")
        );
    }
    Ok(u8::from(failed))
}

/// A warning for the start of a session when children's worktrees are on
/// disk (a session that crashed, or one still running). Costs no git call
/// when there are none.
pub(crate) fn leftover_warning(workspace: &std::path::Path) -> Option<String> {
    let common = alcove_sandbox::git_dirs(workspace).pop()?;
    let folder = common.join("alcove/worktrees");
    std::fs::read_dir(&folder).ok()?.next()?.ok()?;
    let count = worktree::leftovers(workspace)
        .ok()?
        .iter()
        .filter(|leftover| leftover.path.is_some())
        .count();
    (count > 0).then(|| {
        format!(
            "{count} worktree(s) of alcove children are on disk (a session that crashed, or one \
             still running): `alcove worktrees` lists them, `alcove worktrees --clean` removes them"
        )
    })
}
