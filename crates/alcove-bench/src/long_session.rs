//! Issue 11's scenarios: how much of a long Anthropic session's input is
//! read from the prompt cache, how large requests stay with and without
//! compaction, and what a compaction that needs no model call costs.
//!
//! The fake server counts tokens and models Anthropic's cache (see the
//! testkit's `context` module); alcove's `--json` usage events carry the
//! figures, so nothing is estimated here.

use std::process::Stdio;
use std::time::Instant;

use alcove_core::{ContextLimits, clear_old_results};
use alcove_protocol::{ContentBlock, Message, Role};
use alcove_testkit::{Block, FakeServer, Script, Step, TestEnv};
use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::measure::{median, ms};
use crate::scenarios::Bench;

/// Turns of the long sessions.
pub(crate) const TURNS: usize = 30;
/// Bytes of each file read in the compaction scenario.
const FILE_BYTES: usize = 11_000;
/// The window of the compaction scenario.
const WINDOW: u64 = 32_000;

/// The cache share of a long session.
pub(crate) struct CacheShare {
    /// Input tokens read from the cache over all input tokens.
    pub(crate) share: f64,
    /// The most that can be read: everything but each turn's new tokens.
    pub(crate) limit: f64,
}

/// Tokens sent at the last turn of a long session.
pub(crate) struct TurnTokens {
    pub(crate) with_compaction: u64,
    pub(crate) without: u64,
    pub(crate) compactions: usize,
}

/// A compaction with no model call against one encoding of the history.
pub(crate) struct ClearCost {
    pub(crate) messages: usize,
    pub(crate) history_bytes: usize,
    pub(crate) clear_us: f64,
    pub(crate) encode_us: f64,
}

fn reading_turn(n: usize) -> Step {
    Step::reply(vec![
        Block::text(&format!("Noted file {n}.")),
        Block::tool_call("Read", json!({"file_path": format!("data/{n}.txt")})),
    ])
}

fn files(env: &TestEnv, bytes: usize) {
    let line = "a line of the data set that nobody needs to remember later\n";
    for n in 0..TURNS {
        env.write_file(
            &format!("data/{n}.txt"),
            &line.repeat(bytes / line.len() + 1),
        );
    }
}

/// Runs one session with `--json` and returns its events.
fn session(
    bench: &Bench,
    server: &FakeServer,
    env: &TestEnv,
    prompt: &str,
) -> anyhow::Result<Vec<Value>> {
    let output = env
        .command(&bench.alcove, server)
        .args(["exec", "--json", "--max-turns", "60", prompt])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .context("cannot run alcove")?;
    if !output.status.success() {
        bail!("the session `{prompt}` failed: {}", output.status);
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

fn usages(events: &[Value]) -> Vec<(u64, u64, u64)> {
    events
        .iter()
        .filter(|event| event["type"] == "usage" && event["agent"] == "main")
        .map(|event| {
            let usage = &event["usage"];
            let get = |key: &str| usage[key].as_u64().unwrap_or(0);
            (
                get("input_tokens"),
                get("cache_read_tokens"),
                get("cache_write_tokens"),
            )
        })
        .collect()
}

/// The share of input read from the cache over a 30-turn session, and its
/// limit: each request could at best read the whole request before it.
pub(crate) fn cache_share(bench: &Bench) -> anyhow::Result<CacheShare> {
    let mut script = Script::new().count_tokens();
    for run in 0..bench.runs {
        let mut steps: Vec<Step> = (0..TURNS - 1).map(reading_turn).collect();
        steps.push(Step::text("done"));
        script = script.conversation(&format!("CACHE run {run}."), steps);
    }
    let server = FakeServer::start(script);
    let (mut shares, mut limits) = (Vec::new(), Vec::new());
    for run in 0..bench.runs {
        let env = TestEnv::new();
        files(&env, 2_000);
        let events = session(bench, &server, &env, &format!("CACHE run {run}."))?;
        let turns = usages(&events);
        if turns.len() != TURNS {
            bail!("the cached session made {} requests", turns.len());
        }
        let prompts: Vec<u64> = turns.iter().map(|(a, b, c)| a + b + c).collect();
        let total: u64 = prompts.iter().sum();
        let read: u64 = turns.iter().map(|(_, read, _)| read).sum();
        let best: u64 = prompts.windows(2).map(|pair| pair[0]).sum();
        shares.push(read as f64 / total.max(1) as f64);
        limits.push(best as f64 / total.max(1) as f64);
    }
    Ok(CacheShare {
        share: median(&shares),
        limit: median(&limits),
    })
}

/// Prompt tokens of the last request of a 30-turn session of 11 kB reads,
/// with a 32k window, compacting at 85 % and with compaction put off.
pub(crate) fn turn_tokens(bench: &Bench) -> anyhow::Result<TurnTokens> {
    let mut script = Script::new()
        .count_tokens()
        .summarizer("[alcove: context compaction]", "Noted");
    for kind in ["ON", "OFF"] {
        let mut steps: Vec<Step> = (0..TURNS - 1).map(reading_turn).collect();
        steps.push(Step::text("done"));
        script = script.conversation(&format!("TOKENS {kind}."), steps);
    }
    let server = FakeServer::start(script);
    let mut last = Vec::new();
    let mut compactions = 0;
    for (kind, window) in [("ON", WINDOW), ("OFF", 10_000_000)] {
        let env = TestEnv::new();
        files(&env, FILE_BYTES);
        env.write_file(
            ".alcove/config.toml",
            &format!("model_context_window = {window}\nmax_tokens = 2000\n"),
        );
        let events = session(bench, &server, &env, &format!("TOKENS {kind}."))?;
        if kind == "ON" {
            compactions = events
                .iter()
                .filter(|event| event["type"] == "compacted")
                .count();
        }
        let turns = usages(&events);
        let Some((a, b, c)) = turns.last() else {
            bail!("the {kind} session made no request");
        };
        last.push(a + b + c);
    }
    Ok(TurnTokens {
        with_compaction: last[0],
        without: last[1],
        compactions,
    })
}

/// The history of a session at turn 30 of 11 kB reads.
fn history() -> Vec<Message> {
    let mut messages = vec![Message::user_text("read every file")];
    let body = "a line of the data set that nobody needs to remember later\n".repeat(190);
    for n in 0..TURNS {
        messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text {
                    text: format!("Noted file {n}."),
                },
                ContentBlock::ToolUse {
                    id: format!("toolu_{n}"),
                    name: "Read".to_owned(),
                    input: json!({"file_path": format!("data/{n}.txt")}),
                },
            ],
        });
        messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: format!("toolu_{n}"),
                content: body.clone().into(),
                is_error: false,
            }],
        });
    }
    messages
}

/// The time of clearing old results (a compaction with no model call) on
/// the history of turn 30, against one JSON encoding of that history,
/// which every request makes anyway.
pub(crate) fn clear_cost(bench: &Bench) -> anyhow::Result<ClearCost> {
    let limits = ContextLimits::new(WINDOW, None);
    let original = history();
    let history_bytes = serde_json::to_vec(&original)?.len();
    let (mut clear, mut encode) = (Vec::new(), Vec::new());
    for _ in 0..bench.runs.max(5) {
        let mut messages = original.clone();
        let start = Instant::now();
        let (cleared, _) = clear_old_results(&mut messages, &limits);
        clear.push(ms(start.elapsed()) * 1000.0);
        if cleared == 0 {
            bail!("nothing was cleared");
        }
        let start = Instant::now();
        let bytes = serde_json::to_vec(&original)?;
        encode.push(ms(start.elapsed()) * 1000.0);
        std::hint::black_box(bytes);
    }
    Ok(ClearCost {
        messages: original.len(),
        history_bytes,
        clear_us: median(&clear),
        encode_us: median(&encode),
    })
}
