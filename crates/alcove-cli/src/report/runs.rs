//! Workflow runs as groups of lanes: which agents a run started, in which
//! phase, read from the typed records the agent that started the run wrote
//! (`workflow_started`, `workflow_phase`, `workflow_ended`, and its agents'
//! `agent_started` with `run` and `phase`), never from text.
//!
//! Apart from `read.rs` because a run is keyed by its id, not by agent:
//! its records and its agents' starts are gathered as they are read, and
//! its groups' figures are added up from the finished lanes.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::model::{self, Lane, PhaseGroup, WorkflowRun};

/// One run while the transcripts are read.
struct RunState {
    run: WorkflowRun,
    /// Its agents so far (a spawned agent's later submission is not new).
    members: HashSet<String>,
}

/// Every workflow run of a session, in the order they started.
#[derive(Default)]
pub(super) struct Runs {
    runs: Vec<RunState>,
}

impl Runs {
    /// Applies a `workflow_*` record written by `agent` at `ts`.
    pub(super) fn record(&mut self, agent: &str, kind: &str, ts: u64, event: &Value) {
        let text = |name: &str| event.get(name).and_then(Value::as_str);
        let count = |name: &str| {
            event
                .get(name)
                .and_then(Value::as_u64)
                .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        let Some(id) = text("run_id") else {
            return;
        };
        match kind {
            "workflow_started" if self.find(id).is_none() => {
                self.runs.push(RunState {
                    run: WorkflowRun {
                        id: id.to_owned(),
                        name: text("name").unwrap_or_default().to_owned(),
                        agent: agent.to_owned(),
                        status: "unfinished".to_owned(),
                        start: ts,
                        end: ts,
                        ..WorkflowRun::default()
                    },
                    members: HashSet::new(),
                });
            }
            "workflow_phase" => {
                if let (Some(run), Some(title)) = (self.find(id), text("title")) {
                    group(&mut run.run, Some(title));
                    run.run.end = run.run.end.max(ts);
                }
            }
            "workflow_ended" => {
                if let Some(state) = self.find(id) {
                    let run = &mut state.run;
                    run.status = text("status").unwrap_or("unknown").to_owned();
                    run.agents = count("agents");
                    run.nulls = count("nulls");
                    run.summary = model::capped(text("summary").unwrap_or_default(), 400);
                    run.tokens = event.get("tokens").and_then(Value::as_u64).unwrap_or(0);
                    run.usd = event.get("usd").and_then(Value::as_f64);
                    run.error = text("error").map(model::text);
                    run.end = run.end.max(ts);
                }
            }
            _ => {}
        }
    }

    /// Applies an `agent_started`: a child of a run this session started
    /// joins its phase's group (a batch's tasks name a run that is not a
    /// workflow's and stay as they are).
    pub(super) fn agent_started(&mut self, event: &Value, ts: u64) {
        let text = |name: &str| event.get(name).and_then(Value::as_str);
        let (Some(id), Some(child)) = (text("run"), text("child")) else {
            return;
        };
        let Some(state) = self.find(id) else {
            return;
        };
        if state.members.insert(child.to_owned()) {
            group(&mut state.run, text("phase"))
                .agents
                .push(child.to_owned());
            state.run.end = state.run.end.max(ts);
        }
    }

    /// The runs with each group's figures added up from the finished
    /// `lanes`: an agent's own status, and the tokens of its lane and of
    /// every lane under it (its own children).
    pub(super) fn finish(self, lanes: &[Lane]) -> Vec<WorkflowRun> {
        let by_path: HashMap<&str, &Lane> = lanes
            .iter()
            .map(|lane| (lane.path.as_str(), lane))
            .collect();
        let subtree_tokens = |path: &str| -> u64 {
            let below = format!("{path}/");
            lanes
                .iter()
                .filter(|lane| lane.path == path || lane.path.starts_with(&below))
                .map(|lane| lane.tokens.total())
                .sum()
        };
        let mut runs: Vec<WorkflowRun> = self.runs.into_iter().map(|state| state.run).collect();
        for run in &mut runs {
            for phase in &mut run.phases {
                for path in &phase.agents {
                    match by_path.get(path.as_str()).map(|lane| lane.status.as_str()) {
                        Some("completed") => {}
                        Some("unfinished" | "interrupted") | None => phase.unfinished += 1,
                        Some(_) => phase.not_completed += 1,
                    }
                    phase.tokens += subtree_tokens(path);
                }
            }
        }
        runs
    }

    fn find(&mut self, id: &str) -> Option<&mut RunState> {
        self.runs.iter_mut().find(|state| state.run.id == id)
    }
}

/// The group of `run` titled `title` (`None`: no phase), added last when
/// it is new: groups keep the order their phases appeared in.
fn group<'a>(run: &'a mut WorkflowRun, title: Option<&str>) -> &'a mut PhaseGroup {
    let index = match run
        .phases
        .iter()
        .position(|phase| phase.title.as_deref() == title)
    {
        Some(index) => index,
        None => {
            run.phases.push(PhaseGroup {
                title: title.map(str::to_owned),
                ..PhaseGroup::default()
            });
            run.phases.len() - 1
        }
    };
    &mut run.phases[index]
}
