//! Which tool a call runs as.
//!
//! Usually the tool its name names. Small models put the wrong thing in
//! the name (issue 45): a file (`{"name": "pyproject.toml", "arguments":
//! {"file_path": …}}`), or another tool's name over that tool's arguments
//! (`Grep` with `Bash`'s `command`, `description` and `timeout`). After
//! the error the model answered from nothing, so where the arguments fit
//! one offered tool alone the call runs as that tool, with a note saying
//! so. The call then takes the one dispatch path as that tool: the gate,
//! the hooks and any approval see the tool that runs, never the name the
//! model wrote.
//!
//! A call named like a file runs only as a read-only tool (a name says
//! nothing about what to write). A call naming a tool runs as another only
//! when its arguments hold none of the named tool's required parameters,
//! so a call of the right tool with one stray field is never redirected.

use alcove_tools::{Access, Tool};
use serde_json::Value;

use crate::agents::AgentScope;
use crate::deferred::Offer;
use crate::{AgentRun, ToolCall};

/// The tool a call runs as, and what its result starts with when that is
/// not simply the tool it named.
pub(crate) struct Target<'a> {
    pub(crate) tool: &'a dyn Tool<AgentScope>,
    pub(crate) note: Option<String>,
}

/// The tool `call` runs as, or the error of a call that names no tool it
/// can run as.
pub(crate) fn target<'a>(
    run: &'a AgentRun,
    offer: &Offer,
    call: &ToolCall,
) -> Result<Target<'a>, String> {
    let name = &call.name;
    if let Some(tool) = find(run, name) {
        if let Some(other) = other_tool_fit(run, tool, call) {
            let fit = &other.spec().name;
            let note = format!(
                "[alcove: {name} takes none of these arguments; they fit {fit} only, so the call ran as {fit}. Next time call {fit} for this.]"
            );
            return Ok(Target {
                tool: other,
                note: Some(note),
            });
        }
        // A deferred tool not loaded yet is loaded by its call rather than
        // refused (a small model lost two turns to the refusal, issue 45).
        let loads = offer.is_unloaded(name);
        return Ok(Target {
            tool,
            note: loads.then(|| crate::deferred::loaded_for_call(name)),
        });
    }
    match read_only_fit(run, call) {
        Some(tool) => {
            let fit = &tool.spec().name;
            let note = format!(
                "[alcove: no tool is named {name}; your arguments fit {fit} only, so the call ran as {fit}. Next time put {fit} in the call's name.]"
            );
            Ok(Target {
                tool,
                note: Some(note),
            })
        }
        None => Err(unknown_tool(run, call)),
    }
}

/// The offered tool named `name`.
pub(crate) fn find<'a>(run: &'a AgentRun, name: &str) -> Option<&'a dyn Tool<AgentScope>> {
    run.tools
        .iter()
        .find(|tool| tool.spec().name == name)
        .map(|tool| tool.as_ref())
}

/// `call`'s arguments as a JSON object with at least one field.
fn object_arguments(call: &ToolCall) -> Option<Value> {
    let arguments = call.input_value();
    matches!(&arguments, Value::Object(map) if !map.is_empty()).then_some(arguments)
}

/// The tools `run` offers whose parameters `arguments` fit.
fn fitting<'a, 'v>(
    run: &'a AgentRun,
    arguments: &'v Value,
) -> impl Iterator<Item = &'a dyn Tool<AgentScope>> + use<'a, 'v> {
    run.tools
        .iter()
        .map(|tool| tool.as_ref())
        .filter(|tool| crate::schema_fit::fits(tool.spec(), arguments))
}

/// The one other tool `call`'s arguments fit, when they hold none of the
/// required parameters of `named`, the tool it names.
fn other_tool_fit<'a>(
    run: &'a AgentRun,
    named: &dyn Tool<AgentScope>,
    call: &ToolCall,
) -> Option<&'a dyn Tool<AgentScope>> {
    // Most calls hold a required parameter of the tool they name: they are
    // told apart here, by borrowing, before any schema is checked.
    let crate::call::CallInput::Json(arguments @ Value::Object(map)) = &call.input else {
        return None;
    };
    let required = crate::schema_fit::required(named.spec());
    if map.is_empty() || required.is_empty() || required.iter().any(|field| map.contains_key(field))
    {
        return None;
    }
    let mut fits = fitting(run, arguments);
    match (fits.next(), fits.next()) {
        (Some(tool), None) if tool.spec().name != named.spec().name => Some(tool),
        _ => None,
    }
}

/// The one read-only tool whose parameters `call`'s arguments fit, when
/// only one does and the call is named like a file or path (`pyproject.toml`),
/// never like a tool: a tool this agent lacks or a rule took away stays an
/// unknown tool.
fn read_only_fit<'a>(run: &'a AgentRun, call: &ToolCall) -> Option<&'a dyn Tool<AgentScope>> {
    if !call.name.contains(['.', '/', '\\']) {
        return None;
    }
    let arguments = object_arguments(call)?;
    let mut fits = fitting(run, &arguments);
    match (fits.next(), fits.next()) {
        (Some(tool), None) if tool.access() == Access::ReadOnly => Some(tool),
        _ => None,
    }
}

/// The error for a call naming no offered tool: the tools whose
/// parameters its arguments fit come first (a small model wrote a file's
/// name where `Read` belonged), then every tool.
fn unknown_tool(run: &AgentRun, call: &ToolCall) -> String {
    let name = &call.name;
    let known: Vec<&str> = run
        .tools
        .iter()
        .map(|tool| tool.spec().name.as_str())
        .collect();
    let fits: Vec<&str> = match object_arguments(call) {
        Some(arguments) => fitting(run, &arguments)
            .map(|tool| tool.spec().name.as_str())
            .collect(),
        None => Vec::new(),
    };
    let hint = match fits.as_slice() {
        [] => String::new(),
        [one] => format!(
            " Its arguments fit {one}: call {one} with them (the tool's name goes in `name`)."
        ),
        many => format!(
            " Its arguments fit {}: call one of them with them (the tool's name goes in `name`).",
            many.join(", ")
        ),
    };
    format!(
        "Unknown tool `{name}`: no tool has that name.{hint} Available tools: {}.",
        known.join(", ")
    )
}
