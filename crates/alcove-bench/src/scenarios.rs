//! The single-agent scenarios: startup latency, per-turn CPU against history
//! length, and peak RSS (alone and with 16 live children).
//!
//! Every run gets a fresh home and workspace ([`TestEnv`]) and its own
//! scripted conversation, told apart by a prompt that names the run.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use alcove_testkit::{Block, FakeServer, Script, Step, TestEnv};
use anyhow::{Context, bail};
use serde_json::json;

use crate::measure::{self, median, ms};

/// What every scenario needs.
pub(crate) struct Bench {
    /// The release `alcove` binary.
    pub(crate) alcove: PathBuf,
    /// Repetitions of each measurement (medians are taken over them).
    pub(crate) runs: usize,
    /// A folder for the wrapper's figures.
    pub(crate) scratch: PathBuf,
}

impl Bench {
    /// `alcove exec ARGS` against `server` in `env`, output discarded.
    pub(crate) fn exec(&self, env: &TestEnv, server: &FakeServer, args: &[&str]) -> Command {
        let mut command = env.command(&self.alcove, server);
        command
            .arg("exec")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }
}

/// Startup: process start to the first model request.
pub(crate) struct Startup {
    pub(crate) alcove_ms: f64,
    /// A process that only execs, connects and sends one request.
    pub(crate) baseline_ms: f64,
    pub(crate) samples: usize,
}

/// Spawns `command`, waits for it, and returns the time from just before
/// the spawn to the arrival of the first request it made.
fn to_first_request(server: &FakeServer, command: &mut Command) -> anyhow::Result<Duration> {
    let before = server.request_count();
    let started = Instant::now();
    let status = command.status().context("cannot start the probe")?;
    if !status.success() {
        bail!(
            "the startup probe {:?} failed: {status}",
            command.get_program()
        );
    }
    let requests = server.requests();
    let first = requests.get(before).context("the probe sent no request")?;
    if first.path != "/v1/messages" {
        bail!("the probe's first request went to {}", first.path);
    }
    Ok(first.received_at.saturating_duration_since(started))
}

pub(crate) fn startup(bench: &Bench) -> anyhow::Result<Startup> {
    let runs = bench.runs * 3;
    let server = FakeServer::start(
        Script::new()
            .conversation("STARTUP probe", vec![Step::text("ok"); runs + 1])
            .conversation("BASELINE probe", vec![Step::text("ok"); runs + 1]),
    );
    let env = TestEnv::new();
    let address = server.url().trim_start_matches("http://").to_owned();
    let me = std::env::current_exe().context("cannot find myself")?;
    let (mut alcove, mut baseline) = (Vec::new(), Vec::new());
    // Alternating, so both see the same machine; the first pair warms caches.
    for run in 0..=runs {
        let a = to_first_request(&server, &mut bench.exec(&env, &server, &["STARTUP probe"]))?;
        let mut probe = Command::new(&me);
        probe
            .args(["__connect", &address])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let b = to_first_request(&server, &mut probe)?;
        if run > 0 {
            alcove.push(ms(a));
            baseline.push(ms(b));
        }
    }
    Ok(Startup {
        alcove_ms: median(&alcove),
        baseline_ms: median(&baseline),
        samples: runs,
    })
}

/// The baseline process: connects to ADDRESS and sends `count` model
/// requests in turn (1 unless given) whose prompt is `prompt` (`BASELINE
/// probe` unless given), each on a new connection, reading every answer to
/// its end before the next request.
pub(crate) fn connect_main(address: &str, count: usize, prompt: &str) -> anyhow::Result<()> {
    use std::io::{Read, Write};
    let body = serde_json::json!({
        "model": "fake-model",
        "max_tokens": 16,
        "stream": true,
        "messages": [{"role": "user", "content": prompt}],
    })
    .to_string();
    for _ in 0..count {
        let mut stream = std::net::TcpStream::connect(address)?;
        stream.set_nodelay(true)?;
        write!(
            stream,
            "POST /v1/messages HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
    }
    Ok(())
}

/// Five source files of ~10 KB and a notes file with one TODO per turn.
pub(crate) fn session_workspace(env: &TestEnv) {
    for file in 0..5 {
        let text: String = (0..150)
            .map(|j| {
                format!("pub fn function_{file}_{j}(x: u64) -> u64 {{ x.wrapping_mul({j}) + {file} }} // helper {j}\n")
            })
            .collect();
        env.write_file(&format!("src/mod{file}.rs"), &text);
    }
    let notes: String = (0..=60)
        .map(|k| format!("- item {k}: TODO-{k}\n"))
        .collect();
    env.write_file("notes.md", &notes);
}

/// The Bash command of turn `k` (every fourth turn).
fn bash_command(k: usize) -> String {
    format!("echo turn {k} && wc -l src/*.rs notes.md")
}

/// A session of `turns` model requests: `turns - 1` tool calls cycling
/// Bash / Read / Grep / Edit, then a final answer.
pub(crate) fn session_steps(turns: usize) -> Vec<Step> {
    let mut steps: Vec<Step> = (1..turns)
        .map(|k| match k % 4 {
            // The first Read is of notes.md: an Edit needs a Read of its file.
            1 if k == 1 => Step::tool_call("Read", json!({"file_path": "notes.md"})),
            1 => Step::tool_call("Read", json!({"file_path": format!("src/mod{}.rs", k % 5)})),
            2 => Step::tool_call(
                "Grep",
                json!({"pattern": format!("helper 1{}", k % 10), "path": "src", "output_mode": "content"}),
            ),
            3 => Step::tool_call(
                "Edit",
                json!({"file_path": "notes.md", "old_string": format!("- item {k}: TODO-{k}\n"), "new_string": format!("- item {k}: DONE-{k}\n")}),
            ),
            _ => Step::tool_call("Bash", json!({"command": bash_command(k)})),
        })
        .collect();
    steps.push(Step::text("Session done."));
    steps
}

/// One session length: medians over the runs.
pub(crate) struct SessionPoint {
    pub(crate) turns: usize,
    /// Messages in the last request (prompt + 2 per tool turn).
    pub(crate) messages: usize,
    pub(crate) cpu_ms: f64,
    /// CPU of each run, in run order: runs of different lengths made one
    /// after another pair up, so a band's cost is taken per run, before
    /// the noise of the machine drifts.
    pub(crate) cpu_runs_ms: Vec<f64>,
    pub(crate) rss_mib: f64,
    /// Wall time from the first to the last model request, per turn: the
    /// turnaround of a turn (tool included) when the model answers at once.
    pub(crate) turnaround_ms: f64,
}

/// Per-turn CPU and peak RSS of scripted sessions of several lengths.
pub(crate) struct Session {
    pub(crate) points: Vec<SessionPoint>,
    /// Runs of each length (after a warm-up run).
    pub(crate) runs: usize,
    /// CPU of the 50-turn session's Bash commands run directly by `bash -c`
    /// (part of the session's CPU, since the wrapper counts waited children).
    pub(crate) bash_cpu_ms: f64,
    /// Per run, the CPU of the last band's Bash commands (turns 41–50) run
    /// directly right after that run's sessions: paired with the run's
    /// band, it shows how much of the band's drift from run to run is the
    /// machine's (bench/notes.md, point 37).
    pub(crate) band_shells_runs_ms: Vec<f64>,
}

pub(crate) const LENGTHS: [usize; 6] = [1, 10, 20, 30, 40, 50];

/// Runs of each session length per `--runs`: a band's cost is the
/// difference of two sessions' totals, each of which drifts by several
/// per cent between runs here, so the band takes three times the runs of
/// the other figures (as start-up does) to settle its median.
const SESSION_RUNS_PER_RUN: usize = 3;

pub(crate) fn session(bench: &Bench) -> anyhow::Result<Session> {
    let runs = bench.runs * SESSION_RUNS_PER_RUN;
    let mut script = Script::new();
    for run in 0..=runs {
        for turns in LENGTHS {
            script =
                script.conversation(&format!("SESSION {turns} run {run}."), session_steps(turns));
        }
    }
    let server = FakeServer::start(script);
    let shells_env = TestEnv::new();
    session_workspace(&shells_env);
    let mut band_shells = Vec::new();
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); LENGTHS.len()];
    let mut rss: Vec<Vec<f64>> = vec![Vec::new(); LENGTHS.len()];
    let mut turnaround: Vec<Vec<f64>> = vec![Vec::new(); LENGTHS.len()];
    for run in 0..=runs {
        for (index, turns) in LENGTHS.iter().enumerate() {
            let env = TestEnv::new();
            session_workspace(&env);
            let prompt = format!("SESSION {turns} run {run}.");
            let command = bench.exec(
                &env,
                &server,
                &["--permission-mode", "bypassPermissions", &prompt],
            );
            let usage = measure::run_measured(&command, &bench.scratch)?;
            let requests = server.requests_for(&prompt);
            let made = requests.len();
            if made != *turns {
                bail!("the {turns}-turn session made {made} requests");
            }
            if env.read_file("notes.md").contains("TODO-3\n") && *turns > 3 {
                bail!("the {turns}-turn session's edits did not land");
            }
            if run > 0 {
                cpu[index].push(ms(usage.cpu));
                rss[index].push(usage.max_rss_kib as f64 / 1024.0);
                if let (Some(first), Some(last)) = (requests.first(), requests.last())
                    && *turns > 1
                {
                    let span = last.received_at.duration_since(first.received_at);
                    turnaround[index].push(ms(span) / (turns - 1) as f64);
                }
            }
        }
        if run > 0 {
            band_shells.push(shells_cpu_ms(&shells_env, 40..50)?);
        }
    }
    let points = LENGTHS
        .iter()
        .enumerate()
        .map(|(index, turns)| SessionPoint {
            turns: *turns,
            messages: 2 * turns - 1,
            cpu_ms: median(&cpu[index]),
            cpu_runs_ms: cpu[index].clone(),
            rss_mib: median(&rss[index]),
            turnaround_ms: median(&turnaround[index]),
        })
        .collect();
    Ok(Session {
        points,
        runs,
        bash_cpu_ms: bash_share(runs, 50)?,
        band_shells_runs_ms: band_shells,
    })
}

/// The CPU of the Bash commands of a `turns`-turn session, run directly.
fn bash_share(runs: usize, turns: usize) -> anyhow::Result<f64> {
    let env = TestEnv::new();
    session_workspace(&env);
    let mut samples = Vec::new();
    for _ in 0..runs {
        samples.push(shells_cpu_ms(&env, 1..turns)?);
    }
    Ok(median(&samples))
}

/// The CPU of the Bash commands the tool turns `turns` call, run directly
/// with `bash -c` in `env`'s workspace.
fn shells_cpu_ms(env: &TestEnv, turns: std::ops::Range<usize>) -> anyhow::Result<f64> {
    let before = measure::children_cpu()?;
    for k in turns.filter(|k| k % 4 == 0) {
        let status = Command::new("bash")
            .args(["-c", &bash_command(k)])
            .current_dir(env.workspace())
            .stdout(Stdio::null())
            .status()?;
        if !status.success() {
            bail!("bash -c {} failed", bash_command(k));
        }
    }
    Ok(ms(measure::children_cpu()? - before))
}

/// Peak RSS with 16 children alive at once.
pub(crate) struct LiveChildren {
    pub(crate) children: usize,
    pub(crate) rss_mib: f64,
    /// The largest spread of the children's first requests, against the
    /// scripted delay: below it, every child was alive at the same time.
    pub(crate) spread_ms: f64,
    pub(crate) delay_ms: u64,
}

/// A parent's reply of `n` parallel `Agent` calls, the i-th asking
/// `prompt(i)` (a child's script is found by its prompt).
pub(crate) fn agent_calls(n: usize, prompt: impl Fn(usize) -> String) -> Vec<Block> {
    (0..n)
        .map(|i| {
            Block::tool_call(
                "Agent",
                json!({"description": format!("part {i}"), "prompt": prompt(i)}),
            )
        })
        .collect()
}

pub(crate) fn live_children(bench: &Bench) -> anyhow::Result<LiveChildren> {
    const CHILDREN: usize = 16;
    const DELAY_MS: u64 = 500;
    let mut script = Script::new();
    for run in 0..=bench.runs {
        let calls = agent_calls(CHILDREN, |i| {
            format!("KID r{run} c{i}. Read a module and report.")
        });
        script = script.conversation(
            &format!("KIDS run {run}."),
            vec![Step::reply(calls), Step::text("All parts reported.")],
        );
        for i in 0..CHILDREN {
            script = script.conversation(
                &format!("KID r{run} c{i}."),
                vec![
                    Step::tool_call("Read", json!({"file_path": format!("src/mod{}.rs", i % 5)}))
                        .delay(DELAY_MS),
                    Step::text("The module defines 150 helpers.").delay(DELAY_MS),
                ],
            );
        }
    }
    let server = FakeServer::start(script);
    let limit = format!("agents.max_parallel={CHILDREN}");
    let (mut rss, mut spread) = (Vec::new(), Vec::new());
    for run in 0..=bench.runs {
        let env = TestEnv::new();
        session_workspace(&env);
        let prompt = format!("KIDS run {run}.");
        let command = bench.exec(&env, &server, &["-c", &limit, &prompt]);
        let usage = measure::run_measured(&command, &bench.scratch)?;
        let firsts: Vec<Instant> = (0..CHILDREN)
            .filter_map(|i| {
                let requests = server.requests_for(&format!("KID r{run} c{i}."));
                requests.first().map(|request| request.received_at)
            })
            .collect();
        if firsts.len() != CHILDREN {
            bail!(
                "only {} of {CHILDREN} children asked the model",
                firsts.len()
            );
        }
        let (Some(first), Some(last)) = (firsts.iter().min(), firsts.iter().max()) else {
            bail!("no children");
        };
        if run > 0 {
            rss.push(usage.max_rss_kib as f64 / 1024.0);
            spread.push(ms(last.duration_since(*first)));
        }
    }
    Ok(LiveChildren {
        children: CHILDREN,
        rss_mib: median(&rss),
        spread_ms: spread.iter().copied().fold(0.0, f64::max),
        delay_ms: DELAY_MS,
    })
}
