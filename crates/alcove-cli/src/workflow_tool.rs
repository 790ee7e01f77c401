//! The model's `Workflow` tool: a workflow script run in the background
//! with the calling agent as every `agent()`'s parent.
//!
//! It is a front-end tool in the session's pool, like `WebFetch` or
//! `Skill`, so its calls take the one dispatch path: the gate decides it as
//! a command (`Access::Execute`: `--allow Workflow` or bypassPermissions
//! runs it, the default mode asks, plan mode refuses), hooks see it, and
//! the approval request's summary is the run's plan — name, phases,
//! `agent()` call sites, caps, budget — read from the script before
//! anything runs. It lives here and not in alcove-core because the engine
//! (alcove-workflow) and its adapter to the child lifecycle
//! (`workflow_host.rs`) do; the core only learns the run's id
//! (`HostRuns`), so `wait` and `close_agent` address it as a batch.
//!
//! The call returns at once with the run's id; the run goes on as a task
//! hanging off the caller's run (interrupting the caller stops it). Its end
//! is written to run.json, left as a notice for the caller, and wakes every
//! `wait` on it. The JavaScript engine is built only then, on the run's own
//! thread (`alcove_workflow::run`): offering the tool costs its definition.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use alcove_core::batch::TaskCommand;
use alcove_core::{AgentScope, Supervisor};
use alcove_protocol::{Schema, ToolSpec};
use alcove_tools::{Access, Invocation, ScopedTool, ToolContext, ToolOutput, Workspace};
use alcove_workflow::{Limits, RunEnd, RunOptions, RunRecord, Workflow};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::workflow_host::{ChildHost, runner_line, saved_workflow};
use crate::workflow_launch::{self, Budget, OpenedRun, PriceOf, RunStart};
use crate::workflow_progress::WorkflowRun;

/// The tool's name.
pub(crate) const WORKFLOW: &str = "Workflow";

const DESCRIPTION: &str = "Run a workflow: a JavaScript program that orchestrates subagents, so \
that many agents' intermediate results stay in script variables and only the script's return \
value comes back to you. Globals: agent(prompt, {label, phase, schema, model, effort, isolation: \
'worktree', agentType}) runs one subagent and resolves to its final text (with a JSON Schema \
`schema`, to the object it submits), or null when it failed; parallel([() => agent(…), …]) runs \
thunks at once and waits for all (a thunk that throws gives null); pipeline(items, stage, …) runs \
each item through the stages, stage(previous, item, index); phase(title); log(message); args; \
budget {total, spent(), remaining()}; workflow(name, args). The script starts with `export const \
meta = { name: '…', description: '…' }` (a plain literal), then plain JavaScript with top-level \
await, and `return`s the result. Date.now(), Math.random() and new Date() are refused; there is no \
file system, network or require. Give exactly one of script, scriptPath or name (or \
resumeFromRunId alone). Returns at once with a run_id: `wait` with ids [run_id] returns the \
result (you are also notified when it ends); `close_agent` with the run_id stops it.";

const INPUT_SCHEMA: &str = r#"{"type":"object","properties":{"script":{"type":"string","description":"The script's source."},"scriptPath":{"type":"string","description":"A .js file in the workspace holding the script."},"name":{"type":"string","description":"A saved workflow's meta.name."},"args":{"description":"The script's `args` (any JSON value)."},"resumeFromRunId":{"type":"string","description":"An earlier run (wf_…) to resume: finished agents with unchanged prompts replay, the rest run, with the run's own args."},"budget":{"type":"object","properties":{"tokens":{"type":"integer","description":"Every input and output token of the run's agents."},"usd":{"type":"number","description":"Dollars, at the models' known prices."}},"additionalProperties":false}},"additionalProperties":false}"#;

/// The arguments, as the model writes them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct WorkflowInput {
    #[serde(default)]
    script: Option<String>,
    #[serde(default)]
    script_path: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    resume_from_run_id: Option<String>,
    #[serde(default)]
    budget: Option<BudgetInput>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetInput {
    #[serde(default)]
    tokens: Option<u64>,
    #[serde(default)]
    usd: Option<f64>,
}

impl BudgetInput {
    fn budget(&self) -> Budget {
        Budget {
            tokens: self.tokens,
            usd: self.usd,
        }
    }
}

/// A checked call: the script read and checked, its plan shown.
pub(crate) struct WorkflowCall {
    workflow: Workflow,
    source: String,
    script_path: Option<PathBuf>,
    args: Option<Value>,
    budget: Budget,
    earlier: Option<(RunRecord, PathBuf)>,
    limits: Limits,
    /// Where its agents run (`None`: in this process).
    command: Option<Arc<dyn TaskCommand>>,
}

/// The tool, one per session.
pub(crate) struct WorkflowTool {
    supervisor: Weak<Supervisor>,
    /// The data dir: runs go in its `workflows/`.
    data: PathBuf,
    /// The saved-workflow folders the folder's trust allows.
    saved: Vec<PathBuf>,
    /// The session's model and its prices (when known), for dollar budgets.
    model: String,
    prices: Option<Arc<PriceOf>>,
    spec: ToolSpec,
}

impl WorkflowTool {
    /// The tool for a session whose runs go under `data` and whose saved
    /// workflows are in `saved`.
    pub(crate) fn new(
        supervisor: &Arc<Supervisor>,
        data: &Path,
        saved: Vec<PathBuf>,
        (model, prices): (String, Option<Arc<PriceOf>>),
    ) -> Self {
        WorkflowTool {
            supervisor: Arc::downgrade(supervisor),
            data: data.to_owned(),
            saved,
            model,
            prices,
            spec: ToolSpec {
                name: WORKFLOW.to_owned(),
                description: DESCRIPTION.to_owned(),
                input_schema: Schema::from_json(INPUT_SCHEMA).unwrap_or_else(|| json!({}).into()),
            },
        }
    }

    /// How many agents a run of this session's runs at once: the spawned
    /// agents' slots less the one kept for the caller's own `spawn_agent`
    /// (as batches keep it), at most the dialect's 16.
    fn limits(&self) -> Limits {
        let slots = self
            .supervisor
            .upgrade()
            .map_or(1, |supervisor| supervisor.limits().max_concurrent);
        let defaults = Limits::default();
        Limits {
            concurrency: slots.saturating_sub(1).clamp(1, defaults.concurrency),
            ..defaults
        }
    }

    /// The script the call names, where it came from, and its file.
    fn source(
        &self,
        input: &WorkflowInput,
        earlier: Option<&(RunRecord, PathBuf)>,
        workspace: &Workspace,
    ) -> Result<(String, String, Option<PathBuf>), String> {
        let given = [
            input.script.is_some(),
            input.script_path.is_some(),
            input.name.is_some(),
        ];
        match (given.iter().filter(|given| **given).count(), earlier) {
            (0, Some((_, dir))) => {
                let path = dir.join("script.js");
                let source = std::fs::read_to_string(&path)
                    .map_err(|err| format!("{}: {err}", path.display()))?;
                return Ok((source, format!("the script of {}", dir.display()), None));
            }
            (1, _) => {}
            _ => {
                return Err(
                    "give exactly one of script, scriptPath and name (or resumeFromRunId alone)"
                        .to_owned(),
                );
            }
        }
        if let Some(script) = &input.script {
            return Ok((script.clone(), "given inline".to_owned(), None));
        }
        if let Some(file) = &input.script_path {
            let path = workspace.resolve(file);
            let real = path
                .canonicalize()
                .map_err(|err| format!("scriptPath {file}: {err}"))?;
            // A script is read only where alcove's own tools read without
            // asking: the workspace or a saved-workflows folder, judged by
            // where the file really is (links followed).
            if !workflow_launch::script_readable(&real, workspace.root(), &self.saved) {
                return Err(format!(
                    "scriptPath {file}: {} is outside the workspace and the saved-workflows folders",
                    real.display()
                ));
            }
            let source = std::fs::read_to_string(&real)
                .map_err(|err| format!("scriptPath {file}: {err}"))?;
            return Ok((source, workspace.display(&real), Some(real)));
        }
        let name = input.name.as_deref().unwrap_or_default();
        saved_workflow(&self.saved, name)
            .map(|(path, workflow)| (workflow.source, path.display().to_string(), Some(path)))
            .ok_or_else(|| format!("no saved workflow named `{name}`"))
    }
}

#[async_trait::async_trait]
impl ScopedTool<AgentScope> for WorkflowTool {
    type Input = WorkflowInput;
    type Call = WorkflowCall;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        // It starts agents that run commands and edit files unattended:
        // decided like a command.
        Access::Execute
    }

    fn concurrency_safe(&self) -> bool {
        false
    }

    fn inspect(
        &self,
        input: WorkflowInput,
        workspace: &Workspace,
    ) -> Result<(Invocation, WorkflowCall), String> {
        let fail = |reason: String| format!("Workflow failed: {reason}");
        let earlier = input
            .resume_from_run_id
            .as_deref()
            .map(|id| workflow_launch::earlier_run(&self.data, id))
            .transpose()
            .map_err(|err| fail(format!("resumeFromRunId {err}")))?;
        let (source, shown, script_path) = self
            .source(&input, earlier.as_ref(), workspace)
            .map_err(fail)?;
        let workflow = Workflow::parse(&source).map_err(|err| fail(format!("{shown}: {err}")))?;
        let given = input.budget.as_ref().map(BudgetInput::budget);
        let (args, budget) = match &earlier {
            Some((record, _)) => (
                workflow_launch::resumed_args(record, input.args).map_err(fail)?,
                given.unwrap_or_else(|| Budget::of(record)),
            ),
            None => (input.args, given.unwrap_or_default()),
        };
        if let Some(reason) = workflow_launch::unpriced(budget, self.prices.as_ref(), &self.model) {
            return Err(fail(reason));
        }
        let limits = self.limits();
        // Where its agents run: `[batch] runner`, as for `spawn_batch`.
        let command = self
            .supervisor
            .upgrade()
            .and_then(|supervisor| supervisor.task_command());
        let plan = workflow_launch::plan(
            &workflow,
            &shown,
            limits,
            budget,
            earlier.is_some(),
            &runner_line(command.as_ref()),
        );
        let invocation = Invocation {
            summary: plan.trim_end().to_owned(),
            paths: Vec::new(),
            command: None,
        };
        let call = WorkflowCall {
            workflow,
            source,
            script_path,
            args,
            budget,
            earlier,
            limits,
            command,
        };
        Ok((invocation, call))
    }

    async fn call(
        &self,
        call: WorkflowCall,
        context: &ToolContext,
        scope: &AgentScope,
    ) -> ToolOutput {
        match self.start(call, context, scope) {
            Ok(view) => ToolOutput::ok(serde_json::to_string_pretty(&view).unwrap_or_default()),
            Err(reason) => ToolOutput::error(format!("Workflow failed: {reason}")),
        }
    }
}

alcove_tools::scoped_tool!(WorkflowTool, AgentScope);

impl WorkflowTool {
    /// Opens the run's folder, starts the run as a task and registers it.
    fn start(
        &self,
        call: WorkflowCall,
        context: &ToolContext,
        scope: &AgentScope,
    ) -> Result<Value, String> {
        let supervisor = self
            .supervisor
            .upgrade()
            .ok_or_else(|| "the session is closing; no agent can start".to_owned())?;
        let caller = scope.run();
        if caller.depth >= supervisor.limits().max_depth {
            return Err(format!(
                "its agents would nest deeper than the session allows (max {})",
                supervisor.limits().max_depth
            ));
        }
        // Resuming a run that is still going would start a second run on
        // its folder and journal.
        if let Some(id) = call
            .earlier
            .as_ref()
            .and_then(|(_, dir)| dir.file_name())
            .and_then(|name| name.to_str())
            && supervisor.host_runs().is_running(id)
        {
            return Err(format!(
                "run {id} is still running: wait for it, or close it with close_agent, before resuming it"
            ));
        }
        if let Some(path) = &call.script_path
            && context.hidden.hides(path)
        {
            return Err(format!("reading {} is denied", path.display()));
        }
        let WorkflowCall {
            workflow,
            source,
            script_path,
            args,
            budget,
            earlier,
            limits,
            command,
        } = call;
        let OpenedRun {
            run_id,
            dir,
            run_dir,
            replay,
            mut record,
        } = workflow_launch::open_run(
            &self.data,
            RunStart {
                workflow: &workflow,
                source: &source,
                script_path: script_path.as_deref(),
                args: args.clone(),
                budget,
                earlier,
            },
        )?;
        // The run hangs off the caller's run: interrupting it stops the run.
        let cancel = caller.cancel.child_token();
        let mut parent = caller.clone();
        parent.cancel = cancel.clone();
        let name = workflow.meta.name.clone();
        let run = Arc::new(WorkflowRun::new(name.clone(), cancel.clone()));
        let observed = run.clone();
        let host = Arc::new(ChildHost {
            supervisor: supervisor.clone(),
            runtime: scope.runtime().clone(),
            parent,
            run_id: run_id.clone(),
            dir: dir.clone(),
            saved: self.saved.clone(),
            events: Box::new(move |event| observed.note(event)),
            prices: self.prices.clone(),
            spent_usd: Mutex::default(),
            command,
        });
        supervisor.host_runs().insert(&run_id, run.clone());
        let options = RunOptions {
            args,
            budget: budget.tokens,
            budget_usd: budget.usd,
            limits,
            cancel,
            dir: Some(run_dir),
            replay,
        };
        let inbox = scope.runtime().inbox.clone();
        let caller_path = caller.path.clone();
        let ended_id = run_id.clone();
        let ended_dir = dir.clone();
        let sites = workflow.call_sites.len();
        tokio::spawn(async move {
            let end = host.run(&workflow, options).await;
            let written = workflow_launch::record_end(&ended_dir, &mut record, &end);
            let notice = format!(
                "workflow {ended_id} {}: {}",
                end.status.as_str(),
                first_line(&end)
            );
            // The notice is left before the run reads as ended: a `wait`
            // that sees the end finds the notice too.
            inbox.push(&caller_path, notice);
            run.finish(end, written.err());
            supervisor.host_runs().ended();
        });
        Ok(json!({
            "run_id": run_id,
            "status": "running",
            "name": name,
            "agent_call_sites": sites,
            "max_concurrent": limits.concurrency,
            "budget_tokens": budget.tokens,
            "budget_usd": budget.usd,
            "dir": dir,
            "next": format!("call wait with ids [\"{run_id}\"] to collect its result"),
        }))
    }
}

/// The end's first line: the result's, or the error's.
fn first_line(end: &RunEnd) -> String {
    let text = match (&end.result, &end.error) {
        (Value::String(text), _) => text.clone(),
        (Value::Null, Some(error)) => error.clone(),
        (value, _) => value.to_string(),
    };
    crate::output::first_line(&text)
}
