//! Approvals as `session/request_permission`: this front end's [`Approver`].
//!
//! Every approval the TUI would ask becomes one request to the client, on
//! the ACP session of the agent that asked (a child's own subagent session
//! when the client has the capability, else the main session with the
//! child named in the title), with allow-once, allow-always (the rule it
//! adds shown, as the TUI's `a`) and reject options. Each asking agent
//! awaits its own request, so several may be pending at once and none
//! blocks another. A rejection, a cancelled request and a client that
//! closed the connection all deny, and the model reads which.
//!
//! [`ModeGate`] holds the main agent's gate for the current permission
//! mode and the rules granted "always", which a mode switch carries over.

use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    ToolCallUpdate, ToolCallUpdateFields,
};
use alcove_core::{Approval, ApprovalRequest, Approver, PermissionGate, Rule};
use alcove_tools::Workspace;

use super::tool_calls;
use super::updates::Updates;

const ALLOW_ONCE: &str = "allow-once";
const ALLOW_ALWAYS: &str = "allow-always";
const REJECT: &str = "reject";

/// The main agent's gate in the current mode, and what "always" granted.
pub(crate) struct ModeGate {
    gate: Mutex<Arc<PermissionGate>>,
    granted: Mutex<Vec<Rule>>,
}

impl ModeGate {
    pub(crate) fn new(gate: Arc<PermissionGate>) -> ModeGate {
        ModeGate {
            gate: Mutex::new(gate),
            granted: Mutex::default(),
        }
    }

    /// The gate the next turn runs with.
    pub(crate) fn current(&self) -> Option<Arc<PermissionGate>> {
        self.gate.lock().ok().map(|gate| gate.clone())
    }

    /// Switches to `gate` (another mode), granting it what "always" granted.
    pub(crate) fn switch(&self, gate: Arc<PermissionGate>) {
        if let Ok(granted) = self.granted.lock() {
            for rule in granted.iter() {
                gate.allow_for_session(rule.clone());
            }
        }
        if let Ok(mut current) = self.gate.lock() {
            *current = gate;
        }
    }

    fn grant(&self, rules: &[Rule]) {
        if let Some(gate) = self.current() {
            for rule in rules {
                gate.allow_for_session(rule.clone());
            }
        }
        if let Ok(mut granted) = self.granted.lock() {
            granted.extend(rules.iter().cloned());
        }
    }
}

/// Asks the ACP client.
pub(crate) struct AcpApprover {
    updates: Arc<Updates>,
    gate: Arc<ModeGate>,
    workspace: Workspace,
}

impl AcpApprover {
    pub(crate) fn new(updates: Arc<Updates>, gate: Arc<ModeGate>, workspace: Workspace) -> Self {
        AcpApprover {
            updates,
            gate,
            workspace,
        }
    }
}

/// Marks an agent as waiting for an approval while it lives.
struct Waiting<'a>(&'a Updates, &'a alcove_protocol::AgentPath);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting(self.1, false);
    }
}

#[async_trait::async_trait]
impl Approver for AcpApprover {
    async fn approve(&self, request: ApprovalRequest) -> Approval {
        let rules = self
            .gate
            .current()
            .map(|gate| gate.suggest_rules(&request.tool, &request.input, &self.workspace))
            .unwrap_or_default();
        let (session, own_session) = self.updates.session_of(&request.agent);
        let call_id = self
            .updates
            .call_asking(&request.agent, &request.tool, &request.input)
            .unwrap_or_else(|| format!("approval-{}", uuid::Uuid::new_v4()));
        let mut title = tool_calls::title(&request.tool, &request.input);
        if !own_session {
            let who = match &request.agent_description {
                Some(description) => format!("{} ({description})", request.agent),
                None => request.agent.to_string(),
            };
            title = format!("{who}: {title}");
        }
        let mut fields = ToolCallUpdateFields::new()
            .title(title)
            .kind(tool_calls::kind(&request.tool))
            .raw_input(request.input.clone())
            .locations(tool_calls::locations(
                &request.tool,
                &request.input,
                self.workspace.root(),
            ));
        let mut content = Vec::new();
        content.extend(tool_calls::diff(
            &request.tool,
            &request.input,
            self.workspace.root(),
        ));
        content.push(tool_calls::text(request.reason.clone()));
        fields = fields.content(content);
        let mut options = vec![PermissionOption::new(
            ALLOW_ONCE,
            "Allow once",
            PermissionOptionKind::AllowOnce,
        )];
        if !rules.is_empty() {
            let texts: Vec<&str> = rules.iter().map(Rule::text).collect();
            options.push(PermissionOption::new(
                ALLOW_ALWAYS,
                format!("Always allow: {}", texts.join(", ")),
                PermissionOptionKind::AllowAlways,
            ));
        }
        options.push(PermissionOption::new(
            REJECT,
            "Reject",
            PermissionOptionKind::RejectOnce,
        ));
        self.updates.waiting(&request.agent, true);
        let _waiting = Waiting(&self.updates, &request.agent);
        let asked = self
            .updates
            .connection()
            .send_request(RequestPermissionRequest::new(
                session,
                ToolCallUpdate::new(call_id, fields),
                options,
            ))
            .block_task()
            .await;
        match asked {
            Ok(response) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                    ALLOW_ONCE => Approval::AllowOnce,
                    ALLOW_ALWAYS => {
                        self.gate.grant(&rules);
                        Approval::AllowAlways
                    }
                    _ => Approval::Deny(Some("rejected in the editor".to_owned())),
                },
                RequestPermissionOutcome::Cancelled => Approval::Deny(Some(
                    "the editor cancelled the request before answering".to_owned(),
                )),
                _ => Approval::Deny(Some("the editor gave no known answer".to_owned())),
            },
            Err(error) => Approval::Deny(Some(format!(
                "no answer from the editor (the ACP client disconnected or failed: {})",
                error.message
            ))),
        }
    }
}
