//! `[batch]`: where the model's `spawn_batch` tasks and workflow agents run and the Slurm
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
    /// Where the model's `spawn_batch` tasks and workflow agents run: inprocess (default), process or slurm.
    pub(crate) runner: Option<String>,
}
