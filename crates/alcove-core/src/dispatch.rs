//! The one dispatch path every tool call takes, at every depth.
//!
//! lookup → argument validation → permission gate → PreToolUse hooks → call
//! → PostToolUse hooks → capped result. Whatever happens on the way — an
//! unknown tool, arguments that are not JSON, a denial, a hook block, a
//! failure, a cancellation — the call ends as exactly one `tool_result`.
//! Arguments cut short by their closing characters only are completed
//! (`repair.rs`) and the call runs, its result saying so; a call naming
//! the wrong tool runs as the one its arguments fit, or its error names
//! the tools they fit (`tool_lookup.rs`). A deferred tool not yet loaded
//! (`deferred.rs`) is loaded by its call: the call runs like any other
//! (gate, hooks, approval) and its result starts with a note saying so.
//!
//! Calls of one assistant message run in groups: consecutive calls that are
//! concurrency-safe run together, delegations (`Agent`) run together, and
//! everything else runs alone, in order. Results always come back in call
//! order.

use std::time::{Duration, Instant};

use alcove_protocol::{AgentEvent, ContentBlock, EventKind, SharedText};
use alcove_tools::{Access, HiddenPaths, Prepared, Tool, ToolContext, ToolOutput, Workspace};
use futures::future::join_all;
use serde_json::Value;

use crate::agents::AgentScope;
use crate::deferred::Offer;
use crate::file_reads::NotRead;
use crate::tool_lookup::Target;
use crate::{
    AgentRun, Approval, ApprovalRequest, CallInput, Decision, HookCall, PreToolVerdict, Runtime,
    ToolCall,
};

/// How long a tool gets to stop by itself after its run was cancelled before
/// its future is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// The least room a result gets, however full the context: something to
/// act on (compaction makes room before the next request).
const MIN_RESULT_ROOM: usize = 2048;

/// Runs the calls of one assistant message and returns their results, one per
/// call, in call order, each followed by the images it returned. `room` is
/// about how many bytes of results still fit in the context window; each
/// call gets an equal share. `scope` is `run`'s scope, lent to the tools
/// that act for their caller.
pub(crate) async fn run_tool_calls(
    runtime: &Runtime,
    run: &AgentRun,
    offer: &Offer,
    scope: &AgentScope,
    calls: &[ToolCall],
    room: usize,
) -> Vec<ContentBlock> {
    let mut results = Vec::with_capacity(calls.len());
    // A runaway reply (small models have streamed 170 calls at once) runs
    // its first calls only; the rest are answered, not dropped.
    let cap = runtime.limits.max_tool_calls_per_reply.max(1);
    let (calls, over_cap) = calls.split_at(calls.len().min(cap));
    // The tool each call runs as, or why none: looked up once, both for
    // grouping and for the call (`tool_lookup.rs`).
    let targets: Vec<Result<Target<'_>, String>> = calls
        .iter()
        .map(|call| crate::tool_lookup::target(run, offer, call))
        .collect();
    let room = (room / calls.len().max(1))
        .max(MIN_RESULT_ROOM)
        .min(runtime.limits.result_cap);
    for range in groups(&targets) {
        let (group, group_targets) = (&calls[range.clone()], &targets[range]);
        // A group's calls are announced together, then run together.
        let started = Instant::now();
        runtime.emit_all(
            &run.path,
            group.iter().map(|call| EventKind::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.input_value(),
            }),
        );
        if run.cancel.is_cancelled() {
            for call in group {
                let output =
                    ToolOutput::error("Skipped: the run was cancelled before this call started.");
                results.extend(finish(runtime, run, call, output, started, room));
            }
            continue;
        }
        let outputs = join_all(
            group
                .iter()
                .zip(group_targets)
                .map(|(call, target)| async move {
                    let output = gate_and_call(runtime, run, scope, call, target, room).await;
                    finish(runtime, run, call, output, started, room)
                }),
        )
        .await;
        results.extend(outputs.into_iter().flatten());
    }
    let total = calls.len() + over_cap.len();
    for call in over_cap {
        let started = Instant::now();
        runtime.emit(
            &run.path,
            EventKind::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.input_value(),
            },
        );
        let output = ToolOutput::error(format!(
            "Not run: this reply made {total} tool calls and at most {cap} run per reply; the first {cap} ran. Make fewer calls at a time."
        ));
        results.extend(finish(runtime, run, call, output, started, room));
    }
    results
}

/// One call `run`'s front end makes for it, not its model (`alcove mcp
/// serve`'s `spawn_agent`, `wait`, …): the same path as any call (lookup,
/// arguments, gate, hooks, call, cap), every deferred tool loaded. Returns
/// the result's text and whether it is an error.
pub async fn front_end_call(runtime: &Runtime, run: &AgentRun, call: ToolCall) -> (String, bool) {
    let offer = Offer::all_loaded(&run.tools);
    let scope = AgentScope::lend(runtime, run);
    let room = runtime.limits.result_cap;
    let blocks = run_tool_calls(runtime, run, &offer, &scope, &[call], room).await;
    blocks
        .into_iter()
        .find_map(|block| match block {
            ContentBlock::ToolResult {
                content, is_error, ..
            } => Some((content.as_str().to_owned(), is_error)),
            _ => None,
        })
        .unwrap_or_else(|| ("the call returned no result".to_owned(), true))
}

/// Splits calls (by the tool each runs as) into groups that may run
/// together: a run of consecutive concurrency-safe calls, a run of
/// consecutive delegations, or one call. Returns index ranges.
fn groups(targets: &[Result<Target<'_>, String>]) -> Vec<std::ops::Range<usize>> {
    #[derive(PartialEq)]
    enum Class {
        Parallel,
        Delegation,
        Alone,
    }
    // By the tool a call runs as, which is not always the one it names.
    let class = |target: &Result<Target<'_>, String>| match target {
        Ok(Target { tool, .. }) if tool.access() == Access::Delegate && tool.concurrency_safe() => {
            Class::Delegation
        }
        Ok(Target { tool, .. }) if tool.access() == Access::Delegate => Class::Alone,
        Ok(Target { tool, .. }) if tool.concurrency_safe() => Class::Parallel,
        _ => Class::Alone,
    };
    let classes: Vec<Class> = targets.iter().map(class).collect();
    let mut groups = Vec::new();
    let mut start = 0;
    for idx in 1..=classes.len() {
        let boundary = idx == classes.len() || {
            let previous = &classes[idx - 1];
            *previous == Class::Alone || *previous != classes[idx]
        };
        if boundary {
            groups.push(start..idx);
            start = idx;
        }
    }
    groups
}

async fn gate_and_call(
    runtime: &Runtime,
    run: &AgentRun,
    scope: &AgentScope,
    call: &ToolCall,
    target: &Result<Target<'_>, String>,
    room: usize,
) -> ToolOutput {
    // The tool the call names, or the one its arguments fit when the
    // model put something else in the name (`tool_lookup.rs`): either way
    // the call takes the one path below, gate and hooks included, as that
    // tool, and a repaired call says so.
    let (tool, note) = match target {
        Ok(Target { tool, note }) => (*tool, note),
        Err(unknown) => return ToolOutput::error(unknown.clone()),
    };
    let caller = Caller {
        runtime,
        run,
        lent: scope,
        tool,
        note: note.as_deref(),
    };
    // Arguments cut short by their closers run completed, and say so.
    let Some((repaired, appended, prepared)) = repaired_call(tool, call, &runtime.workspace) else {
        return match check_arguments(tool, call, &runtime.workspace) {
            Ok((input, prepared)) => checked_call(caller, call, input, prepared, room).await,
            Err(reason) => ToolOutput::error(reason),
        };
    };
    let output = checked_call(caller, call, &repaired, prepared, room.saturating_sub(600)).await;
    let arguments = repaired.to_string();
    ToolOutput {
        content: format!(
            "[alcove: your arguments for {} ended early; `{appended}` was added to close them and the call ran as {}]\n{}",
            call.name,
            cut(&arguments, 400),
            output.content
        ),
        ..output
    }
}

/// `call`'s arguments completed, what was appended, and the call they
/// prepare, when they are JSON cut short by closing quotes, brackets or
/// braces only and the completed arguments fit the tool (its schema and its
/// own check).
fn repaired_call<'t>(
    tool: &'t dyn Tool<AgentScope>,
    call: &ToolCall,
    workspace: &Workspace,
) -> Option<(Value, String, Prepared<'t, AgentScope>)> {
    let CallInput::Invalid(raw) = &call.input else {
        return None;
    };
    let repaired = crate::repair::complete(raw)?;
    if !crate::schema_fit::fits(tool.spec(), &repaired.value) {
        return None;
    }
    let prepared = tool.prepare(&repaired.value, workspace).ok()?;
    Some((repaired.value, repaired.appended, prepared))
}

/// Who calls which tool: the calling agent, its scope, the tool.
#[derive(Clone, Copy)]
struct Caller<'a> {
    runtime: &'a Runtime,
    run: &'a AgentRun,
    lent: &'a AgentScope,
    tool: &'a dyn Tool<AgentScope>,
    /// What the result starts with once the call ran: the call loaded its
    /// deferred tool, or ran as the one tool its arguments fit.
    note: Option<&'a str>,
}

/// A call whose arguments `input` prepared `prepared`, from its check on:
/// the gate, the hooks, approval, the call itself and the PostToolUse hooks.
async fn checked_call(
    caller: Caller<'_>,
    call: &ToolCall,
    input: &Value,
    prepared: Prepared<'_, AgentScope>,
    room: usize,
) -> ToolOutput {
    let Caller {
        runtime,
        run,
        lent,
        tool,
        note,
    } = caller;
    // The gate, the hooks and the user see the tool that runs, which a
    // repaired call does not name.
    let (id, name) = (call.id.as_str(), tool.spec().name.as_str());
    let invocation = &prepared.invocation;
    let decision = run.gate.check(
        &run.path,
        name,
        tool.access(),
        invocation,
        input,
        &runtime.workspace,
        run.sandbox,
    );
    if let Decision::Deny(reason) = decision {
        return ToolOutput::error(reason);
    }
    // Before any approval is asked: an edit that will be refused anyway
    // is not put to the user.
    if tool.needs_prior_read()
        && let Some(refusal) = unread_file(runtime, run, name, &invocation.paths)
    {
        return refusal;
    }
    let scope = run.hook_scope();
    let call = HookCall { id, name, input };
    // A hook may run for its whole timeout; a cancelled run does not wait.
    let verdict = tokio::select! {
        verdict = runtime.hooks.pre_tool_use(scope, call) => verdict,
        () = run.cancel.cancelled() => return ToolOutput::error("Cancelled while a PreToolUse hook ran."),
    };
    let needs_approval = match (verdict, decision) {
        (PreToolVerdict::Deny(reason), _) => {
            return ToolOutput::error(format!("Blocked by PreToolUse hook: {reason}"));
        }
        (PreToolVerdict::Allow, _) | (PreToolVerdict::Continue, Decision::Allow) => None,
        (PreToolVerdict::Ask(reason), _) | (PreToolVerdict::Continue, Decision::Ask(reason)) => {
            Some(reason)
        }
        (PreToolVerdict::Continue, Decision::Deny(reason)) => return ToolOutput::error(reason),
    };
    if let Some(reason) = needs_approval {
        let request = ApprovalRequest {
            agent: run.path.clone(),
            agent_description: run.description.clone(),
            tool: name.to_owned(),
            summary: invocation.summary.clone(),
            input: input.clone(),
            reason: reason.clone(),
        };
        let approval = tokio::select! {
            approval = runtime.approver.approve(request) => approval,
            () = run.cancel.cancelled() => return ToolOutput::error("Cancelled while waiting for approval."),
        };
        match approval {
            Approval::AllowOnce | Approval::AllowAlways => {}
            Approval::Deny(None) => {
                return ToolOutput::error(format!("Permission denied: {reason}"));
            }
            Approval::Deny(Some(message)) => {
                return ToolOutput::error(format!("Permission denied by the user: {message}"));
            }
        }
    }
    if run.cancel.is_cancelled() {
        return ToolOutput::error("Cancelled before the call started.");
    }
    // What the call read or wrote, as it is on disk now, the agent knows.
    let touched = invocation.paths.clone();
    let context = ToolContext {
        workspace: runtime.workspace.clone(),
        cancel: run.cancel.child_token(),
        agent: run.path.clone(),
        depth: run.depth,
        call_id: id.to_owned(),
        hidden: hidden_from_reads(run, runtime, &invocation.paths),
        sandbox: run.sandbox,
        result_room: room,
        background: tool
            .uses_background()
            .then(|| background_scope(runtime, run)),
    };
    // The prepared call acts on the input and paths the gate checked;
    // a tool that acts for its caller is lent the caller's scope.
    let call = prepared.run(&context, lent);
    tokio::pin!(call);
    let output = tokio::select! {
        output = &mut call => output,
        () = run.cancel.cancelled() => {
            match tokio::time::timeout(CANCEL_GRACE, &mut call).await {
                Ok(output) => output,
                Err(_) => ToolOutput::error("Cancelled: the call did not stop by itself and was abandoned."),
            }
        }
    };
    let output = match note {
        Some(note) => ToolOutput {
            content: format!("{note}\n{}", output.content),
            ..output
        },
        None => output,
    };
    let effects = &output.effects;
    let saw_files = !effects.files_read.is_empty() || !effects.files_written.is_empty();
    if !output.is_error && saw_files {
        for path in &touched {
            runtime.file_reads.record(&run.path, path);
        }
    }
    let note = tokio::select! {
        note = runtime
            .hooks
            .post_tool_use(run.hook_scope(), HookCall { id, name, input }, &output) => note,
        () = run.cancel.cancelled() => crate::PostToolNote::default(),
    };
    match note.additional_context {
        Some(context) => ToolOutput {
            content: format!("{}\n\n[PostToolUse hook]\n{context}", output.content),
            ..output
        },
        None => output,
    }
}

/// The session's background commands, and events from `run`'s agent for
/// their starts and ends.
fn background_scope(runtime: &Runtime, run: &AgentRun) -> alcove_tools::BackgroundScope {
    let events = runtime.events.clone();
    let agent = run.path.clone();
    alcove_tools::BackgroundScope {
        shells: runtime.background.clone(),
        emit: std::sync::Arc::new(move |kind| {
            events.emit(&AgentEvent {
                agent: agent.clone(),
                kind,
            });
        }),
    }
}

/// The refusal of an edit of a file `run`'s agent has not read, or that
/// changed on disk since it did.
fn unread_file(
    runtime: &Runtime,
    run: &AgentRun,
    name: &str,
    paths: &[std::path::PathBuf],
) -> Option<ToolOutput> {
    paths.iter().find_map(|path| {
        let shown = runtime.workspace.display(path);
        let reason = match runtime.file_reads.check(&run.path, path).err()? {
            NotRead::Never => format!(
                "{shown} has not been read yet. Read it first, then call {name} again quoting the text to change exactly as Read shows it (without the line numbers)."
            ),
            NotRead::Changed => format!(
                "{shown} has changed on disk since you last read it. Read it again, then call {name} again quoting its current text."
            ),
        };
        Some(ToolOutput::error(reason))
    })
}

/// Validates a call's arguments before the gate sees it: arguments the
/// model wrote as invalid JSON are refused, anything else is the tool's to
/// prepare, once. (Also the fuzz targets' entry, see `fuzzing`.)
pub(crate) fn check_arguments<'a, 't>(
    tool: &'t dyn Tool<AgentScope>,
    call: &'a ToolCall,
    workspace: &Workspace,
) -> Result<(&'a Value, Prepared<'t, AgentScope>), String> {
    match &call.input {
        CallInput::Invalid(raw) => Err(format!(
            "Invalid arguments for {}: they are not valid JSON ({}). Call the tool again with a JSON object.",
            call.name,
            cut(raw, 200)
        )),
        CallInput::Json(input) => Ok((input, tool.prepare(input, workspace)?)),
    }
}

fn finish(
    runtime: &Runtime,
    run: &AgentRun,
    call: &ToolCall,
    mut output: ToolOutput,
    started: Instant,
    room: usize,
) -> Vec<ContentBlock> {
    let plan = output.effects.plan.take();
    // The event and the result's message share one text (and its JSON).
    let content = SharedText::from(cap(output.content, room));
    let event = AgentEvent {
        agent: run.path.clone(),
        kind: EventKind::ToolCallFinished {
            id: call.id.clone(),
            name: call.name.clone(),
            content: content.clone(),
            is_error: output.is_error,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            effects: output.effects,
        },
    };
    runtime.events.emit(&event);
    if let Some(todos) = plan {
        let todos = todos.into_vec();
        runtime.emit(&run.path, EventKind::PlanUpdated { todos });
    }
    let result = ContentBlock::ToolResult {
        tool_use_id: call.id.clone(),
        content,
        is_error: output.is_error,
    };
    let images = output.images.into_iter().map(|image| ContentBlock::Image {
        media_type: image.media_type,
        data: image.data,
    });
    std::iter::once(result).chain(images).collect()
}

/// The paths this agent's Read deny rules and `sandbox.deny_read` cover,
/// so a search of `dirs` skips them: by name where a covered path can lie
/// in `dirs`, and everywhere by what the entry really is (a symlink's
/// target, a second hard link of a denied file). A path a call names alone
/// (`tasks_file`) is judged both ways.
fn hidden_from_reads(
    run: &AgentRun,
    runtime: &Runtime,
    dirs: &[std::path::PathBuf],
) -> HiddenPaths {
    if !run.gate.hides_some_targets() {
        return HiddenPaths::default();
    }
    let names = run.gate.hides_some_reads(dirs);
    let gate = run.gate.clone();
    let workspace = runtime.workspace.clone();
    HiddenPaths::new(move |path, kind| {
        ((names || kind.is_none()) && gate.hides(path, &workspace))
            || gate.hides_target(path, kind, &workspace)
    })
}

/// Keeps the head and tail of a result longer than `limit` bytes (the
/// result cap, or the room left in the context) and says how much was cut
/// in between.
fn cap(content: String, limit: usize) -> String {
    if content.len() <= limit {
        return content;
    }
    // The note takes about 120 bytes of the room.
    let kept = limit.saturating_sub(120).max(limit / 2);
    let head_end = floor_char_boundary(&content, kept * 3 / 4);
    let tail_start = ceil_char_boundary(&content, content.len() - kept / 4);
    let cut_bytes = tail_start - head_end;
    format!(
        "{}\n\n[... {cut_bytes} bytes cut: the result was {} bytes, over the {limit} bytes it may take (the result cap, or what is left of the context window); narrow the call to see the rest ...]\n\n{}",
        &content[..head_end],
        content.len(),
        &content[tail_start..]
    )
}

/// The longest prefix of `text` of at most `limit` bytes that ends on a
/// character boundary.
pub(crate) fn cut(text: &str, limit: usize) -> &str {
    &text[..floor_char_boundary(text, limit.min(text.len()))]
}

fn floor_char_boundary(text: &str, mut idx: usize) -> usize {
    while idx > 0 && !text.is_char_boundary(idx) {
        idx -= 1;
    }
    idx
}

fn ceil_char_boundary(text: &str, mut idx: usize) -> usize {
    while idx < text.len() && !text.is_char_boundary(idx) {
        idx += 1;
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_head_and_tail_and_says_how_much_was_cut() {
        let content = format!("{}{}", "a".repeat(600), "z".repeat(600));
        let capped = cap(content, 400);
        assert!(capped.starts_with(&"a".repeat(210)));
        assert!(capped.ends_with(&"z".repeat(70)));
        assert!(
            capped.contains(
                "920 bytes cut: the result was 1200 bytes, over the 400 bytes it may take"
            ),
            "{capped}"
        );
    }

    #[test]
    fn cap_never_splits_a_character() {
        let capped = cap("é".repeat(500), 101);
        assert!(capped.contains("bytes cut"));
        assert!(capped.starts_with('é') && capped.ends_with('é'));
    }

    #[test]
    fn short_results_are_untouched() {
        assert_eq!(cap("short".to_owned(), 100), "short");
    }
}
