//! The session's servers: one [`Server`] (one connection, one process) per
//! configured server, started in the background when the session opens,
//! lent by reference to every agent through the tools it makes, and closed
//! when the session ends.

use std::path::Path;
use std::sync::Arc;

use alcove_tools::Tool;
use futures::future::join_all;

use crate::config::ServerConfig;
use crate::resources::{ListMcpResources, ReadMcpResource};
use crate::server::{Server, State};
use crate::tool::McpTool;

/// Every server of a session.
pub struct McpManager {
    servers: Vec<Arc<Server>>,
}

/// One server, for `alcove mcp list` and `/mcp`.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    /// Its name.
    pub name: String,
    /// Where it was configured.
    pub source: String,
    /// `stdio: node …` or `http: http://…`.
    pub target: String,
    /// Its state.
    pub state: State,
    /// How many processes it has started (restarts included).
    pub processes: u32,
    /// Where its stderr goes.
    pub log: String,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.servers.iter().map(|server| &server.config().name))
            .finish()
    }
}

impl McpManager {
    /// Starts every enabled server in the background; their stderr goes to
    /// `<log_dir>/<name>.log`, and stdio servers do not inherit the variables
    /// named in `env_remove` (the secrets Bash does not see either) unless
    /// their own `env` sets them. Must be called inside a tokio runtime.
    pub fn start(
        configs: Vec<ServerConfig>,
        workspace: &Path,
        log_dir: &Path,
        env_remove: &[String],
    ) -> Arc<McpManager> {
        let servers: Vec<Arc<Server>> = configs
            .into_iter()
            .map(|config| {
                let log = log_dir.join(format!("{}.log", config.name));
                Arc::new(Server::new(config, workspace, log, env_remove.to_vec()))
            })
            .collect();
        for server in &servers {
            let server = server.clone();
            tokio::spawn(async move { server.start().await });
        }
        Arc::new(McpManager { servers })
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Waits until every server has started or given up (each within its
    /// own startup timeout) and returns a warning per server that failed.
    pub async fn wait_started(&self) -> Vec<String> {
        join_all(self.servers.iter().map(|server| server.wait_started())).await;
        self.servers
            .iter()
            .filter_map(|server| match server.state() {
                State::Failed(reason) => Some(format!(
                    "MCP server `{}` failed to start; the session goes on without its tools: {reason} (log: {})",
                    server.config().name,
                    server.log_path().display()
                )),
                _ => None,
            })
            .collect()
    }

    /// The tools of every ready server (and of a crashed one the next call
    /// will restart), plus the resource tools when a server has resources.
    /// Every tool holds its server by reference.
    pub fn tools<Caller: ?Sized + Sync>(self: &Arc<Self>) -> Vec<Arc<dyn Tool<Caller>>> {
        let mut tools: Vec<Arc<dyn Tool<Caller>>> = Vec::new();
        let mut any_resources = false;
        for server in &self.servers {
            let (remote, resources) = server.offered_tools();
            any_resources |= resources;
            for remote in &remote {
                tools.push(Arc::new(McpTool::new(server.clone(), remote)));
            }
        }
        if any_resources {
            tools.push(Arc::new(ListMcpResources::new(self.clone())));
            tools.push(Arc::new(ReadMcpResource::new(self.clone())));
        }
        tools
    }

    /// Every server's status.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|server| {
                let config = server.config();
                ServerStatus {
                    name: config.name.clone(),
                    source: config.source.clone(),
                    target: match &config.transport {
                        crate::Transport::Stdio { command, args, .. } => {
                            format!("stdio: {command} {}", args.join(" "))
                                .trim_end()
                                .to_owned()
                        }
                        crate::Transport::Http { url, .. } => format!("http: {url}"),
                    },
                    state: server.state(),
                    processes: server.processes_started(),
                    log: server.log_path().display().to_string(),
                }
            })
            .collect()
    }

    /// Servers that have resources, by name.
    pub(crate) fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers
            .iter()
            .find(|server| server.config().name == name)
    }

    pub(crate) fn resource_servers(&self) -> Vec<Arc<Server>> {
        self.servers
            .iter()
            .filter(|server| {
                matches!(
                    server.state(),
                    State::Ready {
                        resources: true,
                        ..
                    }
                )
            })
            .cloned()
            .collect()
    }

    /// Closes every server and kills its process group.
    pub async fn shutdown(&self) {
        join_all(self.servers.iter().map(|server| server.close())).await;
    }
}
