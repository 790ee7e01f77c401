//! Batch fan-out: hundreds of delegated tasks in one operation — queued,
//! budgeted, resumable — on this machine or a Slurm cluster.
//!
//! A batch is the supervisor at scale: a queue (`engine`) in front of the
//! same slots and the same child-building path, behind one seam
//! (`task_runner::TaskRunner`) that decides where a child runs: in this process
//! (`ChildRunner`), or, below the same child lifecycle, through a command
//! (`process::CommandRunner`) or as a Slurm job step (`process::SlurmRunner`). Results are files
//! (`results`: results.jsonl, appended and written through per task), the
//! parent gets counts and a bounded table (`tools`), and `alcove batch`
//! drives the same engine without a parent model.
//!
//! - `task`: tasks from a list or JSONL, their states, the batch budget.
//! - `engine`: the queue, workers, budget admission.
//! - `results`: results.jsonl, and reading it back to resume.
//! - `runner`: the seam and the in-process runner.
//! - `process`: the command and Slurm runners.
//! - `views`: counts, ETA and the bounded table.
//! - `tools`: `spawn_batch`, `retry_batch`; `wait`: batch ids in `wait`/`close_agent`.

mod engine;
mod process;
mod results;
mod task;
mod task_runner;
mod tools;
mod views;
mod wait;

pub use engine::{Batch, BatchPlan, Counts};
pub use process::{
    CommandRunner, SlurmOptions, SlurmRunner, TaskCommand, job_name, shell_quote, srun_command,
};
pub use results::{ResultRecord, ResultsFile, read_results};
pub use task::{BatchBudget, TaskSpec, TaskState, parse_tasks_jsonl};
pub use task_runner::{ChildRunner, Isolation, TaskJob, TaskOutcome, TaskRunner};
pub use tools::TABLE_LINES;
pub(crate) use tools::{Batches, batch_tools, is_batch_id};
pub use wait::summary;

#[cfg(test)]
mod engine_tests;
