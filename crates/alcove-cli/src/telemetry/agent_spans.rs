//! One agent's open spans: its `invoke_agent` span, the model request in
//! flight and its tool calls, and how each ends with the agent's totals.
//!
//! Apart from `spans.rs`, which decides from each event which of these to
//! open, annotate or end.

use std::collections::HashMap;
use std::time::SystemTime;

use alcove_protocol::Usage;
use opentelemetry::KeyValue;
use opentelemetry::trace::{Span as _, Status};
use opentelemetry_sdk::trace::Span;

use super::attributes::usage_attributes;

/// One agent's open spans.
pub(super) struct AgentSpans {
    pub(super) span: Span,
    /// The model the agent's requests go to (`provider/name`).
    pub(super) model: String,
    /// The model request in flight, with its retries so far.
    pub(super) chat: Option<(Span, u32)>,
    /// Tool calls in flight, by call id.
    pub(super) tools: HashMap<String, Span>,
    /// What the agent used, for its span's totals.
    pub(super) usage: Usage,
}

impl AgentSpans {
    pub(super) fn new(span: Span, model: String) -> AgentSpans {
        AgentSpans {
            span,
            model,
            chat: None,
            tools: HashMap::new(),
            usage: Usage::default(),
        }
    }

    pub(super) fn end_chat(&mut self, now: SystemTime) {
        if let Some((mut span, retries)) = self.chat.take() {
            if retries > 0 {
                span.set_attribute(KeyValue::new("alcove.request.retries", i64::from(retries)));
            }
            span.end_with_timestamp(now);
        }
    }

    /// Ends the agent's span with its totals (and open calls under it);
    /// `error` marks a run that did not complete.
    pub(super) fn end(
        mut self,
        now: SystemTime,
        status: &'static str,
        turns: u32,
        usage: &Usage,
        error: Option<String>,
    ) {
        self.end_open(now);
        self.span.set_attributes(usage_attributes(usage));
        self.span
            .set_attribute(KeyValue::new("alcove.agent.status", status));
        self.span
            .set_attribute(KeyValue::new("alcove.agent.turns", i64::from(turns)));
        if let Some(error) = error {
            self.span.set_status(Status::error(error));
        }
        self.span.end_with_timestamp(now);
    }

    /// Ends the request and calls still open (the agent ended under them).
    pub(super) fn end_open(&mut self, now: SystemTime) {
        self.end_chat(now);
        for (_, mut span) in self.tools.drain() {
            span.set_status(Status::error("the agent ended before the call finished"));
            span.end_with_timestamp(now);
        }
    }
}
