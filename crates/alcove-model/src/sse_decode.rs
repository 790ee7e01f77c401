//! Server-Sent Events decoded from a byte stream: the event-stream format of
//! the WHATWG HTML standard, the part models use (`event`, `data`, comments,
//! blank-line dispatch; `id` and `retry` are read and ignored).
//!
//! It replaces the eventsource-stream crate on the hot path: that crate's
//! parser built each field through nom and spent about 4,500 instructions
//! per event, 13 % of a 64-child fan-out (bench/notes.md), and 0.2.3 panics
//! on a byte-order mark (worked around in `sse.rs`; the fix is unreleased).
//! Here a line is found with one scan, checked as UTF-8 once, and copied
//! once into the event it belongs to.

use std::collections::VecDeque;
use std::str::Utf8Error;

use futures::{Stream, StreamExt};

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// Its type: the last `event:` field, `message` without one.
    pub(crate) event: String,
    /// Its `data:` lines joined by newlines.
    pub(crate) data: String,
}

/// Why a stream of events ended early.
#[derive(Debug)]
pub(crate) enum DecodeError<E> {
    /// The byte stream failed.
    Transport(E),
    /// A line was not UTF-8.
    Utf8(Utf8Error),
}

/// The decoder's state between chunks.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// Bytes of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// The last line ended with `\r`: a `\n` first in the next chunk
    /// belongs to it.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl Decoder {
    /// Takes the next bytes; every event they complete goes to `ready`.
    pub(crate) fn feed(
        &mut self,
        mut bytes: &[u8],
        ready: &mut VecDeque<Event>,
    ) -> Result<(), Utf8Error> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) {
            let (line, terminator) = (&bytes[..end], bytes[end]);
            bytes = &bytes[end + 1..];
            if terminator == b'\r' {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if self.partial.is_empty() {
                self.line(line, ready)?;
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                let result = self.line(&whole, ready);
                whole.clear();
                self.partial = whole;
                result?;
            }
        }
        self.partial.extend_from_slice(bytes);
        Ok(())
    }

    fn line(&mut self, line: &[u8], ready: &mut VecDeque<Event>) -> Result<(), Utf8Error> {
        if line.is_empty() {
            self.dispatch(ready);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let line = std::str::from_utf8(line)?;
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
        Ok(())
    }

    /// A blank line: the event so far goes out, if it has data.
    fn dispatch(&mut self, ready: &mut VecDeque<Event>) {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        ready.push_back(Event {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data: std::mem::take(&mut self.data),
        });
    }
}

/// The events of `bytes`, in order. An event the stream ends in the middle
/// of (before its blank line) is not dispatched, as the standard says.
pub(crate) fn events<S, B, E>(bytes: S) -> impl Stream<Item = Result<Event, DecodeError<E>>>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    let state = (Box::pin(bytes), Decoder::default(), VecDeque::new(), false);
    futures::stream::unfold(
        state,
        |(mut bytes, mut decoder, mut ready, mut ended)| async move {
            loop {
                if let Some(event) = ready.pop_front() {
                    return Some((Ok(event), (bytes, decoder, ready, ended)));
                }
                if ended {
                    return None;
                }
                let failure = match bytes.next().await {
                    Some(Ok(chunk)) => match decoder.feed(chunk.as_ref(), &mut ready) {
                        Ok(()) => continue,
                        Err(err) => DecodeError::Utf8(err),
                    },
                    Some(Err(err)) => DecodeError::Transport(err),
                    None => {
                        ended = true;
                        continue;
                    }
                };
                return Some((Err(failure), (bytes, decoder, ready, true)));
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut decoder = Decoder::default();
        let mut ready = VecDeque::new();
        for chunk in chunks {
            decoder.feed(chunk, &mut ready).unwrap();
        }
        ready.into_iter().map(|e| (e.event, e.data)).collect()
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
        let text = "event: a\r\ndata: é1\r\rdata: 2\n\nevent: b\rdata:\r\n\r\n";
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
    }

    #[test]
    fn a_line_that_is_not_utf8_is_an_error() {
        let mut decoder = Decoder::default();
        let mut ready = VecDeque::new();
        assert!(decoder.feed(b"data: \xff\n\n", &mut ready).is_err());
    }
}
