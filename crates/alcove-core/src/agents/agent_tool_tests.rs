//! Unit tests of the `Agent` tool's rules that need no model server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use alcove_model::{Model, ModelError, ModelRequest, ModelResponse, StreamDelta};
use alcove_protocol::{AgentPath, Message, StopReason, Usage};
use alcove_tools::{ToolContext, Workspace};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::{
    AgentLimits, Definitions, FanOut, Inbox, Limits, NoApprover, NoHooks, PermissionGate,
    PermissionMode, Runtime, Supervisor,
};

/// Counts requests and answers each with a fixed text.
struct CountingModel(AtomicUsize);

#[async_trait::async_trait]
impl Model for CountingModel {
    fn name(&self) -> &str {
        "test/counting"
    }

    async fn complete(
        &self,
        _request: &ModelRequest,
        _on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<ModelResponse, ModelError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ModelResponse {
            message: Message::assistant_text("child report"),
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
        })
    }
}

fn supervisor(dir: &std::path::Path, model: Arc<CountingModel>) -> Arc<Supervisor> {
    let runtime = Runtime {
        model,
        approver: Arc::new(NoApprover),
        hooks: Arc::new(NoHooks),
        events: Arc::new(FanOut::default()),
        workspace: Arc::new(Workspace::new(dir).unwrap()),
        limits: Limits {
            max_tokens: 100,
            result_cap: 10_000,
            stop_hook_limit: 1,
        },
        inbox: Arc::new(Inbox::default()),
    };
    Arc::new(Supervisor::new(
        runtime,
        AgentLimits::default(),
        Definitions::default(),
        None,
    ))
}

fn context(dir: &std::path::Path, depth: u32) -> ToolContext {
    ToolContext {
        workspace: Arc::new(Workspace::new(dir).unwrap()),
        cancel: CancellationToken::new(),
        agent: AgentPath::main(),
        depth,
        call_id: "call-1".to_owned(),
        hidden: Default::default(),
    }
}

#[tokio::test]
async fn a_call_at_the_depth_limit_fails_without_calling_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(CountingModel(AtomicUsize::new(0)));
    let supervisor = supervisor(dir.path(), model.clone());
    let gate = Arc::new(PermissionGate::new(PermissionMode::Default));
    let tools = supervisor.tools_for(0, alcove_tools::builtin_tools(), &gate);
    let agent = tools
        .iter()
        .find(|tool| tool.spec().name == "Agent")
        .unwrap();
    let input = json!({"description": "too deep", "prompt": "go"});
    let output = agent.call(input.clone(), &context(dir.path(), 1)).await;
    assert!(output.is_error);
    assert_eq!(output.content, "Agent nesting depth exceeded (max 1)");
    assert_eq!(model.0.load(Ordering::SeqCst), 0);

    let output = agent.call(input, &context(dir.path(), 0)).await;
    assert!(!output.is_error, "{}", output.content);
    assert!(
        output
            .content
            .starts_with("[Agent: too deep]\nchild report")
    );
    assert_eq!(model.0.load(Ordering::SeqCst), 1);
}

#[test]
fn agents_at_the_depth_limit_are_offered_no_delegation_tools() {
    let dir = tempfile::tempdir().unwrap();
    let supervisor = supervisor(dir.path(), Arc::new(CountingModel(AtomicUsize::new(0))));
    let gate = Arc::new(PermissionGate::new(PermissionMode::Default));
    let names = |depth| -> Vec<String> {
        supervisor
            .tools_for(depth, alcove_tools::builtin_tools(), &gate)
            .iter()
            .map(|tool| tool.spec().name.clone())
            .collect()
    };
    assert!(names(0).contains(&"Agent".to_owned()) && names(0).contains(&"spawn_agent".to_owned()));
    assert_eq!(names(1), ["Read", "Glob", "Grep", "Write", "Edit", "Bash"]);
}

#[test]
fn empty_descriptions_and_prompts_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let supervisor = supervisor(dir.path(), Arc::new(CountingModel(AtomicUsize::new(0))));
    let gate = Arc::new(PermissionGate::new(PermissionMode::Default));
    let tools = supervisor.tools_for(0, alcove_tools::builtin_tools(), &gate);
    let agent = tools
        .iter()
        .find(|tool| tool.spec().name == "Agent")
        .unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let empty_prompt = agent
        .inspect(&json!({"description": "x", "prompt": "  "}), &workspace)
        .unwrap_err();
    assert!(
        empty_prompt.contains("`prompt` must not be empty"),
        "{empty_prompt}"
    );
    let empty_description = agent
        .inspect(&json!({"description": "", "prompt": "p"}), &workspace)
        .unwrap_err();
    assert!(
        empty_description.contains("`description` must not be empty"),
        "{empty_description}"
    );
    let unknown = agent
        .inspect(
            &json!({"description": "d", "prompt": "p", "subagent_type": "wizard"}),
            &workspace,
        )
        .unwrap_err();
    assert!(unknown.contains("general-purpose, explore"), "{unknown}");
}
