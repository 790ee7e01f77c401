//! Entry points for alcove's fuzz targets (`fuzz/`) and their CI smoke test
//! (`crates/alcove-fuzz`), which must reach two private seams: the Bash
//! splitter behind permission rules, and dispatch's argument check.
//!
//! This module exists only for fuzzing: it is hidden from the docs, is not
//! part of the crate's API, and may change with any release. Everything else
//! the fuzz targets drive (`Rule::parse`, `PermissionGate::check`,
//! `parse_definition`) is public already.

use alcove_tools::{Invocation, Tool, Workspace};

use crate::AgentScope;
use serde_json::Value;

use crate::gate::shell::{self, Part, Shell};

/// Splits `command` as the permission gate does: every simple command's
/// words (a redirection is `[">", target]`), or why it cannot be parsed.
pub fn shell_parts(command: &str) -> Result<Vec<Vec<String>>, String> {
    match shell::parse(command) {
        Shell::Parts(parts) => Ok(parts
            .into_iter()
            .map(|part| match part {
                Part::Command(words) => words,
                Part::Redirect(target) => vec![">".to_owned(), target],
            })
            .collect()),
        Shell::Unparsable(reason) => Err(reason),
    }
}

/// The gate's best-effort split of a command it could not parse.
pub fn rough_commands(command: &str) -> Vec<Vec<String>> {
    shell::rough_commands(command)
}

/// Validates a call's arguments exactly as dispatch does before the gate:
/// raw (not JSON) arguments are refused, anything else goes to
/// [`Tool::prepare`].
pub fn check_arguments(
    tool: &dyn Tool<AgentScope>,
    name: &str,
    input: &Value,
    workspace: &Workspace,
) -> Result<Invocation, String> {
    let call = crate::ToolCall::from_use("fuzz", name, input);
    crate::dispatch::check_arguments(tool, &call, workspace)
        .map(|(_, prepared)| prepared.invocation)
}
