//! The delegation side of worktree isolation: reading `isolation`, and
//! ending a child's worktree into a line of evidence. The git work is in
//! `crate::isolation::worktree`.

use std::path::Path;

use crate::isolation::worktree::{Finished, Worktree, evidence_line};

/// Whether an `isolation` argument asks for a worktree; an unknown value is
/// an error the model can act on.
pub(crate) fn wants_worktree(isolation: Option<&str>) -> Result<bool, String> {
    match isolation.map(str::trim) {
        None | Some("" | "none") => Ok(false),
        Some("worktree") => Ok(true),
        Some(other) => Err(format!(
            "unknown isolation `{other}`; use \"worktree\" or leave it out"
        )),
    }
}

/// Creates the worktree for the child `name` on a blocking thread (git is
/// slow, and `git worktree add` runs one at a time in this process).
pub(crate) async fn create(
    workspace: &Path,
    branch: String,
    name: &str,
) -> Result<Worktree, String> {
    let (workspace, name) = (workspace.to_owned(), name.to_owned());
    tokio::task::spawn_blocking(move || Worktree::create(&workspace, &branch, &name))
        .await
        .unwrap_or_else(|_| Err("the git task failed".to_owned()))
}

/// Finishes the worktrees of agents that were closed (taken out of the
/// registry's lock first), each on a blocking thread.
pub(crate) async fn finish_closed(worktrees: Vec<(Worktree, String)>) {
    let finishing = worktrees.into_iter().map(|(worktree, id)| {
        tokio::task::spawn_blocking(move || worktree.finish(&format!("alcove child {id}")))
    });
    // An error leaves the worktree for `alcove worktrees` to list and remove.
    let _ = futures::future::join_all(finishing).await;
}

/// Commits the child's changes on its branch (or removes worktree and
/// branch when it changed nothing) and says so for the evidence footer.
pub(crate) async fn finish(worktree: &Worktree, description: &str) -> String {
    in_git_task(worktree, description, "be finished", Worktree::finish).await
}

/// Commits a spawned child's changes so far, keeping its worktree for the
/// next submission.
pub(crate) async fn checkpoint(worktree: &Worktree, description: &str) -> String {
    in_git_task(worktree, description, "commit", Worktree::commit).await
}

/// Runs `step` on a blocking thread (git is slow) and turns its outcome
/// into a line of evidence.
async fn in_git_task(
    worktree: &Worktree,
    description: &str,
    what: &str,
    step: fn(&Worktree, &str) -> Result<Finished, String>,
) -> String {
    let worktree = worktree.clone();
    let message = format!("alcove child: {description}");
    match tokio::task::spawn_blocking(move || step(&worktree, &message)).await {
        Ok(Ok(finished)) => evidence_line(&finished),
        Ok(Err(reason)) => format!("[alcove worktree] could not {what}: {reason}"),
        Err(_) => format!("[alcove worktree] could not {what}: the git task failed"),
    }
}
