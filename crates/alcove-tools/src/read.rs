//! The `Read` tool: shows a text file to the model as `cat -n` numbered lines.
//!
//! Models cite and edit code by line, so every line carries its number; big
//! files are read in windows (`offset`/`limit`) and the output says what was
//! left out, so the model knows to ask for more instead of guessing. A window
//! also ends where the context has no more room (`ToolContext::result_room`):
//! a file larger than a small model's window is shown from its head and
//! its last lines, with the `Read` call that shows the lines between,
//! instead of sent whole and lost (`numbered.rs`).
//! A PNG, JPEG, GIF or WebP (told by its bytes) is returned as an image,
//! made to fit the model APIs' limits (`image.rs`), with its format, size
//! and dimensions in the text.

use std::io::{BufReader, Read as _};
use std::path::Path;
use std::sync::Arc;

use alcove_protocol::ToolSpec;
use schemars::JsonSchema;
use serde::Deserialize;

mod numbered;

pub(crate) use numbered::cut_line;
use numbered::numbered;

use crate::{
    Access, Effects, FileCall, FileSource, Invocation, ToolContext, ToolOutput, TypedTool,
    Workspace,
};

const NAME: &str = "Read";
const DESCRIPTION: &str = "Reads a text file; returns its lines numbered like `cat -n`. Up to \
2000 lines from the start; for large files pass offset and limit. Images (PNG, JPEG, GIF, WebP) \
are shown to you. To list a folder use Glob.";

/// Lines shown when `limit` is not given.
const DEFAULT_LIMIT: usize = 2000;
/// Characters of one line shown before it is cut.
const MAX_LINE_CHARS: usize = 2000;
/// How many leading bytes are checked for a NUL to call a file binary.
const BINARY_SNIFF_BYTES: u64 = 8 * 1024;
/// Characters of output after which the window is ended early, so one call
/// cannot flood the context (2000 lines of 2000 characters would be 4 MB).
const MAX_OUTPUT_CHARS: usize = 100_000;

/// Arguments of `Read`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadInput {
    /// Absolute or workspace-relative path.
    file_path: String,
    /// First line to read, 1-based.
    offset: Option<u64>,
    /// How many lines (default 2000).
    limit: Option<u64>,
}

/// The `Read` tool.
pub struct Read {
    spec: ToolSpec,
    /// Where a text file's contents come from before the disk.
    source: Option<Arc<dyn FileSource>>,
}

impl Default for Read {
    fn default() -> Self {
        Read {
            spec: crate::tool_spec!(ReadInput, NAME, DESCRIPTION),
            source: None,
        }
    }
}

impl Read {
    /// A `Read` that shows a text file as `source` holds it (an editor's
    /// unsaved buffer), and as the disk holds it when `source` has none.
    /// Which file, whether the call may read it (the gate) and whether it
    /// is text (its bytes on disk) are decided as for any Read, first.
    pub fn reading_from(source: Arc<dyn FileSource>) -> Read {
        Read {
            source: Some(source),
            ..Read::default()
        }
    }
}

#[async_trait::async_trait]
impl TypedTool for Read {
    type Input = ReadInput;
    type Call = FileCall<ReadInput>;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::ReadOnly
    }

    fn inspect(
        &self,
        input: ReadInput,
        workspace: &Workspace,
    ) -> Result<(Invocation, FileCall<ReadInput>), String> {
        let file_path = input.file_path.clone();
        Ok(FileCall::resolve(workspace, &file_path, input))
    }

    async fn call(&self, call: FileCall<ReadInput>, context: &ToolContext) -> ToolOutput {
        let FileCall { input, path } = call;
        let shown = context.workspace.display(&path);
        let effects = Effects {
            files_read: vec![shown.clone()],
            ..Effects::default()
        };
        let offset = clamp_usize(input.offset).max(1);
        let limit_given = clamp_usize(input.limit) > 0;
        let limit = match clamp_usize(input.limit) {
            0 => DEFAULT_LIMIT,
            limit => limit,
        };
        // A small file is read where the call runs: handing a read of a few
        // kilobytes to the blocking pool and back cost two thread switches,
        // more than the read itself (most of a short child's tool time).
        let meta = std::fs::metadata(&path);
        if meta
            .as_ref()
            .is_err_and(|err| err.kind() == std::io::ErrorKind::NotFound)
        {
            return ToolOutput::error(crate::nearest::missing_file(context, &path).await);
        }
        let small = meta
            .as_ref()
            .is_ok_and(|meta| meta.is_file() && meta.len() <= INLINE_READ_BYTES);
        // A source (the editor) is asked only about a regular file.
        let buffer = match &self.source {
            Some(source) if meta.as_ref().is_ok_and(std::fs::Metadata::is_file) => {
                source.text(&path).await
            }
            _ => None,
        };
        // The notes of a cut window (the path in a call to make) take a
        // little of the room.
        let max_output =
            MAX_OUTPUT_CHARS.min(context.result_room.saturating_sub(NOTE_ROOM + shown.len()));
        let window = Window {
            offset,
            limit,
            limit_given,
            max_output,
        };
        let read = if small {
            Ok(read_window(&path, meta, &shown, window, buffer))
        } else {
            tokio::task::spawn_blocking(move || read_window(&path, meta, &shown, window, buffer))
                .await
        };
        match read {
            Ok(Ok(Shown::Text(text))) => {
                let bytes = u64::try_from(text.len()).ok();
                ToolOutput::ok(text).with_effects(Effects { bytes, ..effects })
            }
            Ok(Ok(Shown::Image(text, image))) => {
                let bytes = u64::try_from(image.data.len()).ok();
                ToolOutput::ok(text)
                    .with_images(vec![image])
                    .with_effects(Effects { bytes, ..effects })
            }
            Ok(Err(reason)) => ToolOutput::error(reason),
            Err(err) => ToolOutput::error(format!("Read failed: {err}")),
        }
    }
}

/// Files up to this size are read (and edited, and written) on the
/// calling thread, without the blocking pool.
pub(crate) const INLINE_READ_BYTES: u64 = 64 * 1024;

/// Bytes kept free of lines for the notes of a cut window, besides the
/// file's path.
const NOTE_ROOM: usize = 400;

/// Which lines to show, and how many bytes they may take.
#[derive(Debug, Clone, Copy)]
struct Window {
    /// The first line, 1-based.
    offset: usize,
    /// How many lines at most.
    limit: usize,
    /// Whether the call gave `limit`: without it, a window cut to fit
    /// ends with the file's last lines rather than the window's.
    limit_given: bool,
    /// Bytes of output at most: the cap, or the context's room.
    max_output: usize,
}

fn clamp_usize(value: Option<u64>) -> usize {
    value.map_or(0, |v| usize::try_from(v).unwrap_or(usize::MAX))
}

/// What a read shows: numbered lines, or an image and a line about it.
enum Shown {
    Text(String),
    Image(String, crate::image::Image),
}

/// The image `head` begins, read whole from `file`; `None` when `head` is
/// not one.
fn read_image(
    head: &[u8],
    file: &mut std::fs::File,
    size: u64,
    shown: &str,
) -> Option<Result<Shown, String>> {
    crate::image::sniff(head)?;
    if size > crate::image::MAX_FILE_BYTES {
        return Some(Err(format!(
            "{shown} is an image of {}, more than Read takes ({})",
            crate::image::size(usize::try_from(size).unwrap_or(usize::MAX)),
            crate::image::size(crate::image::MAX_FILE_BYTES as usize)
        )));
    }
    let mut bytes = head.to_vec();
    if let Err(err) = file.read_to_end(&mut bytes) {
        return Some(Err(io_reason(shown, &err)));
    }
    Some(match crate::image::prepare(&bytes) {
        Ok(prepared) => Ok(Shown::Image(
            format!("Image {shown}: {}.", prepared.description),
            prepared.image,
        )),
        Err(reason) => Err(format!("{shown}: {reason}")),
    })
}

/// Reads lines `offset..offset+limit` (1-based) of the file, numbered, in
/// at most `max_output` bytes, or the image it is. `meta` is the file's
/// metadata, already read by the caller; `buffer`, the file's text as an
/// editor holds it, is shown instead of the disk's when the file is text.
fn read_window(
    path: &Path,
    meta: std::io::Result<std::fs::Metadata>,
    shown: &str,
    window: Window,
    buffer: Option<String>,
) -> Result<Shown, String> {
    let meta = meta.map_err(|err| io_reason(shown, &err))?;
    if meta.is_dir() {
        return Err(format!(
            "{shown} is a directory, not a file; use Glob or Bash `ls` to list it"
        ));
    }
    // Opening a named pipe blocks until someone writes to it: the call would hang.
    if !meta.is_file() {
        return Err(format!(
            "{shown} is not a regular file (a pipe, socket or device); Read only shows files"
        ));
    }
    let mut file = std::fs::File::open(path).map_err(|err| io_reason(shown, &err))?;
    // Sized from the metadata: from empty, `read_to_end` starts at 32
    // bytes and doubles, ten system calls for the first 8 KiB.
    let size = usize::try_from(meta.len()).unwrap_or(MAX_OUTPUT_CHARS);
    let mut head = Vec::with_capacity(size.min(BINARY_SNIFF_BYTES as usize));
    (&mut file)
        .take(BINARY_SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(|err| io_reason(shown, &err))?;
    if let Some(image) = read_image(&head, &mut file, meta.len(), shown) {
        return image;
    }
    if head.contains(&0) {
        return Err(format!(
            "{shown} looks like a binary file (it has a NUL byte in its first 8 KiB); Read only shows text files"
        ));
    }
    let empty = buffer.as_ref().map_or(head.is_empty(), String::is_empty);
    if empty {
        return Ok(Shown::Text(format!(
            "{shown} exists but is empty (0 lines)."
        )));
    }
    if let Some(buffer) = buffer {
        let differs = differs_from_disk(&buffer, head, &mut file, meta.len());
        let mut text = numbered(
            std::io::Cursor::new(buffer.as_bytes()),
            buffer.len(),
            shown,
            window,
        )?;
        if differs {
            text.push_str(&format!(
                "\n\n(this is the editor's unsaved buffer of {shown}; the file on disk differs, and Edit and Write act on the disk)"
            ));
        }
        return Ok(Shown::Text(text));
    }
    numbered(
        BufReader::new(std::io::Cursor::new(head).chain(file)),
        size,
        shown,
        window,
    )
    .map(Shown::Text)
}

/// Files up to this size are compared with the editor's buffer of them.
const COMPARED_BYTES: u64 = 4 * 1024 * 1024;

/// Whether the file on disk (its `head` read, the rest in `file`) holds
/// other text than the editor's `buffer`; a file too big to compare is
/// taken as the same.
fn differs_from_disk(buffer: &str, head: Vec<u8>, file: &mut std::fs::File, len: u64) -> bool {
    if len > COMPARED_BYTES {
        return false;
    }
    if len != buffer.len() as u64 {
        return true;
    }
    let mut disk = head;
    if file.read_to_end(&mut disk).is_err() {
        return false;
    }
    disk != buffer.as_bytes()
}

/// Turns an I/O error into a reason the model can act on.
fn io_reason(shown: &str, err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => format!("File does not exist: {shown}"),
        std::io::ErrorKind::PermissionDenied => format!("Permission denied reading {shown}"),
        _ => format!("Cannot read {shown}: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_is_not_utf8_is_shown_with_replacement_characters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mixed.txt");
        std::fs::write(&path, b"plain\nbad \xff byte\n\xc3\xa9t\xc3\xa9\n").unwrap();
        let Ok(Shown::Text(shown)) = read_window(
            &path,
            std::fs::metadata(&path),
            "mixed.txt",
            Window {
                offset: 1,
                limit: 10,
                limit_given: true,
                max_output: MAX_OUTPUT_CHARS,
            },
            None,
        ) else {
            panic!("not read as text");
        };
        assert_eq!(
            shown,
            "     1\tplain\n     2\tbad \u{FFFD} byte\n     3\t\u{e9}t\u{e9}"
        );
    }
}
