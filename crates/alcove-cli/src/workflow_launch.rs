//! What the two ways into a workflow share — `alcove workflow run` and the
//! model's `Workflow` tool (`workflow_tool.rs`): the budget (its text, its
//! prices), the run
//! to resume and its args, the plan shown before anything runs, and the
//! run's folder (`<data dir>/workflows/<run_id>/`: script.js, journal.jsonl,
//! run.json) from its start to its end record.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use alcove_protocol::Usage;
use alcove_workflow::{
    JournalRecord, Limits, RunDir, RunEnd, RunRecord, Workflow, read_answers, read_run,
};
use serde_json::Value;

use crate::settings::Config;

/// A run's budget: tokens (every input and output token of its agents),
/// dollars (at their models' known prices), or both.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Budget {
    pub(crate) tokens: Option<u64>,
    pub(crate) usd: Option<f64>,
}

impl Budget {
    /// The budget an earlier run kept in its run.json.
    pub(crate) fn of(record: &RunRecord) -> Budget {
        Budget {
            tokens: record.budget,
            usd: record.budget_usd,
        }
    }
}

/// Prices a child's use in dollars: its model (`None`: the session's) and
/// its usage; `None` where the price is not known.
pub(crate) type PriceOf = dyn Fn(Option<&str>, &Usage) -> Option<f64> + Send + Sync;

/// The session's prices (`[pricing."provider/model"]`), when its own model
/// has one: a dollar budget can only be held then.
/// Whether a script at `real` (canonical) may be read: only one inside
/// the workspace or a saved-workflows folder, judged by where it really is
/// (path components, links followed), so a script reads no file alcove's
/// own tools could not.
pub(crate) fn script_readable(real: &Path, workspace: &Path, saved: &[PathBuf]) -> bool {
    real.starts_with(workspace)
        || workspace
            .canonicalize()
            .is_ok_and(|root| real.starts_with(root))
        || saved
            .iter()
            .filter_map(|folder| folder.canonicalize().ok())
            .any(|folder| real.starts_with(folder))
}

pub(crate) fn prices(config: &Config, model: &str) -> Option<Arc<PriceOf>> {
    config.pricing.get(model)?;
    let pricing = config.pricing.clone();
    let model = model.to_owned();
    Some(Arc::new(move |child: Option<&str>, usage: &Usage| {
        pricing
            .get(child.unwrap_or(&model))
            .map(|price| price.cost(usage))
    }))
}

/// Why a dollar budget cannot be held, if it cannot.
pub(crate) fn unpriced(
    budget: Budget,
    prices: Option<&Arc<PriceOf>>,
    model: &str,
) -> Option<String> {
    (budget.usd.is_some() && prices.is_none()).then(|| {
        format!(
            "a dollar budget needs the price of {model}: add [pricing.\"{model}\"] (dollars per \
             million tokens: input, output, cache_read, cache_write) to the config"
        )
    })
}

/// `tokens=N,usd=X` (either or both).
pub(crate) fn parse_budget(text: &str) -> Result<Budget, String> {
    let mut budget = Budget::default();
    for part in text
        .split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
    {
        match part.split_once('=') {
            Some(("tokens", value)) => {
                budget.tokens = Some(
                    value
                        .trim()
                        .parse::<u64>()
                        .map_err(|_| format!("--budget tokens={value}: not a whole number"))?,
                );
            }
            Some(("usd", value)) => {
                let usd = value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|usd| usd.is_finite() && *usd > 0.0)
                    .ok_or_else(|| format!("--budget usd={value}: not a positive amount"))?;
                budget.usd = Some(usd);
            }
            _ => return Err(format!("--budget {part}: use tokens=N and/or usd=X")),
        }
    }
    if budget == Budget::default() {
        return Err("--budget: give tokens=N and/or usd=X".to_owned());
    }
    Ok(budget)
}

/// An earlier run to resume: its record and folder. `id` must look like a
/// run id, so it cannot name a folder elsewhere.
pub(crate) fn earlier_run(data: &Path, id: &str) -> Result<(RunRecord, PathBuf), String> {
    let safe = id
        .strip_prefix("wf_")
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric()));
    if !safe {
        return Err(format!("{id}: not a workflow run id (wf_…)"));
    }
    let dir = data.join("workflows").join(id);
    Ok((read_run(&dir)?, dir))
}

/// The args a resumed run gets: its own; other args given are refused.
pub(crate) fn resumed_args(
    record: &RunRecord,
    given: Option<Value>,
) -> Result<Option<Value>, String> {
    let stored = (!record.args.is_null()).then(|| record.args.clone());
    if given.is_some() && given != stored {
        return Err("a resumed run keeps the run's own args; leave args out".to_owned());
    }
    Ok(stored)
}

/// What the run will do, before it does it: name, phases, every `agent(`
/// call site, the caps and the budget. `source` says where the script is.
pub(crate) fn plan(
    workflow: &Workflow,
    source: &str,
    limits: Limits,
    budget: Budget,
    resume: bool,
    runner: &str,
) -> String {
    let meta = &workflow.meta;
    let mut text = format!(
        "workflow {} — {}\n  script: {source}\n",
        meta.name, meta.description
    );
    if !meta.phases.is_empty() {
        text.push_str(&format!("  phases: {}\n", meta.phases.join(" → ")));
    }
    text.push_str(&format!(
        "  agent() call sites: {}\n",
        workflow.call_sites.len()
    ));
    for site in &workflow.call_sites {
        text.push_str(&format!("    line {}: {}\n", site.line, site.text));
    }
    text.push_str(&format!(
        "  caps: {} agents at once, {} per run, {} items per parallel/pipeline call\n",
        limits.concurrency, limits.max_agents, limits.max_items
    ));
    text.push_str(&format!("  agents run: {runner}\n"));
    match (budget.tokens, budget.usd) {
        (None, None) => text.push_str("  budget: none (the session's agent limits apply)\n"),
        (tokens, usd) => {
            let mut parts = Vec::new();
            if let Some(tokens) = tokens {
                parts.push(format!(
                    "{tokens} tokens (every input and output token of its agents)"
                ));
            }
            if let Some(usd) = usd {
                parts.push(format!("${usd:.2} (at the models' known prices)"));
            }
            text.push_str(&format!("  budget: {}\n", parts.join(" and ")));
        }
    }
    if resume {
        text.push_str("  resume: finished agents with unchanged prompts replay from the journal\n");
    }
    text
}

/// A run's folder, ready for its first agent.
pub(crate) struct OpenedRun {
    pub(crate) run_id: String,
    pub(crate) dir: PathBuf,
    pub(crate) run_dir: RunDir,
    /// The answers an earlier run journaled (empty for a new run).
    pub(crate) replay: HashMap<String, VecDeque<JournalRecord>>,
    /// run.json as written at the start (`running`).
    pub(crate) record: RunRecord,
}

/// What a run starts from.
pub(crate) struct RunStart<'a> {
    pub(crate) workflow: &'a Workflow,
    pub(crate) source: &'a str,
    /// The script's file, when it came from one.
    pub(crate) script_path: Option<&'a Path>,
    pub(crate) args: Option<Value>,
    pub(crate) budget: Budget,
    /// The run resumed: its record and folder.
    pub(crate) earlier: Option<(RunRecord, PathBuf)>,
}

/// Opens the run's folder (a new one under `data`, or the resumed run's),
/// writes its script and a `running` run.json.
pub(crate) fn open_run(data: &Path, start: RunStart<'_>) -> Result<OpenedRun, String> {
    let (run_id, dir, replay) = match start.earlier {
        Some((record, dir)) => {
            let replay = read_answers(&dir).unwrap_or_default();
            (record.run_id, dir, replay)
        }
        None => {
            let id = format!("wf_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
            let dir = data.join("workflows").join(&id);
            (id, dir, HashMap::new())
        }
    };
    let run_dir = RunDir::open(&dir)?;
    run_dir.write_script(start.source)?;
    let record = RunRecord {
        run_id: run_id.clone(),
        name: start.workflow.meta.name.clone(),
        script_path: start
            .script_path
            .map(|path| std::path::absolute(path).unwrap_or_else(|_| path.to_owned())),
        args: start.args.unwrap_or(Value::Null),
        budget: start.budget.tokens,
        budget_usd: start.budget.usd,
        status: "running".to_owned(),
        result: Value::Null,
        error: None,
        agents: Value::Null,
    };
    run_dir.write_run(&record)?;
    Ok(OpenedRun {
        run_id,
        dir,
        run_dir,
        replay,
        record,
    })
}

/// Writes the run's end into its run.json.
pub(crate) fn record_end(dir: &Path, record: &mut RunRecord, end: &RunEnd) -> Result<(), String> {
    record.status = end.status.as_str().to_owned();
    record.result = end.result.clone();
    record.error = end.error.clone();
    record.agents = serde_json::to_value(&end.agents).unwrap_or(Value::Null);
    RunDir::open(dir)?.write_run(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_and_run_ids_are_checked() {
        assert_eq!(
            parse_budget("tokens=400000"),
            Ok(Budget {
                tokens: Some(400_000),
                usd: None
            })
        );
        assert_eq!(
            parse_budget("tokens=10, usd=2.5"),
            Ok(Budget {
                tokens: Some(10),
                usd: Some(2.5)
            })
        );
        assert!(parse_budget("usd=-1").unwrap_err().contains("positive"));
        assert!(parse_budget("eur=3").unwrap_err().contains("usd=X"));
        assert!(
            parse_budget("tokens=lots")
                .unwrap_err()
                .contains("whole number")
        );
        let data = Path::new("/nowhere");
        for id in ["../etc", "wf_", "wf_../x", "run_1"] {
            assert!(
                earlier_run(data, id)
                    .unwrap_err()
                    .contains("not a workflow run id"),
                "{id}"
            );
        }
    }
}
