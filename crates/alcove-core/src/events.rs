//! Where agent events go.
//!
//! The loop emits; front ends (JSONL printer, TRACE lines, transcript, the
//! interactive UI) consume. A sink is called synchronously on the emitting
//! task, so sinks must be quick: write a line, push to a channel.

use std::sync::Arc;

use alcove_protocol::AgentEvent;

/// Receives every event of a session, from every agent.
pub trait EventSink: Send + Sync {
    /// Handles one event. Must not block for long.
    fn emit(&self, event: &AgentEvent);

    /// Handles events that happen together (a reply's tool calls announced
    /// before any runs), in order. A sink that writes may write them at
    /// once: a reply of 64 `Agent` calls wrote 128 lines one system call
    /// each before its first child started (bench/notes.md, point 41).
    fn emit_all(&self, events: &[AgentEvent]) {
        for event in events {
            self.emit(event);
        }
    }
}

/// Sends each event to several sinks, in order.
#[derive(Default)]
pub struct FanOut {
    sinks: Vec<Arc<dyn EventSink>>,
}

impl FanOut {
    /// Adds a sink.
    pub fn with(mut self, sink: Arc<dyn EventSink>) -> FanOut {
        self.sinks.push(sink);
        self
    }
}

impl EventSink for FanOut {
    fn emit(&self, event: &AgentEvent) {
        for sink in &self.sinks {
            sink.emit(event);
        }
    }

    fn emit_all(&self, events: &[AgentEvent]) {
        for sink in &self.sinks {
            sink.emit_all(events);
        }
    }
}
