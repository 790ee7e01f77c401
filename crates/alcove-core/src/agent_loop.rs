//! `run_agent`: the agent loop, the same at every depth.
//!
//! One turn is one model request. A reply with tool calls has them run
//! (through `dispatch`) and loops; a reply without them ends the run. The
//! loop owns the history it was given and returns it, so the caller — the
//! CLI for the main agent, the `Agent` tool for a child — decides what of it
//! survives. Only events leave while it runs.

use std::sync::Arc;

use alcove_model::{Model, ModelError, ModelRequest, ModelResponse, StreamDelta};
use alcove_protocol::{AgentEvent, AgentPath, EventKind, Message, Role, RunStatus, Usage};
use alcove_tools::{Tool, Workspace};

use crate::agents::AgentScope;
use tokio_util::sync::CancellationToken;

use crate::compaction::{Context, ContextLimits};
use crate::deferred::Offer;
use crate::dispatch::run_tool_calls;
use crate::file_reads::FileReads;
use crate::repeats::Repeats;
use crate::{Approver, EventSink, HookScope, Hooks, PermissionGate, ToolCall};

/// What every agent of a session shares by reference.
#[derive(Clone)]
pub struct Runtime {
    /// The model client.
    pub model: Arc<dyn Model>,
    /// Decides the calls the gate says must be asked about.
    pub approver: Arc<dyn Approver>,
    /// The hooks every call passes.
    pub hooks: Arc<dyn Hooks>,
    /// Where events go.
    pub events: Arc<dyn EventSink>,
    /// The workspace all tools work in.
    pub workspace: Arc<Workspace>,
    /// Size limits.
    pub limits: Limits,
    /// Notifications for agents (e.g. a spawned child finished), delivered
    /// with their next model request.
    pub inbox: Arc<Inbox>,
    /// The specs of the tool sets agents run with, shared between runs.
    pub tool_specs: Arc<ToolSpecSets>,
    /// The files each agent has read (an Edit needs a Read first).
    pub file_reads: Arc<FileReads>,
    /// The session's background commands (`Bash` with
    /// `run_in_background`): lent to the tools that use them, each stopped
    /// when the agent that started it ends.
    pub background: Arc<alcove_tools::BackgroundShells>,
    /// How far each model's token counts run above alcove's estimates.
    pub calibration: Arc<crate::compaction::Calibration>,
}

/// The tool specs of the tool sets agents ran with lately. Sixty-four
/// children of one type each copied their tools' schemas at start (3 % of
/// a wide fan-out's instructions), and each got an array of its own, so a
/// model client keeping the array's JSON by identity (`alcove_model`)
/// made it again for every child. A run now takes the set's shared array.
/// A set is found by the identity of its tools, which it holds, so no
/// other tool can take their place in memory while it is kept. The size of
/// its JSON is kept with it: each run's context estimate starts from it.
#[derive(Default)]
pub struct ToolSpecSets {
    kept: std::sync::Mutex<std::collections::VecDeque<ToolSpecSet>>,
}

struct ToolSpecSet {
    tools: Vec<Arc<dyn Tool<AgentScope>>>,
    specs: Arc<[alcove_protocol::ToolSpec]>,
    json_bytes: usize,
}

/// How many tool sets [`ToolSpecSets`] keeps: a few agent types at once.
const TOOL_SETS_KEPT: usize = 16;

impl ToolSpecSets {
    /// The specs of `tools`, in order: the array an earlier run with these
    /// very tools used, or a new one.
    pub fn specs(&self, tools: &[Arc<dyn Tool<AgentScope>>]) -> Arc<[alcove_protocol::ToolSpec]> {
        let same = |kept: &[Arc<dyn Tool<AgentScope>>]| {
            kept.len() == tools.len() && kept.iter().zip(tools).all(|(a, b)| Arc::ptr_eq(a, b))
        };
        let build = || -> Arc<[alcove_protocol::ToolSpec]> {
            tools.iter().map(|tool| tool.spec().clone()).collect()
        };
        // One lock across the lookup and the insertion: siblings starting
        // together on both workers must not each build their own array.
        let Ok(mut kept) = self.kept.lock() else {
            return build();
        };
        if let Some(set) = kept.iter().find(|set| same(&set.tools)) {
            return set.specs.clone();
        }
        let specs = build();
        if kept.len() == TOOL_SETS_KEPT {
            kept.pop_front();
        }
        kept.push_back(ToolSpecSet {
            tools: tools.to_vec(),
            specs: specs.clone(),
            json_bytes: crate::compaction::json_bytes(&specs),
        });
        specs
    }

    /// The size of `specs`' JSON: kept with the set it came from.
    pub fn json_bytes(&self, specs: &Arc<[alcove_protocol::ToolSpec]>) -> usize {
        self.kept
            .lock()
            .ok()
            .and_then(|kept| {
                kept.iter()
                    .find(|set| Arc::ptr_eq(&set.specs, specs))
                    .map(|set| set.json_bytes)
            })
            .unwrap_or_else(|| crate::compaction::json_bytes(specs))
    }
}

/// Short notices waiting for an agent's next model request.
#[derive(Debug, Default)]
pub struct Inbox {
    notices: std::sync::Mutex<std::collections::HashMap<AgentPath, Vec<String>>>,
}

impl Inbox {
    /// Leaves a notice for `agent`.
    pub fn push(&self, agent: &AgentPath, notice: String) {
        if let Ok(mut notices) = self.notices.lock() {
            notices.entry(agent.clone()).or_default().push(notice);
        }
    }

    /// Takes every notice left for `agent`.
    pub fn take(&self, agent: &AgentPath) -> Vec<String> {
        self.notices
            .lock()
            .ok()
            .and_then(|mut notices| notices.remove(agent))
            .unwrap_or_default()
    }
}

/// Size limits of a session.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The output token limit of each model request.
    pub max_tokens: u32,
    /// The largest tool result, in bytes, the model is sent; longer results
    /// keep their head and tail and say how much was cut.
    pub result_cap: usize,
    /// How many times stop hooks may send one run back to work.
    pub stop_hook_limit: u32,
    /// The most tool calls of one reply that run; the rest are answered
    /// with an error saying why.
    pub max_tool_calls_per_reply: usize,
    /// The context window and when to compact (`compaction`).
    pub context: ContextLimits,
    /// Whether rarely used tools are offered by name only, behind
    /// `ToolSearch` (`deferred.rs`): chosen per model, off for a small
    /// window or a server on this machine, whose model is better given
    /// its tools in full.
    pub defer_tools: bool,
    /// Whether a reply that made no tool call to a message naming files
    /// in the workspace is told once to read them (`read_reminder.rs`):
    /// on for the tool profiles of small models.
    pub remind_to_read: bool,
}

/// The default of [`Limits::max_tool_calls_per_reply`].
pub const DEFAULT_MAX_TOOL_CALLS_PER_REPLY: usize = 32;

impl Runtime {
    /// Emits one event from `agent`.
    pub fn emit(&self, agent: &AgentPath, kind: EventKind) {
        self.events.emit(&AgentEvent {
            agent: agent.clone(),
            kind,
        });
    }

    /// Emits `agent`'s events that happen together, at once
    /// ([`EventSink::emit_all`]).
    pub fn emit_all(&self, agent: &AgentPath, kinds: impl IntoIterator<Item = EventKind>) {
        let events: Vec<AgentEvent> = kinds
            .into_iter()
            .map(|kind| AgentEvent {
                agent: agent.clone(),
                kind,
            })
            .collect();
        self.events.emit_all(&events);
    }
}

/// What one agent run owns.
#[derive(Clone)]
pub struct AgentRun {
    /// Where the agent sits in the tree.
    pub path: AgentPath,
    /// Its depth (the main agent is 0).
    pub depth: u32,
    /// The task description its parent gave (children only).
    pub description: Option<String>,
    /// Its agent type (children only).
    pub agent_type: Option<String>,
    /// The permission gate its calls pass (a child's narrows its parent's).
    pub gate: Arc<PermissionGate>,
    /// Its system prompt.
    pub system_prompt: String,
    /// The tools it is offered, in order.
    pub tools: Vec<Arc<dyn Tool<AgentScope>>>,
    /// The most model requests it may make.
    pub max_turns: u32,
    /// Cancelled to stop it (and everything below it).
    pub cancel: CancellationToken,
    /// The most tokens (input plus output) it may use; checked between turns.
    pub token_budget: Option<u64>,
    /// Where its descendants' events go: its own evidence (for a child) and
    /// then its ancestors', up to the front end. `None` at the root, whose
    /// descendants' events go to the supervisor's observers.
    pub lineage: Option<Arc<dyn EventSink>>,
    /// The sandbox its commands run in (a child's is the stricter of its
    /// definition's and its parent's).
    pub sandbox: alcove_tools::SandboxScope,
    /// The reasoning effort its requests ask for (its definition's or its
    /// `Agent` call's); `None`: the model's configured effort.
    pub effort: Option<String>,
}

impl AgentRun {
    /// Who the hooks run for.
    pub fn hook_scope(&self) -> HookScope<'_> {
        HookScope {
            agent: &self.path,
            depth: self.depth,
            agent_type: self.agent_type.as_deref(),
        }
    }
}

/// How a run ended, with the history it produced.
#[derive(Debug, Clone)]
pub struct AgentOutcome {
    /// How it ended.
    pub status: RunStatus,
    /// The whole history, the given part included.
    pub messages: Vec<Message>,
    /// How many model requests it made.
    pub turns: u32,
    /// Tokens used.
    pub usage: Usage,
    /// The model error, when the status is `failed`.
    pub error: Option<String>,
}

impl AgentOutcome {
    /// The text of the last assistant message whose text is not empty.
    pub fn last_text(&self) -> Option<String> {
        self.messages
            .iter()
            .rev()
            .filter(|message| message.role == Role::Assistant)
            .map(Message::text)
            .find(|text| !text.is_empty())
    }
}

/// Runs an agent: appends `input` to `history` and loops until the model
/// stops calling tools, `max_turns` requests were made, `run.cancel` fires or
/// the model fails for good. Every tool call made gets exactly one result in
/// the returned history.
pub async fn run_agent(
    runtime: &Runtime,
    run: &AgentRun,
    history: Vec<Message>,
    input: Message,
) -> AgentOutcome {
    let mut outcome = AgentOutcome {
        status: RunStatus::Completed,
        messages: history,
        turns: 0,
        usage: Usage::default(),
        error: None,
    };
    // What the message asks, for a reminder to read what it names
    // (`read_reminder.rs`), given at most once.
    let mut asked = runtime.limits.remind_to_read.then(|| input.text());
    append(runtime, run, &mut outcome.messages, input);
    // What this agent lists in full: its tools less the deferred ones it
    // has not loaded (`deferred.rs`); a load appends to it.
    let mut offer = Offer::new(&run.tools, &outcome.messages);
    let mut tool_specs = runtime.tool_specs.specs(offer.tools());
    let mut stop_continuations = 0;
    let mut repeats = Repeats::default();
    let mut context = Context::new(runtime, run, runtime.tool_specs.json_bytes(&tool_specs));
    // The run's scope, lent to the tools that act for their caller: made
    // once per run, not per call.
    let scope = AgentScope::lend(runtime, run);

    loop {
        if run.cancel.is_cancelled() {
            outcome.status = RunStatus::Aborted;
            return outcome;
        }
        if run
            .token_budget
            .is_some_and(|budget| outcome.usage.budget_tokens() > budget)
        {
            outcome.status = RunStatus::Budget;
            return outcome;
        }
        if outcome.turns >= run.max_turns {
            outcome.status = RunStatus::MaxTurns;
            return outcome;
        }
        let notices = runtime.inbox.take(&run.path);
        if !notices.is_empty() {
            let text = notices
                .iter()
                .map(|notice| format!("[alcove notification] {notice}"))
                .collect::<Vec<_>>();
            append(
                runtime,
                run,
                &mut outcome.messages,
                Message::user_text(text.join("\n")),
            );
        }
        outcome.turns += 1;
        let turn = outcome.turns;
        runtime.emit(&run.path, EventKind::TurnStarted { turn });

        let fits = context
            .before_request(
                runtime,
                run,
                &mut outcome.messages,
                &tool_specs,
                &mut outcome.usage,
            )
            .await;
        if let Err(why) = fits {
            outcome.status = RunStatus::Failed;
            outcome.error = Some(why);
            return outcome;
        }
        let mut reply = send(runtime, run, turn, &mut outcome.messages, &tool_specs).await;
        // A request the provider found too long: compact and try once more;
        // if it still does not fit, end with an error in our own words.
        if let Some(Err(error @ ModelError::ContextOverflow { .. })) = &reply {
            let recovered = context
                .recover(
                    runtime,
                    run,
                    &mut outcome.messages,
                    &tool_specs,
                    &mut outcome.usage,
                    error,
                )
                .await;
            if let Err(why) = recovered {
                let error = context.too_long(&outcome.messages, error);
                outcome.status = RunStatus::Failed;
                outcome.error = Some(format!("{error}; compacting failed: {why}"));
                return outcome;
            }
            reply = send(runtime, run, turn, &mut outcome.messages, &tool_specs).await;
            if let Some(Err(error @ ModelError::ContextOverflow { .. })) = &reply {
                outcome.status = RunStatus::Failed;
                outcome.error = Some(context.too_long(&outcome.messages, error));
                return outcome;
            }
        }
        let Some(reply) = reply else {
            outcome.status = RunStatus::Aborted;
            return outcome;
        };
        let response = match reply {
            Ok(response) => response,
            Err(err) => {
                // A fault no retry heals stops the tree, not just this run.
                outcome.status = match err.halt() {
                    Some(_) => RunStatus::Halted,
                    None => RunStatus::Failed,
                };
                outcome.error = Some(err.to_string());
                return outcome;
            }
        };
        outcome.usage.add(response.usage);
        runtime.emit(
            &run.path,
            EventKind::Usage {
                usage: response.usage,
            },
        );
        runtime.emit(
            &run.path,
            EventKind::AssistantText {
                text: response.message.text(),
            },
        );

        let calls: Vec<ToolCall> = response
            .message
            .tool_uses()
            .map(|(id, name, input)| ToolCall::from_use(id, name, input))
            .collect();
        let usage = response.usage;
        append(runtime, run, &mut outcome.messages, response.message);
        context.record(runtime, &usage, &outcome.messages);

        if calls.is_empty() {
            runtime.emit(
                &run.path,
                EventKind::TurnEnded {
                    turn,
                    tool_calls: 0,
                },
            );
            // A small model that answered without one tool call is told
            // once to read the files the message names.
            if let Some(reminder) = asked
                .take()
                .and_then(|asked| crate::read_reminder::reminder(runtime, run, &asked))
            {
                append(
                    runtime,
                    run,
                    &mut outcome.messages,
                    Message::user_text(reminder),
                );
                continue;
            }
            if stop_continuations < runtime.limits.stop_hook_limit {
                let last_text = outcome.last_text().unwrap_or_default();
                let active = stop_continuations > 0;
                let verdict = tokio::select! {
                    verdict = runtime.hooks.stop(run.hook_scope(), &last_text, active) => verdict,
                    () = run.cancel.cancelled() => None,
                };
                if let Some(reason) = verdict {
                    stop_continuations += 1;
                    let feedback = Message::user_text(format!("Stop hook feedback:\n{reason}"));
                    append(runtime, run, &mut outcome.messages, feedback);
                    continue;
                }
            }
            outcome.status = RunStatus::Completed;
            return outcome;
        }

        // Once a call was made the answer stands.
        asked = None;
        let room = context.result_room(&outcome.messages, runtime.limits.max_tokens);
        let mut results = run_tool_calls(runtime, run, &offer, &scope, &calls, room).await;
        let stuck = repeats.observe(&calls, &mut results);
        if offer.learn(&calls, &results) {
            let grown = runtime.tool_specs.specs(offer.tools());
            let before = runtime.tool_specs.json_bytes(&tool_specs);
            context.tools_grew(runtime.tool_specs.json_bytes(&grown).saturating_sub(before));
            tool_specs = grown;
        }
        append(
            runtime,
            run,
            &mut outcome.messages,
            Message {
                role: Role::User,
                content: results,
            },
        );
        runtime.emit(
            &run.path,
            EventKind::TurnEnded {
                turn,
                tool_calls: calls.len(),
            },
        );
        if let Some(reason) = stuck {
            outcome.status = RunStatus::Failed;
            outcome.error = Some(reason);
            return outcome;
        }
    }
}

/// Sends the history and tool specs as one request; `None` when the run was
/// cancelled first. The history is lent to the request and taken back, not
/// cloned: a copy of the whole history per turn made the per-turn cost grow
/// with the session (issue 7's benchmarks). The specs are shared.
async fn send(
    runtime: &Runtime,
    run: &AgentRun,
    turn: u32,
    messages: &mut Vec<Message>,
    tool_specs: &std::sync::Arc<[alcove_protocol::ToolSpec]>,
) -> Option<Result<ModelResponse, ModelError>> {
    let request = ModelRequest {
        system: run.system_prompt.clone(),
        messages: std::mem::take(messages),
        tools: tool_specs.clone(),
        max_tokens: runtime.limits.max_tokens,
        effort: run.effort.clone(),
    };
    runtime.emit(
        &run.path,
        EventKind::ModelRequest {
            turn,
            messages: request.messages.len(),
            tools: request.tools.len(),
        },
    );
    let on_delta = |delta: StreamDelta| runtime.emit(&run.path, delta_event(delta));
    let reply = tokio::select! {
        biased;
        () = run.cancel.cancelled() => None,
        reply = runtime.model.complete(&request, &on_delta) => Some(reply),
    };
    *messages = request.messages;
    reply
}

fn append(runtime: &Runtime, run: &AgentRun, messages: &mut Vec<Message>, message: Message) {
    // The event lends the message to the sinks and gives it back: a copy
    // per message (tool results included) was a twentieth of a wide
    // fan-out's instructions.
    let event = AgentEvent {
        agent: run.path.clone(),
        kind: EventKind::Message { message },
    };
    runtime.events.emit(&event);
    if let EventKind::Message { message } = event.kind {
        messages.push(message);
    }
}

/// The event a stream delta becomes: Anthropic thinking and Responses
/// reasoning summaries alike become `ThinkingDelta`.
fn delta_event(delta: StreamDelta) -> EventKind {
    match delta {
        StreamDelta::Text(text) => EventKind::TextDelta { text },
        StreamDelta::Thinking(text) => EventKind::ThinkingDelta { text },
        StreamDelta::Restarted { reason } => EventKind::StreamRestarted { reason },
        StreamDelta::Retry {
            attempt,
            delay,
            reason,
        } => EventKind::ModelRetry {
            attempt,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            reason,
        },
    }
}

#[cfg(test)]
mod tool_spec_sets_tests {
    use super::*;

    #[test]
    fn runs_with_the_same_tools_share_one_spec_array_and_others_get_their_own() {
        let sets = ToolSpecSets::default();
        let tools = alcove_tools::builtin_tools();
        let first = sets.specs(&tools);
        let names: Vec<&str> = first.iter().map(|spec| spec.name.as_str()).collect();
        let expected: Vec<&str> = tools.iter().map(|tool| tool.spec().name.as_str()).collect();
        assert_eq!(names, expected);
        assert!(Arc::ptr_eq(&first, &sets.specs(&tools)));
        assert!(Arc::ptr_eq(&first, &sets.specs(&tools.clone())));
        // Other tool objects (even of the same kinds) are another set.
        let other = sets.specs(&alcove_tools::builtin_tools());
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(first.len(), other.len());
        // A subset is another set too.
        assert_eq!(sets.specs(&tools[..1]).len(), 1);
    }
}
