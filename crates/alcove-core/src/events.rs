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
}
