//! Where delegated tasks run when not in this process: the one builder of
//! the process and Slurm runners (`TaskCommand`s) that `alcove batch
//! --runner`, `alcove workflow run --runner`, the model's `spawn_batch` and
//! its `Workflow` tool (through `[batch] runner`, `Supervisor::task_command`)
//! all share.
//!
//! A runner is only the layer below the child lifecycle: each task is still
//! a child of the session's agent (slot, tree budget, announce, one end
//! record); the command says which process runs it (`alcove exec --json -`
//! with the parent's model, mode, rules and overrides passed down, or
//! `agents.command`), the Slurm runner wraps that in `srun`.

use std::sync::Arc;

use alcove_core::BatchRunnerFactory;
use alcove_core::batch::{CommandRunner, SlurmOptions, SlurmRunner, TaskCommand, shell_quote};
use anyhow::Context;
use clap::ValueEnum;

use crate::settings::Config;
use crate::{CommonArgs, UsageError};

/// Where tasks run: `--runner` and `[batch] runner`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RunnerKind {
    /// A child of this process.
    Inprocess,
    /// A process of its own: `agents.command`, or this alcove's `exec --json -`.
    Process,
    /// A Slurm job step (`srun … alcove exec --json -`).
    Slurm,
}

impl RunnerKind {
    /// `[batch] runner`, when set.
    pub(crate) fn configured(config: &Config) -> Result<Option<RunnerKind>, UsageError> {
        match config.batch.runner.as_deref() {
            None => Ok(None),
            Some("inprocess") => Ok(Some(RunnerKind::Inprocess)),
            Some("process") => Ok(Some(RunnerKind::Process)),
            Some("slurm") => Ok(Some(RunnerKind::Slurm)),
            Some(other) => Err(UsageError(format!(
                "batch.runner `{other}`: use inprocess, process or slurm"
            ))),
        }
    }
}

/// Where tasks run when no `--runner` says: `[batch] runner`, else as
/// processes when `agents.command` is set (spawned agents run there too),
/// else in this process: the one rule for `alcove batch`, `alcove workflow
/// run`, and (through [`model_batch_runner`]) the model's `spawn_batch` and
/// `Workflow`.
pub(crate) fn default_kind(config: &Config) -> Result<RunnerKind, UsageError> {
    Ok(match RunnerKind::configured(config)? {
        Some(kind) => kind,
        None if config.agents.command.is_some() => RunnerKind::Process,
        None => RunnerKind::Inprocess,
    })
}

/// The command a task of `kind` runs as; `None` in this process.
pub(crate) fn task_command(
    common: &CommonArgs,
    config: &Config,
    kind: RunnerKind,
) -> anyhow::Result<Option<Arc<dyn TaskCommand>>> {
    Ok(match kind {
        RunnerKind::Inprocess => None,
        _ => Some(Runners::new(common, config)?.build(kind)),
    })
}

/// What the process and Slurm runners are built from.
#[derive(Clone)]
struct Runners {
    command: String,
    slurm: SlurmOptions,
}

impl Runners {
    fn new(common: &CommonArgs, config: &Config) -> anyhow::Result<Runners> {
        let alcove = alcove_exec(common)?;
        // `ALCOVE_SUBAGENT_COMMAND` is in `config.agents.command` (`settings::agents::ENV`).
        let command = config
            .agents
            .command
            .clone()
            .unwrap_or_else(|| alcove.clone());
        Ok(Runners {
            command,
            slurm: SlurmOptions {
                alcove,
                cpus_per_task: config.batch.cpus_per_task.unwrap_or(1),
                extra: config.batch.srun_options.clone(),
            },
        })
    }

    /// The command a process or Slurm task runs as.
    fn build(&self, kind: RunnerKind) -> Arc<dyn TaskCommand> {
        match kind {
            RunnerKind::Slurm => Arc::new(SlurmRunner::new(self.slurm.clone())),
            RunnerKind::Process | RunnerKind::Inprocess => {
                Arc::new(CommandRunner::new(self.command.clone()))
            }
        }
    }
}

/// The runner of the model's `spawn_batch` tasks and `Workflow` agents, by
/// the one rule every batch of children follows ([`default_kind`]); `None`
/// in this process.
pub(crate) fn model_batch_runner(
    common: &CommonArgs,
    config: &Config,
) -> Result<Option<Arc<BatchRunnerFactory>>, UsageError> {
    let kind = match default_kind(config)? {
        RunnerKind::Inprocess => return Ok(None),
        kind => kind,
    };
    let runners =
        Runners::new(common, config).map_err(|err| UsageError(format!("batch.runner: {err:#}")))?;
    Ok(Some(Arc::new(move || runners.build(kind))))
}

/// `<this alcove> exec --json -`, with the parent's model, permission mode,
/// rules and config overrides passed down.
fn alcove_exec(common: &CommonArgs) -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("cannot find the alcove executable")?;
    let mut words = vec![
        shell_quote(&exe.display().to_string()),
        "exec".into(),
        "--json".into(),
    ];
    if let Some(model) = &common.model {
        words.extend(["--model".into(), shell_quote(model)]);
    }
    if let Some(mode) = &common.permission_mode {
        words.extend(["--permission-mode".into(), shell_quote(mode)]);
    }
    for rule in &common.allow {
        words.extend(["--allow".into(), shell_quote(rule)]);
    }
    for rule in &common.deny {
        words.extend(["--deny".into(), shell_quote(rule)]);
    }
    for pair in &common.overrides {
        words.extend(["-c".into(), shell_quote(pair)]);
    }
    // The user trusted the folder for this run: so for its tasks.
    if common.trust {
        words.push("--trust".into());
    }
    words.push("-".into());
    Ok(words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_reach_the_remote_alcove_quoted() {
        let common = CommonArgs {
            model: None,
            cd: None,
            permission_mode: Some("plan".into()),
            overrides: vec![],
            allow: vec![],
            deny: vec!["Bash(rm:*)".into()],
            parent_policy: None,
            sandbox: None,
            trust: false,
            dangerously_skip_permissions: false,
            append_system_prompt: None,
            max_turns: None,
        };
        let command = alcove_exec(&common).unwrap();
        assert!(
            command.ends_with(" exec --json --permission-mode plan --deny 'Bash(rm:*)' -"),
            "{command}"
        );
    }
}
