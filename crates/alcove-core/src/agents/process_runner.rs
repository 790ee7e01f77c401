//! The process runner: a submission run by a command instead of a task.
//!
//! When `agents.command` is set, each submission runs that command through
//! the shell in its own process group, with the message on stdin. This is
//! how subagents leave the machine: `ssh host alcove exec --json -`,
//! `kubectl exec -i … -- alcove exec --json -`, `srun …`. When the command
//! speaks alcove's JSONL events, they are re-tagged under the child's path
//! and fed to the session's stream, and the child's session id lets the next
//! submission continue the conversation (`--resume <id>`); any other
//! command's output is captured as seed 001 does (head kept, cut marked).
//! Cancelling the submission kills the whole process group.
//!
//! The child agent's permissions travel with it (`ParentPolicy`): every
//! level of its gate (mode and allow / ask / deny rules, `--deny` flags and
//! a definition's narrowing included) goes in `ALCOVE_PARENT_POLICY` and,
//! when the command runs alcove itself (a word of it is `alcove`, as in
//! `ssh host alcove exec --json -`, where the environment does not cross),
//! as `--parent-policy <hex>` on its command line. An alcove given a policy
//! narrows it and never loosens it: its own mode and rules apply below it.
//!
//! So does its charter (`Charter`: its share of turns and tokens, its wall
//! time), which an alcove child takes as ceilings. The runner also enforces
//! the shares from outside, from the events the child reports: the usage of
//! every model request (its own and its descendants') is summed, the child's
//! own turns counted, and the process group is killed as soon as either is
//! over its share (status `max_turns` or `budget`). The wall time is the
//! lifecycle's (`agents/lifecycle.rs`), which cancels the submission. A
//! command that reports no events is bounded by the wall time only
//! ([`ProcessOutcome::metered`] says so).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use alcove_protocol::{AgentEvent, AgentPath, EventKind, RunStatus, Usage};
use alcove_tools::ProcessGroup;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::{EventSink, POLICY_ENV, ParentPolicy};

/// One submission for the process runner.
pub(crate) struct ProcessCall<'a> {
    pub(crate) command: &'a str,
    pub(crate) message: &'a str,
    pub(crate) resume: Option<&'a str>,
    pub(crate) policy: &'a ParentPolicy,
    pub(crate) workspace: &'a Path,
    /// The child's share of turns.
    pub(crate) turns: u32,
    /// The child's share of tokens.
    pub(crate) tokens: Option<u64>,
    /// More variables for the command (the front end's: a trace to continue).
    pub(crate) env: Vec<(String, String)>,
}

/// Whether `command` runs alcove itself (a word of it is `alcove`).
fn runs_alcove(command: &str) -> bool {
    command.split_whitespace().any(|word| {
        let word = word.trim_matches(['\'', '"']);
        Path::new(word)
            .file_name()
            .is_some_and(|name| name == "alcove")
    })
}

/// Plain output beyond this many chars keeps its head only (seed 001).
const OUTPUT_PREVIEW_CHARS: usize = 2000;
/// How long a terminated group gets before SIGKILL.
const TERMINATE_GRACE: Duration = Duration::from_millis(1500);
/// How long stdout is still read after the command exited (a process that
/// escaped its group could hold the pipe open forever).
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// How a process submission ended.
pub(crate) struct ProcessOutcome {
    pub(crate) status: RunStatus,
    pub(crate) output: Option<String>,
    pub(crate) error: Option<String>,
    /// The alcove session the command ran, when it spoke alcove's JSONL.
    pub(crate) session: Option<String>,
    pub(crate) usage: Usage,
    pub(crate) turns: u32,
    /// Whether the command reported its usage (alcove's events): a command
    /// that did not is bounded by its wall time only.
    pub(crate) metered: bool,
    /// Which share the runner killed the command for, when it did.
    pub(crate) over_share: Option<String>,
}

/// What the runner has seen a child use, from its events.
#[derive(Default)]
struct Meter {
    /// Every model request's usage, the child's descendants' included.
    usage: Usage,
    /// The child's own turns (its `main`'s `turn_started`).
    turns: u32,
    /// Whether any usage or end was reported at all.
    reported: bool,
}

impl Meter {
    /// Takes in what `event` reports; `Some` with the reason when a share
    /// is now spent.
    fn observe(
        &mut self,
        event: &AgentEvent,
        turns: u32,
        tokens: Option<u64>,
    ) -> Option<(RunStatus, String)> {
        match &event.kind {
            EventKind::Usage { usage } => {
                self.reported = true;
                self.usage.add(*usage);
                let budget = tokens?;
                (self.usage.budget_tokens() > budget)
                    .then(|| (RunStatus::Budget, format!("tokens over {budget}")))
            }
            EventKind::TurnStarted { turn } if event.agent.as_str() == "main" => {
                self.turns = self.turns.max(*turn);
                (*turn > turns).then(|| {
                    (
                        RunStatus::MaxTurns,
                        format!("its turn share of {turns} was spent"),
                    )
                })
            }
            _ => None,
        }
    }
}

/// Runs one submission through `command`.
pub(crate) async fn run_process(
    call: ProcessCall<'_>,
    cancel: &CancellationToken,
    child: &AgentPath,
    events: &dyn EventSink,
) -> ProcessOutcome {
    let ProcessCall {
        command,
        message,
        resume,
        policy,
        workspace,
        turns,
        tokens,
        env,
    } = call;
    let mut full = command.to_owned();
    if runs_alcove(command) {
        full.push_str(&format!(" --parent-policy {}", policy.to_hex()));
    }
    if let Some(session) = resume {
        full.push_str(&format!(" --resume {session}"));
    }
    let mut outcome = ProcessOutcome {
        status: RunStatus::Failed,
        output: None,
        error: None,
        session: None,
        usage: Usage::default(),
        turns: 0,
        metered: false,
        over_share: None,
    };
    let mut meter = Meter::default();
    let mut spent: Option<(RunStatus, String)> = None;
    let spawned = Command::new("sh")
        .arg("-c")
        .arg(&full)
        .current_dir(workspace)
        .env(POLICY_ENV, policy.to_json())
        .envs(env)
        .process_group(0)
        .kill_on_drop(true)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut process = match spawned {
        Ok(process) => process,
        Err(err) => {
            outcome.error = Some(format!("cannot start `{full}`: {err}"));
            return outcome;
        }
    };
    let mut group = ProcessGroup::of(&process);
    if let Some(mut stdin) = process.stdin.take() {
        let _ = stdin
            .write_all(format!("{}\n", message.trim()).as_bytes())
            .await;
    }
    let stderr_task = process.stderr.take().map(|mut stderr| {
        tokio::spawn(async move {
            let mut text = Vec::new();
            let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut text).await;
            String::from_utf8_lossy(&text).into_owned()
        })
    });

    let mut plain = String::new();
    let mut final_text = None;
    let mut ended: Option<(RunStatus, Option<String>)> = None;
    let mut cancelled = false;
    // The command's exit, when it came before the end of its stdout: a
    // process it left behind (or that escaped its group) can hold the pipe
    // open forever, so the leader's exit ends the reading instead (issue 7:
    // a runner killed with SIGKILL left its `sleep` holding stdout, and the
    // submission stayed `running` until the sleep ended).
    let mut exited: Option<std::io::Result<std::process::ExitStatus>> = None;
    // Never fires until reset at the command's exit.
    let drain_until = tokio::time::sleep(Duration::MAX);
    tokio::pin!(drain_until);
    if let Some(stdout) = process.stdout.take() {
        let mut lines = BufReader::new(stdout).lines();
        loop {
            let line = tokio::select! {
                line = lines.next_line() => line,
                () = cancel.cancelled() => {
                    cancelled = true;
                    break;
                }
                status = process.wait(), if exited.is_none() => {
                    exited = Some(status);
                    // Its group goes now (as it would after the loop); what it
                    // wrote stays readable, and DRAIN_GRACE bounds the rest.
                    group.kill();
                    drain_until
                        .as_mut()
                        .reset(tokio::time::Instant::now() + DRAIN_GRACE);
                    continue;
                }
                () = &mut drain_until => break,
            };
            let Ok(Some(line)) = line else { break };
            match serde_json::from_str::<AgentEvent>(&line) {
                Ok(event) => {
                    if let Some(over) = meter.observe(&event, turns, tokens) {
                        // Spent: the child goes now, whatever it would do next.
                        spent = Some(over);
                        break;
                    }
                    match event.kind {
                        EventKind::SessionStarted { session_id, .. } => {
                            outcome.session = Some(session_id)
                        }
                        EventKind::SessionEnded {
                            status,
                            turns,
                            usage,
                            error,
                            ..
                        } => {
                            outcome.turns = turns;
                            outcome.usage = usage;
                            ended = Some((status, error));
                        }
                        kind => {
                            if event.agent.as_str() == "main"
                                && let EventKind::AssistantText { text } = &kind
                                && !text.is_empty()
                            {
                                final_text = Some(text.clone());
                            }
                            events.emit(&AgentEvent {
                                agent: event.agent.rebase(child),
                                kind,
                            });
                        }
                    }
                }
                Err(_) => {
                    if plain.len() < 64 * 1024 {
                        plain.push_str(&line);
                        plain.push('\n');
                    }
                }
            }
        }
    }
    if cancelled || spent.is_some() {
        group.terminate(&mut process, TERMINATE_GRACE).await;
    }
    let exit = match exited {
        Some(status) => status,
        None => process.wait().await,
    }
    .ok()
    .and_then(|status| status.code());
    // Whatever the command left running in its group goes too.
    group.kill();
    group.disarm();
    let stderr = match stderr_task {
        Some(task) => task.await.unwrap_or_default(),
        None => String::new(),
    };

    // What the events reported, or the child's own total when it said
    // more (an alcove that reports no per-request usage).
    outcome.metered = meter.reported || ended.is_some();
    if meter.usage.budget_tokens() > outcome.usage.budget_tokens() {
        outcome.usage = meter.usage;
    }
    outcome.turns = outcome.turns.max(meter.turns.min(turns));
    if let Some((status, reason)) = spent {
        outcome.status = status;
        outcome.output = final_text;
        outcome.over_share = Some(reason);
        return outcome;
    }
    if cancelled {
        outcome.status = RunStatus::Aborted;
        outcome.output = final_text.or_else(|| preview(&plain, &stderr));
        return outcome;
    }
    match ended {
        Some((status, error)) => {
            outcome.status = status;
            outcome.output = final_text;
            outcome.error = error
                .or_else(|| (status != RunStatus::Completed).then(|| status.as_str().to_owned()));
        }
        None => {
            outcome.output = preview(&plain, &stderr);
            match exit {
                Some(0) => outcome.status = RunStatus::Completed,
                Some(code) => {
                    outcome.error = Some(format!("submission failed with exit code {code}"))
                }
                None => outcome.error = Some("submission killed by a signal".to_owned()),
            }
        }
    }
    outcome
}

/// stdout trimmed, then stderr, cut to the first 2000 chars (seed 001).
fn preview(stdout: &str, stderr: &str) -> Option<String> {
    let mut text = stdout.trim().to_owned();
    if !stderr.trim().is_empty() {
        text.push_str("\n\nstderr:\n");
        text.push_str(stderr.trim());
    }
    if text.is_empty() {
        return None;
    }
    if text.chars().count() > OUTPUT_PREVIEW_CHARS {
        let mut cut: String = text.chars().take(OUTPUT_PREVIEW_CHARS).collect();
        cut.push_str("\n...[truncated]");
        return Some(cut);
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(agent: &str, kind: EventKind) -> AgentEvent {
        let path = match agent.strip_prefix("main/") {
            Some(child) => AgentPath::main().child(child),
            None => AgentPath::main(),
        };
        AgentEvent { agent: path, kind }
    }

    #[test]
    fn the_meter_counts_the_childs_own_turns_and_every_requests_usage() {
        let mut meter = Meter::default();
        let usage = |input| EventKind::Usage {
            usage: Usage {
                input_tokens: input,
                output_tokens: 10,
                cache_read_tokens: 90,
                cache_write_tokens: 0,
            },
        };
        assert!(
            meter
                .observe(
                    &event("main", EventKind::TurnStarted { turn: 1 }),
                    2,
                    Some(500)
                )
                .is_none()
        );
        // A grandchild's turns are not the child's; its usage is.
        assert!(
            meter
                .observe(
                    &event("main/agent-1", EventKind::TurnStarted { turn: 5 }),
                    2,
                    Some(500)
                )
                .is_none()
        );
        assert!(
            meter
                .observe(&event("main/agent-1", usage(100)), 2, Some(500))
                .is_none()
        );
        assert!(
            meter
                .observe(
                    &event("main", EventKind::TurnStarted { turn: 2 }),
                    2,
                    Some(500)
                )
                .is_none()
        );
        assert_eq!(meter.turns, 2);
        // Cache reads count: 200 + 2 × 10 + 2 × 90 = 400, then 600.
        assert!(
            meter
                .observe(&event("main", usage(100)), 2, Some(500))
                .is_none()
        );
        let over = meter.observe(&event("main", usage(100)), 2, Some(500));
        assert_eq!(over.map(|(status, _)| status), Some(RunStatus::Budget));
        assert!(meter.reported);
        let over = meter.observe(&event("main", EventKind::TurnStarted { turn: 3 }), 2, None);
        assert_eq!(over.map(|(status, _)| status), Some(RunStatus::MaxTurns));
    }

    #[test]
    fn only_commands_that_run_alcove_get_the_policy_on_their_command_line() {
        assert!(runs_alcove("ssh host alcove exec --json -"));
        assert!(runs_alcove("'/usr/bin/alcove' exec --json -"));
        assert!(!runs_alcove("sh runner.sh"));
    }
}
