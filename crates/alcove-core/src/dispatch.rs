//! The one dispatch path every tool call takes, at every depth.
//!
//! lookup → argument validation → permission gate → PreToolUse hooks → call
//! → PostToolUse hooks → capped result. Whatever happens on the way — an
//! unknown tool, arguments that are not JSON, a denial, a hook block, a
//! failure, a cancellation — the call ends as exactly one `tool_result`.
//!
//! Calls of one assistant message run in groups: consecutive calls that are
//! concurrency-safe run together, delegations (`Agent`) run together, and
//! everything else runs alone, in order. Results always come back in call
//! order.

use std::time::{Duration, Instant};

use alcove_protocol::{AgentEvent, ContentBlock, EventKind, SharedText};
use alcove_tools::{Access, HiddenPaths, Invocation, Tool, ToolContext, ToolOutput, Workspace};
use futures::future::join_all;
use serde_json::Value;

use crate::agents::AgentScope;
use crate::{
    AgentRun, Approval, ApprovalRequest, CallInput, Decision, HookCall, PreToolVerdict, Runtime,
    ToolCall,
};

/// How long a tool gets to stop by itself after its run was cancelled before
/// its future is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Runs the calls of one assistant message and returns their results, one per
/// call, in call order, each followed by the images it returned.
pub(crate) async fn run_tool_calls(
    runtime: &Runtime,
    run: &AgentRun,
    calls: &[ToolCall],
) -> Vec<ContentBlock> {
    let mut results = Vec::with_capacity(calls.len());
    // A runaway reply (small models have streamed 170 calls at once) runs
    // its first calls only; the rest are answered, not dropped.
    let cap = runtime.limits.max_tool_calls_per_reply.max(1);
    let (calls, over_cap) = calls.split_at(calls.len().min(cap));
    for group in groups(run, calls) {
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
                results.extend(finish(runtime, run, call, output, started));
            }
            continue;
        }
        let outputs = join_all(group.iter().map(|call| async move {
            let output = gate_and_call(runtime, run, call).await;
            finish(runtime, run, call, output, started)
        }))
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
        results.extend(finish(runtime, run, call, output, started));
    }
    results
}

/// Splits calls into groups that may run together: a run of consecutive
/// concurrency-safe calls, a run of consecutive delegations, or one call.
fn groups<'a>(run: &AgentRun, calls: &'a [ToolCall]) -> Vec<&'a [ToolCall]> {
    #[derive(PartialEq)]
    enum Class {
        Parallel,
        Delegation,
        Alone,
    }
    let class = |name: &str| match find(run, name) {
        Some(tool) if tool.access() == Access::Delegate && tool.concurrency_safe() => {
            Class::Delegation
        }
        Some(tool) if tool.access() == Access::Delegate => Class::Alone,
        Some(tool) if tool.concurrency_safe() => Class::Parallel,
        _ => Class::Alone,
    };
    let mut groups = Vec::new();
    let mut start = 0;
    for idx in 1..=calls.len() {
        let boundary = idx == calls.len() || {
            let previous = class(&calls[idx - 1].name);
            previous == Class::Alone || previous != class(&calls[idx].name)
        };
        if boundary {
            groups.push(&calls[start..idx]);
            start = idx;
        }
    }
    groups
}

fn find<'a>(run: &'a AgentRun, name: &str) -> Option<&'a dyn Tool> {
    run.tools
        .iter()
        .find(|tool| tool.spec().name == name)
        .map(|tool| tool.as_ref())
}

async fn gate_and_call(runtime: &Runtime, run: &AgentRun, call: &ToolCall) -> ToolOutput {
    let (id, name) = (call.id.as_str(), call.name.as_str());
    let Some(tool) = find(run, name) else {
        let known: Vec<&str> = run
            .tools
            .iter()
            .map(|tool| tool.spec().name.as_str())
            .collect();
        return ToolOutput::error(format!(
            "Unknown tool `{name}`. Available tools: {}.",
            known.join(", ")
        ));
    };
    let (input, invocation) = match check_arguments(tool, call, &runtime.workspace) {
        Ok(checked) => checked,
        Err(reason) => return ToolOutput::error(reason),
    };
    let decision = run.gate.check(
        &run.path,
        name,
        tool.access(),
        &invocation,
        input,
        &runtime.workspace,
    );
    if let Decision::Deny(reason) = decision {
        return ToolOutput::error(reason);
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
    let context = ToolContext {
        workspace: runtime.workspace.clone(),
        cancel: run.cancel.child_token(),
        agent: run.path.clone(),
        depth: run.depth,
        call_id: id.to_owned(),
        hidden: hidden_from_reads(run, runtime),
        // The call acts on the paths the gate checked.
        paths: invocation.paths,
        // Delegation tools learn their caller from its scope, lent per call.
        scope: tool.needs_scope().then(|| AgentScope::lend(runtime, run)),
        sandbox: run.sandbox,
    };
    let call = tool.call(input.clone(), &context);
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

/// Validates a call's arguments before the gate sees it: arguments the
/// model wrote as invalid JSON are refused, anything else is the tool's to
/// inspect. (Also the fuzz targets' entry, see `fuzzing`.)
pub(crate) fn check_arguments<'a>(
    tool: &dyn Tool,
    call: &'a ToolCall,
    workspace: &Workspace,
) -> Result<(&'a Value, Invocation), String> {
    match &call.input {
        CallInput::Invalid(raw) => Err(format!(
            "Invalid arguments for {}: they are not valid JSON ({}). Call the tool again with a JSON object.",
            call.name,
            cut(raw, 200)
        )),
        CallInput::Json(input) => Ok((input, tool.inspect(input, workspace)?)),
    }
}

fn finish(
    runtime: &Runtime,
    run: &AgentRun,
    call: &ToolCall,
    output: ToolOutput,
    started: Instant,
) -> Vec<ContentBlock> {
    // The event and the result's message share one text (and its JSON).
    let content = SharedText::from(cap(output.content, runtime.limits.result_cap));
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

/// The paths this agent's Read deny rules cover, so searches skip them.
fn hidden_from_reads(run: &AgentRun, runtime: &Runtime) -> HiddenPaths {
    if !run.gate.denies_some_reads() {
        return HiddenPaths::default();
    }
    let gate = run.gate.clone();
    let workspace = runtime.workspace.clone();
    HiddenPaths::new(move |path| gate.read_denied(path, &workspace))
}

/// Keeps the head and tail of a result longer than `limit` bytes and says how
/// much was cut in between.
fn cap(content: String, limit: usize) -> String {
    if content.len() <= limit {
        return content;
    }
    let head_end = floor_char_boundary(&content, limit * 3 / 4);
    let tail_start = ceil_char_boundary(&content, content.len() - limit / 4);
    let cut_bytes = tail_start - head_end;
    format!(
        "{}\n\n[... {cut_bytes} bytes cut: the result was {} bytes, over the {limit}-byte limit ...]\n\n{}",
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
        assert!(capped.starts_with(&"a".repeat(300)));
        assert!(capped.ends_with(&"z".repeat(100)));
        assert!(
            capped.contains("800 bytes cut: the result was 1200 bytes, over the 400-byte limit"),
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
