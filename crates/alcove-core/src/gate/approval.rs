//! Approval of the calls the gate says must be asked about: who asks, what
//! for, and the seam ([`Approver`]) a front end answers through.

use alcove_protocol::AgentPath;

/// One approval asked of the user: who asks, and exactly what for.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The asking agent's path.
    pub agent: AgentPath,
    /// The asking agent's task description, for children.
    pub agent_description: Option<String>,
    /// The tool.
    pub tool: String,
    /// One line saying what the call does (the command, the file).
    pub summary: String,
    /// The call's arguments.
    pub input: serde_json::Value,
    /// Why approval is needed and what rule or flag would allow it.
    pub reason: String,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run it this once.
    AllowOnce,
    /// Run it, and calls like it for the rest of the session.
    AllowAlways,
    /// Do not run it; the optional text goes to the model.
    Deny(Option<String>),
}

/// Decides the calls the gate says must be asked about.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// Asks; may wait for the user as long as it takes (cancellation drops the future).
    async fn approve(&self, request: ApprovalRequest) -> Approval;
}

/// The approver of a run without a terminal: nobody can answer, so every
/// request is denied with the request's own reason, which names the rule or
/// flag that would allow the call.
pub struct NoApprover;

#[async_trait::async_trait]
impl Approver for NoApprover {
    async fn approve(&self, _request: ApprovalRequest) -> Approval {
        Approval::Deny(None)
    }
}
