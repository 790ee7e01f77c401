//! Tasks as processes: the command runner (any command speaking alcove's
//! JSONL, e.g. `ssh host alcove exec --json -`) and the Slurm runner (each
//! task an `srun` job step running `alcove exec --json -`).
//!
//! Both go through the process runner (`agents/runner.rs`: own process
//! group, prompt on stdin, events re-tagged under the child's path), and an
//! evidence collector watches those events as it does an in-process child's.
//! A Slurm task writes its job id to the batch folder (which, like the
//! workspace, must be on a filesystem the nodes share); cancelling it also
//! runs `scancel` by job name, and waits until `squeue` no longer lists it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alcove_protocol::{AgentPath, EventKind, RunStatus};
use tokio::process::Command;

use super::super::report::Evidence;
use super::super::runner::{ProcessCall, run_process};
use super::runner::{TaskJob, TaskOutcome, TaskRunner};
use crate::{EventSink, FanOut, ParentPolicy};

/// How long a cancelled Slurm job may stay in `squeue` before we give up waiting.
const SCANCEL_WAIT: Duration = Duration::from_secs(15);

/// Runs each task through a shell command (prompt on stdin).
pub struct CommandRunner {
    command: String,
    workspace: PathBuf,
    parent: AgentPath,
    events: Arc<dyn EventSink>,
    policy: ParentPolicy,
}

impl CommandRunner {
    /// Tasks run `command` in `workspace` under the parent's `policy` (its
    /// mode and rules, which an alcove child narrows and never loosens);
    /// their events, re-tagged under `parent/<child>`, go to `events`.
    pub fn new(
        command: String,
        workspace: PathBuf,
        parent: AgentPath,
        events: Arc<dyn EventSink>,
        policy: ParentPolicy,
    ) -> CommandRunner {
        CommandRunner {
            command,
            workspace,
            parent,
            events,
            policy,
        }
    }

    async fn run_command(&self, job: &TaskJob<'_>, command: &str) -> TaskOutcome {
        let path = self.parent.child(&job.child_name());
        let evidence = Arc::new(Evidence::new(path.clone()));
        let sinks = FanOut::default()
            .with(self.events.clone())
            .with(evidence.clone());
        self.events.emit(&alcove_protocol::AgentEvent {
            agent: self.parent.clone(),
            kind: EventKind::AgentStarted {
                child: path.clone(),
                call_id: format!("{}/{}", job.batch, job.task.id),
                agent_type: job.agent_type.to_owned(),
                description: job.task.description.clone(),
                depth: 1,
                transcript: None,
            },
        });
        let started = Instant::now();
        let outcome = run_process(
            ProcessCall {
                command,
                message: &job.task.prompt,
                resume: None,
                policy: &self.policy,
                workspace: &self.workspace,
            },
            &job.cancel,
            &path,
            &sinks,
        )
        .await;
        let ok = outcome.status == RunStatus::Completed;
        self.events.emit(&alcove_protocol::AgentEvent {
            agent: self.parent.clone(),
            kind: EventKind::AgentEnded {
                child: path,
                description: job.task.description.clone(),
                status: outcome.status,
                ok,
                turns: outcome.turns,
                usage: outcome.usage,
            },
        });
        let mut report = outcome.output.clone().unwrap_or_default();
        report.push_str(&format!(
            "\n\n[evidence: status: {} · {} turns · {} tokens · {:.1}s{}]",
            outcome.status.as_str(),
            outcome.turns,
            outcome.usage.input_tokens + outcome.usage.output_tokens,
            started.elapsed().as_secs_f64(),
            outcome
                .session
                .as_deref()
                .map(|session| format!(" · session {session}"))
                .unwrap_or_default()
        ));
        TaskOutcome {
            status: outcome.status,
            first_line: super::runner::first_line(
                outcome
                    .output
                    .as_deref()
                    .or(outcome.error.as_deref())
                    .unwrap_or(""),
            ),
            report: report.trim_start().to_owned(),
            is_error: !ok,
            evidence: evidence.to_json(),
            usage: outcome.usage,
            turns: outcome.turns,
            transcript: None,
            job_id: None,
            error: outcome.error,
            refused: None,
        }
    }
}

#[async_trait::async_trait]
impl TaskRunner for CommandRunner {
    async fn run(&self, job: TaskJob<'_>) -> TaskOutcome {
        if job.isolation == super::runner::Isolation::Worktree {
            return TaskOutcome::failed(
                "isolation `worktree` works for in-process tasks only; a command runs \
                 where it starts (give it its own checkout, or use the in-process runner)"
                    .to_owned(),
            );
        }
        let command = self.command.clone();
        self.run_command(&job, &command).await
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
    inner: CommandRunner,
    options: SlurmOptions,
}

impl SlurmRunner {
    /// A Slurm runner over `inner`'s workspace, parent and event stream.
    pub fn new(inner: CommandRunner, options: SlurmOptions) -> SlurmRunner {
        SlurmRunner { inner, options }
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
        format!("--chdir={}", quote(&workspace.display().to_string())),
    ];
    if let Some(wall) = job.wall {
        // Slurm's --time is in minutes; a started minute counts whole.
        words.push(format!("--time={}", wall.as_secs().div_ceil(60).max(1)));
    }
    words.extend(options.extra.iter().map(|option| quote(option)));
    let inner = format!(
        "echo \"$SLURM_JOB_ID\" > {}; exec {}",
        quote(&id_file.display().to_string()),
        options.alcove
    );
    words.push("sh".to_owned());
    words.push("-c".to_owned());
    words.push(quote(&inner));
    words.join(" ")
}

#[async_trait::async_trait]
impl TaskRunner for SlurmRunner {
    async fn run(&self, job: TaskJob<'_>) -> TaskOutcome {
        let jobs = job.dir.join("jobs");
        if let Err(err) = std::fs::create_dir_all(&jobs) {
            return TaskOutcome::failed(format!("cannot create {}: {err}", jobs.display()));
        }
        let id_file = jobs.join(format!("{}.id", job.child_name()));
        let _ = std::fs::remove_file(&id_file);
        let command = srun_command(&job, &self.options, &self.inner.workspace, &id_file);
        let mut outcome = self.inner.run_command(&job, &command).await;
        outcome.job_id = std::fs::read_to_string(&id_file)
            .ok()
            .map(|text| text.trim().to_owned())
            .filter(|id| !id.is_empty());
        if job.cancel.is_cancelled() {
            cancel_job(&job_name(&job), outcome.job_id.as_deref()).await;
        }
        outcome
    }
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

/// Single-quotes a word for `sh`.
fn quote(word: &str) -> String {
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
    use super::super::runner::Isolation;
    use super::super::task::TaskSpec;
    use super::*;
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
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
    }
}
