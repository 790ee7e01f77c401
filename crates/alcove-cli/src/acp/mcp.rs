//! The MCP servers an ACP client passes in `session/new` and
//! `session/load`, as alcove server configs: added to the configured ones
//! (one of the same name replaces it), one process per server for the
//! whole tree as for any other.

use agent_client_protocol::v1::schema::McpServer;
use alcove_mcp::{ServerConfig, Transport};

/// One client server as a config; an SSE server is refused (alcove speaks
/// stdio and streamable HTTP, and `initialize` says so).
pub(crate) fn server_config(server: McpServer) -> Result<ServerConfig, String> {
    let (name, transport) = match server {
        McpServer::Stdio(stdio) => (
            stdio.name,
            Transport::Stdio {
                command: stdio.command.display().to_string(),
                args: stdio.args,
                env: stdio
                    .env
                    .into_iter()
                    .map(|var| (var.name, var.value))
                    .collect(),
                cwd: None,
            },
        ),
        McpServer::Http(http) => (
            http.name,
            Transport::Http {
                url: http.url,
                headers: http
                    .headers
                    .into_iter()
                    .map(|header| (header.name, header.value))
                    .collect(),
                bearer_token_env: None,
            },
        ),
        McpServer::Sse(sse) => {
            return Err(format!(
                "MCP server `{}`: the SSE transport is not supported; use stdio or streamable HTTP",
                sse.name
            ));
        }
        _ => return Err("an MCP server of an unsupported transport".to_owned()),
    };
    if !alcove_mcp::config::valid_server_name(&name) {
        return Err(format!(
            "MCP server name `{name}` may only use letters, digits, `-` and `_`"
        ));
    }
    Ok(ServerConfig {
        name,
        transport,
        enabled: true,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        startup_timeout: alcove_mcp::config::DEFAULT_STARTUP_TIMEOUT,
        tool_timeout: alcove_mcp::config::DEFAULT_TOOL_TIMEOUT,
        source: "the ACP client".to_owned(),
    })
}
