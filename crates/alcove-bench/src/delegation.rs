//! The delegation scenarios: fan-out latency against the ideal, and the
//! context economy of handing an exploration to a child.
//!
//! Both read the fake server's request log: the parent's first request is
//! answered at once with the delegations, and its second request arrives
//! when every child has reported, so the gap between the two is the cost of
//! the fan-out as the parent sees it.

use alcove_testkit::{Block, FakeServer, Script, Step, TestEnv};
use anyhow::{Context, bail};
use serde_json::json;

use crate::measure::{median, ms};
use crate::scenarios::Bench;

/// Model turns per child, each answered after [`LATENCY_MS`].
pub(crate) const CHILD_TURNS: usize = 5;
pub(crate) const LATENCY_MS: u64 = 200;

/// One fan-out width.
pub(crate) struct FanOut {
    pub(crate) children: usize,
    /// Parent's delegating request to its next request, median.
    pub(crate) ms: f64,
    /// `CHILD_TURNS × LATENCY_MS`.
    pub(crate) ideal_ms: f64,
    /// Where the time beyond the ideal went (medians over the runs), in ms:
    /// parent's request → first child request; the mean gap between a
    /// child's consecutive requests beyond the scripted latency; the last
    /// child's last request, plus its latency → the parent's next request.
    pub(crate) start_ms: f64,
    pub(crate) gap_ms: f64,
    pub(crate) end_ms: f64,
    /// The same gap for N bare clients (`__connect`) making their five
    /// requests at once, no alcove: what the machine and the fake server
    /// add at this width.
    pub(crate) bare_gap_ms: f64,
}

/// (start, mean gap, end) of one fan-out run, in ms (see [`FanOut`]).
fn breakdown(
    server: &FakeServer,
    parent: (std::time::Instant, std::time::Instant),
    children: &[String],
) -> (f64, f64, f64) {
    let latency = LATENCY_MS as f64;
    let (mut first, mut last) = (parent.1, parent.0);
    for child in children {
        let times = server.requests_for(child);
        if let (Some(a), Some(b)) = (times.first(), times.last()) {
            first = first.min(a.received_at);
            last = last.max(b.received_at);
        }
    }
    (
        ms(first.saturating_duration_since(parent.0)),
        mean_gap(server, children),
        ms(parent.1.saturating_duration_since(last)) - latency,
    )
}

/// The mean gap between consecutive requests of each of `clients` (by
/// prompt) beyond the scripted latency, in ms.
fn mean_gap(server: &FakeServer, clients: &[String]) -> f64 {
    let latency = LATENCY_MS as f64;
    let mut gaps = Vec::new();
    for client in clients {
        let times: Vec<_> = server
            .requests_for(client)
            .iter()
            .map(|request| request.received_at)
            .collect();
        gaps.extend(
            times
                .windows(2)
                .map(|w| ms(w[1].duration_since(w[0])) - latency),
        );
    }
    gaps.iter().sum::<f64>() / gaps.len().max(1) as f64
}

pub(crate) fn fan_out(bench: &Bench, widths: &[usize]) -> anyhow::Result<Vec<FanOut>> {
    let mut script = Script::new();
    for &n in widths {
        for run in 0..=bench.runs {
            let calls = crate::scenarios::agent_calls(n, |i| {
                format!("FAN {n} r{run} c{i}. Check the small file.")
            });
            script = script.conversation(
                &format!("FANOUT {n} run {run}."),
                vec![Step::reply(calls), Step::text("merged")],
            );
            for i in 0..n {
                script = script.conversation(
                    &format!("FANBARE {n} r{run} c{i}."),
                    vec![Step::text("ok").delay(LATENCY_MS); CHILD_TURNS],
                );
                let mut steps: Vec<Step> = (1..CHILD_TURNS)
                    .map(|_| {
                        Step::tool_call("Read", json!({"file_path": "small.txt"})).delay(LATENCY_MS)
                    })
                    .collect();
                steps.push(Step::text("checked").delay(LATENCY_MS));
                script = script.conversation(&format!("FAN {n} r{run} c{i}."), steps);
            }
        }
    }
    let server = FakeServer::start(script);
    let max = widths.iter().copied().max().unwrap_or(1);
    let limit = format!("agents.max_parallel={max}");
    // One reply makes all N calls: the per-reply cap must let them run.
    let calls = format!("max_tool_calls_per_reply={max}");
    let mut out = Vec::new();
    for &n in widths {
        let (mut samples, mut parts) = (Vec::new(), Vec::new());
        for run in 0..=bench.runs {
            let env = TestEnv::new();
            env.write_file("small.txt", "a small file\n");
            let prompt = format!("FANOUT {n} run {run}.");
            let status = bench
                .exec(&env, &server, &["-c", &limit, "-c", &calls, &prompt])
                .status()
                .context("cannot run alcove")?;
            if !status.success() {
                bail!("the {n}-child fan-out failed: {status}");
            }
            let parent = server.requests_for(&prompt);
            let [first, second] = parent.as_slice() else {
                bail!("the {n}-child parent made {} requests", parent.len());
            };
            let results = second.tool_results();
            if results.len() != n || results.iter().any(|(_, _, is_error)| *is_error) {
                bail!("the {n}-child fan-out did not complete: {results:?}");
            }
            if run > 0 {
                samples.push(ms(second.received_at.duration_since(first.received_at)));
                let children: Vec<String> =
                    (0..n).map(|i| format!("FAN {n} r{run} c{i}.")).collect();
                parts.push(breakdown(
                    &server,
                    (first.received_at, second.received_at),
                    &children,
                ));
            }
        }
        let bare_gap_ms = bare_clients_gap(bench, &server, n)?;
        let part =
            |pick: fn(&(f64, f64, f64)) -> f64| median(&parts.iter().map(pick).collect::<Vec<_>>());
        out.push(FanOut {
            children: n,
            ms: median(&samples),
            ideal_ms: (CHILD_TURNS as f64) * LATENCY_MS as f64,
            start_ms: part(|p| p.0),
            gap_ms: part(|p| p.1),
            end_ms: part(|p| p.2),
            bare_gap_ms,
        });
    }
    Ok(out)
}

/// `n` bare clients started at once, each making its [`CHILD_TURNS`]
/// requests in turn: the mean gap between a client's consecutive requests
/// beyond the scripted latency (median over the runs), in ms.
fn bare_clients_gap(bench: &Bench, server: &FakeServer, n: usize) -> anyhow::Result<f64> {
    let address = server.url().trim_start_matches("http://").to_owned();
    let me = std::env::current_exe().context("cannot find myself")?;
    let mut samples = Vec::new();
    for run in 1..=bench.runs {
        let prompts: Vec<String> = (0..n)
            .map(|i| format!("FANBARE {n} r{run} c{i}."))
            .collect();
        let clients = prompts
            .iter()
            .map(|prompt| {
                std::process::Command::new(&me)
                    .args(["__connect", &address, &CHILD_TURNS.to_string(), prompt])
                    .spawn()
            })
            .collect::<Result<Vec<_>, _>>()?;
        for mut client in clients {
            if !client.wait()?.success() {
                bail!("a bare client of the {n}-wide run failed");
            }
        }
        samples.push(mean_gap(server, &prompts));
    }
    Ok(median(&samples))
}

/// The same five turns at [`LATENCY_MS`] made by the main agent itself, no
/// child: the mean gap between its requests beyond the scripted latency
/// (median over the runs), in ms. It is what each turn costs besides the
/// model's own time, so it tells fan-out overhead apart from turn overhead.
pub(crate) fn solo_gap(bench: &Bench) -> anyhow::Result<(f64, f64)> {
    let mut script = Script::new();
    for run in 0..=bench.runs {
        let bare = (0..CHILD_TURNS)
            .map(|_| Step::text("ok").delay(LATENCY_MS))
            .collect();
        script = script.conversation(&format!("BARE run {run}."), bare);
        let mut steps: Vec<Step> = (1..CHILD_TURNS)
            .map(|_| Step::tool_call("Read", json!({"file_path": "small.txt"})).delay(LATENCY_MS))
            .collect();
        steps.push(Step::text("checked").delay(LATENCY_MS));
        script = script.conversation(&format!("SOLO run {run}."), steps);
    }
    let server = FakeServer::start(script);
    let address = server.url().trim_start_matches("http://").to_owned();
    let me = std::env::current_exe().context("cannot find myself")?;
    let (mut solo, mut bare) = (Vec::new(), Vec::new());
    for run in 0..=bench.runs {
        let env = TestEnv::new();
        env.write_file("small.txt", "a small file\n");
        let prompt = format!("SOLO run {run}.");
        let status = bench.exec(&env, &server, &[&prompt]).status()?;
        if !status.success() {
            bail!("the solo run failed: {status}");
        }
        let bare_prompt = format!("BARE run {run}.");
        let status = std::process::Command::new(&me)
            .args([
                "__connect",
                &address,
                &CHILD_TURNS.to_string(),
                &bare_prompt,
            ])
            .status()?;
        if !status.success() {
            bail!("the bare client failed: {status}");
        }
        if run > 0 {
            solo.push(mean_gap(&server, &[prompt]));
            bare.push(mean_gap(&server, &[bare_prompt]));
        }
    }
    Ok((median(&solo), median(&bare)))
}

/// What the parent paid for an exploration its child did.
pub(crate) struct Economy {
    /// Bytes of the files the child read.
    pub(crate) file_bytes: usize,
    /// Bytes of tool results the child's model was sent (line numbers included).
    pub(crate) child_result_bytes: usize,
    /// Growth of the parent's request body across the delegation, median.
    pub(crate) parent_growth: f64,
}

const PARTS: usize = 10;

pub(crate) fn economy(bench: &Bench) -> anyhow::Result<Economy> {
    let mut script = Script::new();
    for run in 0..=bench.runs {
        script = script.conversation(
            &format!("ECONOMY run {run}."),
            vec![
                Step::tool_call(
                    "Agent",
                    json!({
                        "description": "find the keyword",
                        "prompt": format!("EXPLORE r{run}. Read every file under explore/ and report which part mentions the keyword, with its line."),
                        "subagent_type": "explore"
                    }),
                ),
                Step::text("Part 7 has it; done."),
            ],
        );
        let mut steps: Vec<Step> = (0..PARTS / 2)
            .map(|turn| {
                Step::reply(vec![
                    Block::tool_call(
                        "Read",
                        json!({"file_path": format!("explore/part{}.txt", 2 * turn)}),
                    ),
                    Block::tool_call(
                        "Read",
                        json!({"file_path": format!("explore/part{}.txt", 2 * turn + 1)}),
                    ),
                ])
            })
            .collect();
        steps.push(Step::text(
            "The keyword appears once, in explore/part7.txt line 170 (\"7:170 keyword\"). \
             The other nine parts are filler of the same shape: numbered lines of lorem ipsum \
             with no mention of it. Nothing else in explore/ refers to the keyword, so part 7 \
             is the only place to change.",
        ));
        script = script.conversation(&format!("EXPLORE r{run}."), steps);
    }
    let server = FakeServer::start(script);
    let (mut growth, mut file_bytes, mut result_bytes) = (Vec::new(), 0, 0);
    for run in 0..=bench.runs {
        let env = TestEnv::new();
        file_bytes = 0;
        for part in 0..PARTS {
            let text: String = (0..340)
                .map(|line| match (part, line) {
                    (7, 170) => "7:170 keyword\n".to_owned(),
                    _ => format!(
                        "{part}:{line:03} lorem ipsum dolor sit amet, consectetur adipiscing\n"
                    ),
                })
                .collect();
            file_bytes += text.len();
            env.write_file(&format!("explore/part{part}.txt"), &text);
        }
        let prompt = format!("ECONOMY run {run}.");
        let status = bench.exec(&env, &server, &[&prompt]).status()?;
        if !status.success() {
            bail!("the economy run failed: {status}");
        }
        let parent = server.requests_for(&prompt);
        let [first, second] = parent.as_slice() else {
            bail!("the parent made {} requests", parent.len());
        };
        let child = server.requests_for(&format!("EXPLORE r{run}."));
        let last = child.last().context("the child never asked")?;
        result_bytes = last
            .tool_results()
            .iter()
            .map(|(_, text, _)| text.len())
            .sum();
        if run > 0 {
            growth.push(second.body_len as f64 - first.body_len as f64);
        }
    }
    Ok(Economy {
        file_bytes,
        child_result_bytes: result_bytes,
        parent_growth: median(&growth),
    })
}
