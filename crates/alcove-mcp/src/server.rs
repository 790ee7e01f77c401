//! One server's connection for the whole session: starting it (its own
//! process group, stderr to a log file and a short tail for warnings),
//! calling its tools with a timeout and cancellation, noticing a crash and
//! restarting it (bounded, with backoff) on the next use, and closing it.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ReadResourceRequestParams, RequestId, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::service::{Peer, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::catalog::{Handler, failure, list_tools};
pub use crate::catalog::{RemoteTool, State};
use crate::config::{ServerConfig, Transport};

/// How long a server may take to end by itself before its group is killed.
const POLITE_CLOSE: Duration = Duration::from_secs(2);
/// Restarts after crashes a server gets in one session before it stays down.
pub const MAX_RESTARTS: u32 = 3;
/// Lines of a server's stderr kept for warnings.
const STDERR_TAIL: usize = 10;
/// The first restart's delay; each further one doubles it.
const RESTART_BACKOFF: Duration = Duration::from_millis(250);

/// One configured server and, while it runs, its connection.
pub struct Server {
    config: ServerConfig,
    workspace: PathBuf,
    log_path: PathBuf,
    env_remove: Vec<String>,
    connection: tokio::sync::Mutex<Option<Connection>>,
    state: Arc<Mutex<State>>,
    /// The tools (and whether it has resources) it last listed: a crashed
    /// server keeps offering them, since the next call restarts it.
    known: Arc<Mutex<(Vec<RemoteTool>, bool)>>,
    /// Set once the first start attempt has ended, either way.
    started: tokio::sync::watch::Sender<bool>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    restarts: AtomicU32,
    spawned: AtomicU32,
    /// Process groups of every process started, killed at the end.
    groups: Mutex<Vec<i32>>,
    closed: AtomicBool,
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    peer: Peer<RoleClient>,
    group: Option<i32>,
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// The server answered with an error, or could not be reached; the text says which.
    Failed(String),
    /// The call ran past `tool_timeout_sec` and was cancelled.
    TimedOut(Duration),
    /// The turn was interrupted and the call cancelled.
    Cancelled,
}

impl Server {
    /// A server that is not started yet; its stderr will go to `log_path`.
    pub fn new(
        config: ServerConfig,
        workspace: &Path,
        log_path: PathBuf,
        env_remove: Vec<String>,
    ) -> Server {
        let state = if config.enabled {
            State::Starting
        } else {
            State::Disabled
        };
        Server {
            config,
            workspace: workspace.to_owned(),
            log_path,
            env_remove,
            connection: tokio::sync::Mutex::new(None),
            state: Arc::new(Mutex::new(state)),
            known: Arc::default(),
            started: tokio::sync::watch::channel(false).0,
            stderr_tail: Arc::default(),
            restarts: AtomicU32::new(0),
            spawned: AtomicU32::new(0),
            groups: Mutex::default(),
            closed: AtomicBool::new(false),
        }
    }

    /// Its config.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Where its stderr goes.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Its state now.
    pub fn state(&self) -> State {
        self.state
            .lock()
            .map(|state| state.clone())
            .unwrap_or(State::Failed("state lock poisoned".to_owned()))
    }

    /// The tools to offer: the current list when ready, the last one when
    /// crashed with restarts left (the next call restarts it), else none.
    pub fn offered_tools(&self) -> (Vec<RemoteTool>, bool) {
        match self.state() {
            State::Ready { tools, resources } => (tools, resources),
            State::Crashed(_) if self.restarts.load(Ordering::Relaxed) < MAX_RESTARTS => self
                .known
                .lock()
                .map(|known| known.clone())
                .unwrap_or_default(),
            _ => (Vec::new(), false),
        }
    }

    /// How many processes it has started (restarts included).
    pub fn processes_started(&self) -> u32 {
        self.spawned.load(Ordering::Relaxed)
    }

    fn set_state(&self, state: State) {
        if let Ok(mut slot) = self.state.lock() {
            *slot = state;
        }
    }

    /// The first start; ends within the startup timeout either way.
    pub async fn start(&self) {
        if self.config.enabled {
            let mut slot = self.connection.lock().await;
            self.connect_into(&mut slot).await;
        }
        self.started.send_replace(true);
    }

    /// Waits until the first start attempt has ended.
    pub async fn wait_started(&self) {
        let mut started = self.started.subscribe();
        let _ = started.wait_for(|started| *started).await;
    }

    async fn connect_into(&self, slot: &mut Option<Connection>) {
        self.set_state(State::Starting);
        let attempt = tokio::time::timeout(self.config.startup_timeout, self.connect());
        let result = match attempt.await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "did not start within {}s (startup_timeout_sec)",
                self.config.startup_timeout.as_secs_f64()
            )),
        };
        match result {
            Ok((connection, tools, resources)) => {
                *slot = Some(connection);
                if let Ok(mut known) = self.known.lock() {
                    *known = (tools.clone(), resources);
                }
                self.set_state(State::Ready { tools, resources });
            }
            Err(reason) => {
                self.kill_groups();
                // Let the stderr reader catch the last lines of a process that just died.
                tokio::time::sleep(Duration::from_millis(100)).await;
                self.set_state(State::Failed(self.with_stderr(&reason)));
            }
        }
    }

    async fn connect(&self) -> Result<(Connection, Vec<RemoteTool>, bool), String> {
        let handler = Handler {
            state: self.state.clone(),
            known: self.known.clone(),
            config: self.config.clone(),
        };
        let (service, group) = match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                for name in &self.env_remove {
                    cmd.env_remove(name);
                }
                cmd.args(args)
                    .envs(env)
                    .current_dir(cwd.as_deref().unwrap_or(&self.workspace))
                    .process_group(0)
                    .kill_on_drop(true);
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|err| format!("cannot run `{command}`: {err}"))?;
                self.spawned.fetch_add(1, Ordering::Relaxed);
                let group = transport.id().and_then(|pid| i32::try_from(pid).ok());
                if let (Some(group), Ok(mut groups)) = (group, self.groups.lock()) {
                    groups.push(group);
                }
                if let Some(stderr) = stderr {
                    tokio::spawn(pump_stderr(
                        stderr,
                        self.log_path.clone(),
                        self.stderr_tail.clone(),
                    ));
                }
                let service = handler
                    .serve(transport)
                    .await
                    .map_err(|err| format!("initialize failed: {err}"))?;
                (service, group)
            }
            Transport::Http {
                url,
                headers,
                bearer_token_env,
            } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(var) = bearer_token_env {
                    let token = std::env::var(var)
                        .map_err(|_| format!("bearer_token_env `{var}` is not set"))?;
                    config = config.auth_header(token);
                }
                let mut custom = std::collections::HashMap::new();
                for (name, value) in headers {
                    let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|err| format!("header `{name}`: {err}"))?;
                    let value = reqwest::header::HeaderValue::from_str(value)
                        .map_err(|err| format!("header `{name}`: {err}"))?;
                    custom.insert(name, value);
                }
                config = config.custom_headers(custom);
                let _ = rustls::crypto::ring::default_provider().install_default();
                let client = reqwest::Client::builder()
                    .build()
                    .map_err(|err| format!("cannot build the HTTP client: {err}"))?;
                let transport = StreamableHttpClientTransport::with_client(client, config);
                let service = handler
                    .serve(transport)
                    .await
                    .map_err(|err| format!("cannot connect to {url}: {err}"))?;
                (service, None)
            }
        };
        let peer = service.peer().clone();
        let resources = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.resources.is_some());
        let tools = list_tools(&peer, &self.config).await?;
        Ok((
            Connection {
                service,
                peer,
                group,
            },
            tools,
            resources,
        ))
    }

    /// A peer to send a request to, restarting a crashed server when restarts remain.
    async fn peer(&self, cancel: &CancellationToken) -> Result<Peer<RoleClient>, CallError> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            if !connection.service.is_closed() {
                return Ok(connection.peer.clone());
            }
            let reason = "the server exited".to_owned();
            self.drop_connection(&mut slot, &reason);
        }
        match self.state() {
            State::Crashed(reason) => {
                let restarts = self.restarts.fetch_add(1, Ordering::Relaxed);
                if restarts >= MAX_RESTARTS {
                    return Err(CallError::Failed(format!(
                        "MCP server `{}` crashed and was restarted {MAX_RESTARTS} times; it stays down this session ({reason})",
                        self.config.name
                    )));
                }
                let backoff = RESTART_BACKOFF * 2u32.pow(restarts);
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = cancel.cancelled() => return Err(CallError::Cancelled),
                }
                self.connect_into(&mut slot).await;
                match slot.as_ref() {
                    Some(connection) => Ok(connection.peer.clone()),
                    None => Err(CallError::Failed(format!(
                        "MCP server `{}` could not be restarted: {}",
                        self.config.name,
                        failure(&self.state())
                    ))),
                }
            }
            state => Err(CallError::Failed(format!(
                "MCP server `{}` is not available ({}): {}",
                self.config.name,
                state.label(),
                failure(&state)
            ))),
        }
    }

    /// Calls tool `name`, within the tool timeout, stopping when `cancel` fires.
    ///
    /// A call that times out or is cancelled sends `notifications/cancelled`
    /// itself and waits (briefly) until it is written, so the server hears
    /// of it even when the session closes the connection right after (as
    /// an interrupted `exec` does); rmcp's own notice on drop is sent from
    /// a task that such a close could outrun.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, CallError> {
        let peer = self.peer(cancel).await?;
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(err) => return Err(self.request_failed(err).await),
        };
        let id = handle.id.clone();
        let reply = tokio::select! {
            reply = tokio::time::timeout(self.config.tool_timeout, handle.await_response()) => reply,
            () = cancel.cancelled() => {
                notify_cancelled(&peer, id, "the user interrupted the turn").await;
                return Err(CallError::Cancelled);
            }
        };
        match reply {
            Err(_) => {
                notify_cancelled(&peer, id, "tool_timeout_sec passed").await;
                Err(CallError::TimedOut(self.config.tool_timeout))
            }
            Ok(Ok(ServerResult::CallToolResult(result))) => Ok(result),
            Ok(Ok(_)) => Err(CallError::Failed(format!(
                "MCP server `{}` answered a tool call with something else",
                self.config.name
            ))),
            Ok(Err(err)) => Err(self.request_failed(err).await),
        }
    }

    /// Reads resource `uri`.
    pub async fn read_resource(
        &self,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<Value, CallError> {
        let peer = self.peer(cancel).await?;
        let reply = tokio::select! {
            reply = tokio::time::timeout(self.config.tool_timeout, peer.read_resource(ReadResourceRequestParams::new(uri))) => reply,
            () = cancel.cancelled() => return Err(CallError::Cancelled),
        };
        match reply {
            Err(_) => Err(CallError::TimedOut(self.config.tool_timeout)),
            Ok(Ok(result)) => Ok(serde_json::to_value(result).unwrap_or(Value::Null)),
            Ok(Err(err)) => Err(self.request_failed(err).await),
        }
    }

    /// Lists its resources.
    pub async fn list_resources(&self, cancel: &CancellationToken) -> Result<Value, CallError> {
        let peer = self.peer(cancel).await?;
        let reply = tokio::select! {
            reply = tokio::time::timeout(self.config.tool_timeout, peer.list_all_resources()) => reply,
            () = cancel.cancelled() => return Err(CallError::Cancelled),
        };
        match reply {
            Err(_) => Err(CallError::TimedOut(self.config.tool_timeout)),
            Ok(Ok(result)) => Ok(serde_json::to_value(result).unwrap_or(Value::Null)),
            Ok(Err(err)) => Err(self.request_failed(err).await),
        }
    }

    async fn request_failed(&self, err: ServiceError) -> CallError {
        match err {
            ServiceError::McpError(error) => CallError::Failed(format!(
                "MCP server `{}` returned an error: {}",
                self.config.name, error.message
            )),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let mut slot = self.connection.lock().await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                let reason = self.with_stderr(&format!("the connection broke ({err})"));
                self.drop_connection(&mut slot, &reason);
                CallError::Failed(format!(
                    "MCP server `{}` exited or disconnected during the call; it will be restarted on the next call. {reason}",
                    self.config.name
                ))
            }
            other => CallError::Failed(format!("MCP server `{}`: {other}", self.config.name)),
        }
    }

    fn drop_connection(&self, slot: &mut Option<Connection>, reason: &str) {
        if let Some(connection) = slot.take() {
            if let Some(group) = connection.group {
                kill_group(group);
            }
            connection.service.cancellation_token().cancel();
        }
        if !self.closed.load(Ordering::Relaxed) {
            self.set_state(State::Crashed(reason.to_owned()));
        }
    }

    /// Closes the connection and kills every process group it started.
    pub async fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        let connection = self.connection.lock().await.take();
        if let Some(connection) = connection {
            // A polite end first, bounded: HTTP sessions get their DELETE, a
            // stdio server its stdin closed and time to read what is left
            // (a `notifications/cancelled` sent just before) and exit.
            // 500 ms was too little for a Python server on a loaded machine.
            let mut service = connection.service;
            let _ = tokio::time::timeout(POLITE_CLOSE, service.close()).await;
        }
        self.kill_groups();
        if self.config.enabled {
            self.set_state(State::Closed);
        }
    }

    fn kill_groups(&self) {
        if let Ok(groups) = self.groups.lock() {
            for group in groups.iter() {
                kill_group(*group);
            }
        }
    }

    fn with_stderr(&self, reason: &str) -> String {
        let tail: Vec<String> = self
            .stderr_tail
            .lock()
            .map(|tail| tail.iter().cloned().collect())
            .unwrap_or_default();
        if tail.is_empty() {
            return reason.to_owned();
        }
        format!("{reason}; its stderr ended with:\n  {}", tail.join("\n  "))
    }
}

impl Drop for Server {
    /// The last resort when a session ends without `close`: no process survives it.
    fn drop(&mut self) {
        self.kill_groups();
    }
}

/// Tells the server a request is abandoned; bounded, so a server that no
/// longer reads cannot hold the caller.
async fn notify_cancelled(peer: &Peer<RoleClient>, id: RequestId, reason: &str) {
    let notice = CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
    let _ = tokio::time::timeout(Duration::from_secs(1), peer.notify_cancelled(notice)).await;
}

fn kill_group(group: i32) {
    let mut group = alcove_tools::ProcessGroup::led_by(group);
    group.kill();
    // Killed once here; dropping it armed would signal the id again.
    group.disarm();
}

async fn pump_stderr(
    stderr: tokio::process::ChildStderr,
    log_path: PathBuf,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    if let Some(parent) = log_path.parent() {
        let _ = tokio::fs::create_dir_all(parent).await;
    }
    let mut log = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .await
        .ok();
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(log) = log.as_mut() {
            let _ = log.write_all(format!("{line}\n").as_bytes()).await;
        }
        if let Ok(mut tail) = tail.lock() {
            if tail.len() == STDERR_TAIL {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }
}
