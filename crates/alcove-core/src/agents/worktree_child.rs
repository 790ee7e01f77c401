//! The delegation side of worktree isolation: reading `isolation`, and
//! ending a child's worktree into a line of evidence. The git work is in
//! `crate::isolation::worktree`.

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
