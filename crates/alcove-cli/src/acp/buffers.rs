//! The editor's buffers as `Read`'s file source (`alcove_tools::FileSource`):
//! when the client says in `initialize` that it serves `fs/read_text_file`,
//! Read asks it for a text file's contents, so the model sees what the
//! user sees, unsaved changes included. The call has passed the gate and
//! hooks like any Read (a `Read(...)` deny rule keeps the file from the
//! editor too); the disk is read when the editor does not answer in time
//! or answers with an error.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::ReadTextFileRequest;
use alcove_tools::FileSource;

use super::updates::Updates;

/// How long the editor may take to hand over a file before the disk is read.
const READ_LIMIT: Duration = Duration::from_secs(5);

/// `fs/read_text_file` on the session's connection.
pub(crate) struct EditorBuffers {
    updates: Arc<Updates>,
}

impl EditorBuffers {
    pub(crate) fn new(updates: Arc<Updates>) -> EditorBuffers {
        EditorBuffers { updates }
    }
}

#[async_trait::async_trait]
impl FileSource for EditorBuffers {
    async fn text(&self, path: &Path) -> Option<String> {
        // Asked on the session the editor opened, whichever agent reads:
        // the buffers are the editor's, not a subagent session's.
        let session = self.updates.top();
        if session.is_empty() {
            return None;
        }
        let asked = self
            .updates
            .connection()
            .send_request(ReadTextFileRequest::new(
                session.to_owned(),
                path.to_owned(),
            ))
            .block_task();
        match tokio::time::timeout(READ_LIMIT, asked).await {
            Ok(Ok(response)) => Some(response.content),
            _ => None,
        }
    }
}
