//! A command's output kept with bounded memory: a runaway command must not
//! flood the model's context or the agent's memory, so the first and last
//! bytes are kept and what lies between is only counted. `Bash` fills one
//! from the command's pipes.

use std::collections::VecDeque;

/// Characters of output kept: half from the start, half from the end.
const MAX_OUTPUT_CHARS: usize = 30_000;
const KEEP_CHARS: usize = MAX_OUTPUT_CHARS / 2;
/// Bytes kept at each end: enough for `KEEP_CHARS` characters of any width.
const KEEP_BYTES: usize = KEEP_CHARS * 4;

/// The merged output, with bounded memory: the first and last `KEEP_BYTES`
/// bytes are kept and the characters in between only counted.
#[derive(Default)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// Characters dropped between head and tail.
    dropped_chars: usize,
    dropped_any: bool,
    /// Every byte the command printed.
    pub(crate) total: u64,
}

/// Characters in UTF-8 bytes (bytes that do not continue a character).
fn count_chars(bytes: impl IntoIterator<Item = u8>) -> usize {
    bytes.into_iter().filter(|b| b & 0xC0 != 0x80).count()
}

impl Capture {
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.total += u64::try_from(chunk.len()).unwrap_or(u64::MAX);
        let room = KEEP_BYTES.saturating_sub(self.head.len()).min(chunk.len());
        self.head.extend_from_slice(&chunk[..room]);
        let rest = &chunk[room..];
        if rest.is_empty() {
            return;
        }
        if rest.len() >= KEEP_BYTES {
            self.dropped_chars += count_chars(self.tail.drain(..));
            let (drop, keep) = rest.split_at(rest.len() - KEEP_BYTES);
            self.dropped_chars += count_chars(drop.iter().copied());
            self.tail.extend(keep);
            self.dropped_any = true;
        } else {
            self.tail.extend(rest);
            let excess = self.tail.len().saturating_sub(KEEP_BYTES);
            if excess > 0 {
                self.dropped_chars += count_chars(self.tail.drain(..excess));
                self.dropped_any = true;
            }
        }
    }

    /// The text, at most `MAX_OUTPUT_CHARS` characters plus a line saying how
    /// many were cut from the middle.
    pub(crate) fn render(self) -> String {
        let (head, tail, mut cut) = if self.dropped_any {
            let head = String::from_utf8_lossy(&self.head).into_owned();
            // The tail may start inside a character whose start was dropped.
            let bytes: Vec<u8> = self
                .tail
                .into_iter()
                .skip_while(|b| b & 0xC0 == 0x80)
                .collect();
            let tail = String::from_utf8_lossy(&bytes).into_owned();
            (head, tail, self.dropped_chars)
        } else {
            let mut all = self.head;
            all.extend(self.tail);
            let text = String::from_utf8_lossy(&all).into_owned();
            if text.chars().count() <= MAX_OUTPUT_CHARS {
                return text;
            }
            (text.clone(), text, 0)
        };
        let head_chars = head.chars().count();
        let tail_chars = tail.chars().count();
        let head_keep = head_chars.min(KEEP_CHARS);
        let tail_keep = tail_chars.min(KEEP_CHARS);
        if self.dropped_any {
            cut += (head_chars - head_keep) + (tail_chars - tail_keep);
        } else {
            // One text, counted once.
            cut = head_chars - head_keep - tail_keep;
        }
        let head_end = head
            .char_indices()
            .nth(head_keep)
            .map_or(head.len(), |(i, _)| i);
        let tail_start = tail
            .char_indices()
            .nth(tail_chars - tail_keep)
            .map_or(tail.len(), |(i, _)| i);
        format!(
            "{}\n\n... [{cut} chars cut from the middle of the output] ...\n\n{}",
            &head[..head_end],
            &tail[tail_start..]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_everything_when_small() {
        let mut capture = Capture::default();
        capture.push(b"hello ");
        capture.push(b"world");
        assert_eq!(capture.render(), "hello world");
    }

    #[test]
    fn capture_cuts_the_middle_of_a_medium_output() {
        let text: String = (0..40_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let mut capture = Capture::default();
        capture.push(text.as_bytes());
        let out = capture.render();
        assert!(out.starts_with(&text[..KEEP_CHARS]));
        assert!(out.ends_with(&text[text.len() - KEEP_CHARS..]));
        assert!(
            out.contains("[10000 chars cut from the middle"),
            "{}",
            &out[KEEP_CHARS..KEEP_CHARS + 80]
        );
    }

    #[test]
    fn capture_keeps_a_bounded_number_of_bytes_whatever_the_output() {
        // 16 MiB of `yes` in pipe-sized chunks: what is kept never grows past
        // head + tail, so a 10 GB flood costs alcove the same memory.
        let chunk = b"y\n".repeat(4096);
        let mut capture = Capture::default();
        let mut most = 0;
        for _ in 0..(16 << 20) / chunk.len() {
            capture.push(&chunk);
            most = most.max(capture.head.len() + capture.tail.len());
        }
        assert!(most <= 2 * KEEP_BYTES, "{most} bytes kept");
        assert_eq!(capture.dropped_chars, (16 << 20) - 2 * KEEP_BYTES);
    }

    #[test]
    fn capture_counts_dropped_multibyte_chars() {
        let text = "é".repeat(200_000);
        let mut capture = Capture::default();
        for chunk in text.as_bytes().chunks(8191) {
            capture.push(chunk);
        }
        let out = capture.render();
        assert!(
            out.contains("[170000 chars cut from the middle"),
            "cut line missing"
        );
        assert!(out.starts_with(&"é".repeat(KEEP_CHARS)));
        assert!(out.ends_with(&"é".repeat(KEEP_CHARS)));
        assert!(!out.contains('\u{FFFD}'));
    }
}
