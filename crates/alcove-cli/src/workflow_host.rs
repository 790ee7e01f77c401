//! The one adapter between a workflow's `agent()` and alcove's child
//! lifecycle: each call is a child started, awaited and cancelled through
//! the batch engine's `TaskRunner` seam (`ChildRunner`: slot, tree budget,
//! announce, the parent's rules and mode, sandbox, hooks, agent type,
//! model and effort, worktree, transcript, evidence, one end record).
//!
//! Everything alcove-specific a workflow touches is here: how a call
//! becomes a task, how the child's end record becomes `agent()`'s value,
//! where saved workflows are found. Re-point [`ChildHost::agent`] when the
//! child lifecycle changes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use alcove_core::batch::{Isolation, TaskJob, TaskOutcome, TaskRunner, TaskSpec};
use alcove_protocol::RunStatus;
use alcove_workflow::{AgentCall, AgentOutcome, Host, NullReason, RunEvent, Workflow};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What every workflow agent is told first: nobody answers it, and its last
/// message goes back to a script as data. Not part of the resume key.
const FRAMING: &str = "You are one agent of a workflow: a script started you, runs you without a person to \
answer questions, and takes your final message verbatim as data. Do the task below, then end \
with a final message that contains exactly what the task asks for.";

/// Runs a workflow's agents as children of the session's main agent.
pub(crate) struct ChildHost {
    pub(crate) runner: Arc<dyn TaskRunner>,
    pub(crate) run_id: String,
    pub(crate) dir: PathBuf,
    pub(crate) default_type: String,
    pub(crate) wall: Option<Duration>,
    pub(crate) saved: Vec<PathBuf>,
    pub(crate) workspace: PathBuf,
    pub(crate) events: Box<dyn Fn(RunEvent) + Send + Sync>,
}

#[async_trait::async_trait]
impl Host for ChildHost {
    async fn agent(&self, call: AgentCall, cancel: CancellationToken) -> AgentOutcome {
        if let Some(effort) = &call.effort
            && let Err(reason) = alcove_model::parse_effort(effort)
        {
            return AgentOutcome::Error {
                message: format!("agent(): effort `{effort}`: {reason}"),
                tokens: 0,
            };
        }
        let task = TaskSpec {
            id: format!("a{}", call.index),
            description: call
                .label
                .clone()
                .unwrap_or_else(|| call.prompt.chars().take(60).collect()),
            prompt: prompt_of(&call),
        };
        let job = TaskJob {
            batch: &self.run_id,
            task: &task,
            attempt: 1,
            agent_type: call.agent_type.as_deref().unwrap_or(&self.default_type),
            tokens: call.tokens,
            turns: None,
            wall: self.wall,
            isolation: if call.isolation.as_deref() == Some("worktree") {
                Isolation::Worktree
            } else {
                Isolation::Shared
            },
            cancel,
            dir: &self.dir,
            model: call.model.clone(),
            effort: call.effort.clone(),
        };
        let outcome = self.runner.run(job).await;
        outcome_of(&call, outcome)
    }

    fn event(&self, event: RunEvent) {
        (self.events)(event);
    }

    fn workflow_source(&self, name_or_path: &str) -> Result<String, String> {
        if name_or_path.ends_with(".js") || name_or_path.contains('/') {
            let path = self.workspace.join(name_or_path);
            return std::fs::read_to_string(&path)
                .map_err(|err| format!("workflow({name_or_path}): {}: {err}", path.display()));
        }
        saved_workflows(&self.saved)
            .into_iter()
            .find(|saved| {
                saved
                    .workflow
                    .as_ref()
                    .is_ok_and(|w| w.meta.name == name_or_path)
            })
            .and_then(|saved| saved.workflow.ok().map(|w| w.source))
            .ok_or_else(|| format!("workflow(): no saved workflow named `{name_or_path}`"))
    }
}

/// The child's one user message: the framing, the prompt, and with a schema
/// the shape its answer must have.
fn prompt_of(call: &AgentCall) -> String {
    let mut prompt = format!("{FRAMING}\n\n{}", call.prompt);
    if let Some(schema) = &call.schema {
        prompt.push_str(&format!(
            "\n\nYour final message must be one JSON value, and nothing else, that meets this JSON Schema:\n{schema}"
        ));
    }
    prompt
}

/// A child's end record as `agent()`'s value.
fn outcome_of(call: &AgentCall, outcome: TaskOutcome) -> AgentOutcome {
    let tokens = outcome.usage.budget_tokens();
    if let Some(reason) = outcome.refused {
        return AgentOutcome::Null {
            reason: NullReason::Budget,
            detail: reason,
            tokens,
        };
    }
    let detail = || {
        outcome
            .error
            .clone()
            .unwrap_or_else(|| outcome.first_line.clone())
    };
    match outcome.status {
        RunStatus::Completed => {}
        RunStatus::Aborted => {
            return AgentOutcome::Null {
                reason: NullReason::Cancelled,
                detail: detail(),
                tokens,
            };
        }
        RunStatus::Budget => {
            return AgentOutcome::Null {
                reason: NullReason::Budget,
                detail: detail(),
                tokens,
            };
        }
        RunStatus::Failed | RunStatus::MaxTurns => {
            return AgentOutcome::Null {
                reason: NullReason::Failed,
                detail: format!("{}: {}", outcome.status.as_str(), detail()),
                tokens,
            };
        }
    }
    let words = outcome.words.unwrap_or_default();
    if words.trim().is_empty() {
        return AgentOutcome::Null {
            reason: NullReason::Failed,
            detail: "the agent ended with no answer".to_owned(),
            tokens,
        };
    }
    if call.schema.is_none() {
        return AgentOutcome::Answer {
            value: Value::String(words),
            tokens,
        };
    }
    match serde_json::from_str::<Value>(json_text(&words)) {
        Ok(value) => AgentOutcome::Answer { value, tokens },
        Err(err) => AgentOutcome::Error {
            message: format!("agent(): the answer is not the JSON its schema asks for: {err}"),
            tokens,
        },
    }
}

/// The JSON inside a reply, without a Markdown fence around it.
fn json_text(words: &str) -> &str {
    let trimmed = words.trim();
    let Some(inner) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

/// A saved workflow file and what reading it gave.
pub(crate) struct Saved {
    pub(crate) path: PathBuf,
    pub(crate) workflow: Result<Workflow, String>,
}

/// The folders saved workflows live in, nearest first: the project's
/// `.alcove/workflows` and `.claude/workflows`, then the user's.
pub(crate) fn saved_folders(workspace: &Path, config_dir: &Path) -> Vec<PathBuf> {
    vec![
        workspace.join(".alcove/workflows"),
        workspace.join(".claude/workflows"),
        config_dir.join("workflows"),
    ]
}

/// Every `*.js` in `folders`; a name found twice keeps the nearest.
pub(crate) fn saved_workflows(folders: &[PathBuf]) -> Vec<Saved> {
    let mut found: Vec<Saved> = Vec::new();
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "js"))
            .collect();
        paths.sort();
        for path in paths {
            let workflow = std::fs::read_to_string(&path)
                .map_err(|err| err.to_string())
                .and_then(|source| Workflow::parse(&source));
            let name = workflow.as_ref().ok().map(|w| w.meta.name.clone());
            let shadowed = name.as_ref().is_some_and(|name| {
                found
                    .iter()
                    .any(|saved| saved.workflow.as_ref().is_ok_and(|w| &w.meta.name == name))
            });
            if !shadowed {
                found.push(Saved { path, workflow });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fenced_json_answer_is_unwrapped() {
        assert_eq!(json_text("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(json_text(" {\"a\": 1} "), "{\"a\": 1}");
    }
}
