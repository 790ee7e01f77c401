//! Server-Sent Events decoded from a byte stream: the event-stream format of
//! the WHATWG HTML standard, the part models use (`event`, `data`, comments,
//! blank-line dispatch; `id` and `retry` are read and ignored).
//!
//! It replaces the eventsource-stream crate on the hot path: that crate's
//! parser built each field through nom and spent about 4,500 instructions
//! per event, 13 % of a 64-child fan-out (bench/notes.md), and 0.2.3 panics
//! on a byte-order mark. A real model sends an event per token or two, so
//! the cost of an event is the cost of streaming: here bytes are appended
//! to one buffer, a line end is found with `memchr`, each line is checked
//! as UTF-8 once, and an event is lent out of buffers the decoder reuses,
//! so decoding allocates nothing once the buffers have grown.

use std::str::Utf8Error;

/// One dispatched event, borrowed from the decoder until its next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Event<'a> {
    /// Its type: the last `event:` field, `message` without one.
    pub(crate) event: &'a str,
    /// Its `data:` lines joined by newlines.
    pub(crate) data: &'a str,
}

/// The UTF-8 byte-order mark. The standard allows one at the start; every
/// leading mark is dropped, even split across chunks (eventsource-stream
/// 0.2.3 panicked on one: found by fuzzing).
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The decoder: bytes go in with [`Decoder::push`], events come out of
/// [`Decoder::next`].
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// Bytes received and not parsed yet, from `start` on.
    buffer: Vec<u8>,
    start: usize,
    /// The leading byte-order marks are behind us.
    started: bool,
    /// The last line ended with `\r`: a `\n` next belongs to it.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
    /// The event lent by the last `next` is still in `event` and `data`.
    lent: bool,
}

impl Decoder {
    /// Takes the next bytes of the stream.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        self.buffer.extend_from_slice(bytes);
    }

    /// The next event the bytes so far complete; `None` until more bytes
    /// come. An event the stream ends in the middle of (before its blank
    /// line) is never dispatched, as the standard says.
    pub(crate) fn next(&mut self) -> Result<Option<Event<'_>>, Utf8Error> {
        if std::mem::take(&mut self.lent) {
            self.event.clear();
            self.data.clear();
        }
        if !self.started {
            while self.buffer[self.start..].starts_with(BOM) {
                self.start += BOM.len();
            }
            // Empty, or perhaps the first bytes of a mark: wait for more.
            if BOM.starts_with(&self.buffer[self.start..]) {
                return Ok(None);
            }
            self.started = true;
        }
        loop {
            let rest = &self.buffer[self.start..];
            if self.after_cr {
                let Some(&first) = rest.first() else {
                    return Ok(None);
                };
                self.after_cr = false;
                if first == b'\n' {
                    self.start += 1;
                    continue;
                }
            }
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                return Ok(None);
            };
            let line = self.start..self.start + end;
            self.start += end + 1;
            if rest[end] == b'\r' {
                match self.buffer.get(self.start) {
                    Some(b'\n') => self.start += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let line = &self.buffer[line];
            if line.is_empty() {
                if !std::mem::take(&mut self.has_data) {
                    self.event.clear();
                    continue;
                }
                self.lent = true;
                let event = match self.event.as_str() {
                    "" => "message",
                    event => event,
                };
                return Ok(Some(Event {
                    event,
                    data: &self.data,
                }));
            }
            if line[0] == b':' {
                continue;
            }
            let line = std::str::from_utf8(line)?;
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            match field {
                "event" => {
                    self.event.clear();
                    self.event.push_str(value);
                }
                "data" => {
                    if self.has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                    self.has_data = true;
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.push(chunk);
            while let Some(event) = decoder.next().unwrap() {
                out.push((event.event.to_owned(), event.data.to_owned()));
            }
        }
        out
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(e, d)| (e.to_string(), d.to_string()))
            .collect()
    }

    #[test]
    fn fields_comments_and_blank_lines() {
        let text =
            b": ping\nevent: a\ndata: one\ndata:two\n\ndata: x\nid: 7\nretry: 10\nbogus\n\n\n";
        assert_eq!(
            decode(&[text]),
            pairs(&[("a", "one\ntwo"), ("message", "x")])
        );
    }

    #[test]
    fn every_line_ending_and_every_split_point_give_the_same_events() {
        let text = "\u{feff}\u{feff}event: a\r\ndata: é1\r\rdata: 2\n\nevent: b\rdata:\r\n\r\n";
        let want = pairs(&[("a", "é1"), ("message", "2"), ("b", "")]);
        let bytes = text.as_bytes();
        for split in 0..=bytes.len() {
            for second in split..=bytes.len() {
                let (a, rest) = bytes.split_at(split);
                let (b, c) = rest.split_at(second - split);
                assert_eq!(decode(&[a, b, c]), want, "split at {split} and {second}");
            }
        }
    }

    #[test]
    fn an_event_without_its_blank_line_or_data_is_not_dispatched() {
        assert_eq!(decode(&[b"event: lone\n\ndata: cut"]), Vec::new());
        // A type without data does not carry over to the next event.
        assert_eq!(
            decode(&[b"event: lone\n\ndata: x\n\n"]),
            pairs(&[("message", "x")])
        );
    }

    #[test]
    fn a_line_that_is_not_utf8_is_an_error() {
        let mut decoder = Decoder::default();
        decoder.push(b"data: \xff\n\n");
        assert!(decoder.next().is_err());
    }

    #[test]
    fn a_body_of_marks_and_nothing_else_gives_no_event() {
        assert_eq!(decode(&[b"\xEF\xBB", b"\xBF\xEF"]), Vec::new());
    }
}
