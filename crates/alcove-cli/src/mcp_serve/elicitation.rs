//! Approvals of `alcove mcp serve`: a call the gate says must be asked
//! about goes to the client's user as an MCP elicitation when the client
//! offers elicitation; otherwise nobody can answer and it is refused with
//! the gate's own reason (which names the rule or flag that would allow
//! it), as in `alcove exec`. Never a hang: a refusal is a result the child
//! reads and acts on.

use std::sync::Arc;

use alcove_core::{Approval, ApprovalRequest, Approver};
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};

use super::progress::ClientLink;

/// The server's [`Approver`].
pub(crate) struct ElicitingApprover {
    link: Arc<ClientLink>,
}

impl ElicitingApprover {
    pub(crate) fn new(link: Arc<ClientLink>) -> ElicitingApprover {
        ElicitingApprover { link }
    }
}

#[async_trait::async_trait]
impl Approver for ElicitingApprover {
    async fn approve(&self, request: ApprovalRequest) -> Approval {
        let Some(peer) = self.link.peer() else {
            return Approval::Deny(None);
        };
        let offers = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some());
        if !offers {
            return Approval::Deny(None);
        }
        let schema = match ElicitationSchema::builder()
            .required_bool("allow")
            .optional_bool("always", false)
            .build()
        {
            Ok(schema) => schema,
            Err(reason) => return Approval::Deny(Some(format!("alcove: {reason}"))),
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message(&request),
            requested_schema: schema,
        };
        match peer.create_elicitation(params).await {
            Ok(result) if result.action == ElicitationAction::Accept => {
                let field = |name: &str| {
                    result
                        .content
                        .as_ref()
                        .and_then(|content| content.get(name))
                        .and_then(serde_json::Value::as_bool)
                        .unwrap_or(false)
                };
                match (field("allow"), field("always")) {
                    (true, true) => Approval::AllowAlways,
                    (true, false) => Approval::AllowOnce,
                    (false, _) => Approval::Deny(Some(refused(&request))),
                }
            }
            Ok(_) => Approval::Deny(Some(refused(&request))),
            Err(error) => Approval::Deny(Some(format!(
                "{} needs approval and the MCP client could not be asked ({error}); {}",
                request.tool, request.reason
            ))),
        }
    }
}

/// What the client's user is asked.
fn message(request: &ApprovalRequest) -> String {
    let who = match &request.agent_description {
        Some(description) => format!("{} ({description})", request.agent),
        None => request.agent.to_string(),
    };
    format!(
        "alcove: {who} asks to run {}: {}\n{}\nSet allow to run it; always allows calls like it for the rest of this server's session.",
        request.tool, request.summary, request.reason
    )
}

fn refused(request: &ApprovalRequest) -> String {
    format!(
        "The user of the MCP client refused this {} call ({}). Do not retry it; go on without it or report that it was refused.",
        request.tool, request.summary
    )
}
