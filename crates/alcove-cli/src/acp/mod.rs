//! `alcove acp`: alcove as an Agent Client Protocol agent on stdin/stdout,
//! for editors (Zed, JetBrains, Neovim, Emacs, VS Code extensions).
//!
//! stdout carries JSON-RPC only: nothing here prints, and the session gets
//! no progress sink; warnings go to the transcript (and stderr is the
//! editor's log). The protocol plumbing is the `agent-client-protocol`
//! crate's; `v1.rs` maps protocol v1's methods onto [`sessions::Sessions`],
//! which knows nothing of the wire version, so a `v2.rs` (a draft today)
//! can be added beside it on the same sessions. A session is opened as
//! `exec` and the TUI open theirs (`session.rs`), and this front end is one
//! more consumer of the event stream (`updates.rs`) plus an approver
//! (`approver.rs`).

mod approver;
mod buffers;
mod mcp;
mod models;
mod replay;
mod sessions;
mod stdio;
mod tool_calls;
mod updates;
mod v1;

use std::sync::Arc;

use clap::Args;

use crate::CommonArgs;

/// How long output left for a client whose input ended may take to be written.
const FLUSH_GRACE: std::time::Duration = std::time::Duration::from_secs(2);
/// How long the sessions may take to end once the client is gone.
const CLOSE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// `alcove acp` arguments (the common options apply to every session).
#[derive(Debug, Args)]
pub(crate) struct AcpArgs {}

/// Serves one client on stdin/stdout until it closes the connection.
pub(crate) async fn run(common: &CommonArgs, _args: AcpArgs) -> anyhow::Result<u8> {
    let sessions = Arc::new(sessions::Sessions::new(common.clone()));
    let (transport, input_ended) = stdio::transport();
    let serve = v1::serve(sessions.clone(), transport);
    tokio::pin!(serve);
    // The connection ends when the client closes its input; what is still
    // queued for it gets a moment to be written, no more (a client that
    // stopped reading would never take it).
    let served = tokio::select! {
        served = &mut serve => served,
        () = async {
            let _ = input_ended.await;
            tokio::time::sleep(FLUSH_GRACE).await;
        } => {
            eprintln!("alcove acp: the client closed its input without reading what was left for it");
            Ok(())
        }
    };
    if tokio::time::timeout(CLOSE_LIMIT, sessions.close_all())
        .await
        .is_err()
    {
        eprintln!("alcove acp: the sessions did not end within {CLOSE_LIMIT:?}; leaving");
    }
    // A client that goes away mid-write (its end of stdout closed) is how
    // an editor closes an agent too: said on stderr, not a failure.
    if let Err(error) = served {
        let detail = error
            .data
            .map(|data| format!(" ({data})"))
            .unwrap_or_default();
        eprintln!(
            "alcove acp: the connection ended: {}{detail}",
            error.message
        );
    }
    Ok(0)
}
