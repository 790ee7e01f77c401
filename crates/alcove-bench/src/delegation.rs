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
}

pub(crate) fn fan_out(bench: &Bench, widths: &[usize]) -> anyhow::Result<Vec<FanOut>> {
    let mut script = Script::new();
    for &n in widths {
        for run in 0..=bench.runs {
            let calls = (0..n)
                .map(|i| {
                    Block::tool_call(
                        "Agent",
                        json!({"description": format!("part {i}"), "prompt": format!("FAN {n} r{run} c{i}. Check the small file.")}),
                    )
                })
                .collect();
            script = script.conversation(
                &format!("FANOUT {n} run {run}."),
                vec![Step::reply(calls), Step::text("merged")],
            );
            for i in 0..n {
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
    let limit = format!("agents.max_concurrent={max}");
    let mut out = Vec::new();
    for &n in widths {
        let mut samples = Vec::new();
        for run in 0..=bench.runs {
            let env = TestEnv::new();
            env.write_file("small.txt", "a small file\n");
            let prompt = format!("FANOUT {n} run {run}.");
            let status = bench
                .exec(&env, &server, &["-c", &limit, &prompt])
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
            }
        }
        out.push(FanOut {
            children: n,
            ms: median(&samples),
            ideal_ms: (CHILD_TURNS as f64) * LATENCY_MS as f64,
        });
    }
    Ok(out)
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
                    Block::tool_call("Read", json!({"file_path": format!("explore/part{}.txt", 2 * turn)})),
                    Block::tool_call("Read", json!({"file_path": format!("explore/part{}.txt", 2 * turn + 1)})),
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
                    _ => format!("{part}:{line:03} lorem ipsum dolor sit amet, consectetur adipiscing\n"),
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
        result_bytes = last.tool_results().iter().map(|(_, text, _)| text.len()).sum();
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
