//! The one redaction every sink goes through.
//!
//! A session holds secrets it must never write anywhere: the provider keys
//! and the values of the variables the environment policy treats as
//! secrets (`alcove_tools::EnvPolicy::secret_values`). They reach the event
//! stream whenever the model reads a `.env`, passes one to a child or
//! writes one in its answer. A [`Redactor`] is built once per session from
//! them; the transcripts (the report is read from them) redact their lines
//! with it, and [`RedactingSink`] stands in front of every other sink —
//! `--json` lines, TRACE lines, the OTLP export, the editor's and the
//! terminal UI's updates —, so every consumer of the stream sees the same
//! `[REDACTED]`. Values shorter than [`alcove_tools::MIN_SECRET_CHARS`] are
//! never redacted: they occur by chance in ordinary text.
//!
//! Streamed pieces (`text_delta`, `thinking_delta`) are redacted as a
//! stream, so a secret split across two pieces is caught too
//! ([`RedactingSink`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use alcove_protocol::{AgentEvent, AgentPath, EventKind};

use crate::EventSink;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// A session's secrets, longest first, as they are and as JSON escapes them.
#[derive(Debug, Default)]
pub struct Redactor {
    secrets: Vec<String>,
    /// The same secrets as they appear inside a JSON string.
    escaped: Vec<String>,
}

impl Redactor {
    /// A redactor of `secrets`; those shorter than
    /// [`alcove_tools::MIN_SECRET_CHARS`] are dropped.
    pub fn new(secrets: Vec<String>) -> Redactor {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|secret| secret.chars().count() >= alcove_tools::MIN_SECRET_CHARS)
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        let escaped = secrets
            .iter()
            .filter_map(|secret| serde_json::to_string(secret).ok())
            .map(|quoted| quoted[1..quoted.len() - 1].to_owned())
            .collect();
        Redactor { secrets, escaped }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        redact_with(&self.secrets, text)
    }

    /// The length of the longest end of `text` that is the start (not the
    /// whole) of a secret: what a stream must hold back until it knows.
    pub fn partial_suffix(&self, text: &str) -> usize {
        let mut longest = 0;
        for secret in &self.secrets {
            let most = (secret.len() - 1).min(text.len());
            for len in (longest + 1..=most).rev() {
                if secret.is_char_boundary(len)
                    && text.as_bytes().ends_with(&secret.as_bytes()[..len])
                {
                    longest = len;
                    break;
                }
            }
        }
        longest
    }

    /// `json` (text as JSON writes it) with every secret replaced; `None`
    /// when it holds none.
    pub fn redact_json(&self, json: &[u8]) -> Option<String> {
        if !contains_any(&self.escaped, json) {
            return None;
        }
        let text = String::from_utf8_lossy(json);
        Some(redact_with(&self.escaped, &text).into_owned())
    }
}

fn contains_any(secrets: &[String], haystack: &[u8]) -> bool {
    secrets
        .iter()
        .any(|secret| memchr::memmem::find(haystack, secret.as_bytes()).is_some())
}

fn redact_with<'a>(secrets: &[String], text: &'a str) -> Cow<'a, str> {
    let mut text = Cow::Borrowed(text);
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = Cow::Owned(text.replace(secret.as_str(), REDACTED));
        }
    }
    text
}

/// A sink that passes every event on with the session's secrets redacted:
/// an event holding none goes as it is, one holding some as a redacted copy.
///
/// Streamed pieces are redacted as a stream: the end of an agent's piece
/// that could be the start of a secret is held back and goes out with the
/// next piece (redacted if the secret completes), or before the agent's
/// next event of any other kind. So the pieces joined never spell a secret.
pub struct RedactingSink {
    redactor: Arc<Redactor>,
    inner: Arc<dyn EventSink>,
    /// Per agent and stream (text, thinking): text held back.
    held: Mutex<HashMap<(AgentPath, bool), String>>,
}

impl RedactingSink {
    /// `inner` behind `redactor`; with nothing to redact, `inner` itself.
    pub fn wrap(redactor: Arc<Redactor>, inner: Arc<dyn EventSink>) -> Arc<dyn EventSink> {
        if redactor.is_empty() {
            return inner;
        }
        Arc::new(RedactingSink {
            redactor,
            inner,
            held: Mutex::default(),
        })
    }

    /// Pushes onto `out` what `event` becomes: itself, its redacted copy,
    /// nothing (a piece held back whole), preceded by any held text the
    /// agent's stream no longer waits for.
    fn pass<'a>(&self, event: &'a AgentEvent, out: &mut Vec<Cow<'a, AgentEvent>>) {
        let Ok(mut held) = self.held.lock() else {
            return;
        };
        if let EventKind::TextDelta { text } | EventKind::ThinkingDelta { text } = &event.kind {
            let thinking = matches!(event.kind, EventKind::ThinkingDelta { .. });
            // The other stream of this agent has ended.
            if let Some(rest) = held.remove(&(event.agent.clone(), !thinking)) {
                out.push(Cow::Owned(delta(&event.agent, !thinking, rest)));
            }
            let key = (event.agent.clone(), thinking);
            let joined = match held.remove(&key) {
                Some(mut before) => {
                    before.push_str(text);
                    Cow::Owned(before)
                }
                None => Cow::Borrowed(text.as_str()),
            };
            let clean = self.redactor.redact(&joined);
            let kept = self.redactor.partial_suffix(&clean);
            let (now, later) = clean.split_at(clean.len() - kept);
            if !later.is_empty() {
                held.insert(key, later.to_owned());
            }
            if now == text.as_str() {
                out.push(Cow::Borrowed(event));
            } else if !now.is_empty() {
                out.push(Cow::Owned(delta(&event.agent, thinking, now.to_owned())));
            }
            return;
        }
        for thinking in [false, true] {
            if let Some(rest) = held.remove(&(event.agent.clone(), thinking)) {
                out.push(Cow::Owned(delta(&event.agent, thinking, rest)));
            }
        }
        drop(held);
        let redacted = serde_json::to_vec(event).ok().and_then(|json| {
            let clean = self.redactor.redact_json(&json)?;
            serde_json::from_str::<AgentEvent>(&clean).ok()
        });
        out.push(match redacted {
            Some(copy) => Cow::Owned(copy),
            None => Cow::Borrowed(event),
        });
    }
}

/// A streamed piece of `agent`'s text (or thinking).
fn delta(agent: &AgentPath, thinking: bool, text: String) -> AgentEvent {
    AgentEvent {
        agent: agent.clone(),
        kind: if thinking {
            EventKind::ThinkingDelta { text }
        } else {
            EventKind::TextDelta { text }
        },
    }
}

impl EventSink for RedactingSink {
    fn emit(&self, event: &AgentEvent) {
        self.emit_all(std::slice::from_ref(event));
    }

    fn emit_all(&self, events: &[AgentEvent]) {
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            self.pass(event, &mut out);
        }
        let unchanged =
            out.len() == events.len() && out.iter().all(|event| matches!(event, Cow::Borrowed(_)));
        if unchanged {
            self.inner.emit_all(events);
        } else if out.len() == 1 {
            self.inner.emit(&out[0]);
        } else if !out.is_empty() {
            let owned: Vec<AgentEvent> = out.into_iter().map(Cow::into_owned).collect();
            self.inner.emit_all(&owned);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Kept(Mutex<Vec<AgentEvent>>);

    impl EventSink for Kept {
        fn emit(&self, event: &AgentEvent) {
            self.0.lock().unwrap().push(event.clone());
        }
    }

    #[test]
    fn short_values_are_never_redacted_and_longer_ones_first() {
        let redactor = Redactor::new(vec![
            "short".to_owned(),
            "sk-abcdefgh".to_owned(),
            "sk-abcdefgh-longer".to_owned(),
        ]);
        assert_eq!(
            redactor.redact("a short sk-abcdefgh-longer and sk-abcdefgh"),
            "a short [REDACTED] and [REDACTED]"
        );
        assert!(Redactor::new(vec!["short".to_owned()]).is_empty());
    }

    #[test]
    fn every_event_reaches_the_sink_without_the_secret() {
        let kept = Arc::new(Kept::default());
        let sink = RedactingSink::wrap(
            Arc::new(Redactor::new(vec!["quote\"d-secret".to_owned()])),
            kept.clone(),
        );
        let main = AgentPath::main();
        sink.emit(&AgentEvent {
            agent: main.clone(),
            kind: EventKind::TextDelta {
                text: "the key is quote\"d-secret".to_owned(),
            },
        });
        sink.emit_all(&[AgentEvent {
            agent: main,
            kind: EventKind::Warning {
                message: "found quote\"d-secret in .env".to_owned(),
            },
        }]);
        let kept = kept.0.lock().unwrap();
        let json = serde_json::to_string(&*kept).unwrap();
        assert!(!json.contains("d-secret"), "{json}");
        assert_eq!(json.matches(REDACTED).count(), 2, "{json}");
    }

    #[test]
    fn a_secret_split_across_streamed_pieces_is_redacted_and_the_rest_kept() {
        let kept = Arc::new(Kept::default());
        let sink = RedactingSink::wrap(
            Arc::new(Redactor::new(vec!["sk-0123456789".to_owned()])),
            kept.clone(),
        );
        let piece = |text: &str| AgentEvent {
            agent: AgentPath::main(),
            kind: EventKind::TextDelta {
                text: text.to_owned(),
            },
        };
        for text in ["key: sk-01", "2345", "6789 ok, sk", "-0 is not", " it"] {
            sink.emit(&piece(text));
        }
        sink.emit(&AgentEvent {
            agent: AgentPath::main(),
            kind: EventKind::Warning {
                message: "end".to_owned(),
            },
        });
        let kept = kept.0.lock().unwrap();
        let streamed: String = kept
            .iter()
            .filter_map(|event| match &event.kind {
                EventKind::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(streamed, "key: [REDACTED] ok, sk-0 is not it");
        assert!(matches!(
            kept.last().map(|event| &event.kind),
            Some(EventKind::Warning { .. })
        ));
    }
}
