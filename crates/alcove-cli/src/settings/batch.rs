//! `[batch]`: where batch tasks (`alcove batch`, `spawn_batch`) and workflow agents run and the Slurm
//! runner's `srun` options. Plain values (a list replaces the one below
//! it); no environment variable. `alcove batch`'s flags win (`batch_cmd.rs`).

use serde::Deserialize;

/// `[batch]` in config.toml.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct BatchEntry {
    /// `srun --cpus-per-task` (default 1).
    pub(crate) cpus_per_task: Option<u32>,
    /// More `srun` options, e.g. ["--partition=short", "--mem=2G"].
    pub(crate) srun_options: Vec<String>,
    /// Where batch tasks and workflow agents run when no `--runner` says: inprocess, process or
    /// slurm (unset: process when `agents.command` is set, else inprocess).
    pub(crate) runner: Option<String>,
}
