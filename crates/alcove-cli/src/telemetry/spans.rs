//! Events to spans: which span each event opens, annotates or ends.
//!
//! Kept apart from the exporter so the mapping reads as one table. Spans
//! follow the OpenTelemetry GenAI semantic conventions (`invoke_agent`,
//! `chat`, `execute_tool`, `gen_ai.*` attributes); what the conventions do
//! not name is under `alcove.*`. A span's start and end are the times its
//! events were emitted: the sink runs on the emitting task.

use std::collections::HashMap;
use std::time::SystemTime;

use alcove_protocol::{AgentEvent, AgentPath, ContentBlock, EventKind, Role};
use opentelemetry::trace::{
    Span as _, SpanContext, SpanKind, Status, TraceContextExt, Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, Span};

use super::agent_spans::AgentSpans;
use super::attributes::{
    cap, count, count_u64, first_line, model_name, provider_name, usage_attributes,
};
use super::workflow_spans::{RunEnd, RunStart, WorkflowSpans};

/// A child's span, not started yet: it is made at the child's first event
/// (with the time it was announced), so a child that turns out to run as
/// another alcove process — which exports its own spans — never gets one
/// here as well.
struct Pending {
    name: String,
    attributes: Vec<KeyValue>,
    parent: Context,
    start: SystemTime,
}

/// Every open span of a session.
pub(crate) struct Spans {
    tracer: SdkTracer,
    /// The remote parent (a process-runner child's parent tool call).
    parent: Option<SpanContext>,
    log_content: bool,
    agents: HashMap<AgentPath, AgentSpans>,
    /// Children announced whose span is not made yet.
    pending: HashMap<AgentPath, Pending>,
    /// Children that are other alcove processes exporting their own spans
    /// into this trace: their re-tagged events are theirs, not ours.
    remote_paths: Vec<AgentPath>,
    /// Workflow runs and their phases, open.
    workflows: WorkflowSpans,
    session_model: String,
}

impl Spans {
    pub(crate) fn new(tracer: SdkTracer, parent: Option<SpanContext>, log_content: bool) -> Spans {
        Spans {
            tracer,
            parent,
            log_content,
            agents: HashMap::new(),
            pending: HashMap::new(),
            remote_paths: Vec::new(),
            workflows: WorkflowSpans::default(),
            session_model: String::new(),
        }
    }

    /// Applies one event.
    pub(crate) fn record(&mut self, event: &AgentEvent, now: SystemTime) {
        let path = &event.agent;
        if self.is_remote(path) {
            return;
        }
        self.materialize(path);
        match &event.kind {
            EventKind::SessionStarted {
                session_id, model, ..
            } => {
                self.session_model = model.clone();
                let parent = match &self.parent {
                    Some(remote) => Context::new().with_remote_span_context(remote.clone()),
                    None => Context::new(),
                };
                let attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                    KeyValue::new("gen_ai.agent.name", "main"),
                    KeyValue::new("gen_ai.agent.id", path.to_string()),
                    KeyValue::new("gen_ai.conversation.id", session_id.clone()),
                    KeyValue::new("gen_ai.request.model", model_name(model)),
                    KeyValue::new("gen_ai.provider.name", provider_name(model)),
                ];
                let span = self.start(
                    "invoke_agent main",
                    SpanKind::Internal,
                    attributes,
                    &parent,
                    now,
                );
                self.agents
                    .insert(path.clone(), AgentSpans::new(span, model.clone()));
            }
            EventKind::AgentStarted {
                child,
                call_id,
                agent_type,
                description,
                depth,
                run,
                phase,
                ..
            } => {
                if self.agents.contains_key(child) || self.pending.contains_key(child) {
                    // A spawned agent's next submission: its span goes on.
                    return;
                }
                // A workflow's agent hangs under its phase (or its run);
                // any other under the call that started it.
                let in_run = run.as_deref().and_then(|run| {
                    self.workflows
                        .agent_context(&self.tracer, run, phase.as_deref(), now)
                });
                let parent = in_run.unwrap_or_else(|| self.call_context(path, call_id));
                let attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                    KeyValue::new("gen_ai.agent.name", agent_type.clone()),
                    KeyValue::new("gen_ai.agent.id", child.to_string()),
                    KeyValue::new("gen_ai.agent.description", description.clone()),
                    KeyValue::new("alcove.agent.depth", i64::from(*depth)),
                    KeyValue::new("alcove.parent.tool_call.id", call_id.clone()),
                ];
                self.pending.insert(
                    child.clone(),
                    Pending {
                        name: format!("invoke_agent {agent_type}"),
                        attributes,
                        parent,
                        start: now,
                    },
                );
            }
            EventKind::AgentEnded {
                child,
                status,
                ok,
                turns,
                usage,
                ..
            } => {
                self.materialize(child);
                if let Some(agent) = self.agents.remove(child) {
                    let error = (!ok).then(|| status.as_str().to_owned());
                    agent.end(now, status.as_str(), *turns, usage, error);
                }
            }
            EventKind::WorkflowStarted {
                run_id,
                name,
                max_concurrent,
                budget_tokens,
                budget_usd,
                ..
            } => {
                let parent = self.agent_context(path);
                let start = RunStart {
                    run_id,
                    name,
                    max_concurrent: *max_concurrent,
                    budget_tokens: *budget_tokens,
                    budget_usd: *budget_usd,
                };
                self.workflows.started(&self.tracer, &parent, &start, now);
            }
            EventKind::WorkflowPhase { run_id, title } => {
                self.workflows.phase(&self.tracer, run_id, title, now);
            }
            EventKind::WorkflowEnded {
                run_id,
                status,
                agents,
                nulls,
                tokens,
                usd,
                error,
                ..
            } => {
                let end = RunEnd {
                    status,
                    agents: *agents,
                    nulls: *nulls,
                    tokens: *tokens,
                    usd: *usd,
                    error: error.as_deref(),
                };
                self.workflows.ended(run_id, &end, now);
            }
            EventKind::ModelRequest {
                turn,
                messages,
                tools,
            } => {
                let Some(agent) = self.agents.get_mut(path) else {
                    return;
                };
                agent.end_chat(now);
                let parent =
                    Context::new().with_remote_span_context(agent.span.span_context().clone());
                let attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "chat"),
                    KeyValue::new("gen_ai.request.model", model_name(&agent.model)),
                    KeyValue::new("gen_ai.provider.name", provider_name(&agent.model)),
                    KeyValue::new("alcove.turn", i64::from(*turn)),
                    KeyValue::new("alcove.request.messages", count(*messages)),
                    KeyValue::new("alcove.request.tools", count(*tools)),
                ];
                let name = format!("chat {}", model_name(&agent.model));
                let builder = self
                    .tracer
                    .span_builder(name)
                    .with_kind(SpanKind::Client)
                    .with_start_time(now)
                    .with_attributes(attributes);
                let span = self.tracer.build_with_context(builder, &parent);
                if let Some(agent) = self.agents.get_mut(path) {
                    agent.chat = Some((span, 0));
                }
            }
            EventKind::ModelRetry {
                attempt, reason, ..
            } => {
                if let Some((span, retries)) =
                    self.agents.get_mut(path).and_then(|a| a.chat.as_mut())
                {
                    *retries += 1;
                    span.add_event_with_timestamp(
                        "retry",
                        now,
                        vec![
                            KeyValue::new("alcove.retry.attempt", i64::from(*attempt)),
                            KeyValue::new("alcove.retry.reason", reason.clone()),
                        ],
                    );
                }
            }
            EventKind::Usage { usage } => {
                let Some(agent) = self.agents.get_mut(path) else {
                    return;
                };
                agent.usage.add(*usage);
                match agent.chat.as_mut() {
                    Some((span, _)) => span.set_attributes(usage_attributes(usage)),
                    // A compaction's summary request.
                    None => agent.span.add_event_with_timestamp(
                        "compaction_request",
                        now,
                        usage_attributes(usage),
                    ),
                }
            }
            EventKind::Message { message } if message.role == Role::Assistant => {
                let log_content = self.log_content;
                if let Some((span, _)) = self.agents.get_mut(path).and_then(|a| a.chat.as_mut()) {
                    let calls = message
                        .content
                        .iter()
                        .any(|block| matches!(block, ContentBlock::ToolUse { .. }));
                    let reason = if calls { "tool_calls" } else { "stop" };
                    span.set_attribute(KeyValue::new(
                        "gen_ai.response.finish_reasons",
                        opentelemetry::Value::Array(
                            vec![opentelemetry::StringValue::from(reason)].into(),
                        ),
                    ));
                    if log_content {
                        let text = serde_json::to_string(&message.content).unwrap_or_default();
                        span.set_attribute(KeyValue::new("gen_ai.output.messages", cap(text)));
                    }
                }
            }
            EventKind::Compacted {
                trigger,
                tokens_before,
                tokens_after,
                ..
            } => {
                if let Some(agent) = self.agents.get_mut(path) {
                    agent.span.add_event_with_timestamp(
                        "compacted",
                        now,
                        vec![
                            KeyValue::new("alcove.compaction.trigger", trigger.clone()),
                            KeyValue::new(
                                "alcove.compaction.tokens_before",
                                count_u64(*tokens_before),
                            ),
                            KeyValue::new(
                                "alcove.compaction.tokens_after",
                                count_u64(*tokens_after),
                            ),
                        ],
                    );
                }
            }
            EventKind::ToolCallStarted { id, name, input } => {
                let log_content = self.log_content;
                let Some(agent) = self.agents.get_mut(path) else {
                    return;
                };
                agent.end_chat(now);
                let parent =
                    Context::new().with_remote_span_context(agent.span.span_context().clone());
                let mut attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    KeyValue::new("gen_ai.tool.name", name.clone()),
                    KeyValue::new("gen_ai.tool.call.id", id.clone()),
                ];
                if log_content {
                    attributes.push(KeyValue::new(
                        "gen_ai.tool.call.arguments",
                        cap(input.to_string()),
                    ));
                }
                let builder = self
                    .tracer
                    .span_builder(format!("execute_tool {name}"))
                    .with_kind(SpanKind::Internal)
                    .with_start_time(now)
                    .with_attributes(attributes);
                let span = self.tracer.build_with_context(builder, &parent);
                if let Some(agent) = self.agents.get_mut(path) {
                    agent.tools.insert(id.clone(), span);
                }
            }
            EventKind::ToolCallFinished {
                id,
                content,
                is_error,
                duration_ms,
                effects,
                ..
            } => {
                let log_content = self.log_content;
                let Some(mut span) = self.agents.get_mut(path).and_then(|a| a.tools.remove(id))
                else {
                    return;
                };
                span.set_attribute(KeyValue::new(
                    "alcove.tool.duration_ms",
                    count_u64(*duration_ms),
                ));
                if let Some(code) = effects.exit_code {
                    span.set_attribute(KeyValue::new("alcove.tool.exit_code", i64::from(code)));
                }
                if log_content {
                    span.set_attribute(KeyValue::new(
                        "gen_ai.tool.call.result",
                        cap(content.as_str().to_owned()),
                    ));
                }
                if *is_error {
                    span.set_status(Status::error(first_line(content.as_str())));
                }
                span.end_with_timestamp(now);
            }
            EventKind::TurnEnded { .. } => {
                if let Some(agent) = self.agents.get_mut(path) {
                    agent.end_chat(now);
                }
            }
            EventKind::SessionEnded {
                status,
                turns,
                usage,
                error,
                ..
            } => {
                if let Some(agent) = self.agents.remove(path) {
                    let error = error.as_deref().map(first_line);
                    agent.end(now, status.as_str(), *turns, usage, error);
                }
                self.end_all();
            }
            _ => {}
        }
    }

    /// Makes the span of `path` if it is still pending.
    fn materialize(&mut self, path: &AgentPath) {
        let Some(pending) = self.pending.remove(path) else {
            return;
        };
        let span = self.start(
            &pending.name,
            SpanKind::Internal,
            pending.attributes,
            &pending.parent,
            pending.start,
        );
        let model = self.session_model.clone();
        self.agents
            .insert(path.clone(), AgentSpans::new(span, model));
    }

    /// Ends every span still open (the session is ending).
    pub(crate) fn end_all(&mut self) {
        let now = SystemTime::now();
        let pending: Vec<AgentPath> = self.pending.keys().cloned().collect();
        for path in pending {
            self.materialize(&path);
        }
        self.workflows.end_all(now);
        for (_, mut agent) in self.agents.drain() {
            agent.end_open(now);
            agent.span.end_with_timestamp(now);
        }
    }

    /// Marks `child`, started by `call_id` of `agent`, as another alcove
    /// process that exports its own spans, and gives the `traceparent` it
    /// continues from: the call's span when the child was announced under
    /// it, else the agent's own (a spawned agent's later submission).
    pub(crate) fn remote_child(
        &mut self,
        agent: &AgentPath,
        call_id: &str,
        child: &AgentPath,
    ) -> Option<String> {
        if !self.remote_paths.contains(child) {
            self.remote_paths.push(child.clone());
        }
        // Announced under the call that started it (a `spawn_agent` call
        // has been answered by the time its process starts).
        if let Some(pending) = self.pending.remove(child) {
            return super::traceparent(pending.parent.span().span_context());
        }
        let spans = self.agents.get(agent)?;
        let span = spans.tools.get(call_id).unwrap_or(&spans.span);
        super::traceparent(span.span_context())
    }

    fn is_remote(&self, path: &AgentPath) -> bool {
        self.remote_paths.iter().any(|remote| {
            let remote = remote.to_string();
            let path = path.to_string();
            path == remote || path.starts_with(&format!("{remote}/"))
        })
    }

    /// The context of `agent`'s own span (a workflow run it started hangs
    /// there).
    fn agent_context(&self, agent: &AgentPath) -> Context {
        self.agents
            .get(agent)
            .map_or_else(Context::new, |spans| context_of(&spans.span))
    }

    /// The context a child of `agent`'s call `call_id` starts under: the
    /// call's span, else the agent's.
    fn call_context(&self, agent: &AgentPath, call_id: &str) -> Context {
        let Some(spans) = self.agents.get(agent) else {
            return Context::new();
        };
        context_of(spans.tools.get(call_id).unwrap_or(&spans.span))
    }

    fn start(
        &self,
        name: &str,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
        parent: &Context,
        now: SystemTime,
    ) -> Span {
        build_span(&self.tracer, name.to_owned(), kind, attributes, parent, now)
    }
}

/// A span named `name` of `kind`, begun at `now` under `parent`.
pub(super) fn build_span(
    tracer: &SdkTracer,
    name: String,
    kind: SpanKind,
    attributes: Vec<KeyValue>,
    parent: &Context,
    now: SystemTime,
) -> Span {
    let builder = tracer
        .span_builder(name)
        .with_kind(kind)
        .with_start_time(now)
        .with_attributes(attributes);
    tracer.build_with_context(builder, parent)
}

/// The context a span started under `span` gets.
pub(super) fn context_of(span: &Span) -> Context {
    Context::new().with_remote_span_context(span.span_context().clone())
}
