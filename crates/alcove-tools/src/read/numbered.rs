//! `Read`'s lines, numbered like `cat -n`, in the window asked for and
//! the room the result has.
//!
//! Kept apart from the tool (which decides what file, and text or image)
//! because this is the part that decides what a model sees of a file too
//! big for its room: the head by whole lines, and, when what is left of
//! the context window is what cut it, the window's last lines as well,
//! with the exact `Read` call that shows the lines between.

use std::borrow::Cow;
use std::io::BufRead;

use super::{MAX_LINE_CHARS, MAX_OUTPUT_CHARS, Window, io_reason};

/// The lines of `reader` (text of about `size` bytes) in `window`, numbered.
pub(super) fn numbered(
    mut reader: impl BufRead,
    size: usize,
    shown: &str,
    window: Window,
) -> Result<String, String> {
    let Window {
        offset,
        limit,
        limit_given,
        max_output,
    } = window;
    let io = |err: std::io::Error| io_reason(shown, &err);

    let skipped = skip_lines(&mut reader, offset - 1).map_err(io)?;
    // A window cut by what is left of the context (not by the result cap)
    // keeps its last lines in a quarter of the room: the end of a file is
    // often what was asked for (a small model asked for the last function
    // of a file named the last one it was shown, issue 45).
    let by_context = max_output < MAX_OUTPUT_CHARS;
    let head_room = if by_context {
        max_output - max_output / 4
    } else {
        max_output
    };
    // Room for the whole file (up to the cap) and a column of numbers.
    let kept = size.min(max_output);
    let mut out = String::with_capacity(kept + kept / 8);
    let mut read = skipped;
    let mut last_shown = 0;
    let mut line = Vec::new();
    // One line as shown, reused: most lines go straight into `out`.
    let mut entry = String::new();
    // The first line read but not shown for want of room.
    let mut first_left_out = None;
    while read - skipped < limit {
        if !next_entry(&mut reader, &mut line, read + 1, &mut entry).map_err(io)? {
            break;
        }
        read += 1;
        if last_shown > 0 && out.len() + entry.len() > head_room {
            first_left_out = Some(std::mem::take(&mut entry));
            break;
        }
        out.push_str(&entry);
        last_shown = read;
    }
    let mut fitted = false;
    let cut_for_room = first_left_out.is_some();
    let mut tail = Tail::new(max_output - head_room);
    if let Some(first) = first_left_out.take_if(|_| by_context) {
        tail.push(first);
        // Without a `limit` the model asked for the file: its last lines.
        let tail_limit = if limit_given { limit } else { usize::MAX };
        while read - skipped < tail_limit {
            if !next_entry(&mut reader, &mut line, read + 1, &mut entry).map_err(io)? {
                break;
            }
            read += 1;
            // A line pushed out at the front lends its buffer to the next.
            entry = tail.push(std::mem::take(&mut entry)).unwrap_or_default();
        }
        // Everything after the head fitted after all: no gap.
        if tail.dropped == 0 {
            out.push_str(&tail.text());
            last_shown = read;
            tail = Tail::new(0);
            fitted = true;
        }
    }
    let out_of_room = cut_for_room && !fitted;
    let total = read + count_remaining_lines(&mut reader).map_err(io)?;
    if last_shown == 0 {
        return Err(format!(
            "{shown} has only {total} lines; offset {offset} is past the end"
        ));
    }
    if out.ends_with('\n') {
        out.pop();
    }
    let next = last_shown + 1;
    let shown_lines = last_shown + 1 - offset;
    if !tail.is_empty() {
        let tail_first = read + 1 - tail.lines.len();
        let gap_last = tail_first - 1;
        let path = serde_json::Value::from(shown);
        let call = format!(r#"{{"file_path": {path}, "offset": {next}, "limit": {shown_lines}}}"#);
        out.push_str(&format!(
            "\n\n(lines {next}-{gap_last} of {total} are not shown: they do not fit in what is left of the context window. To see them call Read {call}, or Grep for what you need. The last lines of the window follow.)\n\n"
        ));
        out.push_str(tail.text().trim_end_matches('\n'));
        if read < total {
            out.push_str(&format!(
                "\n\n(showing lines {offset}-{last_shown} and {tail_first}-{read} of {total}; read on with offset={})",
                read + 1
            ));
        }
    } else if last_shown < total {
        if out_of_room {
            let why = if by_context {
                "the rest does not fit in what is left of the context window"
            } else {
                "the rest does not fit in one result"
            };
            out.push_str(&format!(
                "\n\n(showing lines {offset}-{last_shown} of {total}: {why}. Read on with offset={next} and limit={shown_lines}, or Grep for what you need.)"
            ));
        } else {
            out.push_str(&format!(
                "\n\n(showing lines {offset}-{last_shown} of {total}; read on with offset={next})"
            ));
        }
    }
    Ok(out)
}

/// Puts the next line of `reader` in `entry` as it is shown,
/// `{line_no:>6}\t{text}\n`; `false` at the end.
fn next_entry(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    line_no: usize,
    entry: &mut String,
) -> std::io::Result<bool> {
    let Some(len) = read_line_capped(reader, line, MAX_LINE_CHARS * 4)? else {
        return Ok(false);
    };
    // Checked as a whole first: most lines are valid, and this check
    // runs a word at a time where the lossy one goes byte by byte.
    let text = match std::str::from_utf8(line) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(line),
    };
    let text = cut_line(text.trim_end_matches(['\n', '\r']), MAX_LINE_CHARS, len);
    entry.clear();
    entry.reserve(decimal_digits(line_no).max(6) + 2 + text.len());
    push_line_number(entry, line_no);
    entry.push_str(&text);
    entry.push('\n');
    Ok(true)
}

/// The last lines read, in at most `room` bytes.
struct Tail {
    room: usize,
    bytes: usize,
    lines: std::collections::VecDeque<String>,
    /// How many lines were pushed out at the front.
    dropped: usize,
}

impl Tail {
    fn new(room: usize) -> Tail {
        Tail {
            room,
            bytes: 0,
            lines: std::collections::VecDeque::new(),
            dropped: 0,
        }
    }

    /// Keeps `entry`; returns a line pushed out at the front, if one was
    /// (its buffer is reused for the next line).
    fn push(&mut self, entry: String) -> Option<String> {
        self.bytes += entry.len();
        self.lines.push_back(entry);
        let mut freed = None;
        while self.bytes > self.room {
            let Some(front) = self.lines.pop_front() else {
                break;
            };
            self.bytes -= front.len();
            self.dropped += 1;
            freed = Some(front);
        }
        freed
    }

    fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    fn text(&self) -> String {
        self.lines.iter().map(String::as_str).collect()
    }
}

/// Cuts `text` to `max_chars` characters, with a visible marker saying how
/// long the line really was (`total_bytes` counts the bytes of the whole line,
/// which may be more than `text` holds).
pub(crate) fn cut_line(text: &str, max_chars: usize, total_bytes: usize) -> Cow<'_, str> {
    // No more bytes than `max_chars` cannot be more characters: most lines.
    let cut_at = if text.len() <= max_chars {
        None
    } else {
        text.char_indices().nth(max_chars)
    };
    Cow::Owned(match cut_at {
        None if total_bytes <= text.len() + 2 => return Cow::Borrowed(text),
        None => format!("{text}… [line cut: {total_bytes} bytes long]"),
        Some((end, _)) => format!(
            "{}… [line cut at {max_chars} chars: {total_bytes} bytes long]",
            &text[..end]
        ),
    })
}

/// How many digits `n` has in decimal.
fn decimal_digits(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Appends `{line_no:>6}\t` without the formatting machinery, which was
/// a fifth of a Read's instructions on a file of short lines.
fn push_line_number(out: &mut String, line_no: usize) {
    let mut digits = [b'0'; 20];
    let mut start = digits.len();
    let mut rest = line_no;
    loop {
        start -= 1;
        // The remainder is a single digit.
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let written = &digits[start..];
    for _ in written.len()..6 {
        out.push(' ');
    }
    out.push_str(std::str::from_utf8(written).unwrap_or_default());
    out.push('\t');
}

/// Reads one line (with its terminator) into `buf`, keeping at most `cap`
/// bytes of it but consuming all of it. Returns the line's full length, or
/// `None` at end of file.
fn read_line_capped(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Option<usize>> {
    buf.clear();
    let mut total = 0;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok((total > 0).then_some(total));
        }
        let (used, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = cap.saturating_sub(buf.len()).min(used);
        buf.extend_from_slice(&chunk[..room]);
        total += used;
        reader.consume(used);
        if done {
            return Ok(Some(total));
        }
    }
}

/// Consumes up to `n` lines; returns how many there were.
fn skip_lines(reader: &mut impl BufRead, n: usize) -> std::io::Result<usize> {
    let mut skipped = 0;
    let mut scratch = Vec::new();
    while skipped < n && read_line_capped(reader, &mut scratch, 0)?.is_some() {
        skipped += 1;
    }
    Ok(skipped)
}

/// Counts the lines left in the reader (a last line without newline counts).
fn count_remaining_lines(reader: &mut impl BufRead) -> std::io::Result<usize> {
    skip_lines(reader, usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_numbers_are_right_aligned_in_six_columns_then_a_tab() {
        for n in [
            0,
            1,
            9,
            10,
            99_999,
            100_000,
            999_999,
            1_000_000,
            12_345_678,
            usize::MAX,
        ] {
            let mut out = String::from("x");
            push_line_number(&mut out, n);
            assert_eq!(out, format!("x{n:>6}\t"), "{n}");
        }
    }

    #[test]
    fn decimal_digits_measure_the_line_number_column() {
        for n in [0, 7, 10, 99, 100, 999_999, 1_000_000, usize::MAX] {
            assert_eq!(decimal_digits(n), n.to_string().len(), "{n}");
        }
    }

    #[test]
    fn cut_line_marks_long_lines() {
        assert_eq!(cut_line("short", 10, 6), "short");
        assert_eq!(
            cut_line("abcdef", 3, 6),
            "abc… [line cut at 3 chars: 6 bytes long]"
        );
        // The text was already capped while reading: still marked.
        assert_eq!(cut_line("ab", 10, 5000), "ab… [line cut: 5000 bytes long]");
        assert_eq!(
            cut_line("ééé", 2, 6),
            "éé… [line cut at 2 chars: 6 bytes long]"
        );
    }

    #[test]
    fn capped_line_reader_counts_whole_lines() {
        let mut reader = std::io::Cursor::new(b"hello world\nlast".to_vec());
        let mut buf = Vec::new();
        assert_eq!(
            read_line_capped(&mut reader, &mut buf, 5).unwrap(),
            Some(12)
        );
        assert_eq!(buf, b"hello");
        assert_eq!(
            read_line_capped(&mut reader, &mut buf, 100).unwrap(),
            Some(4)
        );
        assert_eq!(buf, b"last");
        assert_eq!(read_line_capped(&mut reader, &mut buf, 100).unwrap(), None);
        let mut reader = std::io::Cursor::new(b"a\nb\nc".to_vec());
        assert_eq!(skip_lines(&mut reader, 1).unwrap(), 1);
        assert_eq!(count_remaining_lines(&mut reader).unwrap(), 2);
    }
}
