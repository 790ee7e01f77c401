//! `alcove-bench`: the benchmark driver behind `bench/run` (issue 7).
//!
//! It starts the testkit's fake model server in-process, runs the real
//! release `alcove` binary against it in scripted scenarios, and writes
//! BENCHMARKS.md with each figure next to its limit. It is not a test: the
//! release build it needs is too slow for CI, and its figures depend on the
//! machine.
//!
//! ```text
//! alcove-bench [--alcove PATH] [--runs N] [--out FILE] [--tree DIR] [--rg PATH]
//!              [--notes FILE] [--only startup,first,session,wires,bashcall,children,fanout,economy,grep,cache,compaction,mcp,mcpserve,workflow,batch,report]
//!              [--fanout 1,4,16,64]
//! ```
//!
//! Two internal modes serve the measurements: `__rusage OUT -- CMD…` (the
//! wrapper that reads its child's rusage, see `measure`) and
//! `__connect ADDRESS` (the start-up baseline, see `scenarios`).

mod bash_call;
mod batch;
mod delegation;
mod first_request;
mod grep;
mod long_session;
mod mcp;
mod mcp_serve;
mod measure;
mod report;
mod scenarios;
mod wires;
mod workflow;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::report::Results;
use crate::scenarios::Bench;

struct Options {
    alcove: PathBuf,
    runs: usize,
    out: PathBuf,
    tree: Option<PathBuf>,
    rg: Option<PathBuf>,
    notes: Option<PathBuf>,
    only: Option<Vec<String>>,
    /// The children counts of the fan-out figure.
    fan_out: Vec<usize>,
    command: String,
}

fn parse(args: &[OsString]) -> anyhow::Result<Options> {
    let mut options = Options {
        alcove: PathBuf::from("target/release/alcove"),
        runs: 7,
        out: PathBuf::from("BENCHMARKS.md"),
        tree: grep::default_tree(),
        rg: None,
        notes: None,
        only: None,
        fan_out: vec![1, 4, 16, 64],
        command: "bench/run".to_owned(),
    };
    let mut iter = args.iter();
    while let Some(flag) = iter.next() {
        let flag = flag.to_string_lossy();
        let mut value = || {
            iter.next()
                .cloned()
                .with_context(|| format!("{flag} needs a value"))
        };
        match flag.as_ref() {
            "--alcove" => options.alcove = value()?.into(),
            "--runs" => {
                options.runs = value()?
                    .to_string_lossy()
                    .parse()
                    .context("--runs takes a number")?;
            }
            "--out" => options.out = value()?.into(),
            "--tree" => options.tree = Some(value()?.into()),
            "--rg" => options.rg = Some(value()?.into()),
            "--notes" => options.notes = Some(value()?.into()),
            "--command" => options.command = value()?.to_string_lossy().into_owned(),
            "--fanout" => {
                options.fan_out = value()?
                    .to_string_lossy()
                    .split(',')
                    .map(|n| n.trim().parse::<usize>())
                    .collect::<Result<_, _>>()
                    .context("--fanout takes counts like 3,8")?;
            }
            "--only" => {
                options.only = Some(
                    value()?
                        .to_string_lossy()
                        .split(',')
                        .map(str::to_owned)
                        .collect(),
                );
            }
            other => bail!(
                "unknown argument `{other}` (see the doc comment of crates/alcove-bench/src/main.rs)"
            ),
        }
    }
    if options.runs == 0 {
        bail!("--runs must be at least 1");
    }
    Ok(options)
}

/// CPU model, cores, memory, kernel and load, from /proc.
fn machine() -> String {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find_map(|line| {
            line.strip_prefix("model name")?
                .split_once(':')
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let memory = read("/proc/meminfo")
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:").map(|v| v.trim().to_owned()))
        .unwrap_or_default();
    let kernel = read("/proc/sys/kernel/osrelease");
    let load = read("/proc/loadavg");
    let rustc = std::env::var("ALCOVE_BENCH_RUSTC").unwrap_or_default();
    let commit = std::env::var("ALCOVE_BENCH_COMMIT").unwrap_or_default();
    format!(
        "{model}, {cores} cores, {memory} RAM, Linux {}; load average at start {}; {rustc}; alcove at {commit}",
        kernel.trim(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    })
}

fn run(options: Options) -> anyhow::Result<()> {
    let alcove = options
        .alcove
        .canonicalize()
        .with_context(|| format!("no alcove binary at {}", options.alcove.display()))?;
    let scratch = std::env::temp_dir().join(format!("alcove-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let bench = Bench {
        alcove,
        runs: options.runs,
        scratch: scratch.clone(),
    };
    let wanted = |name: &str| {
        options
            .only
            .as_ref()
            .is_none_or(|only| only.iter().any(|o| o == name))
    };
    let mut results = Results::default();
    let step = |name: &str| eprintln!("alcove-bench: {name}…");
    if wanted("startup") {
        step("startup");
        results.startup = Some(scenarios::startup(&bench)?);
    }
    if wanted("first") {
        step("first request size");
        results.first_request = Some(first_request::first_request(&bench)?);
    }
    if wanted("session") {
        step("per-turn CPU and peak RSS (sessions of 1 to 50 turns)");
        results.session = Some(scenarios::session(&bench)?);
    }
    if wanted("wires") {
        step("per-turn CPU on each wire (turns 41–50 on Anthropic, Chat Completions, Responses)");
        results.wires = Some(wires::wire_bands(&bench)?);
    }
    if wanted("bashcall") {
        step("confined Bash calls of `true`");
        results.bash_call = Some(bash_call::bash_call(&bench)?);
    }
    if wanted("children") {
        step("peak RSS with 16 live children");
        results.children = Some(scenarios::live_children(&bench)?);
    }
    if wanted("fanout") {
        step("fan-out of 1, 4, 16 and 64 children");
        results.fan_out = Some(delegation::fan_out(&bench, &options.fan_out)?);
        results.solo_gap_ms = Some(delegation::solo_gap(&bench)?);
    }
    if wanted("economy") {
        step("context economy");
        results.economy = Some(delegation::economy(&bench)?);
    }
    if wanted("cache") {
        step("prompt cache share over a 30-turn Anthropic session");
        results.cache = Some(long_session::cache_share(&bench)?);
    }
    if wanted("compaction") {
        step("tokens at turn 30 with and without compaction; a compaction with no model call");
        results.turn_tokens = Some(long_session::turn_tokens(&bench)?);
        results.clear = Some(long_session::clear_cost(&bench)?);
    }
    if wanted("mcp") {
        step("MCP: call overhead, and 16 children on two servers");
        results.mcp_overhead = Some(mcp::overhead(&bench)?);
        results.mcp_sharing = Some(mcp::sharing(&bench)?);
    }
    if wanted("mcpserve") {
        step("alcove mcp serve: a delegate call against an in-process Agent call; idle RSS");
        results.mcp_serve = Some(mcp_serve::mcp_serve(&bench)?);
    }
    if wanted("workflow") {
        step("workflow: 200 agents × 2 instant turns in one pipeline at concurrency 16");
        results.workflow = Some(workflow::workflow(&bench)?);
    }
    if wanted("batch") || wanted("report") {
        step("batch: 1,000 tasks × 2 turns × 100 ms at concurrency 64, and its report");
        let (figures, report) = batch::batch(&bench, wanted("batch"), wanted("report"))?;
        if wanted("batch") {
            results.batch = Some(figures);
        }
        results.report = report;
    }
    if wanted("grep") {
        step("Grep against rg");
        let rg = options.rg.clone().or_else(|| which("rg"));
        results.grep = Some(match (&options.tree, rg) {
            (Some(tree), Some(rg)) => Ok(grep::grep_vs_rg(&bench, tree, &rg)?),
            (None, _) => Err("no cargo registry sources found (pass --tree DIR)".to_owned()),
            (_, None) => Err("rg is not installed (bench/run installs it)".to_owned()),
        });
    }
    let notes = match &options.notes {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?,
        ),
        None => None,
    };
    let context = report::Context {
        machine: machine(),
        command: options.command.clone(),
        runs: options.runs,
        notes,
    };
    let markdown = report::render(&results, &context);
    std::fs::write(&options.out, &markdown)
        .with_context(|| format!("cannot write {}", options.out.display()))?;
    let _ = std::fs::remove_dir_all(&scratch);
    print!("{markdown}");
    eprintln!("alcove-bench: wrote {}", options.out.display());
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let result = match args.first().and_then(|arg| arg.to_str()) {
        Some("__rusage") => match measure::wrapper_main(&args[1..]) {
            Ok(code) => return ExitCode::from(u8::try_from(code).unwrap_or(1)),
            Err(err) => Err(err),
        },
        Some("__connect") => match args.get(1) {
            Some(address) => {
                let count = args
                    .get(2)
                    .and_then(|count| count.to_str()?.parse().ok())
                    .unwrap_or(1);
                let prompt = args
                    .get(3)
                    .map_or("BASELINE probe".into(), |prompt| prompt.to_string_lossy());
                scenarios::connect_main(&address.to_string_lossy(), count, &prompt)
            }
            None => Err(anyhow::anyhow!(
                "usage: alcove-bench __connect ADDRESS [COUNT [PROMPT]]"
            )),
        },
        _ => parse(&args).and_then(run),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("alcove-bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}
