//! End-to-end tests: the real `alcove` binary against the scripted fake
//! model server, in real temporary workspaces.
//!
//! - `exec`: the headless front end (output, exit codes, JSON, trace, transcripts).
//! - `tools`: each built-in tool through the whole loop, and the permission gate.
//! - `faults`: bad model output, HTTP errors, broken streams, cancellation.
//! - `agents`: the `Agent` tool (seeds 000 and 004, and beyond).
//! - `lifecycle`: a child's one lifecycle and wiring: policies down the tree,
//!   descendants' evidence, the tree budget, the end of `exec` (issue 10).
//! - `batch`: batch fan-out (`alcove batch`, `spawn_batch`, the Slurm runner).
//! - `reliability`: faults, load, crashes and signals with nothing lost (issue 7).
//! - `skills`, `memory`: skills, custom commands, `/init`, model aliases and the memory file (issue 15).
//! - `plan`: the `TodoWrite` plan through events, compaction, resume and children (issue 37).
//! - `background`: background commands (`Bash` with `run_in_background`,
//!   `BashOutput`, `KillShell`) and their end (issue 37).
//! - `web`: `WebFetch` and the `researcher` type against a local HTTP server (issue 37).
//! - `real_models`: what real servers and small local models do (issue 17).
//! - `report`: `alcove report`'s page, opened in headless Chromium (issue 40).
//! - `small_models`: what a real small model still did to a session (issue 39).
//! - `trust`: folder trust, played by a cloned repository (issue 44).
//! - `settings`: typos named, `.claude/settings.json` permissions, Claude Code's
//!   and Codex's flags, one precedence, errors that say what to do (issue 46).
//! - `provider_health`: a provider's refusal stops the tree, a rate limit pauses it (issue 49).
//! - `responses`: the OpenAI Responses wire with tools, reasoning, delegation,
//!   compaction and resume (issue 36).
//! - `tool_surface`: deferral per model, loads without `ToolSearch`, cuts that
//!   leave room, calibrated estimates (issue 45).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp;
mod agent_limits;
mod agents;
mod background;
mod bad_input;
mod batch;
mod collab;
mod compaction;
mod deferred;
mod exec;
mod faults;
mod hooks;
mod images;
mod isolation;
mod lifecycle;
mod mcp;
mod memory;
mod permissions;
mod plan;
mod provider_health;
mod real_models;
mod redaction;
mod reliability;
mod report;
mod responses;
mod roles;
mod session_end;
mod settings;
mod skills;
mod small_models;
mod support;
mod telemetry;
mod thinking;
mod tool_surface;
mod tools;
mod trust;
mod tui;
mod web;
mod workflows;
