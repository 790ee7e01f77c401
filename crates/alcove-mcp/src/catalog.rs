//! What a server offers and where it is in its life: its tools as it
//! described them, its [`State`], and the handler that lists them again
//! when the server says its list changed.

use std::sync::{Arc, Mutex};

use rmcp::model::ClientConfig;
use rmcp::service::{NotificationContext, Peer};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Map, Value};

use crate::config::ServerConfig;

/// A tool as the server describes it.
#[derive(Debug, Clone)]
pub struct RemoteTool {
    /// Its name on the server.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its input schema.
    pub input_schema: Map<String, Value>,
    /// Whether the server says it only reads (`annotations.readOnlyHint`).
    pub read_only: bool,
}

/// Where a server is in its life.
#[derive(Debug, Clone)]
pub enum State {
    /// Configured with `enabled = false`.
    Disabled,
    /// Starting (or restarting).
    Starting,
    /// Connected; its tools (after the config's filters) and whether it has resources.
    Ready {
        /// Its tools.
        tools: Vec<RemoteTool>,
        /// Whether it offers resources.
        resources: bool,
    },
    /// Could not start; why (with the last stderr lines).
    Failed(String),
    /// Exited or broke after starting; restarted on the next use while restarts remain.
    Crashed(String),
    /// Closed at the session's end.
    Closed,
}

impl State {
    /// One word: disabled, starting, ready, failed, crashed, closed.
    pub fn label(&self) -> &'static str {
        match self {
            State::Disabled => "disabled",
            State::Starting => "starting",
            State::Ready { .. } => "ready",
            State::Failed(_) => "failed",
            State::Crashed(_) => "crashed",
            State::Closed => "closed",
        }
    }
}

/// Receives the server's notifications.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) state: Arc<Mutex<State>>,
    pub(crate) known: Arc<Mutex<(Vec<RemoteTool>, bool)>>,
    pub(crate) config: ServerConfig,
}
impl ClientHandler for Handler {
    /// Lists the tools again at once (in a task: the handler runs on the
    /// connection's loop, which must stay free to read the answer), so the
    /// next tool set built — the next prompt's, a new child's — has them.
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let state = self.state.clone();
        let known = self.known.clone();
        let config = self.config.clone();
        tokio::spawn(async move {
            let Ok(fresh) = list_tools(&context.peer, &config).await else {
                return;
            };
            if let Ok(mut known) = known.lock() {
                known.0 = fresh.clone();
            }
            if let Ok(mut state) = state.lock()
                && let State::Ready { tools, .. } = &mut *state
            {
                *tools = fresh;
            }
        });
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.client_info.name = "alcove".to_owned();
        info.client_info.version = env!("CARGO_PKG_VERSION").to_owned();
        info
    }
}

pub(crate) async fn list_tools(
    peer: &Peer<RoleClient>,
    config: &ServerConfig,
) -> Result<Vec<RemoteTool>, String> {
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|err| format!("tools/list failed: {err}"))?;
    Ok(tools
        .into_iter()
        .filter(|tool| config.offers(&tool.name))
        .map(|tool| RemoteTool {
            name: tool.name.to_string(),
            description: tool.description.as_deref().unwrap_or_default().to_owned(),
            read_only: tool
                .annotations
                .as_ref()
                .and_then(|annotations| annotations.read_only_hint)
                .unwrap_or(false),
            input_schema: tool.input_schema.as_ref().clone(),
        })
        .collect())
}

pub(crate) fn failure(state: &State) -> &str {
    match state {
        State::Failed(reason) | State::Crashed(reason) => reason,
        _ => "",
    }
}
