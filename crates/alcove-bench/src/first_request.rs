//! The size of the main agent's first request (issue 17): on a CPU model
//! every token of it is prefill before the first answer, and tool
//! definitions were 93 % of it.
//!
//! Tokens are estimated as bytes / 4 of the request body alcove sends on
//! the OpenAI wire (what a local server gets): a rough rule for English and
//! JSON with a BPE tokenizer, not a count. The server's own count also
//! includes its chat template (docs/local-models.md gives one measured
//! with llama.cpp).

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use anyhow::{Context, bail};

use crate::scenarios::Bench;

/// The first request's body, in bytes, and how much of it the tools took.
pub(crate) struct Sizes {
    pub(crate) body_bytes: usize,
    pub(crate) tool_bytes: usize,
    pub(crate) tools: usize,
    /// Each tool's name and the bytes of its JSON, in request order.
    pub(crate) per_tool: Vec<(String, usize)>,
}

impl Sizes {
    /// The token estimate: bytes / 4.
    pub(crate) fn tokens(bytes: usize) -> usize {
        bytes.div_ceil(4)
    }
}

/// The first request with every tool (the frontier profile, rarely used
/// tools deferred), with the local profile (what a server on this machine
/// gets by default: every tool in full, no `ToolSearch`) and with the lean
/// one.
pub(crate) struct FirstRequest {
    pub(crate) full: Sizes,
    pub(crate) local: Sizes,
    pub(crate) lean: Sizes,
}

pub(crate) fn first_request(bench: &Bench) -> anyhow::Result<FirstRequest> {
    Ok(FirstRequest {
        // Every tool: WebSearch is only offered with a search endpoint.
        // The fake server is on this machine, so `full` is asked for.
        full: measure(
            bench,
            "FIRST probe full",
            &[
                "-c",
                "tool_profile=full",
                "-c",
                "web.search_url=http://127.0.0.1:9/search",
            ],
        )?,
        local: measure(bench, "FIRST probe local", &[])?,
        lean: measure(bench, "FIRST probe lean", &["-c", "tool_profile=lean"])?,
    })
}

fn measure(bench: &Bench, prompt: &str, extra: &[&str]) -> anyhow::Result<Sizes> {
    let server = FakeServer::start(Script::new().conversation(prompt, vec![Step::text("ok")]));
    let env = TestEnv::new();
    let mut command = env.command_openai(&bench.alcove, &server);
    command
        .arg("exec")
        .args(extra)
        .arg(prompt)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let status = command.status().context("cannot start alcove")?;
    if !status.success() {
        bail!("alcove exec {prompt:?} failed: {status}");
    }
    let requests = server.requests();
    let first = requests.first().context("alcove sent no request")?;
    let tools = first.body["tools"].as_array().cloned().unwrap_or_default();
    Ok(Sizes {
        body_bytes: first.body_len,
        tool_bytes: tools.iter().map(|tool| tool.to_string().len()).sum(),
        tools: tools.len(),
        per_tool: tools
            .iter()
            .map(|tool| {
                let name = tool["function"]["name"].as_str().unwrap_or("?").to_owned();
                (name, tool.to_string().len())
            })
            .collect(),
    })
}
