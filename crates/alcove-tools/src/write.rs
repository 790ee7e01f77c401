//! The `Write` tool: creates or overwrites a whole file.
//!
//! For new files and full rewrites; small changes go through `Edit`, which
//! costs fewer tokens and cannot clobber unrelated lines. Whether the path is
//! allowed is the permission gate's business (it sees [`Invocation::paths`]),
//! not this tool's.

use std::path::Path;

use alcove_protocol::ToolSpec;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::read::INLINE_READ_BYTES;
use crate::{Access, Effects, FileCall, Invocation, ToolContext, ToolOutput, TypedTool, Workspace};

const NAME: &str = "Write";
const DESCRIPTION: &str = "Writes a whole file, creating missing folders. Prefer Edit to change \
part of a file.";

/// Arguments of `Write`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteInput {
    /// Absolute or workspace-relative path.
    file_path: String,
    /// The whole new content.
    content: String,
}

/// The `Write` tool.
pub struct Write {
    spec: ToolSpec,
}

impl Default for Write {
    fn default() -> Self {
        Write {
            spec: crate::tool_spec!(WriteInput, NAME, DESCRIPTION),
        }
    }
}

#[async_trait::async_trait]
impl TypedTool for Write {
    type Input = WriteInput;
    type Call = FileCall<WriteInput>;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::Edit
    }

    fn inspect(
        &self,
        input: WriteInput,
        workspace: &Workspace,
    ) -> Result<(Invocation, FileCall<WriteInput>), String> {
        let file_path = input.file_path.clone();
        Ok(FileCall::resolve(workspace, &file_path, input))
    }

    async fn call(&self, call: FileCall<WriteInput>, context: &ToolContext) -> ToolOutput {
        let FileCall { input, path } = call;
        let shown = context.workspace.display(&path);
        let workspace = context.workspace.clone();
        // Small content is written here, as Edit does (see there); large
        // content goes to the blocking pool in one trip.
        let small = input.content.len() as u64 <= INLINE_READ_BYTES;
        let write = move || write_file(&path, shown, &workspace, &input.content);
        let written = if small {
            Ok(write())
        } else {
            tokio::task::spawn_blocking(write).await
        };
        written.unwrap_or_else(|err| ToolOutput::error(format!("Write failed: {err}")))
    }
}

/// Writes `bytes` as the whole content of the file at `path`, creating it
/// if missing. An existing file is written over from its start and then
/// cut to the new length, not emptied first: on ext4, a file truncated to
/// nothing is written back to disk as soon as it is closed (the
/// `auto_da_alloc` heuristic), which made each `Edit` wait for the disk.
///
/// What that changes: a reader looking while the write is under way sees
/// new text over old where it saw a short file; a write that fails part
/// way (a full disk) is cut to what was written, so it shows short, as
/// before. Neither way calls `fsync`: after a power loss before the kernel
/// writes the file back, the old way could leave it empty, this one the
/// old bytes cut to the new length. Edit and Write never promised more.
pub(crate) fn overwrite(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::{Seek as _, Write as _};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    if let Err(err) = file.write_all(bytes) {
        // The file's offset is how much was written.
        if let Ok(written) = file.stream_position() {
            let _ = file.set_len(written);
        }
        return Err(err);
    }
    let end = file.stream_position()?;
    if file.metadata()?.len() > end {
        file.set_len(end)?;
    }
    Ok(())
}

/// Creates the folders and writes the file.
fn write_file(path: &Path, shown: String, workspace: &Workspace, content: &str) -> ToolOutput {
    let existed = match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return ToolOutput::error(format!("{shown} is a directory; cannot write a file there"));
        }
        // Opening a named pipe blocks until someone reads it: the call would hang.
        Ok(meta) if !meta.is_file() => {
            return ToolOutput::error(format!(
                "{shown} is not a regular file (a pipe, socket or device); Write only writes files"
            ));
        }
        Ok(_) => true,
        Err(_) => false,
    };
    if let Some(parent) = path.parent()
        && let Err(err) = std::fs::create_dir_all(parent)
    {
        return ToolOutput::error(format!(
            "Cannot create the folder {}: {err}",
            workspace.display(parent)
        ));
    }
    if let Err(err) = overwrite(path, content.as_bytes()) {
        return ToolOutput::error(format!("Cannot write {shown}: {err}"));
    }
    let bytes = content.len();
    let verb = if existed { "Updated" } else { "Created" };
    ToolOutput::ok(format!("{verb} {shown} ({bytes} bytes)")).with_effects(Effects {
        files_written: vec![shown],
        bytes: u64::try_from(bytes).ok(),
        ..Effects::default()
    })
}

#[cfg(test)]
mod tests {
    use super::overwrite;

    #[test]
    fn overwriting_leaves_exactly_the_new_content_whether_shorter_or_longer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        overwrite(&path, b"a long first version\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a long first version\n");
        overwrite(&path, b"short\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"short\n");
        overwrite(&path, b"longer than short, again\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"longer than short, again\n");
        overwrite(&path, b"").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"");
    }
}
