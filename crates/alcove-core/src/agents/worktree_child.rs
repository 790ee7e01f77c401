//! The delegation side of worktree isolation: reading `isolation`, and
//! ending a child's worktree into a line of evidence. The git work is in
//! `crate::isolation::worktree`.

use crate::isolation::worktree::{Worktree, evidence_line};

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
    let worktree = worktree.clone();
    let message = format!("alcove child: {description}");
    let finished = tokio::task::spawn_blocking(move || worktree.finish(&message)).await;
    match finished {
        Ok(Ok(finished)) => evidence_line(&finished),
        Ok(Err(reason)) => format!("[alcove worktree] could not be finished: {reason}"),
        Err(_) => "[alcove worktree] could not be finished: the git task failed".to_owned(),
    }
}

/// Commits a spawned child's changes so far, keeping its worktree for the
/// next submission.
pub(crate) async fn checkpoint(worktree: &Worktree, description: &str) -> String {
    let worktree = worktree.clone();
    let message = format!("alcove child: {description}");
    let committed = tokio::task::spawn_blocking(move || worktree.commit(&message)).await;
    match committed {
        Ok(Ok(finished)) => evidence_line(&finished),
        Ok(Err(reason)) => format!("[alcove worktree] could not commit: {reason}"),
        Err(_) => "[alcove worktree] could not commit: the git task failed".to_owned(),
    }
}
