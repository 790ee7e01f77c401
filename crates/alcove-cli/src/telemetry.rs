//! OpenTelemetry traces of a session, exported over OTLP/HTTP.
//!
//! Teams that run agents in CI and on clusters look at the same span trees
//! their other services send to Jaeger, Tempo or Phoenix. This module turns
//! the one event stream into spans that follow the OpenTelemetry GenAI
//! semantic conventions: an `invoke_agent` span per agent (a child's under
//! the parent's tool call that started it), a `chat` span per model request
//! and an `execute_tool` span per tool call (`spans.rs`), and an
//! `invoke_workflow` span per workflow run with a span per phase under it
//! (`workflow_spans.rs`). It is an [`EventSink`] like the JSON printer: it only records; the SDK's batch
//! processor exports from a thread of its own, so a session never waits on
//! a collector, and one that is down costs a warning, once.
//!
//! Nothing here runs unless `[telemetry] otlp_endpoint` or the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//! variables name a collector.

mod agent_spans;
mod attributes;
mod spans;
mod workflow_spans;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use alcove_core::EventSink;
use alcove_protocol::{AgentEvent, AgentPath, EventKind};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};
pub(crate) use spans::Spans;

use crate::settings::telemetry::Target;

/// The W3C trace context variable a process-runner child is given, and
/// reads, to continue its parent's trace.
pub(crate) const TRACEPARENT_ENV: &str = "TRACEPARENT";

/// How long one export may take before it is given up (a collector that
/// accepts the connection and never answers must not hold the session's end).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the session's end waits for the last spans to leave.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// A session's tracing: the sink that turns events into spans (and, at
/// `session_ended`, sends the last of them), and where the exporter's one
/// warning goes.
pub(crate) struct Telemetry {
    sink: Arc<TraceSink>,
    /// Where the exporter's one warning goes, once the session has a stream.
    warnings: Arc<OnceLock<Arc<dyn EventSink>>>,
}

impl Telemetry {
    /// Starts exporting to `target`. `parent` is the W3C `traceparent` of a
    /// parent alcove's tool call (a process-runner child): the session's
    /// spans then belong to that trace.
    pub(crate) fn start(target: &Target, parent: Option<&str>) -> Result<Telemetry, String> {
        let warnings: Arc<OnceLock<Arc<dyn EventSink>>> = Arc::default();
        let client = http_client(&target.traces_url)?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(target.traces_url.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|err| format!("cannot export traces to {}: {err}", target.traces_url))?;
        let exporter = WarnOnce {
            inner: exporter,
            url: target.traces_url.clone(),
            warned: AtomicBool::new(false),
            warnings: warnings.clone(),
        };
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(
                BatchConfigBuilder::default()
                    .with_scheduled_delay(Duration::from_millis(500))
                    .build(),
            )
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(
                opentelemetry_sdk::Resource::builder()
                    .with_service_name(target.service_name.clone())
                    .build(),
            )
            .build();
        let spans = Spans::new(
            opentelemetry::trace::TracerProvider::tracer(&provider, "alcove"),
            parent.and_then(parent_context),
            target.log_content,
        );
        Ok(Telemetry {
            sink: Arc::new(TraceSink {
                spans: std::sync::Mutex::new(spans),
                provider,
                traces_url: target.traces_url.clone(),
            }),
            warnings,
        })
    }

    /// The sink to add to the session's observers.
    pub(crate) fn sink(&self) -> Arc<TraceSink> {
        self.sink.clone()
    }

    /// Where the exporter's warning goes (the session's event stream).
    pub(crate) fn warn_to(&self, events: Arc<dyn EventSink>) {
        let _ = self.warnings.set(events);
    }
}

/// The blocking client the exporter's thread sends with: plain HTTP loads
/// no certificate store (the usual collector is on this machine or the
/// cluster's network); HTTPS uses rustls with ring, as the model clients do.
fn http_client(url: &str) -> Result<reqwest::blocking::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = reqwest::blocking::Client::builder().timeout(EXPORT_TIMEOUT);
    let plain = url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
    let builder = if plain {
        builder.tls_certs_only(std::iter::empty())
    } else {
        builder
    };
    // reqwest's blocking client starts a runtime of its own on a thread: it
    // is built (and later dropped) there, never on one of alcove's workers.
    std::thread::spawn(move || builder.build())
        .join()
        .map_err(|_| "the trace exporter's HTTP client could not be built".to_owned())?
        .map_err(|err| format!("the trace exporter's HTTP client: {err}"))
}

/// The remote parent span named by a W3C `traceparent` value.
fn parent_context(traceparent: &str) -> Option<opentelemetry::trace::SpanContext> {
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let context = TraceContextPropagator::new().extract(&carrier);
    let span_context = context.span().span_context().clone();
    span_context.is_valid().then_some(span_context)
}

/// The `traceparent` value that makes another process's spans children of `span`.
pub(crate) fn traceparent(span: &opentelemetry::trace::SpanContext) -> Option<String> {
    let context = opentelemetry::Context::new().with_remote_span_context(span.clone());
    let mut carrier: HashMap<String, String> = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    carrier.remove("traceparent")
}

/// The event sink: spans under one lock, each event a few map operations.
pub(crate) struct TraceSink {
    spans: std::sync::Mutex<Spans>,
    provider: SdkTracerProvider,
    /// Where spans go: a remote child is told to send its own there.
    traces_url: String,
}

impl TraceSink {
    /// The variables for the process that runs `child`, started by
    /// `call_id` of `agent` (a process-runner child or a batch task run as
    /// a command): the `traceparent` of that call and where to send spans,
    /// so its own spans continue this trace — and this session leaves that
    /// child's re-tagged events to them.
    pub(crate) fn child_env(
        &self,
        agent: &AgentPath,
        call_id: &str,
        child: &AgentPath,
    ) -> Vec<(String, String)> {
        let Ok(mut spans) = self.spans.lock() else {
            return Vec::new();
        };
        match spans.remote_child(agent, call_id, child) {
            Some(traceparent) => vec![
                (TRACEPARENT_ENV.to_owned(), traceparent),
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT".to_owned(),
                    self.traces_url.clone(),
                ),
            ],
            None => Vec::new(),
        }
    }

    /// Ends what is still open and sends the last spans, waiting at most
    /// [`SHUTDOWN_TIMEOUT`] (a collector that is down answers at once; one
    /// that never answers is given up after [`EXPORT_TIMEOUT`]).
    fn finish(&self) {
        if let Ok(mut spans) = self.spans.lock() {
            spans.end_all();
        }
        let shut = || {
            let _ = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
        };
        match tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(shut),
            _ => shut(),
        }
    }
}

impl EventSink for TraceSink {
    fn emit(&self, event: &AgentEvent) {
        if matches!(event.kind, EventKind::TextDelta { .. }) {
            return;
        }
        if let Ok(mut spans) = self.spans.lock() {
            spans.record(event, std::time::SystemTime::now());
        }
        if event.agent == AgentPath::main() && matches!(event.kind, EventKind::SessionEnded { .. })
        {
            self.finish();
        }
    }
}

/// The exporter, with one warning the first time an export fails: a
/// collector that is down never fails or slows a session.
struct WarnOnce<E> {
    inner: E,
    url: String,
    warned: AtomicBool,
    warnings: Arc<OnceLock<Arc<dyn EventSink>>>,
}

impl<E: SpanExporter> SpanExporter for WarnOnce<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        if let Err(err) = &result
            && !self.warned.swap(true, Ordering::Relaxed)
        {
            let message = format!(
                "traces could not be sent to {} ({err}); the session goes on without them",
                self.url
            );
            match self.warnings.get() {
                Some(events) => events.emit(&AgentEvent {
                    agent: AgentPath::main(),
                    kind: EventKind::Warning { message },
                }),
                None => eprintln!("alcove: warning: {message}"),
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E> std::fmt::Debug for WarnOnce<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarnOnce").field("url", &self.url).finish()
    }
}

impl std::fmt::Debug for TraceSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceSink")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_round_trips() {
        let value = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let span = parent_context(value).expect("a valid parent");
        assert_eq!(traceparent(&span).as_deref(), Some(value));
        assert!(parent_context("00-nonsense").is_none());
    }
}
