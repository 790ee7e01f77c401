//! A workflow run's spans: one `invoke_workflow <name>` span per run, from
//! `workflow_started` to `workflow_ended`, under the span of the agent that
//! started it, and one `workflow_phase <title>` span per phase under it, from
//! the script's `phase()` to its next `phase()` or the run's end. The run's
//! agents hang under their phase's span (under the run's when they name no
//! phase), so a trace shows a run of hundreds of agents as its phases.
//!
//! Apart from `spans.rs` because runs are keyed by run id, not by agent:
//! the events that open and end them come from the agent that started the
//! run, and the agents under them are announced by that same agent.

use std::collections::HashMap;
use std::time::SystemTime;

use opentelemetry::trace::{Span as _, SpanKind, Status};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, Span};

use super::attributes::{count_u64, first_line};
use super::spans::{build_span, context_of};

/// What `workflow_started` says of a run, for its span's attributes.
pub(super) struct RunStart<'a> {
    pub(super) run_id: &'a str,
    pub(super) name: &'a str,
    pub(super) max_concurrent: u32,
    pub(super) budget_tokens: Option<u64>,
    pub(super) budget_usd: Option<f64>,
}

/// What `workflow_ended` says of a run, for its span's attributes.
pub(super) struct RunEnd<'a> {
    pub(super) status: &'a str,
    pub(super) agents: u32,
    pub(super) nulls: u32,
    pub(super) tokens: u64,
    pub(super) usd: Option<f64>,
    pub(super) error: Option<&'a str>,
}

/// One phase's span and how many agents started under it.
struct PhaseSpan {
    title: String,
    span: Span,
    agents: i64,
}

/// One open run: its span, the phase the script set last (open until the
/// next `phase()`), and phases only an `agent({phase})` named (open until
/// the run ends).
struct RunSpans {
    span: Span,
    /// Agents started under the run's span itself (no phase).
    current: Option<PhaseSpan>,
    /// Phases that ended or were named by an agent only, kept to parent
    /// agents that name them later and to end at the run's end.
    others: Vec<PhaseSpan>,
}

/// Every open workflow run of a session, by run id.
#[derive(Default)]
pub(super) struct WorkflowSpans {
    runs: HashMap<String, RunSpans>,
}

impl WorkflowSpans {
    /// `workflow_started`: the run's span, under `parent` (the span of the
    /// agent that started it).
    pub(super) fn started(
        &mut self,
        tracer: &SdkTracer,
        parent: &Context,
        start: &RunStart<'_>,
        now: SystemTime,
    ) {
        let RunStart {
            run_id,
            name,
            max_concurrent,
            budget_tokens,
            budget_usd,
        } = *start;
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_workflow"),
            KeyValue::new("gen_ai.workflow.name", name.to_owned()),
            KeyValue::new("alcove.workflow.run_id", run_id.to_owned()),
            KeyValue::new("alcove.workflow.max_concurrent", i64::from(max_concurrent)),
        ];
        if let Some(budget) = budget_tokens {
            attributes.push(KeyValue::new(
                "alcove.workflow.budget_tokens",
                count_u64(budget),
            ));
        }
        if let Some(budget) = budget_usd {
            attributes.push(KeyValue::new("alcove.workflow.budget_usd", budget));
        }
        let span = build_span(
            tracer,
            format!("invoke_workflow {name}"),
            SpanKind::Internal,
            attributes,
            parent,
            now,
        );
        self.runs.insert(
            run_id.to_owned(),
            RunSpans {
                span,
                current: None,
                others: Vec::new(),
            },
        );
    }

    /// `workflow_phase`: the phase the script set before ends; `title`'s
    /// span starts under the run's.
    pub(super) fn phase(&mut self, tracer: &SdkTracer, run_id: &str, title: &str, now: SystemTime) {
        let Some(run) = self.runs.get_mut(run_id) else {
            return;
        };
        if let Some(mut previous) = run.current.take() {
            previous.end_at(now);
            run.others.push(previous);
        }
        run.current = Some(PhaseSpan::start(tracer, run, run_id, title, now));
    }

    /// The context an agent of run `run_id` in `phase` starts under: its
    /// phase's span (made now, until the run ends, when no `phase()` set
    /// it: an `agent({phase})` of its own), or the run's span with no phase;
    /// `None` when the run is not one of this session's open runs (a
    /// batch's id, a run already ended).
    pub(super) fn agent_context(
        &mut self,
        tracer: &SdkTracer,
        run_id: &str,
        phase: Option<&str>,
        now: SystemTime,
    ) -> Option<Context> {
        let run = self.runs.get_mut(run_id)?;
        let Some(title) = phase else {
            return Some(context_of(&run.span));
        };
        let named = |phase: &&mut PhaseSpan| phase.title == title;
        if let Some(phase) = run.current.as_mut().filter(named) {
            phase.agents += 1;
            return Some(context_of(&phase.span));
        }
        if let Some(phase) = run.others.iter_mut().rev().find(named) {
            phase.agents += 1;
            return Some(context_of(&phase.span));
        }
        let mut phase = PhaseSpan::start(tracer, run, run_id, title, now);
        phase.agents += 1;
        let context = context_of(&phase.span);
        run.others.push(phase);
        Some(context)
    }

    /// `workflow_ended`: its open phases and its span end, with its totals;
    /// a run that did not complete gets an error status.
    pub(super) fn ended(&mut self, run_id: &str, end: &RunEnd<'_>, now: SystemTime) {
        let Some(run) = self.runs.remove(run_id) else {
            return;
        };
        let mut span = run.finish(now);
        span.set_attributes([
            KeyValue::new("alcove.workflow.status", end.status.to_owned()),
            KeyValue::new("alcove.workflow.agents", i64::from(end.agents)),
            KeyValue::new("alcove.workflow.nulls", i64::from(end.nulls)),
            KeyValue::new("alcove.workflow.tokens", count_u64(end.tokens)),
        ]);
        if let Some(usd) = end.usd {
            span.set_attribute(KeyValue::new("alcove.workflow.usd", usd));
        }
        if end.status != "completed" {
            let why = end.error.map_or_else(|| end.status.to_owned(), first_line);
            span.set_status(Status::error(why));
        }
        span.end_with_timestamp(now);
    }

    /// Ends every run still open (the session is ending without their end).
    pub(super) fn end_all(&mut self, now: SystemTime) {
        for (_, run) in self.runs.drain() {
            let mut span = run.finish(now);
            span.set_status(Status::error("the session ended before the run did"));
            span.end_with_timestamp(now);
        }
    }
}

impl RunSpans {
    /// Ends every phase span of the run; returns the run's own span.
    fn finish(mut self, now: SystemTime) -> Span {
        if let Some(mut current) = self.current.take() {
            current.end_at(now);
        }
        for mut phase in self.others.drain(..) {
            phase.end_at(now);
        }
        self.span
    }
}

impl PhaseSpan {
    fn start(
        tracer: &SdkTracer,
        run: &RunSpans,
        run_id: &str,
        title: &str,
        now: SystemTime,
    ) -> PhaseSpan {
        let attributes = vec![
            KeyValue::new("alcove.workflow.run_id", run_id.to_owned()),
            KeyValue::new("alcove.workflow.phase", title.to_owned()),
        ];
        let span = build_span(
            tracer,
            format!("workflow_phase {title}"),
            SpanKind::Internal,
            attributes,
            &context_of(&run.span),
            now,
        );
        PhaseSpan {
            title: title.to_owned(),
            span,
            agents: 0,
        }
    }

    /// Ends the span (once: a phase ended by the next `phase()` is kept,
    /// ended, to parent agents that name it later).
    fn end_at(&mut self, now: SystemTime) {
        if self.span.is_recording() {
            self.span
                .set_attribute(KeyValue::new("alcove.workflow.phase.agents", self.agents));
            self.span.end_with_timestamp(now);
        }
    }
}
