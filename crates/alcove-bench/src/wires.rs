//! Per-turn CPU on each wire (issue 36): the session scenario's band of
//! turns 41–50 run on Anthropic Messages, OpenAI Chat Completions and
//! OpenAI Responses, side by side, so a wire whose request body or stream
//! costs more per turn shows as its own figure.
//!
//! Each run makes the 40- and 50-turn sessions of every wire one after
//! another (the same scripted turns as `scenarios::session`), so the three
//! bands share the machine's drift; a band is the median over the runs of
//! each run's difference, divided by the ten turns.

use std::process::{Command, Stdio};

use alcove_testkit::{FakeServer, Script, TestEnv};
use anyhow::bail;

use crate::measure::{self, median, ms};
use crate::scenarios::{Bench, session_steps, session_workspace};

/// The session lengths whose difference is the band.
const BAND: [usize; 2] = [40, 50];

/// Runs per `--runs`, as the session scenario's band takes (`scenarios.rs`).
const RUNS_PER_RUN: usize = 3;

/// One wire, as a session is pointed at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    Anthropic,
    Chat,
    Responses,
}

impl Wire {
    pub(crate) const ALL: [Wire; 3] = [Wire::Anthropic, Wire::Chat, Wire::Responses];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Wire::Anthropic => "Anthropic Messages",
            Wire::Chat => "OpenAI Chat Completions",
            Wire::Responses => "OpenAI Responses",
        }
    }

    /// The path the fake server must see, so a figure is the wire it names.
    fn path(self) -> &'static str {
        match self {
            Wire::Anthropic => "/v1/messages",
            Wire::Chat => "/v1/chat/completions",
            Wire::Responses => "/v1/responses",
        }
    }

    /// `alcove exec … PROMPT` on this wire against `server`.
    fn command(self, bench: &Bench, env: &TestEnv, server: &FakeServer, prompt: &str) -> Command {
        let mut command = match self {
            Wire::Anthropic => env.command(&bench.alcove, server),
            Wire::Chat | Wire::Responses => env.command_openai(&bench.alcove, server),
        };
        command.arg("exec");
        if self == Wire::Responses {
            command.args(["-c", "model_options.openai.wire=responses"]);
        }
        command
            .args(["--permission-mode", "bypassPermissions", prompt])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }
}

/// The band's CPU per turn on one wire.
pub(crate) struct WireBand {
    pub(crate) wire: Wire,
    /// Median over the runs of (50-turn CPU − 40-turn CPU) / 10, µs.
    pub(crate) turn_us: f64,
    /// Bytes of the last request of the 50-turn session (the body grows
    /// by wire: the same history in each wire's shape).
    pub(crate) last_body_bytes: usize,
}

/// The three wires' bands, with `runs` as the figures' runs.
pub(crate) struct WireBands {
    pub(crate) bands: Vec<WireBand>,
    pub(crate) runs: usize,
}

fn prompt(wire: Wire, turns: usize, run: usize) -> String {
    format!("WIRE {wire:?} SESSION {turns} run {run}.")
}

pub(crate) fn wire_bands(bench: &Bench) -> anyhow::Result<WireBands> {
    let runs = bench.runs * RUNS_PER_RUN;
    let mut script = Script::new();
    for run in 0..=runs {
        for wire in Wire::ALL {
            for turns in BAND {
                script = script.conversation(&prompt(wire, turns, run), session_steps(turns));
            }
        }
    }
    let server = FakeServer::start(script);
    let mut per_turn: Vec<Vec<f64>> = vec![Vec::new(); Wire::ALL.len()];
    let mut last_body = vec![0; Wire::ALL.len()];
    for run in 0..=runs {
        for (index, wire) in Wire::ALL.into_iter().enumerate() {
            let mut cpu = [0.0; 2];
            for (slot, turns) in BAND.into_iter().enumerate() {
                let env = TestEnv::new();
                session_workspace(&env);
                let prompt = prompt(wire, turns, run);
                let command = wire.command(bench, &env, &server, &prompt);
                let usage = measure::run_measured(&command, &bench.scratch)?;
                let requests = server.requests_for(&prompt);
                if requests.len() != turns {
                    bail!(
                        "the {turns}-turn session on {} made {} requests",
                        wire.name(),
                        requests.len()
                    );
                }
                if let Some(other) = requests.iter().find(|r| r.path != wire.path()) {
                    bail!("a session on {} went to {}", wire.name(), other.path);
                }
                if let Some(last) = requests.last() {
                    last_body[index] = last.body_len;
                }
                cpu[slot] = ms(usage.cpu);
            }
            if run > 0 {
                per_turn[index].push((cpu[1] - cpu[0]) * 1000.0 / (BAND[1] - BAND[0]) as f64);
            }
        }
    }
    let bands = Wire::ALL
        .into_iter()
        .enumerate()
        .map(|(index, wire)| WireBand {
            wire,
            turn_us: median(&per_turn[index]),
            last_body_bytes: last_body[index],
        })
        .collect();
    Ok(WireBands { bands, runs })
}
