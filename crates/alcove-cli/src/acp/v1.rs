//! ACP protocol version 1 on stdio: each method's request parsed by the
//! SDK (malformed JSON, unknown methods and bad params get the JSON-RPC
//! errors it sends), answered by [`Sessions`]. Work that waits (opening a
//! session, a prompt) runs on a task of its own, so the dispatch loop is
//! free for `session/cancel` and permission answers meanwhile.

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    PromptResponse, SessionCapabilities, SessionListCapabilities, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, Usage,
};
use agent_client_protocol::{Agent, on_receive_notification, on_receive_request};

use super::sessions::Sessions;

/// What alcove offers a v1 client. No authentication: the model provider's
/// key comes from the environment and config, as for every front end.
fn initialize_response() -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(true))
                .mcp_capabilities(McpCapabilities::new().http(true))
                .session_capabilities(
                    SessionCapabilities::new().list(SessionListCapabilities::new()),
                ),
        )
        .agent_info(Implementation::new("alcove", env!("CARGO_PKG_VERSION")))
}

/// A prompt's tokens as the (unstable) `usage` of its response: every
/// agent of the tree, input counting cached tokens too.
fn turn_usage(usage: alcove_protocol::Usage) -> Usage {
    Usage::new(
        usage.budget_tokens(),
        usage.prompt_tokens(),
        usage.output_tokens,
    )
    .cached_read_tokens(usage.cache_read_tokens)
    .cached_write_tokens(usage.cache_write_tokens)
}

/// Serves until the client closes its end.
pub(super) async fn serve(
    sessions: Arc<Sessions>,
    transport: impl agent_client_protocol::ConnectTo<Agent> + 'static,
) -> Result<(), agent_client_protocol::Error> {
    let on_initialize = sessions.clone();
    let on_new = sessions.clone();
    let on_load = sessions.clone();
    let on_list = sessions.clone();
    let on_prompt = sessions.clone();
    let on_mode = sessions.clone();
    let on_config = sessions.clone();
    let on_cancel = sessions;
    Agent
        .v1()
        .name("alcove")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                let client = &request.client_capabilities;
                on_initialize.set_client(client.subagents.is_some(), client.fs.read_text_file);
                responder.respond(initialize_response())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let sessions = on_new.clone();
                tokio::spawn(async move {
                    match sessions
                        .open(cx, &request.cwd, request.mcp_servers, None)
                        .await
                    {
                        Ok(live) => {
                            let _ = responder.respond(
                                NewSessionResponse::new(live.id().to_owned())
                                    .modes(live.modes())
                                    .config_options(live.config_options()),
                            );
                            live.announce_commands();
                        }
                        Err(error) => {
                            let _ = responder.respond_with_error(error);
                        }
                    }
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let sessions = on_load.clone();
                tokio::spawn(async move {
                    let id = request.session_id.0.to_string();
                    match sessions
                        .open(cx, &request.cwd, request.mcp_servers, Some(id))
                        .await
                    {
                        Ok(live) => {
                            // The history first, then the answer.
                            live.replay().await;
                            let _ = responder.respond(
                                LoadSessionResponse::new()
                                    .modes(live.modes())
                                    .config_options(live.config_options()),
                            );
                            live.announce_commands();
                        }
                        Err(error) => {
                            let _ = responder.respond_with_error(error);
                        }
                    }
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| {
                responder.respond(ListSessionsResponse::new(
                    on_list.list(request.cwd.as_deref()),
                ))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _cx| {
                let sessions = on_prompt.clone();
                tokio::spawn(async move {
                    let id = request.session_id.0.to_string();
                    match sessions.prompt(&id, request.prompt).await {
                        Ok((stop, usage)) => {
                            let _ = responder
                                .respond(PromptResponse::new(stop).usage(turn_usage(usage)));
                        }
                        Err(error) => {
                            let _ = responder.respond_with_error(error);
                        }
                    }
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| match on_mode
                .set_mode(&request.session_id.0, &request.mode_id.0)
            {
                Ok(()) => responder.respond(SetSessionModeResponse::new()),
                Err(error) => responder.respond_with_error(error),
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                let value = request.value.as_value_id().map(|value| value.0.to_string());
                match on_config.set_config_option(
                    &request.session_id.0,
                    &request.config_id.0,
                    value.as_deref(),
                ) {
                    Ok(options) => responder.respond(SetSessionConfigOptionResponse::new(options)),
                    Err(error) => responder.respond_with_error(error),
                }
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                on_cancel.cancel(&notification.session_id.0);
                Ok(())
            },
            on_receive_notification!(),
        )
        .connect_to(transport)
        .await
}
