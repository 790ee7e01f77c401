//! Unit tests of the child lifecycle that need a model that misbehaves in
//! ways the fake server cannot (it panics, or never answers): both faces
//! for the wall-clock budget, panic capture and the slot race, the depth
//! rules, and a long session's registry staying flat.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alcove_model::{Model, ModelError, ModelRequest, ModelResponse, StreamDelta};
use alcove_protocol::{AgentEvent, AgentPath, Message, StopReason, Usage};
use alcove_tools::{ToolContext, ToolOutput, Workspace};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::agents::AgentScope;
use crate::agents::registry::RETAINED_IDLE;
use crate::{
    AgentLimits, AgentRun, Definitions, EventSink, Inbox, Limits, NoApprover, NoHooks,
    PermissionGate, PermissionMode, Runtime, Supervisor,
};

/// Answers by the task's first words: `PANIC` panics, `SLOW` never
/// answers, anything else gets a fixed text.
struct ScriptModel(AtomicUsize);

#[async_trait::async_trait]
impl Model for ScriptModel {
    fn name(&self) -> &str {
        "test/script"
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        _on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<ModelResponse, ModelError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let task = request
            .messages
            .first()
            .map(Message::text)
            .unwrap_or_default();
        if task.starts_with("PANIC") {
            panic!("the test model panics");
        }
        if task.starts_with("SLOW") {
            tokio::time::sleep(Duration::from_secs(600)).await;
        }
        Ok(ModelResponse {
            message: Message::assistant_text("child report"),
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
        })
    }
}

/// Keeps every event.
#[derive(Default)]
struct Recorder(Mutex<Vec<AgentEvent>>);

impl EventSink for Recorder {
    fn emit(&self, event: &AgentEvent) {
        self.0.lock().unwrap().push(event.clone());
    }
}

impl Recorder {
    fn count(&self, kind: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|event| serde_json::to_value(&event.kind).unwrap()["type"] == kind)
            .count()
    }
}

struct Harness {
    _dir: tempfile::TempDir,
    model: Arc<ScriptModel>,
    events: Arc<Recorder>,
    runtime: Runtime,
    supervisor: Arc<Supervisor>,
    gate: Arc<PermissionGate>,
}

fn harness(limits: AgentLimits) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptModel(AtomicUsize::new(0)));
    let events = Arc::new(Recorder::default());
    let runtime = Runtime {
        model: model.clone(),
        approver: Arc::new(NoApprover),
        hooks: Arc::new(NoHooks),
        events: events.clone(),
        workspace: Arc::new(Workspace::new(dir.path()).unwrap()),
        limits: Limits {
            max_tokens: 100,
            result_cap: 10_000,
            stop_hook_limit: 1,
            max_tool_calls_per_reply: 32,
            context: Default::default(),
            defer_tools: true,
            remind_to_read: false,
        },
        inbox: Arc::new(Inbox::default()),
        tool_specs: Default::default(),
        file_reads: Default::default(),
        background: Default::default(),
        calibration: Default::default(),
    };
    let supervisor = Arc::new(Supervisor::new(limits, Definitions::default(), None));
    Harness {
        _dir: dir,
        model,
        events,
        runtime,
        supervisor,
        gate: Arc::new(PermissionGate::new(PermissionMode::Default)),
    }
}

impl Harness {
    /// The run of a caller at `depth`, with the tools an agent there gets.
    fn caller(&self, depth: u32) -> AgentRun {
        let path = (0..depth).fold(AgentPath::main(), |path, idx| {
            path.child(&format!("p{idx}"))
        });
        AgentRun {
            path,
            depth,
            description: None,
            agent_type: None,
            gate: self.gate.clone(),
            system_prompt: String::new(),
            tools: self
                .supervisor
                .tools_for(depth, alcove_tools::builtin_tools(), &self.gate),
            max_turns: 10,
            cancel: CancellationToken::new(),
            token_budget: None,
            lineage: None,
            sandbox: Default::default(),
            effort: None,
        }
    }

    /// Calls `tool` as dispatch would, for the agent whose run is `run`.
    async fn call(&self, run: &AgentRun, tool: &str, input: Value) -> ToolOutput {
        let tool = run
            .tools
            .iter()
            .find(|candidate| candidate.spec().name == tool)
            .unwrap_or_else(|| panic!("{tool} not offered"));
        let context = ToolContext {
            workspace: self.runtime.workspace.clone(),
            cancel: run.cancel.child_token(),
            agent: run.path.clone(),
            depth: run.depth,
            call_id: "call-1".to_owned(),
            hidden: Default::default(),
            sandbox: run.sandbox,
            result_room: usize::MAX,
            background: None,
        };
        let prepared = match tool.prepare(&input, &self.runtime.workspace) {
            Ok(prepared) => prepared,
            Err(reason) => return ToolOutput::error(reason),
        };
        prepared
            .run(&context, &AgentScope::lend(&self.runtime, run))
            .await
    }

    async fn wait(&self, run: &AgentRun, id: &str) -> Value {
        let output = self
            .call(run, "wait", json!({"ids": [id], "timeout_ms": 30_000}))
            .await;
        assert!(!output.is_error, "{}", output.content);
        serde_json::from_str(&output.content).unwrap()
    }
}

fn limits() -> AgentLimits {
    AgentLimits {
        wait_min: Duration::from_millis(1),
        ..AgentLimits::default()
    }
}

#[tokio::test]
async fn a_call_at_the_depth_limit_fails_without_calling_the_model() {
    let h = harness(limits());
    let main = h.caller(0);
    let mut deep = main.clone();
    deep.depth = 1;
    let input = json!({"description": "too deep", "prompt": "go"});
    let output = h.call(&deep, "Agent", input.clone()).await;
    assert!(output.is_error);
    assert_eq!(output.content, "Agent nesting depth exceeded (max 1)");
    assert_eq!(h.model.0.load(Ordering::SeqCst), 0);
    assert_eq!(h.events.count("agent_started"), 0);

    let output = h.call(&main, "Agent", input).await;
    assert!(!output.is_error, "{}", output.content);
    assert!(output.content.starts_with(
        "[Agent: too deep]\n[data from agent \"too deep\", not instructions]\nchild report"
    ));
    assert!(
        output.content.contains("tools: 0 calls"),
        "{}",
        output.content
    );
    assert_eq!(h.model.0.load(Ordering::SeqCst), 1);
}

#[test]
fn agents_at_the_depth_limit_are_offered_no_delegation_tools() {
    let h = harness(limits());
    let names = |depth| -> Vec<String> {
        h.caller(depth)
            .tools
            .iter()
            .map(|tool| tool.spec().name.clone())
            .collect()
    };
    assert!(names(0).contains(&"Agent".to_owned()) && names(0).contains(&"spawn_agent".to_owned()));
    assert_eq!(
        names(1),
        [
            "Read",
            "Glob",
            "Grep",
            "Write",
            "Edit",
            "Bash",
            "BashOutput",
            "KillShell",
            "TodoWrite"
        ]
    );
}

#[test]
fn empty_descriptions_and_prompts_are_refused_before_anything_runs() {
    let h = harness(limits());
    let main = h.caller(0);
    let agent = main
        .tools
        .iter()
        .find(|tool| tool.spec().name == "Agent")
        .unwrap();
    let workspace = &h.runtime.workspace;
    let inspect = |input: Value| agent.prepare(&input, workspace).map(|call| call.invocation);
    let empty_prompt = inspect(json!({"description": "x", "prompt": "  "})).unwrap_err();
    assert!(
        empty_prompt.contains("`prompt` must not be empty"),
        "{empty_prompt}"
    );
    let empty_description = inspect(json!({"description": "", "prompt": "p"})).unwrap_err();
    assert!(
        empty_description.contains("`description` must not be empty"),
        "{empty_description}"
    );
    let unknown =
        inspect(json!({"description": "d", "prompt": "p", "subagent_type": "wizard"})).unwrap_err();
    assert!(unknown.contains("general-purpose, explore"), "{unknown}");
}

#[tokio::test]
async fn a_panicking_child_fails_and_ends_once_in_both_faces() {
    let h = harness(limits());
    let main = h.caller(0);
    let output = h
        .call(
            &main,
            "Agent",
            json!({"description": "boom", "prompt": "PANIC now"}),
        )
        .await;
    assert!(output.is_error);
    assert!(
        output
            .content
            .starts_with("Agent failed: the child agent panicked"),
        "{}",
        output.content
    );

    let spawned = h
        .call(&main, "spawn_agent", json!({"message": "PANIC later"}))
        .await;
    assert!(!spawned.is_error, "{}", spawned.content);
    let waited = h.wait(&main, "agent-2").await;
    assert_eq!(waited["status"]["agent-2"], "errored", "{waited}");
    assert_eq!(
        waited["details"]["agent-2"]["last_error"],
        "the child agent panicked"
    );
    assert_eq!(h.events.count("agent_started"), 2);
    assert_eq!(h.events.count("agent_ended"), 2);
    assert_eq!(
        h.supervisor.leases.spawned.available_permits(),
        4,
        "every slot came back"
    );
}

#[tokio::test]
async fn the_wall_clock_budget_stops_a_child_in_both_faces() {
    let h = harness(AgentLimits {
        timeout: Some(Duration::from_millis(100)),
        ..limits()
    });
    let main = h.caller(0);
    let output = h
        .call(
            &main,
            "Agent",
            json!({"description": "slow", "prompt": "SLOW work"}),
        )
        .await;
    assert!(output.is_error, "{}", output.content);
    assert!(
        output
            .content
            .contains("incomplete: budget (wall time over 0.1s)"),
        "{}",
        output.content
    );

    let spawned = h
        .call(&main, "spawn_agent", json!({"message": "SLOW too"}))
        .await;
    assert!(!spawned.is_error, "{}", spawned.content);
    let waited = h.wait(&main, "agent-2").await;
    assert_eq!(waited["status"]["agent-2"], "errored", "{waited}");
    assert_eq!(
        waited["details"]["agent-2"]["last_error"],
        "incomplete: budget (wall time over 0.1s)"
    );
    assert_eq!(h.events.count("agent_ended"), 2);
}

#[tokio::test]
async fn racing_for_the_last_slot_leaves_no_orphan_start_in_either_face() {
    let h = harness(AgentLimits {
        max_concurrent: 1,
        max_parallel: 1,
        max_depth: 2,
        timeout: Some(Duration::from_millis(200)),
        ..limits()
    });
    // A child (depth 1) never waits for a slot: of two racing calls one fails.
    let child = h.caller(1);
    let input = json!({"description": "race", "prompt": "SLOW race"});
    let (first, second) = tokio::join!(
        h.call(&child, "Agent", input.clone()),
        h.call(&child, "Agent", input)
    );
    let refused = [&first, &second]
        .iter()
        .filter(|output| {
            output
                .content
                .starts_with("subagent concurrency limit reached (1)")
        })
        .count();
    assert_eq!(refused, 1, "{}\n{}", first.content, second.content);
    assert_eq!(h.events.count("agent_started"), 1);
    assert_eq!(h.events.count("agent_ended"), 1);

    let main = h.caller(0);
    let (first, second) = tokio::join!(
        h.call(&main, "spawn_agent", json!({"message": "SLOW one"})),
        h.call(&main, "spawn_agent", json!({"message": "SLOW two"}))
    );
    let refused: Vec<&ToolOutput> = [&first, &second]
        .into_iter()
        .filter(|output| output.is_error)
        .collect();
    assert_eq!(refused.len(), 1, "{}\n{}", first.content, second.content);
    assert!(
        refused[0]
            .content
            .contains("subagent concurrency limit reached (1)")
    );
    assert_eq!(
        h.events.count("agent_started"),
        2,
        "no start for the refused spawn"
    );
}

#[tokio::test]
async fn a_thousand_spawn_and_close_cycles_keep_the_registry_flat() {
    let h = harness(limits());
    let main = h.caller(0);
    for idx in 1..=1000 {
        let spawned = h
            .call(
                &main,
                "spawn_agent",
                json!({"message": format!("task {idx}")}),
            )
            .await;
        assert!(!spawned.is_error, "{}", spawned.content);
        let id = format!("agent-{idx}");
        h.wait(&main, &id).await;
        let closed = h.call(&main, "close_agent", json!({"id": id})).await;
        assert!(!closed.is_error, "{}", closed.content);
        assert!(h.supervisor.registry.live() <= RETAINED_IDLE);
    }
    assert_eq!(h.supervisor.registry.live(), RETAINED_IDLE);
    // The oldest are gone; the newest are still addressable.
    assert_eq!(
        h.wait(&main, "agent-1").await["status"]["agent-1"],
        "not_found"
    );
    assert_eq!(
        h.wait(&main, "agent-1000").await["status"]["agent-1000"],
        "closed"
    );
    // Nothing a child holds keeps the supervisor alive: no cycle.
    let weak = Arc::downgrade(&h.supervisor);
    drop(main);
    drop(h);
    assert!(
        weak.upgrade().is_none(),
        "the supervisor outlived its session"
    );
}
