//! Tasks as processes: the command runner (any command speaking alcove's
//! JSONL, e.g. `ssh host alcove exec --json -`) and the Slurm runner (each
//! task an `srun` job step running `alcove exec --json -`).
//!
//! Both are a layer below the child lifecycle: [`TaskCommand`] only says
//! which command line runs a task and what to do once it ended.
//! `ChildRunner` (`task_runner.rs`) runs the task as a child like any other
//! (`start_child`: slot, tree lease, announce; the process runner,
//! `agents/process_runner.rs`, under the child's turn and token share and wall time,
//! with the parent's policy and charter; one end record).
//! A Slurm task writes its job id to the batch folder (which, like the
//! workspace, must be on a filesystem the nodes share); cancelling it (or
//! its wall time running out) also runs `scancel` by job name and waits
//! until `squeue` no longer lists it, inside the child's life, before its
//! slot is released ([`TaskCommand::stop`]).

use std::path::Path;
use std::time::{Duration, Instant};

use tokio::process::Command;

use super::task_runner::{TaskJob, TaskOutcome};

/// How long a cancelled Slurm job may stay in `squeue` before we give up waiting.
const SCANCEL_WAIT: Duration = Duration::from_secs(15);

/// How a task's child runs as a process, below the child lifecycle.
#[async_trait::async_trait]
pub trait TaskCommand: Send + Sync {
    /// The shell command that runs `job` in `workspace` (its prompt goes
    /// on stdin).
    fn command(&self, job: &TaskJob<'_>, workspace: &Path) -> Result<String, String>;

    /// Where tasks run, for a plan the user reads ("as processes: `…`").
    fn describe(&self) -> String;

    /// What to do once the command's process ended, before the child's
    /// slot is released: run by the child's life (Slurm: `scancel` a step
    /// that was cancelled, or ran out of wall time, and wait until it is
    /// gone). Checks `job.cancel` when it runs, not when it is made.
    async fn stop(&self, _job: &TaskJob<'_>) {}

    /// What to add to the task's outcome once the child's life ended (the
    /// Slurm job id).
    async fn ended(&self, _job: &TaskJob<'_>, _outcome: &mut TaskOutcome) {}
}

/// Runs each task through a shell command (prompt on stdin).
pub struct CommandRunner {
    command: String,
}

impl CommandRunner {
    /// Tasks run `command` in the workspace, under the parent's policy and
    /// the task's charter.
    pub fn new(command: String) -> CommandRunner {
        CommandRunner { command }
    }
}

impl TaskCommand for CommandRunner {
    fn command(&self, _job: &TaskJob<'_>, _workspace: &Path) -> Result<String, String> {
        Ok(self.command.clone())
    }

    fn describe(&self) -> String {
        format!("as processes: `{}`", self.command)
    }
}

/// How tasks become Slurm job steps.
#[derive(Debug, Clone)]
pub struct SlurmOptions {
    /// The command each step runs (e.g. `/usr/bin/alcove exec --json -`).
    pub alcove: String,
    /// `--cpus-per-task`.
    pub cpus_per_task: u32,
    /// More `srun` options (from config), passed as given.
    pub extra: Vec<String>,
}

/// Runs each task as `srun … alcove exec --json -`.
pub struct SlurmRunner {
    options: SlurmOptions,
}

impl SlurmRunner {
    /// A Slurm runner whose steps run as `options` say.
    pub fn new(options: SlurmOptions) -> SlurmRunner {
        SlurmRunner { options }
    }
}

/// The job name of a task: `alcove-<batch>-<task>`.
pub fn job_name(job: &TaskJob<'_>) -> String {
    format!("alcove-{}", job.child_name())
}

/// The `srun` command line of a task.
pub fn srun_command(
    job: &TaskJob<'_>,
    options: &SlurmOptions,
    workspace: &Path,
    id_file: &Path,
) -> String {
    let mut words = vec![
        "srun".to_owned(),
        format!("--job-name={}", job_name(job)),
        format!("--cpus-per-task={}", options.cpus_per_task.max(1)),
        "--ntasks=1".to_owned(),
        format!("--chdir={}", shell_quote(&workspace.display().to_string())),
    ];
    if let Some(wall) = job.wall {
        // Slurm's --time is in minutes; a started minute counts whole.
        words.push(format!("--time={}", wall.as_secs().div_ceil(60).max(1)));
    }
    words.extend(options.extra.iter().map(|option| shell_quote(option)));
    let inner = format!(
        "echo \"$SLURM_JOB_ID\" > {}; exec {}",
        shell_quote(&id_file.display().to_string()),
        options.alcove
    );
    words.push("sh".to_owned());
    words.push("-c".to_owned());
    words.push(shell_quote(&inner));
    words.join(" ")
}

/// Where a task's step writes its job id.
fn id_file(job: &TaskJob<'_>) -> std::path::PathBuf {
    job.dir
        .join("jobs")
        .join(format!("{}.id", job.child_name()))
}

#[async_trait::async_trait]
impl TaskCommand for SlurmRunner {
    fn command(&self, job: &TaskJob<'_>, workspace: &Path) -> Result<String, String> {
        let jobs = job.dir.join("jobs");
        std::fs::create_dir_all(&jobs)
            .map_err(|err| format!("cannot create {}: {err}", jobs.display()))?;
        let id_file = id_file(job);
        let _ = std::fs::remove_file(&id_file);
        Ok(srun_command(job, &self.options, workspace, &id_file))
    }

    fn describe(&self) -> String {
        format!(
            "as Slurm job steps: `srun --cpus-per-task={}{}` running `{}`",
            self.options.cpus_per_task.max(1),
            self.options
                .extra
                .iter()
                .map(|option| format!(" {}", shell_quote(option)))
                .collect::<String>(),
            self.options.alcove
        )
    }

    async fn stop(&self, job: &TaskJob<'_>) {
        if job.cancel.is_cancelled() {
            cancel_job(&job_name(job), job_id(job).as_deref()).await;
        }
    }

    async fn ended(&self, job: &TaskJob<'_>, outcome: &mut TaskOutcome) {
        outcome.job_id = job_id(job);
    }
}

/// The job id a task's step wrote, once it started.
fn job_id(job: &TaskJob<'_>) -> Option<String> {
    std::fs::read_to_string(id_file(job))
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|id| !id.is_empty())
}

/// `scancel` by name (and id when known), then waits until `squeue` no
/// longer lists the job.
async fn cancel_job(name: &str, id: Option<&str>) {
    let mut scancel = Command::new("scancel");
    scancel.arg("--quiet").arg(format!("--name={name}"));
    let _ = scancel.status().await;
    if let Some(id) = id {
        let _ = Command::new("scancel")
            .arg("--quiet")
            .arg(id)
            .status()
            .await;
    }
    let deadline = Instant::now() + SCANCEL_WAIT;
    while Instant::now() < deadline {
        let listed = Command::new("squeue")
            .args(["-h", "-o", "%i", &format!("--name={name}")])
            .output()
            .await;
        match listed {
            Ok(output) if output.status.success() && output.stdout.trim_ascii().is_empty() => {
                return;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            Err(_) => return,
        }
    }
}

/// Single-quotes a word for `sh` (a word of safe characters stays bare).
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
    {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::super::task::TaskSpec;
    use super::super::task_runner::Isolation;
    use super::*;
    use std::path::PathBuf;
    use tokio_util::sync::CancellationToken;

    #[test]
    fn srun_names_the_job_and_takes_time_from_the_wall_budget() {
        let task = TaskSpec {
            id: "t-7".into(),
            description: "d".into(),
            prompt: "p".into(),
        };
        let dir = PathBuf::from("/shared/out");
        let job = TaskJob {
            batch: "b1",
            task: &task,
            attempt: 2,
            agent_type: "general-purpose",
            tokens: None,
            turns: None,
            wall: Some(Duration::from_secs(61)),
            isolation: Isolation::Shared,
            cancel: CancellationToken::new(),
            dir: &dir,
            model: None,
            effort: None,
            phase: None,
        };
        let options = SlurmOptions {
            alcove: "/bin/alcove exec --json -".into(),
            cpus_per_task: 2,
            extra: vec!["--partition=debug".into(), "--comment=a b".into()],
        };
        let command = srun_command(
            &job,
            &options,
            Path::new("/shared/ws x"),
            Path::new("/shared/out/jobs/b1-t-7-r2.id"),
        );
        assert_eq!(
            command,
            "srun --job-name=alcove-b1-t-7-r2 --cpus-per-task=2 --ntasks=1 --chdir='/shared/ws x' \
             --time=2 --partition=debug '--comment=a b' sh -c 'echo \"$SLURM_JOB_ID\" > \
             /shared/out/jobs/b1-t-7-r2.id; exec /bin/alcove exec --json -'"
        );
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
