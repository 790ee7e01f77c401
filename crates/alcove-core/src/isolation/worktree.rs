//! A git worktree per writing child, so parallel writers never race on one
//! checkout.
//!
//! [`Worktree::create`] snapshots the parent's working tree — HEAD plus
//! uncommitted and untracked (not ignored) changes, through a private index
//! so the user's index is untouched — and adds a worktree on a new branch at
//! that snapshot, under the repository's git folder (`.git/alcove/
//! worktrees/`, invisible to `git status`). [`Worktree::finish`] commits
//! what the child changed and removes the folder; a branch with no change is
//! deleted too. [`merge`] brings a branch's changes into a working tree file
//! by file with `git merge-file`, so the parent's own uncommitted changes are
//! kept and a conflict is reported by file, never half-applied silently.
//! [`leftovers`] and [`remove`] find and clean worktrees a crash left.
//!
//! The API is plain paths and strings so other callers (batch tasks) can use
//! it the same way.

use std::path::{Path, PathBuf};
use std::process::Output;

use super::git_command;

/// The prefix of every branch this module creates.
pub const BRANCH_PREFIX: &str = "alcove/";

/// A file a branch changed, with lines added and removed (`None`: binary).
pub type FileChange = (String, Option<(u64, u64)>);

/// A child's worktree while it runs.
#[derive(Debug, Clone)]
pub struct Worktree {
    /// The main repository's top folder.
    repo: PathBuf,
    /// The worktree's top folder.
    path: PathBuf,
    /// The folder inside the worktree matching the parent's workspace.
    workspace: PathBuf,
    branch: String,
    /// The snapshot the branch starts from.
    base: String,
}

/// How a child's worktree ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finished {
    /// Nothing changed: worktree and branch are gone.
    Unchanged,
    /// The changes are one commit on `branch`.
    Committed {
        /// The branch.
        branch: String,
        /// The commit.
        commit: String,
        /// Files changed with lines added and removed (`None` for binary files).
        files: Vec<FileChange>,
    },
}

/// How a merge went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// Every change applied; the files touched.
    Clean(Vec<String>),
    /// Some files conflict (left with conflict markers, or untouched when
    /// one side deleted them); the rest applied.
    Conflicts {
        /// Files applied cleanly.
        applied: Vec<String>,
        /// Files in conflict.
        conflicts: Vec<String>,
    },
}

/// A worktree or branch of alcove's found in a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// The branch (`alcove/<session>/<agent>`).
    pub branch: String,
    /// The worktree folder, when one still exists (a child that never ended).
    pub path: Option<PathBuf>,
}

fn git(dir: &Path, args: &[&str]) -> Result<Output, String> {
    git_command::run(dir, args, None)
}

/// Runs git and returns its trimmed stdout, or its stderr as the error.
fn git_ok(dir: &Path, args: &[&str]) -> Result<String, String> {
    let output = git(dir, args)?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    } else {
        Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// The top folder of the repository holding `dir`, or a clear error.
pub fn repo_root(dir: &Path) -> Result<PathBuf, String> {
    git_command::check_git_dirs(dir)?;
    git_ok(dir, &["rev-parse", "--show-toplevel"])
        .map(PathBuf::from)
        .map_err(|_| {
            format!(
                "isolation: worktree needs a git repository, and {} is not in one \
                 (run `git init` there, or leave isolation out)",
                dir.display()
            )
        })
}

fn common_dir(repo: &Path) -> Result<PathBuf, String> {
    let dir = PathBuf::from(git_ok(repo, &["rev-parse", "--git-common-dir"])?);
    Ok(if dir.is_absolute() {
        dir
    } else {
        repo.join(dir)
    })
}

/// Commits the state of `repo`'s working tree (tracked, changed and
/// untracked-not-ignored files) without touching its index; returns the
/// commit, or HEAD itself when nothing differs from it.
fn snapshot(repo: &Path, name: &str, message: &str) -> Result<String, String> {
    let head = git_ok(repo, &["rev-parse", "--verify", "-q", "HEAD"]).ok();
    // One private index per child: siblings snapshot at the same time.
    let index = common_dir(repo)?.join(format!(
        "alcove-index-{}-{}",
        std::process::id(),
        name.replace(['/', '\\'], "-")
    ));
    let with_index = |args: &[&str]| -> Result<String, String> {
        let output = git_command::run(repo, args, Some(&index))?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
        } else {
            Err(format!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    };
    let result = (|| {
        match &head {
            Some(head) => with_index(&["read-tree", head])?,
            None => with_index(&["read-tree", "--empty"])?,
        };
        with_index(&["add", "-A", "--", "."])?;
        let tree = with_index(&["write-tree"])?;
        if let Some(head) = &head
            && git_ok(repo, &["rev-parse", &format!("{head}^{{tree}}")])? == tree
        {
            return Ok(head.clone());
        }
        let mut args = vec!["commit-tree", tree.as_str(), "-m", message];
        if let Some(head) = &head {
            args.extend(["-p", head.as_str()]);
        }
        identity_git_ok(repo, &args)
    })();
    let _ = std::fs::remove_file(&index);
    result
}

/// git with an identity when the repository has none configured.
fn identity_git_ok(repo: &Path, args: &[&str]) -> Result<String, String> {
    let mut full: Vec<&str> = Vec::new();
    if git_ok(repo, &["config", "user.email"]).is_err() {
        full.extend([
            "-c",
            "user.name=alcove",
            "-c",
            "user.email=alcove@localhost",
        ]);
    }
    full.extend(args);
    git_ok(repo, &full)
}

impl Worktree {
    /// Creates a worktree for the child `name` of the repository holding
    /// `workspace`, on the new branch `branch`, at the parent's current state.
    /// It runs git and blocks: the supervisor calls it on a blocking thread
    /// (`agents/worktree_child.rs`), never on an async worker.
    pub fn create(workspace: &Path, branch: &str, name: &str) -> Result<Worktree, String> {
        let repo = repo_root(workspace)?;
        let base = snapshot(
            &repo,
            branch,
            &format!("alcove: the parent's working tree for {name}"),
        )?;
        let path = common_dir(&repo)?
            .join("alcove/worktrees")
            .join(branch.trim_start_matches(BRANCH_PREFIX).replace('/', "--"));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
        }
        let path_text = path.to_string_lossy().into_owned();
        {
            // One `git worktree add` at a time in this process: siblings
            // start together, and two at once in one repository (a new
            // branch each, the worktrees' admin folder) failed now and then.
            static ADDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
            let _one_at_a_time = ADDING
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            git_ok(
                &repo,
                &[
                    "worktree", "add", "--quiet", "-b", branch, &path_text, &base,
                ],
            )?;
        }
        let inside = workspace
            .canonicalize()
            .ok()
            .and_then(|ws| {
                let repo = repo.canonicalize().ok()?;
                ws.strip_prefix(&repo).ok().map(Path::to_owned)
            })
            .unwrap_or_default();
        Ok(Worktree {
            workspace: path.join(inside),
            repo,
            path,
            branch: branch.to_owned(),
            base,
        })
    }

    /// The folder the child works in (the worktree's match of the parent's workspace).
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The branch.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// Commits what changed in the worktree since the last commit (amending
    /// the child's one commit, so the branch stays one commit on its base)
    /// and says what the branch holds; the worktree stays.
    pub fn commit(&self, message: &str) -> Result<Finished, String> {
        git_ok(&self.path, &["add", "-A", "--", "."])?;
        let staged = git(&self.path, &["diff", "--cached", "--quiet"])?;
        if !staged.status.success() {
            let head = git_ok(&self.path, &["rev-parse", "HEAD"])?;
            let mut args = vec!["commit", "--quiet", "--no-verify", "-m", message];
            if head != self.base {
                args.push("--amend");
            }
            identity_git_ok(&self.path, &args)?;
        }
        let head = git_ok(&self.path, &["rev-parse", "HEAD"])?;
        if head == self.base {
            return Ok(Finished::Unchanged);
        }
        Ok(Finished::Committed {
            branch: self.branch.clone(),
            commit: head.clone(),
            files: numstat(&self.repo, &self.base, &head)?,
        })
    }

    /// Commits what changed and removes the worktree; deletes the branch
    /// too when nothing changed.
    pub fn finish(&self, message: &str) -> Result<Finished, String> {
        let finished = self.commit(message)?;
        let path_text = self.path.to_string_lossy().into_owned();
        git_ok(&self.repo, &["worktree", "remove", "--force", &path_text])?;
        if finished == Finished::Unchanged {
            git_ok(&self.repo, &["branch", "-D", &self.branch])?;
        }
        Ok(finished)
    }
}

fn numstat(repo: &Path, from: &str, to: &str) -> Result<Vec<FileChange>, String> {
    let text = git_ok(repo, &["diff", "--numstat", from, to])?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, '\t');
            let added = parts.next()?;
            let removed = parts.next()?;
            let file = parts.next()?.to_owned();
            let counts = added.parse().ok().zip(removed.parse().ok());
            Some((file, counts))
        })
        .collect())
}

/// The line the evidence footer gets for a finished worktree.
pub fn evidence_line(finished: &Finished) -> String {
    match finished {
        Finished::Unchanged => {
            "[alcove worktree] no changes: the worktree and its branch were removed".to_owned()
        }
        Finished::Committed {
            branch,
            commit,
            files,
        } => {
            let files: Vec<String> = files
                .iter()
                .map(|(file, counts)| match counts {
                    Some((added, removed)) => format!("{file} (+{added} −{removed})"),
                    None => format!("{file} (binary)"),
                })
                .collect();
            format!(
                "[alcove worktree] branch: {branch} | commit: {} | files: {} | merge into the \
                 workspace with `alcove merge {branch}` (keeps uncommitted changes, lists \
                 conflicts) or `git merge {branch}`",
                &commit[..commit.len().min(12)],
                files.join(", ")
            )
        }
    }
}

/// Applies the changes of `branch` (since the snapshot it started from) to
/// the working tree of the repository holding `workspace`.
pub fn merge(workspace: &Path, branch: &str) -> Result<Merged, String> {
    let repo = repo_root(workspace)?;
    let branch = full_branch(&repo, branch)?;
    // The branch's first commit is alcove's (the snapshot or the child's);
    // its base is the commit the child started from: the branch's root
    // relative to HEAD is found by the merge base, or the snapshot's parent.
    let tip = git_ok(&repo, &["rev-parse", &branch])?;
    let base = git_ok(&repo, &["rev-parse", &format!("{tip}^")])?;
    let changes = git_ok(
        &repo,
        &["diff", "--name-status", "--no-renames", &base, &tip],
    )?;
    let mut applied = Vec::new();
    let mut conflicts = Vec::new();
    for line in changes.lines() {
        let Some((status, file)) = line.split_once('\t') else {
            continue;
        };
        let target = repo.join(file);
        let current = std::fs::read(&target).ok();
        let old = blob(&repo, &base, file);
        let new = blob(&repo, &tip, file);
        let ok = match (status, &old, &new) {
            ("D", Some(old), None) => match &current {
                Some(current) if current == old => std::fs::remove_file(&target).is_ok(),
                None => true,
                Some(_) => false,
            },
            ("A", None, Some(new)) => match &current {
                None => write(&target, new),
                Some(current) => current == new,
            },
            (_, Some(old), Some(new)) => match &current {
                Some(current) if current == old => write(&target, new),
                Some(current) if current == new => true,
                Some(_) => merge_file(&repo, &target, old, new)?,
                None => false,
            },
            _ => false,
        };
        if ok {
            applied.push(file.to_owned());
        } else {
            conflicts.push(file.to_owned());
        }
    }
    Ok(if conflicts.is_empty() {
        Merged::Clean(applied)
    } else {
        Merged::Conflicts { applied, conflicts }
    })
}

fn full_branch(repo: &Path, branch: &str) -> Result<String, String> {
    let candidates = [branch.to_owned(), format!("{BRANCH_PREFIX}{branch}")];
    for candidate in &candidates {
        if git_ok(
            repo,
            &[
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/heads/{candidate}"),
            ],
        )
        .is_ok()
        {
            return Ok(candidate.clone());
        }
    }
    // `agent-1`: the one alcove branch ending in it.
    let all = git_ok(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/alcove/",
        ],
    )?;
    let matching: Vec<&str> = all
        .lines()
        .filter(|name| name.ends_with(&format!("/{branch}")))
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(format!("no branch {branch} (see `alcove worktrees`)")),
        many => Err(format!(
            "{branch} names several branches: {}; give the whole name",
            many.join(", ")
        )),
    }
}

fn blob(repo: &Path, commit: &str, file: &str) -> Option<Vec<u8>> {
    let output = git(repo, &["show", &format!("{commit}:{file}")]).ok()?;
    output.status.success().then_some(output.stdout)
}

fn write(target: &Path, content: &[u8]) -> bool {
    if let Some(parent) = target.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    std::fs::write(target, content).is_ok()
}

/// Three-way merges `new` into `target` (whose base is `old`); false on conflict.
fn merge_file(repo: &Path, target: &Path, old: &[u8], new: &[u8]) -> Result<bool, String> {
    let scratch = common_dir(repo)?.join(format!("alcove-merge-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|err| err.to_string())?;
    let (base, theirs) = (scratch.join("base"), scratch.join("theirs"));
    let result = std::fs::write(&base, old)
        .and_then(|()| std::fs::write(&theirs, new))
        .map_err(|err| err.to_string())
        .and_then(|()| {
            let (target, base, theirs) = (
                target.to_string_lossy(),
                base.to_string_lossy(),
                theirs.to_string_lossy(),
            );
            git_command::run(
                repo,
                &[
                    "merge-file",
                    "-L",
                    "workspace",
                    "-L",
                    "base",
                    "-L",
                    "child",
                    &target,
                    &base,
                    &theirs,
                ],
                None,
            )
        });
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(result?.status.success())
}

/// alcove's worktrees and branches in the repository holding `workspace`.
pub fn leftovers(workspace: &Path) -> Result<Vec<Leftover>, String> {
    let repo = repo_root(workspace)?;
    let _ = git(&repo, &["worktree", "prune"]);
    let listing = git_ok(&repo, &["worktree", "list", "--porcelain"])?;
    let mut trees = Vec::new();
    let mut path = None;
    for line in listing.lines() {
        if let Some(rest) = line.strip_prefix("worktree ") {
            path = Some(PathBuf::from(rest));
        } else if let Some(rest) = line.strip_prefix("branch refs/heads/")
            && rest.starts_with(BRANCH_PREFIX)
        {
            trees.push((rest.to_owned(), path.take()));
        }
    }
    let branches = git_ok(
        &repo,
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/alcove/",
        ],
    )?;
    Ok(branches
        .lines()
        .map(|branch| Leftover {
            branch: branch.to_owned(),
            path: trees
                .iter()
                .find(|(name, _)| name == branch)
                .and_then(|(_, path)| path.clone()),
        })
        .collect())
}

/// Removes a leftover's worktree folder and its branch.
pub fn remove(workspace: &Path, leftover: &Leftover) -> Result<(), String> {
    let repo = repo_root(workspace)?;
    if let Some(path) = &leftover.path {
        let path_text = path.to_string_lossy().into_owned();
        git_ok(&repo, &["worktree", "remove", "--force", &path_text])?;
    }
    git_ok(&repo, &["branch", "-D", &leftover.branch]).map(|_| ())
}
