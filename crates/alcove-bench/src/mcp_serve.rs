//! The `alcove mcp serve` scenario (issue 48): a minimal MCP client
//! written here (newline-delimited JSON-RPC over the server's stdio:
//! `initialize`, `notifications/initialized`, one `tools/call` of
//! `delegate`) measures what delegating through the server costs.
//!
//! (a) Overhead of `delegate` over an in-process `Agent` call with the same
//! child script ([`CHILD_TURNS`] instant fake-model turns: two `Read`s of a
//! small file, then the answer). Each run starts a fresh server and a fresh
//! `alcove exec`, so in both the child is the first of a new process.
//! - `delegate`: from writing the `tools/call` line to reading its
//!   response (the JSON-RPC framing, the call's arguments, the child, and
//!   the result with its footer and end record), timed by the client.
//! - `Agent`: the main agent's reply is one `Agent` call; the time is its
//!   delegating request's arrival at the fake server → its next request's
//!   (the fan-out figure's method at N = 1). That takes out the main
//!   agent's own turns except the tail of the first (streaming the reply
//!   that holds the call) and the head of the second (building the request
//!   that carries the result), which is the in-process counterpart of the
//!   server reading the call and writing its response.
//!
//! The ratio is of the two medians.
//!
//! (b) Idle RSS: the server's `VmRSS` (/proc) 300 ms after
//! `notifications/initialized`, before any call, against a plain one-turn
//! `alcove exec` session's peak RSS measured in the same run (a server that
//! sits idle should cost no more than one short session).

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::measure::{median, ms};
use crate::scenarios::Bench;

/// Model turns of the child, in both paths.
pub(crate) const CHILD_TURNS: usize = 3;
/// How long a response may take before the run is called hung.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(120);
/// The pause after `notifications/initialized` before RSS is read.
const SETTLE: Duration = Duration::from_millis(300);

/// The `mcp serve` figures (medians over the runs).
pub(crate) struct McpServeFigure {
    /// `tools/call delegate` written → its response read.
    pub(crate) delegate_ms: f64,
    /// The parent's `Agent` request → its next request.
    pub(crate) agent_ms: f64,
    /// The server's VmRSS after initialize, MiB.
    pub(crate) idle_rss_mib: f64,
    /// A one-turn `alcove exec` session's peak RSS, MiB.
    pub(crate) plain_rss_mib: f64,
}

fn child_steps() -> Vec<Step> {
    let mut steps: Vec<Step> = (1..CHILD_TURNS)
        .map(|_| Step::tool_call("Read", json!({"file_path": "small.txt"})))
        .collect();
    steps.push(Step::text("checked: the small file is fine"));
    steps
}

pub(crate) fn mcp_serve(bench: &Bench) -> anyhow::Result<McpServeFigure> {
    let mut script = Script::new();
    for run in 0..=bench.runs {
        script = script
            .conversation(&format!("MCPD r{run}."), child_steps())
            .conversation(&format!("MCPC r{run}."), child_steps())
            .conversation(
                &format!("MCPA r{run}."),
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "check", "prompt": format!("MCPC r{run}. Check the small file.")}),
                    ),
                    Step::text("done"),
                ],
            )
            .conversation(&format!("MCPPLAIN r{run}."), vec![Step::text("ok")]);
    }
    let server = FakeServer::start(script);
    let (mut delegate, mut agent, mut idle, mut plain) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for run in 0..=bench.runs {
        let (delegate_ms, idle_mib) = serve_run(bench, &server, run)?;
        let agent_ms = agent_run(bench, &server, run)?;
        let plain_mib = crate::workflow::plain_session_rss(bench, &server, "MCPPLAIN", run)?;
        for tag in ["MCPD", "MCPC"] {
            let requests = server.requests_for(&format!("{tag} r{run}."));
            if requests.len() != CHILD_TURNS {
                bail!(
                    "the {tag} child of run {run} made {} requests, not {CHILD_TURNS}",
                    requests.len()
                );
            }
            // Both children's Reads ran (no permission refusal on one side).
            let refused = requests
                .iter()
                .flat_map(|request| request.tool_results())
                .any(|(_, _, is_error)| is_error);
            if refused {
                bail!("a Read of the {tag} child of run {run} failed");
            }
        }
        if run > 0 {
            delegate.push(delegate_ms);
            agent.push(agent_ms);
            idle.push(idle_mib);
            plain.push(plain_mib);
        }
    }
    Ok(McpServeFigure {
        delegate_ms: median(&delegate),
        agent_ms: median(&agent),
        idle_rss_mib: median(&idle),
        plain_rss_mib: median(&plain),
    })
}

/// The in-process path: the parent's `Agent` request → its next request, ms.
fn agent_run(bench: &Bench, server: &FakeServer, run: usize) -> anyhow::Result<f64> {
    let env = TestEnv::new();
    env.write_file("small.txt", "a small file\n");
    let prompt = format!("MCPA r{run}.");
    let status = bench.exec(&env, server, &[&prompt]).status()?;
    if !status.success() {
        bail!("the in-process Agent run failed: {status}");
    }
    let parent = server.requests_for(&prompt);
    let [first, second] = parent.as_slice() else {
        bail!("the Agent parent made {} requests, not 2", parent.len());
    };
    if second
        .tool_results()
        .iter()
        .any(|(_, _, is_error)| *is_error)
    {
        bail!("the Agent call failed: {:?}", second.tool_results());
    }
    Ok(ms(second.received_at.duration_since(first.received_at)))
}

/// One server: initialize, idle RSS, one timed `delegate`, then stdin
/// closed and the exit awaited. Returns (delegate ms, idle RSS MiB).
fn serve_run(bench: &Bench, server: &FakeServer, run: usize) -> anyhow::Result<(f64, f64)> {
    let env = TestEnv::new();
    env.write_file("small.txt", "a small file\n");
    let mut command = env.command(&bench.alcove, server);
    command
        .args(["mcp", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut client = Client::start(command)?;
    let result = (|| {
        client.request(
            1,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "alcove-bench", "version": "0"},
            }),
        )?;
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        std::thread::sleep(SETTLE);
        let idle = vm_rss_mib(client.child.id())?;
        let started = Instant::now();
        let response = client.request(
            2,
            "tools/call",
            json!({
                "name": "delegate",
                "arguments": {
                    "prompt": format!("MCPD r{run}. Check the small file."),
                    "description": "check",
                },
            }),
        )?;
        let elapsed = started.elapsed();
        if response["isError"] == true || response["structuredContent"]["status"] != "completed" {
            bail!("delegate did not complete: {response}");
        }
        Ok((ms(elapsed), idle))
    })();
    let ended = client.finish();
    let figures = result?;
    ended?;
    Ok(figures)
}

/// The server process and its stdout's lines (read on a thread of their
/// own, so a silent server is a timeout, not a hang).
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Client {
    fn start(mut command: Command) -> anyhow::Result<Self> {
        let mut child = command.spawn().context("cannot start alcove mcp serve")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let stdin = child.stdin.take();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            lines,
        })
    }

    fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("stdin is closed")?;
        writeln!(stdin, "{message}")?;
        stdin.flush()?;
        Ok(())
    }

    /// Sends a request and returns its `result`, skipping notifications.
    fn request(&mut self, id: u64, method: &str, params: Value) -> anyhow::Result<Value> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let line = self
                .lines
                .recv_timeout(RESPONSE_TIMEOUT)
                .with_context(|| format!("no response to {method} (server ended or hung)"))?;
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                bail!("the server wrote a line that is not JSON: {line}");
            };
            if message["id"] == id && message.get("method").is_none() {
                if let Some(error) = message.get("error") {
                    bail!("{method} failed: {error}");
                }
                return Ok(message["result"].clone());
            }
        }
    }

    /// Closes stdin (the end of the session) and waits for the exit.
    fn finish(mut self) -> anyhow::Result<()> {
        self.stdin = None;
        let deadline = Instant::now() + RESPONSE_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                if !status.success() {
                    bail!("alcove mcp serve exited with {status}");
                }
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                bail!("alcove mcp serve did not exit after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The current resident set of process `pid`, MiB.
fn vm_rss_mib(pid: u32) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .context("cannot read the server's /proc status")?;
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .context("no VmRSS in the server's /proc status")?;
    Ok(kib / 1024.0)
}
