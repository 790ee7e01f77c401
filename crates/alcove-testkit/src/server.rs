//! The fake model server: a hyper HTTP/1 server on 127.0.0.1 with its own
//! threads and tokio runtime, which records every request and answers model
//! calls from the [`Script`], one step per request, each connection in its
//! own task so slow steps never block others, on `SERVER_THREADS` workers
//! so concurrent requests are answered in parallel.

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, combinators::UnsyncBoxBody};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use tokio::sync::{Semaphore, oneshot};

use crate::context::{Accounting, Cache, ContextModel, Verdict};
use crate::record::{Protocol, RecordedRequest};
use crate::reply::{answer, json_response};
use crate::responses_strict::IssuedReasoning;
use crate::script::{Script, Step};
use crate::wire::{IdGen, prefix};
use crate::{anthropic, openai, responses_strict, strict};

pub(crate) type Body = UnsyncBoxBody<Bytes, std::io::Error>;

struct Conversation {
    needle: String,
    steps: Vec<Step>,
    cursor: usize,
}

struct State {
    conversations: Vec<Conversation>,
    /// Shared with the handler that answers each: recording a request
    /// copies a pointer, not the parsed body (a deep copy per request was
    /// a large part of the server's own CPU in a 64-wide fan-out).
    requests: Vec<Arc<RecordedRequest>>,
    cache: Cache,
    /// The reasoning items the Responses wire returned with their calls.
    reasoning: IssuedReasoning,
    /// How many model requests are still answered by the throttle's step
    /// instead of their conversation's ([`crate::Script::throttle`]).
    throttle: Option<(usize, Step)>,
}

pub(crate) struct Shared {
    state: Mutex<State>,
    models: Vec<String>,
    context: ContextModel,
    pub(crate) ids: IdGen,
    /// Validate histories as the real servers do (`strict.rs`).
    strict: bool,
    /// At most this many model requests answered at once (one-slot mode).
    pub(crate) slots: Option<Arc<Semaphore>>,
}

impl Shared {
    /// Keeps the reasoning a Responses reply issued, for the strict check of
    /// the requests that follow (before the reply is sent: the client cannot
    /// answer it sooner).
    pub(crate) fn remember(&self, issued: Option<crate::responses::Issued>) {
        if let Some(issued) = issued {
            self.lock().reasoning.remember(issued);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A running fake model server. Dropping it shuts the server down and closes
/// every open connection.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl FakeServer {
    /// Starts on 127.0.0.1:0 on a dedicated thread with its own tokio runtime,
    /// so it works from plain `#[test]`s and from `#[tokio::test]`s alike.
    ///
    /// Panics if no local port can be bound or the thread cannot start.
    pub fn start(script: Script) -> FakeServer {
        FakeServer::start_on(0, script)
    }

    /// Like [`FakeServer::start`], on a chosen port of 127.0.0.1 (0 picks a
    /// free one): e.g. to bring a server up where a client was just refused.
    ///
    /// Panics if the port cannot be bound or the thread cannot start.
    pub fn start_on(port: u16, script: Script) -> FakeServer {
        let listener = match StdListener::bind(("127.0.0.1", port)) {
            Ok(l) => l,
            Err(e) => panic!("alcove-testkit: cannot bind 127.0.0.1:{port}: {e}"),
        };
        let addr = match listener.local_addr() {
            Ok(a) => a,
            Err(e) => panic!("alcove-testkit: cannot read the bound address: {e}"),
        };
        if let Err(e) = listener.set_nonblocking(true) {
            panic!("alcove-testkit: cannot make the listener non-blocking: {e}");
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                conversations: script
                    .conversations
                    .into_iter()
                    .map(|(needle, steps)| Conversation {
                        needle,
                        steps,
                        cursor: 0,
                    })
                    .collect(),
                requests: Vec::new(),
                cache: Cache::default(),
                reasoning: IssuedReasoning::default(),
                throttle: script.throttle,
            }),
            models: script.models,
            context: script.context,
            ids: IdGen::default(),
            strict: script.strict,
            slots: script.slots.map(|n| Arc::new(Semaphore::new(n))),
        });
        let (tx, rx) = oneshot::channel();
        let server_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("alcove-fake-server-{}", addr.port()))
            .spawn(move || run(listener, server_shared, rx));
        let thread = match thread {
            Ok(t) => t,
            Err(e) => panic!("alcove-testkit: cannot spawn the server thread: {e}"),
        };
        FakeServer {
            addr,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// The Anthropic base URL, `http://127.0.0.1:PORT` (no `/v1`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The OpenAI base URL, `http://127.0.0.1:PORT/v1`.
    pub fn openai_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every model request (`POST /v1/messages`, `POST
    /// /v1/chat/completions`) received so far, in arrival order; what
    /// alcove asks besides (a local server's window at `/props` or
    /// `/api/show`, the models at `/v1/models`) is in
    /// [`FakeServer::all_requests`].
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.recorded(RecordedRequest::is_model_call)
    }

    /// Every request received so far, model requests or not, in arrival order.
    pub fn all_requests(&self) -> Vec<RecordedRequest> {
        self.recorded(|_| true)
    }

    /// How many model requests were received so far (cheap: nothing is
    /// cloned, so it suits polling loops).
    pub fn request_count(&self) -> usize {
        let state = self.shared.lock();
        state.requests.iter().filter(|r| r.is_model_call()).count()
    }

    /// The requests whose first user message text contains `first_user_contains`
    /// (matched like conversations, see [`RecordedRequest::first_user_message_text`]).
    pub fn requests_for(&self, first_user_contains: &str) -> Vec<RecordedRequest> {
        self.recorded(|r| r.first_user_message_text().contains(first_user_contains))
    }

    /// Copies of the requests `keep` takes, in arrival order: the log's
    /// pointers are copied under the lock, only the requests kept after it.
    fn recorded(&self, keep: impl Fn(&RecordedRequest) -> bool) -> Vec<RecordedRequest> {
        let requests: Vec<Arc<RecordedRequest>> = self.shared.lock().requests.clone();
        requests
            .iter()
            .filter(|r| keep(r))
            .map(|r| RecordedRequest::clone(r))
            .collect()
    }

    /// Conversations with steps not yet taken: `(first_user_contains, steps left)`.
    pub fn unused_steps(&self) -> Vec<(String, usize)> {
        self.shared
            .lock()
            .conversations
            .iter()
            .filter(|c| c.cursor < c.steps.len())
            .map(|c| (c.needle.clone(), c.steps.len() - c.cursor))
            .collect()
    }

    /// Panics, listing them, if any scripted step was never requested.
    pub fn assert_script_finished(&self) {
        let unused = self.unused_steps();
        assert!(
            unused.is_empty(),
            "alcove-testkit: scripted steps never requested (conversation, steps left): {unused:?}"
        );
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Worker threads of the server's runtime. A real API answers requests in
/// parallel; on one thread, 64 children's requests arriving together were
/// parsed and answered one after another, and that queue was most of what a
/// 64-wide fan-out measured beyond bare clients (bench/notes.md, point 35).
const SERVER_THREADS: usize = 2;

fn run(listener: StdListener, shared: Arc<Shared>, shutdown: oneshot::Receiver<()>) {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(SERVER_THREADS)
        .thread_name("alcove-fake-server")
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("alcove-testkit: cannot build the server runtime: {e}");
            return;
        }
    };
    // Accepting is a task on the workers too: a new connection's task then
    // starts on the worker that accepted it, with no hop between threads
    // before its request is read (and timed).
    let _ = runtime.block_on(runtime.spawn(accept(listener, shared, shutdown)));
    // Dropping the runtime drops every connection task, closing their sockets.
    runtime.shutdown_timeout(Duration::from_secs(1));
}

async fn accept(listener: StdListener, shared: Arc<Shared>, mut shutdown: oneshot::Receiver<()>) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("alcove-testkit: cannot register the listener: {e}");
            return;
        }
    };
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(serve_connection(stream, Arc::clone(&shared)));
                }
                Err(e) => {
                    eprintln!("alcove-testkit: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
        }
    }
}

async fn serve_connection(stream: tokio::net::TcpStream, shared: Arc<Shared>) {
    // Each SSE event is its own small write: without this, Nagle's algorithm
    // holds the tail of a reply until the client's delayed ACK, adding tens of
    // milliseconds the real services do not (the benchmarks would count them).
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |req| handle(req, Arc::clone(&shared)));
    let result = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
    // Cut streams and clients hanging up end connections with an error; that
    // is expected, so it is not reported.
    drop(result);
}

/// What to do with a request once it is recorded.
enum Plan {
    Step(Step, Protocol, Option<Accounting>),
    Json(StatusCode, Value),
    Reject(StatusCode, Protocol, String),
    Models(Protocol),
}

async fn handle(req: Request<Incoming>, shared: Arc<Shared>) -> Result<Response<Body>, Infallible> {
    let received_at = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let headers = req
        .headers()
        .iter()
        .map(|(n, v)| {
            let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (n.as_str().to_string(), value)
        })
        .collect();
    let (body, body_len, body_error) = match req.into_body().collect().await {
        Ok(collected) => {
            let bytes = collected.to_bytes();
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            (body, bytes.len(), None)
        }
        Err(e) => (Value::Null, 0, Some(e.to_string())),
    };
    let record = Arc::new(RecordedRequest {
        method: method.to_string(),
        path,
        headers,
        body,
        body_len,
        received_at,
    });
    let protocol = record.protocol();
    let plan = {
        let mut state = shared.lock();
        state.requests.push(Arc::clone(&record));
        let is_model_call = record.is_model_call();
        if let Some(e) = body_error {
            Plan::Reject(
                StatusCode::BAD_REQUEST,
                protocol,
                format!("fake server: could not read the request body: {e}"),
            )
        } else if method == Method::GET && record.path == "/v1/models" {
            Plan::Models(protocol)
        } else if let Some(props) = (method == Method::GET && record.path == "/props")
            .then(|| crate::context::props(&shared.context))
            .flatten()
        {
            Plan::Json(StatusCode::OK, props)
        } else if !is_model_call {
            Plan::Reject(
                StatusCode::NOT_FOUND,
                protocol,
                format!("fake server: no route for {method} {}", record.path),
            )
        } else if !record.body.is_object() {
            Plan::Reject(
                StatusCode::BAD_REQUEST,
                protocol,
                "fake server: the request body is not a JSON object".to_string(),
            )
        } else if let Some(rejection) = shared
            .strict
            .then(|| {
                match protocol {
                    Protocol::Responses => {
                        responses_strict::validate(&record.body, &state.reasoning)
                    }
                    _ => strict::validate(protocol, &record.body),
                }
                .and_then(|()| published_schema(protocol, &record.body))
            })
            .and_then(Result::err)
        {
            Plan::Reject(rejection.status, protocol, rejection.message)
        } else {
            match crate::context::judge(&shared.context, &mut state.cache, &record) {
                Verdict::Reject(status, body) => Plan::Json(
                    StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
                    body,
                ),
                Verdict::Summary(text, counts) => {
                    Plan::Step(Step::text(&text), protocol, Some(counts))
                }
                Verdict::Script(counts) => {
                    let step = throttled(&mut state)
                        .map(Ok)
                        .unwrap_or_else(|| next_step(&mut state, &record.first_user_message_text()))
                        .map(|step| crate::from_result::filled(step, &record))
                        .and_then(|step| match shared.strict {
                            true => strict::offered_calls(&step, &record.body)
                                .map(|()| step)
                                .map_err(|rejection| rejection.message),
                            false => Ok(step),
                        });
                    match step {
                        Ok(step) => Plan::Step(step, protocol, counts),
                        Err(message) => Plan::Reject(StatusCode::BAD_REQUEST, protocol, message),
                    }
                }
            }
        }
    };
    let response = match plan {
        Plan::Step(step, protocol, counts) => {
            answer(step, protocol, &record, &shared, counts).await
        }
        Plan::Json(status, body) => json_response(status, &body),
        Plan::Reject(status, protocol, message) => {
            eprintln!("alcove-testkit: {status}: {message}");
            let kind = if status.is_server_error() {
                "server_error"
            } else {
                "invalid_request_error"
            };
            let body = match protocol {
                Protocol::Anthropic => anthropic::error_body(kind, &message),
                Protocol::OpenAi | Protocol::Responses => openai::error_body(kind, &message),
            };
            json_response(status, &body)
        }
        Plan::Models(Protocol::Anthropic) => {
            json_response(StatusCode::OK, &anthropic::models(&shared.models))
        }
        Plan::Models(Protocol::OpenAi | Protocol::Responses) => {
            json_response(StatusCode::OK, &openai::models(&shared.models, now()))
        }
    };
    Ok(response)
}

/// The throttle's step, while it has requests left to answer.
fn throttled(state: &mut State) -> Option<Step> {
    let (left, step) = state.throttle.as_mut()?;
    if *left == 0 {
        return None;
    }
    *left -= 1;
    Some(step.clone())
}

/// Takes the next step of the first conversation matching `first_user`.
fn next_step(state: &mut State, first_user: &str) -> Result<Step, String> {
    let quoted = prefix(first_user, 200);
    let Some(conv) = state
        .conversations
        .iter_mut()
        .find(|c| first_user.contains(&c.needle))
    else {
        return Err(format!(
            "fake server: no scripted conversation matches this request; first user message: {quoted:?}"
        ));
    };
    match conv.steps.get(conv.cursor) {
        Some(step) => {
            conv.cursor += 1;
            Ok(step.clone())
        }
        None => Err(format!(
            "fake server: the scripted conversation matching {:?} has no steps left (all {} used); first user message: {quoted:?}",
            conv.needle,
            conv.steps.len()
        )),
    }
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The published request schema's check, with the feature on.
#[cfg(feature = "published-schemas")]
fn published_schema(protocol: Protocol, body: &Value) -> Result<(), strict::Rejection> {
    crate::schemas::validate(protocol, body)
}

#[cfg(not(feature = "published-schemas"))]
fn published_schema(_: Protocol, _: &Value) -> Result<(), strict::Rejection> {
    Ok(())
}
