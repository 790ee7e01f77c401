//! `alcove mcp serve`: alcove as a delegation server over the Model Context
//! Protocol, so Claude Code, Codex, Cursor or any MCP client can hand work
//! to alcove's children.
//!
//! The server opens one session in the folder it starts in, as `exec`
//! does (the user's and the folder's config, `--model`, `--permission-mode`,
//! `--allow`, `--deny`, `-c`), and keeps it for its whole life: the
//! session's top agent (`main`, which never calls a model) is the parent
//! of every call's child, so all children share its slots, tree budget,
//! gate, MCP connections and transcript folder, and `alcove report` shows
//! the server's session as one tree. stdout carries only the protocol;
//! warnings go to the client as log messages. With `--http ADDR` the same
//! server speaks Streamable HTTP instead (`http`): one handler per MCP
//! session, all of them on the one alcove session.
//!
//! The asynchronous face (`spawn_agent`, `send_input`, `wait`,
//! `close_agent`, `spawn_batch`, `retry_batch`) is alcove's own collab and
//! batch tools, called as the top agent on the one dispatch path. `list_agents` lists every call's children.
//!
//! - `tools`: what the client's model reads, and a call's arguments.
//! - `children`: the one seam to the child lifecycle.
//! - `progress`: events to progress notifications and log messages.
//! - `elicitation`: approvals asked of the client's user.
//! - `roster`: the server's children for `list_agents`.
//! - `http`: the Streamable HTTP transport and its bearer token.

mod children;
mod elicitation;
mod http;
mod progress;
mod roster;
mod tools;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use alcove_protocol::RunStatus;
use clap::Args;
use rmcp::ServiceExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use crate::CommonArgs;
use crate::session::{FrontEnd, Session, SessionEnd};
use children::Children;
use progress::{ClientLink, EventRouter};

/// `alcove mcp serve` arguments (the common flags are global).
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Serve over Streamable HTTP at ADDR (e.g. 127.0.0.1:8765; port 0 picks one) instead of
    /// stdin/stdout, at path /mcp. Every request needs `Authorization: Bearer <token>`: the token
    /// in ALCOVE_MCP_TOKEN, or one generated and printed to stderr.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// Let --http listen on an address other machines can reach (not only loopback).
    #[arg(long, requires = "http")]
    http_allow_remote: bool,
}

/// Serves MCP on stdin/stdout until the client closes the connection, or
/// over HTTP, until a signal comes; then closes every child and ends the
/// session.
pub(crate) async fn run(common: &CommonArgs, args: ServeArgs) -> anyhow::Result<u8> {
    // A bad address, an empty token or a port in use fail before anything opens.
    let endpoint = match args.http {
        Some(addr) => Some(http::bind(addr, args.http_allow_remote).await?),
        None => None,
    };
    let link = Arc::new(ClientLink::default());
    let router = Arc::new(EventRouter::new(link.clone()));
    let roster = Arc::new(roster::Roster::default());
    let front_end = FrontEnd {
        sinks: vec![router.clone(), roster.clone()],
        approver: Arc::new(elicitation::ElicitingApprover::new(link.clone())),
        max_turns: None,
        resume: None,
        extra_mcp: Vec::new(),
        file_source: None,
    };
    let session = Session::open(common, front_end).await?;
    session.runtime.hooks.session_start().await;
    session.ready().await;
    let stop = CancellationToken::new();
    let signal = tokio::spawn(crate::exec::watch_signals(stop.clone()));
    let children = Arc::new(Children::new(
        session.supervisor.clone(),
        session.runtime.clone(),
        session.main_run(stop.child_token()),
    ));
    let agent_types = session
        .supervisor
        .definitions()
        .all()
        .iter()
        .map(|definition| format!("- {}: {}", definition.name, definition.description))
        .collect::<Vec<_>>()
        .join("\n");
    let mut offered = tools::tool_list(&agent_types);
    offered.extend(tools::async_tools(
        children.async_tool_specs(&tools::ASYNC_TOOLS),
    ));
    offered.push(roster::list_agents_tool());
    let server = DelegationServer {
        children: children.clone(),
        router,
        roster,
        link: link.clone(),
        tools: Arc::new(offered),
        calls: Arc::new(AtomicU64::new(1)),
    };
    let ended = match endpoint {
        Some(endpoint) => http::serve(endpoint, move || server.clone(), stop.clone()).await,
        None => serve_stdio(server, &link, &stop).await,
    };
    children.cancel_all();
    let signal_code = crate::exec::signal_code(stop.is_cancelled(), signal).await;
    // The one session end (SessionEnd hook, background commands stopped,
    // `session_ended` with the whole tree's usage).
    session
        .end(SessionEnd {
            status: if signal_code.is_some() {
                RunStatus::Aborted
            } else {
                RunStatus::Completed
            },
            error: ended,
            ..SessionEnd::quiet("other")
        })
        .await;
    Ok(signal_code.unwrap_or(0))
}

/// Serves one client on stdin/stdout until it closes them or `stop`;
/// returns why the session ended early, if it did.
async fn serve_stdio(
    server: DelegationServer,
    link: &ClientLink,
    stop: &CancellationToken,
) -> Option<String> {
    let served = server.serve(rmcp::transport::stdio()).await;
    match served {
        Ok(service) => {
            link.connect(service.peer().clone());
            let quit = service.cancellation_token();
            tokio::select! {
                _ = service.waiting() => None,
                () = stop.cancelled() => {
                    quit.cancel();
                    Some("interrupted".to_owned())
                }
            }
        }
        Err(err) => Some(format!("the MCP handshake failed: {err}")),
    }
}

/// The MCP server: the tool list and the calls. Over HTTP each MCP session
/// gets a clone; all of them share the one alcove session.
#[derive(Clone)]
struct DelegationServer {
    children: Arc<Children>,
    router: Arc<EventRouter>,
    roster: Arc<roster::Roster>,
    /// The client approvals and log lines go to: the last one that called.
    link: Arc<ClientLink>,
    tools: Arc<Vec<rmcp::model::Tool>>,
    /// Numbers calls: each child's `call_id` is `mcp-<n>`.
    calls: Arc<AtomicU64>,
}

impl ServerHandler for DelegationServer {
    #[allow(deprecated, reason = "logging: see progress.rs")]
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("alcove", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "alcove runs delegated tasks as child agents in this server's folder, under its \
             permission rules, sandbox and budgets. Call `delegate` with a self-contained prompt; \
             the result is the child's report with a harness-written evidence footer.",
        )
    }

    #[allow(deprecated, reason = "logging: see progress.rs")]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.router.set_level(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.link.connect(context.peer.clone());
        let result = match request.name.as_ref() {
            tools::DELEGATE => self.delegate(request.arguments, &context).await,
            roster::LIST_AGENTS => self.list_agents(request.arguments),
            name if self.tools.iter().any(|tool| tool.name == name) => {
                self.async_call(name, request.arguments).await
            }
            other => CallToolResult::error(vec![ContentBlock::text(format!(
                "unknown tool `{other}`; this server offers: {}",
                self.tools
                    .iter()
                    .map(|tool| tool.name.as_ref())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))]),
        };
        Ok(result.into())
    }
}

impl DelegationServer {
    /// One child to its end: progress while it works when the client asked
    /// for it, stopped when the client cancels the call.
    async fn delegate(
        &self,
        arguments: Option<rmcp::model::JsonObject>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let checked = match tools::delegate_options(arguments)
            .and_then(|options| self.children.check(options))
        {
            Ok(checked) => checked,
            Err(reason) => return tool_error(reason),
        };
        let call_id = format!("mcp-{}", self.calls.fetch_add(1, Ordering::Relaxed));
        let cancel = self.children.cancel_token();
        // `notifications/cancelled` cancels the request's token; the child
        // (and its descendants) stop with it.
        let cancelled = {
            let (request, child) = (context.ct.clone(), cancel.clone());
            tokio::spawn(async move {
                request.cancelled().await;
                child.cancel();
            })
        };
        let lines = self.router.watch(&call_id);
        let reporting = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            tokio::spawn(async move {
                let mut lines = lines;
                let mut step = 0.0;
                while let Some(line) = lines.recv().await {
                    step += 1.0;
                    let param =
                        ProgressNotificationParam::new(token.clone(), step).with_message(line);
                    if peer.notify_progress(param).await.is_err() {
                        break;
                    }
                }
            })
        });
        let ended = self.children.run_to_end(&call_id, checked, cancel).await;
        self.router.unwatch(&call_id);
        cancelled.abort();
        if let Some(reporting) = reporting {
            // The last lines go out before the result.
            let _ = reporting.await;
        }
        match ended {
            Ok(end) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(end.report)]);
                result.structured_content = serde_json::to_value(&end.record).ok();
                result.is_error = Some(end.is_error);
                result
            }
            Err(reason) => tool_error(format!("the child could not start: {reason}")),
        }
    }
}

impl DelegationServer {
    /// `spawn_agent`, `send_input`, `wait`, `close_agent`, `spawn_batch`
    /// or `retry_batch`: alcove's own tool, called as the server's top agent; its JSON result is also the
    /// structured content.
    async fn async_call(
        &self,
        name: &str,
        arguments: Option<rmcp::model::JsonObject>,
    ) -> CallToolResult {
        let call_id = format!("mcp-{}", self.calls.fetch_add(1, Ordering::Relaxed));
        let arguments = serde_json::Value::Object(arguments.unwrap_or_default());
        let (text, is_error) = self
            .children
            .call_async_tool(&call_id, name, arguments)
            .await;
        let structured = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .filter(serde_json::Value::is_object);
        let mut result = if is_error {
            CallToolResult::error(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(text)])
        };
        result.structured_content = structured;
        result
    }
}

impl DelegationServer {
    /// `list_agents`: the server's children, as text and structured content.
    fn list_agents(&self, arguments: Option<rmcp::model::JsonObject>) -> CallToolResult {
        if let Some(unknown) = arguments.as_ref().and_then(|map| map.keys().next()) {
            return tool_error(format!(
                "invalid arguments for list_agents: it takes none (got `{unknown}`)"
            ));
        }
        let listed = self.roster.list(self.children.supervisor());
        let text = serde_json::to_string_pretty(&listed).unwrap_or_default();
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(listed);
        result
    }
}

fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
