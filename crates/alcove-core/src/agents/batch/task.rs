//! What a batch is made of: tasks read from a list or a JSONL file, their
//! states, and the batch's budget.
//!
//! Bad input is refused with the line and field at fault, before anything
//! runs: a batch either starts whole or not at all.

use std::collections::HashSet;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Task ids longer than this are refused (they name files and Slurm jobs).
const MAX_ID_CHARS: usize = 64;
/// Descriptions derived from a prompt keep this many chars.
const DESCRIPTION_CHARS: usize = 60;

/// One task as written by the model or the user.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskInput {
    /// A short id (letters, digits, `.`, `_`, `-`); default `task-<n>`.
    #[serde(default)]
    pub(crate) id: Option<String>,
    /// A short (3-5 word) description; default the prompt's first line.
    #[serde(default)]
    pub(crate) description: Option<String>,
    /// The task: self-contained, with the goal, scope and what to report.
    pub(crate) prompt: String,
}

/// A task ready to queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSpec {
    /// Unique in its batch; names its child, transcript and Slurm job.
    pub id: String,
    /// What the summary table shows.
    pub description: String,
    /// The child's one user message.
    pub prompt: String,
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Waiting for a slot.
    Queued,
    /// A child is working on it.
    Running,
    /// The child finished and said so.
    Completed,
    /// The child or its runner failed.
    Failed,
    /// Stopped by its turn cap, token or wall-clock budget.
    CutShort,
    /// Never started: the batch's budget was used up.
    #[serde(rename = "refused_budget")]
    Refused,
    /// Stopped or never started because the batch was cancelled.
    Cancelled,
    /// Stopped because the model provider refused the session for a reason
    /// no retry heals (a bad key, no quota, an unknown model).
    Halted,
    /// Never started: the provider had refused the session before its turn
    /// came (the task is as it was, and runs again on a rerun).
    NotRun,
}

impl TaskState {
    /// The name used in results.jsonl, tables and counts.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Queued => "queued",
            TaskState::Running => "running",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::CutShort => "cut_short",
            TaskState::Refused => "refused_budget",
            TaskState::Cancelled => "cancelled",
            TaskState::Halted => "halted",
            TaskState::NotRun => "not_run",
        }
    }

    /// Whether the task is over (for this attempt).
    pub fn is_final(self) -> bool {
        !matches!(self, TaskState::Queued | TaskState::Running)
    }
}

/// What the whole batch, and each of its tasks, may use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchBudget {
    /// Tokens (input plus output) for the whole batch; tasks not started
    /// when they are used up are refused.
    #[serde(default)]
    pub tokens: Option<u64>,
    /// Model turns for the whole batch.
    #[serde(default)]
    pub turns: Option<u64>,
    /// Tokens one task may use.
    #[serde(default)]
    pub task_tokens: Option<u64>,
    /// Model turns one task may make.
    #[serde(default)]
    pub task_turns: Option<u32>,
    /// Wall-clock seconds one task may run (also a Slurm step's `--time`).
    #[serde(default)]
    pub task_secs: Option<u64>,
}

impl BatchBudget {
    /// Parses `tokens=200000,turns=500,task_tokens=20000,task_turns=10,task_secs=600`.
    pub fn parse(text: &str) -> Result<BatchBudget, String> {
        let mut budget = BatchBudget::default();
        for part in text
            .split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
        {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("budget `{part}`: write key=value"))?;
            let number: u64 = value.trim().parse().map_err(|_| {
                format!("budget `{part}`: `{}` is not a whole number", value.trim())
            })?;
            if number == 0 {
                return Err(format!("budget `{part}`: must be greater than zero"));
            }
            match key.trim() {
                "tokens" => budget.tokens = Some(number),
                "turns" => budget.turns = Some(number),
                "task_tokens" => budget.task_tokens = Some(number),
                "task_turns" => {
                    budget.task_turns = Some(
                        u32::try_from(number).map_err(|_| format!("budget `{part}`: too large"))?,
                    )
                }
                "task_secs" => budget.task_secs = Some(number),
                other => {
                    return Err(format!(
                        "budget: unknown key `{other}`; use tokens, turns, task_tokens, task_turns or task_secs"
                    ));
                }
            }
        }
        Ok(budget)
    }

    /// A task's wall-clock budget.
    pub fn task_wall(&self) -> Option<Duration> {
        self.task_secs.map(Duration::from_secs)
    }
}

/// Tasks from JSONL text (one `{id?, description?, prompt}` per line; blank
/// lines skipped). Errors name the line.
pub fn parse_tasks_jsonl(text: &str) -> Result<Vec<TaskSpec>, String> {
    let mut inputs = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let input: TaskInput =
            serde_json::from_str(line).map_err(|err| format!("line {}: {err}", number + 1))?;
        inputs.push((format!("line {}", number + 1), input));
    }
    build_tasks(inputs)
}

/// Tasks from a list the model passed.
pub(crate) fn tasks_from_list(list: Vec<TaskInput>) -> Result<Vec<TaskSpec>, String> {
    build_tasks(
        list.into_iter()
            .enumerate()
            .map(|(index, input)| (format!("tasks[{index}]"), input))
            .collect(),
    )
}

fn build_tasks(inputs: Vec<(String, TaskInput)>) -> Result<Vec<TaskSpec>, String> {
    if inputs.is_empty() {
        return Err("the batch has no tasks".to_owned());
    }
    let mut seen = HashSet::new();
    let mut tasks = Vec::with_capacity(inputs.len());
    for (index, (place, input)) in inputs.into_iter().enumerate() {
        let prompt = input.prompt.trim().to_owned();
        if prompt.is_empty() {
            return Err(format!("{place}: `prompt` must not be empty"));
        }
        let id = match input.id {
            Some(id) => {
                check_id(&id).map_err(|reason| format!("{place}: {reason}"))?;
                id
            }
            None => format!("task-{}", index + 1),
        };
        if !seen.insert(id.clone()) {
            return Err(format!("{place}: task id `{id}` is used twice"));
        }
        let description = input
            .description
            .map(|text| text.trim().to_owned())
            .filter(|text| !text.is_empty())
            .unwrap_or_else(|| {
                prompt
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take(DESCRIPTION_CHARS)
                    .collect()
            });
        tasks.push(TaskSpec {
            id,
            description,
            prompt,
        });
    }
    Ok(tasks)
}

fn check_id(id: &str) -> Result<(), String> {
    let valid = !id.is_empty()
        && id.chars().count() <= MAX_ID_CHARS
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "task id `{id}` must be 1-{MAX_ID_CHARS} letters, digits, `.`, `_` or `-` (not starting with `.`)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_get_default_ids_and_descriptions() {
        let tasks = parse_tasks_jsonl(
            "{\"prompt\": \"audit repo a\\nsecond line\"}\n\n{\"id\": \"b\", \"description\": \"B\", \"prompt\": \"x\"}\n",
        )
        .unwrap();
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[0].id, "task-1");
        assert_eq!(tasks[0].description, "audit repo a");
        assert_eq!(tasks[1].id, "b");
        assert_eq!(tasks[1].description, "B");
    }

    #[test]
    fn bad_tasks_are_refused_with_their_line() {
        let err = parse_tasks_jsonl("{\"prompt\": \"ok\"}\nnot json\n").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        let err = parse_tasks_jsonl("{\"prompt\": \"  \"}").unwrap_err();
        assert_eq!(err, "line 1: `prompt` must not be empty");
        let err = parse_tasks_jsonl(
            "{\"id\": \"a\", \"prompt\": \"x\"}\n{\"id\": \"a\", \"prompt\": \"y\"}",
        )
        .unwrap_err();
        assert_eq!(err, "line 2: task id `a` is used twice");
        let err = parse_tasks_jsonl("{\"id\": \"../x\", \"prompt\": \"x\"}").unwrap_err();
        assert!(err.contains("task id `../x` must be"), "{err}");
        let err = parse_tasks_jsonl("{\"prompt\": \"x\", \"promt\": 1}").unwrap_err();
        assert!(err.contains("unknown field `promt`"), "{err}");
        assert_eq!(
            parse_tasks_jsonl("\n\n").unwrap_err(),
            "the batch has no tasks"
        );
    }

    #[test]
    fn budgets_parse_and_bad_ones_are_named() {
        let budget = BatchBudget::parse("tokens=1000, task_secs=60,turns=9").unwrap();
        assert_eq!(budget.tokens, Some(1000));
        assert_eq!(budget.turns, Some(9));
        assert_eq!(budget.task_wall(), Some(Duration::from_secs(60)));
        assert!(
            BatchBudget::parse("tokens")
                .unwrap_err()
                .contains("key=value")
        );
        assert!(
            BatchBudget::parse("tokens=-1")
                .unwrap_err()
                .contains("not a whole number")
        );
        assert!(
            BatchBudget::parse("tokens=0")
                .unwrap_err()
                .contains("greater than zero")
        );
        assert!(
            BatchBudget::parse("money=3")
                .unwrap_err()
                .contains("unknown key `money`")
        );
    }
}
