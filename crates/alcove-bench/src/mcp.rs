//! MCP scenarios (issue 14): what an MCP tool call costs over the server's
//! own time, and how many server processes (and how much memory) 16
//! children using two servers take — the figure to set next to Codex's 245
//! server processes from one session with subagents (openai/codex#34658).
//!
//! The servers are the ones `.ci/run` installs under `tests/mcp/`: the
//! faulty script's trivial `ok` tool (plain Python, so a raw client can time
//! the server alone), server-everything (npm registry) and the Python SDK
//! server (PyPI's `mcp`). A missing one is an error naming `.ci/run`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use alcove_testkit::{Block, FakeServer, Script, Step, TestEnv};
use anyhow::{Context, bail};
use serde_json::json;

use crate::measure::{median, ms};
use crate::scenarios::Bench;

/// Tool calls per overhead run.
const CALLS: usize = 40;
/// Children in the sharing scenario.
const CHILDREN: usize = 16;

/// The overhead of one MCP call.
pub(crate) struct McpOverhead {
    pub(crate) calls: usize,
    /// Median time between model requests when each turn makes one MCP call.
    pub(crate) mcp_turn_ms: f64,
    /// The same with a Read of a small file instead.
    pub(crate) read_turn_ms: f64,
    /// Median round trip of `tools/call` from a bare client to the same server.
    pub(crate) server_ms: f64,
}

impl McpOverhead {
    /// What alcove adds to an MCP call beyond the server's own time.
    pub(crate) fn overhead_ms(&self) -> f64 {
        self.mcp_turn_ms - self.read_turn_ms - self.server_ms
    }
}

/// Server processes and memory with 16 children using two servers.
pub(crate) struct McpSharing {
    pub(crate) children: usize,
    pub(crate) servers: usize,
    /// Server processes started in the whole session.
    pub(crate) processes: usize,
    /// Peak resident memory of the server processes together, MiB.
    pub(crate) servers_rss_mib: f64,
    /// Peak resident memory of alcove itself, MiB.
    pub(crate) alcove_rss_mib: f64,
}

fn test_servers() -> anyhow::Result<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp");
    for needed in [
        "servers/faulty.py",
        "servers/py_server.py",
        ".venv/bin/python",
        "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    ] {
        if !dir.join(needed).exists() {
            bail!(
                "{} is missing: run .ci/run (or `cd tests/mcp && npm ci` and the venv) first",
                dir.join(needed).display()
            );
        }
    }
    Ok(dir.canonicalize()?)
}

fn write_mcp_json(env: &TestEnv, servers: serde_json::Value) -> anyhow::Result<()> {
    std::fs::write(
        env.workspace().join(".mcp.json"),
        serde_json::to_string(&json!({ "mcpServers": servers }))?,
    )?;
    Ok(())
}

/// Median gap between consecutive model requests of `prompt`'s conversation.
fn turn_gap(server: &FakeServer, prompt: &str) -> anyhow::Result<f64> {
    let times: Vec<Instant> = server
        .requests_for(prompt)
        .iter()
        .map(|request| request.received_at)
        .collect();
    if times.len() < CALLS {
        bail!("{prompt}: only {} model requests", times.len());
    }
    // The first gap includes the servers' start-up; leave it out.
    let gaps: Vec<f64> = times
        .windows(2)
        .skip(1)
        .map(|pair| ms(pair[1].duration_since(pair[0])))
        .collect();
    Ok(median(&gaps))
}

pub(crate) fn overhead(bench: &Bench) -> anyhow::Result<McpOverhead> {
    let dir = test_servers()?;
    let faulty = dir.join("servers/faulty.py");
    let mut script = Script::new();
    for run in 0..=bench.runs {
        for kind in ["MCP", "READ"] {
            let call = |_: usize| match kind {
                "MCP" => Step::tool_call("mcp__faulty__ok", json!({})),
                _ => Step::tool_call("Read", json!({"file_path": "small.txt"})),
            };
            let mut steps: Vec<Step> = (0..CALLS).map(call).collect();
            steps.push(Step::text("done"));
            script = script.conversation(&format!("{kind} calls run {run}."), steps);
        }
    }
    let server = FakeServer::start(script);
    let (mut mcp, mut read) = (Vec::new(), Vec::new());
    for run in 0..=bench.runs {
        for kind in ["MCP", "READ"] {
            let env = TestEnv::new();
            std::fs::write(env.workspace().join("small.txt"), "ok\n")?;
            write_mcp_json(
                &env,
                json!({"faulty": {"command": "python3", "args": [faulty, "serve"]}}),
            )?;
            let prompt = format!("{kind} calls run {run}.");
            let status = bench
                .exec(
                    &env,
                    &server,
                    &["--permission-mode", "bypassPermissions", &prompt],
                )
                .status()
                .context("cannot run alcove")?;
            if !status.success() {
                bail!("{prompt}: alcove exited with {status}");
            }
            if run > 0 {
                let gap = turn_gap(&server, &prompt)?;
                if kind == "MCP" {
                    mcp.push(gap)
                } else {
                    read.push(gap)
                }
            }
        }
    }
    Ok(McpOverhead {
        calls: CALLS,
        mcp_turn_ms: median(&mcp),
        read_turn_ms: median(&read),
        server_ms: bare_round_trip(&faulty, CALLS * bench.runs)?,
    })
}

/// The median `tools/call` round trip of a bare JSON-lines client.
fn bare_round_trip(faulty: &Path, calls: usize) -> anyhow::Result<f64> {
    let mut child = Command::new("python3")
        .arg(faulty)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start the faulty server")?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        bail!("no pipes to the server");
    };
    let mut lines = BufReader::new(stdout).lines();
    let mut ask = |message: serde_json::Value| -> anyhow::Result<Duration> {
        let started = Instant::now();
        writeln!(stdin, "{message}")?;
        stdin.flush()?;
        lines.next().context("the server closed")??;
        Ok(started.elapsed())
    };
    ask(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}),
    )?;
    let mut times = Vec::with_capacity(calls);
    for id in 1..=calls {
        let elapsed = ask(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "ok", "arguments": {}}}))?;
        times.push(ms(elapsed));
    }
    let _ = child.kill();
    let _ = child.wait();
    Ok(median(&times))
}

pub(crate) fn sharing(bench: &Bench) -> anyhow::Result<McpSharing> {
    let dir = test_servers()?;
    let everything = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut script = Script::new();
    for run in 0..=bench.runs {
        let calls = crate::scenarios::agent_calls(CHILDREN, |i| {
            format!("MCPKID r{run} c{i}. Use both servers.")
        });
        script = script.conversation(
            &format!("MCPKIDS run {run}."),
            vec![Step::reply(calls), Step::text("All parts reported.")],
        );
        for i in 0..CHILDREN {
            script = script.conversation(
                &format!("MCPKID r{run} c{i}."),
                vec![
                    Step::reply(vec![
                        Block::tool_call(
                            "mcp__everything__echo",
                            json!({"message": format!("child {i}")}),
                        ),
                        Block::tool_call("mcp__py__add", json!({"a": i, "b": 1})),
                    ])
                    .delay(200),
                    Step::text("Both servers answered.").delay(200),
                ],
            );
        }
    }
    let server = FakeServer::start(script);
    let (mut processes, mut servers_rss, mut alcove_rss) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..=bench.runs {
        let env = TestEnv::new();
        let pids = env.home().join("server.pids");
        let wrap = |command: String| json!({"command": "sh", "args": ["-c", format!("echo $$ >> {}; exec {command}", pids.display())]});
        write_mcp_json(
            &env,
            json!({
                "everything": wrap(format!("node {} stdio", everything.display())),
                "py": wrap(format!("{} {}", dir.join(".venv/bin/python").display(), dir.join("servers/py_server.py").display())),
            }),
        )?;
        let prompt = format!("MCPKIDS run {run}.");
        let limit = format!("agents.max_concurrent={CHILDREN}");
        let mut child = bench
            .exec(
                &env,
                &server,
                &[
                    "--permission-mode",
                    "bypassPermissions",
                    "-c",
                    &limit,
                    &prompt,
                ],
            )
            .spawn()
            .context("cannot run alcove")?;
        let (mut peak_servers, mut peak_alcove) = (0u64, 0u64);
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            let servers: u64 = read_pids(&pids).iter().map(|pid| rss_kib(*pid)).sum();
            peak_servers = peak_servers.max(servers);
            peak_alcove = peak_alcove.max(rss_kib(child.id()));
            std::thread::sleep(Duration::from_millis(20));
        };
        if !status.success() {
            bail!("{prompt}: alcove exited with {status}");
        }
        if run > 0 {
            processes.push(read_pids(&pids).len() as f64);
            servers_rss.push(peak_servers as f64 / 1024.0);
            alcove_rss.push(peak_alcove as f64 / 1024.0);
        }
    }
    Ok(McpSharing {
        children: CHILDREN,
        servers: 2,
        processes: processes.iter().copied().fold(0.0, f64::max) as usize,
        servers_rss_mib: median(&servers_rss),
        alcove_rss_mib: median(&alcove_rss),
    })
}

fn read_pids(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// A process's resident memory now, KiB (0 once it is gone).
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
