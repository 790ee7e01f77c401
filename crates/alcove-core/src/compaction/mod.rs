//! Context management for the agent loop, the same at every depth: knowing
//! how full the window is, compacting the history before it overflows, and
//! recovering when the provider says a request was too long anyway.
//!
//! Compaction goes in two steps, cheapest first: old tool results become
//! one-line stubs (`clear`); only if the history is still over the threshold
//! are the oldest messages replaced by a handover note the model writes
//! (`summary`). The newest turn's results are never cleared: they are what
//! the model just asked for, and [`Context::result_room`] sized them to
//! fit. Every compaction emits a `compacted` event that, applied to
//! the history rebuilt from the transcript's `message` events, gives the
//! compacted history ([`replay_compaction`]), so the transcript keeps every
//! original message and a resumed session continues from the compacted one.
//!
//! The loop calls [`Context::before_request`] before each request and
//! [`Context::recover`] on a context overflow error; front ends call
//! [`compact_history`] for `/compact`. What a request adds to the last one
//! the server counted is estimated from bytes and scaled by how far the
//! server's counts have run above the estimates (`calibration`); a
//! request still estimated over the window after compacting is not sent.

mod calibration;
mod clear;
mod estimate;
mod summary;
mod window;

use std::sync::Arc;

use alcove_model::ModelError;
use alcove_protocol::{EventKind, Message, ToolSpec, Usage};

use crate::agent_loop::{AgentRun, Runtime};

pub use calibration::Calibration;
pub(crate) use estimate::{estimate, json_bytes};
use estimate::{estimate_all, estimate_fixed, fixed_from_bytes};
use window::limits_for;
pub use window::{ContextLimits, DEFAULT_WINDOW, WINDOW_TABLE, table_window};

/// Why a compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// The next request would pass the threshold.
    Auto,
    /// The provider said the request was too long.
    Overflow,
    /// The user asked (`/compact`, `exec --compact`).
    Manual,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Overflow => "overflow",
            Trigger::Manual => "manual",
        }
    }

    /// The `PreCompact` matcher: Claude Code knows `auto` and `manual`.
    fn matcher(self) -> &'static str {
        match self {
            Trigger::Manual => "manual",
            Trigger::Auto | Trigger::Overflow => "auto",
        }
    }
}

/// A turn's results take at most one part in this many of the room left
/// (half): what is left after them is room for the reads still to come.
const RESULT_SHARE: u64 = 2;

/// One agent run's view of its context: the size of the last request as the
/// provider counted it, plus an estimate of what was added since, scaled
/// by the model's calibration.
#[derive(Debug)]
pub(crate) struct Context {
    limits: ContextLimits,
    fixed: u64,
    /// Prompt plus output tokens of the last response, as reported.
    known: u64,
    /// How many messages `known` covers.
    counted: usize,
    /// The unscaled estimate of what `known` covers.
    known_estimate: u64,
    /// The unscaled estimate of the request last sent.
    sent_estimate: u64,
    /// The model's name, its calibration's key.
    model: String,
    /// Server count over estimate, at least 1 (`calibration`).
    ratio: f64,
}

impl Context {
    /// `tool_bytes` is the size of the run's tool specs as JSON.
    pub(crate) fn new(runtime: &Runtime, run: &AgentRun, tool_bytes: usize) -> Context {
        let model = runtime.model.name().to_owned();
        Context {
            limits: limits_for(runtime),
            fixed: fixed_from_bytes(&run.system_prompt, tool_bytes),
            known: 0,
            counted: 0,
            known_estimate: 0,
            sent_estimate: 0,
            ratio: runtime.calibration.ratio(&model),
            model,
        }
    }

    /// The agent's tools grew by `bytes` of JSON (a `ToolSearch` load).
    pub(crate) fn tools_grew(&mut self, bytes: usize) {
        let tokens = (bytes as u64).div_ceil(4);
        self.fixed += tokens;
        if self.known > 0 {
            self.known += calibration::scaled(tokens, self.ratio);
            self.known_estimate += tokens;
        }
    }

    /// The estimated size of a request carrying `messages`.
    pub(crate) fn next_request(&self, messages: &[Message]) -> u64 {
        self.sizes(messages).0
    }

    /// The estimate of a request carrying `messages`, and the same
    /// unscaled: what the server's count of it is set against.
    fn sizes(&self, messages: &[Message]) -> (u64, u64) {
        if self.known > 0 && self.counted <= messages.len() {
            let added = estimate_all(&messages[self.counted..]);
            (
                self.known + calibration::scaled(added, self.ratio),
                self.known_estimate + added,
            )
        } else {
            let all = self.fixed + estimate_all(messages);
            (calibration::scaled(all, self.ratio), all)
        }
    }

    /// About how many bytes of tool results one turn may add after a
    /// request carrying `messages`: a [`RESULT_SHARE`] of what is left up
    /// to the compaction threshold, leaving the model room to answer
    /// (`max_tokens`, at most an eighth of the window) and the task room
    /// for its next reads (a cut that filled the window left a small model
    /// answering from the first of three files, issue 45). Old results
    /// that compaction would clear before the next request are counted as
    /// cleared. A result is sized to it before it joins the history, so a
    /// file larger than the window is cut to what fits rather than sent
    /// whole and then cleared. Counted at three bytes a token: code and
    /// JSON-escaped text make fewer bytes per token than the four of the
    /// estimate.
    pub(crate) fn result_room(&self, messages: &[Message], max_tokens: u32) -> usize {
        let answer = u64::from(max_tokens).min(self.limits.window / 8);
        let freed = clear::clearable_bytes(
            messages,
            self.limits.keep_turns.max(1),
            self.limits.clear_over_bytes,
        ) as u64
            / 4;
        let used = self.next_request(messages).saturating_sub(freed);
        let ceiling = self
            .limits
            .compact_at
            .min(self.limits.window.saturating_sub(answer));
        let left = ceiling.saturating_sub(used);
        usize::try_from(left.saturating_mul(3) / RESULT_SHARE).unwrap_or(usize::MAX)
    }

    /// Notes a response's usage; `messages` now ends with its message.
    /// The server's count of the request's prompt, set against the
    /// estimate it was sent with, calibrates the estimates that follow.
    pub(crate) fn record(&mut self, runtime: &Runtime, usage: &Usage, messages: &[Message]) {
        let reported = usage.budget_tokens();
        if reported > 0 {
            let prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
            self.ratio = runtime
                .calibration
                .learn(&self.model, self.sent_estimate, prompt);
            let reply = messages.last().map_or(0, estimate);
            self.known = reported;
            self.known_estimate = self.sent_estimate + reply;
            self.counted = messages.len();
        }
    }

    /// Before a request: compacts when it would pass the threshold, then
    /// emits the `context` figure. Usage of a summary call is added to
    /// `usage`. `Err` (why) when the request is still estimated over the
    /// window after compacting hard: it is not sent.
    pub(crate) async fn before_request(
        &mut self,
        runtime: &Runtime,
        run: &AgentRun,
        messages: &mut Vec<Message>,
        tools: &Arc<[ToolSpec]>,
        usage: &mut Usage,
    ) -> Result<(), String> {
        let (mut used, mut unscaled) = self.sizes(messages);
        if used > self.limits.compact_at {
            let result = compact(
                runtime,
                run,
                self.limits,
                messages,
                tools,
                Trigger::Auto,
                None,
                used,
                usage,
            )
            .await;
            match result {
                Ok(true) => {
                    self.known = 0;
                    (used, unscaled) = self.sizes(messages);
                }
                Ok(false) => {}
                Err(error) => runtime.emit(
                    &run.path,
                    EventKind::Warning {
                        message: format!("compaction failed: {error}"),
                    },
                ),
            }
        }
        if used > self.limits.window {
            // Never sent over the window (a server refuses it): compact as
            // after an overflow, which also clears recent results.
            let result = self
                .compact_overflowed(runtime, run, messages, tools, used, usage)
                .await;
            (used, unscaled) = self.sizes(messages);
            if used > self.limits.window {
                let why = result
                    .err()
                    .map_or(String::new(), |why| format!(" ({why})"));
                return Err(format!(
                    "the next request is estimated at {used} tokens, over the model's context window of {} tokens, even after compacting{why}; it was not sent. Start a new session with the task restated, or use a model with a larger window",
                    self.limits.window
                ));
            }
        }
        self.sent_estimate = unscaled;
        runtime.emit(
            &run.path,
            EventKind::Context {
                used,
                window: self.limits.window,
            },
        );
        Ok(())
    }

    /// After a context overflow error: adopts the window the provider
    /// stated when it is smaller, and compacts. `Err` says why the run
    /// cannot go on.
    pub(crate) async fn recover(
        &mut self,
        runtime: &Runtime,
        run: &AgentRun,
        messages: &mut Vec<Message>,
        tools: &Arc<[ToolSpec]>,
        usage: &mut Usage,
        error: &ModelError,
    ) -> Result<(), String> {
        let (stated_request, stated_window) = match error {
            ModelError::ContextOverflow {
                request_tokens,
                window,
                ..
            } => (*request_tokens, *window),
            _ => (None, None),
        };
        let used = stated_request.unwrap_or_else(|| self.next_request(messages));
        // A provider that states no window (OpenAI's Responses wire: "Your
        // input exceeds the context window of this model") still says the
        // window is smaller than this request: it is taken as the window.
        let window = stated_window.or(Some(used));
        if let Some(window) = window.filter(|window| *window < self.limits.window) {
            self.limits = ContextLimits {
                window,
                compact_at: (window as f64 * ContextLimits::DEFAULT_FRACTION) as u64,
                ..self.limits
            };
        }
        let result = self
            .compact_overflowed(runtime, run, messages, tools, used, usage)
            .await;
        self.sent_estimate = self.sizes(messages).1;
        result.map(|_| ())
    }

    /// Compacts as after an overflow (recent results are cleared too) and
    /// forgets the server's last count, which no longer describes the
    /// history.
    async fn compact_overflowed(
        &mut self,
        runtime: &Runtime,
        run: &AgentRun,
        messages: &mut Vec<Message>,
        tools: &Arc<[ToolSpec]>,
        used: u64,
        usage: &mut Usage,
    ) -> Result<bool, String> {
        let result = compact(
            runtime,
            run,
            self.limits,
            messages,
            tools,
            Trigger::Overflow,
            None,
            used,
            usage,
        )
        .await;
        self.known = 0;
        result
    }

    /// The error a run ends with when a request does not fit even after
    /// compacting.
    pub(crate) fn too_long(&self, messages: &[Message], error: &ModelError) -> String {
        let (request, window) = match error {
            ModelError::ContextOverflow {
                request_tokens,
                window,
                ..
            } => (
                request_tokens.unwrap_or_else(|| self.next_request(messages)),
                window.unwrap_or(self.limits.window),
            ),
            _ => (self.next_request(messages), self.limits.window),
        };
        format!(
            "the conversation does not fit the model's context window even after compacting it: \
             the request was about {request} tokens, the window is {window} tokens ({error}). \
             Set `model_context_window` to the model's real window, use a model with a larger one, \
             or start a new session with the task restated"
        )
    }
}

/// Compacts `messages` in place: PreCompact hooks, then clearing, then a
/// summary when still over the threshold (always, for a manual compaction).
/// Emits `compacted` when anything changed. `used` is the size the caller
/// believes the next request has.
#[allow(clippy::too_many_arguments)]
async fn compact(
    runtime: &Runtime,
    run: &AgentRun,
    limits: ContextLimits,
    messages: &mut Vec<Message>,
    tools: &Arc<[ToolSpec]>,
    trigger: Trigger,
    focus: Option<&str>,
    used: u64,
    usage: &mut Usage,
) -> Result<bool, String> {
    runtime
        .hooks
        .pre_compact(run.hook_scope(), trigger.matcher(), focus.unwrap_or(""))
        .await;
    let fixed = estimate_fixed(&run.system_prompt, tools);
    let messages_before = messages.len();
    // The caller's figure may come from the provider; the estimate is what
    // the compacted size is compared with.
    let estimated = fixed + estimate_all(messages);
    let tokens_before = used.max(estimated);
    let target = match trigger {
        // After an overflow, aim well below: the estimate was evidently low.
        Trigger::Overflow => limits.compact_at / 2,
        _ => limits.compact_at,
    };

    let mut cleared = clear::clearable(messages, limits.keep_turns.max(1), limits.clear_over_bytes);
    clear::clear(messages, &cleared);
    let mut tokens_after = if cleared.is_empty() {
        estimated
    } else {
        fixed + estimate_all(messages)
    };
    if trigger == Trigger::Overflow && tokens_after > target {
        // The request did not fit: recent results go too, but never the
        // newest turn's: the model asked for them and would answer from
        // nothing (results are sized to the room left before they join
        // the history, so those fit).
        let more = clear::clearable(messages, 1, limits.clear_over_bytes);
        clear::clear(messages, &more);
        cleared.extend(more);
        tokens_after = fixed + estimate_all(messages);
    }

    let mut replaced = 0;
    let mut note = None;
    let split = (trigger == Trigger::Manual || tokens_after > target)
        .then(|| summary::split_point(messages, limits.window / 4))
        .flatten();
    if let Some(split) = split {
        let text = summary::summarise(
            runtime, run, limits, messages, tools, fixed, split, focus, usage,
        )
        .await;
        match text {
            Ok(text) => {
                *messages = summary::rebuild(messages, split, &text);
                replaced = split;
                note = Some(text);
                tokens_after = fixed + estimate_all(messages);
            }
            Err(error) if cleared.is_empty() => return Err(error),
            Err(error) => runtime.emit(
                &run.path,
                EventKind::Warning {
                    message: format!("compaction could not summarise: {error}"),
                },
            ),
        }
    }
    if cleared.is_empty() && note.is_none() {
        return Ok(false);
    }
    runtime.emit(
        &run.path,
        EventKind::Compacted {
            trigger: trigger.as_str().to_owned(),
            messages_before,
            messages_after: messages.len(),
            tokens_before,
            tokens_after,
            cleared,
            replaced,
            summary: note,
        },
    );
    Ok(true)
}

/// Compacts an agent's history on request (`/compact [focus]`, `exec
/// --compact`): clears old results and always summarises when there is
/// something to summarise. Returns the compacted history and the usage of
/// the summary call; `Err` leaves the history as it was.
pub async fn compact_history(
    runtime: &Runtime,
    run: &AgentRun,
    mut messages: Vec<Message>,
    focus: Option<&str>,
) -> Result<(Vec<Message>, Usage, bool), String> {
    let offer = crate::deferred::Offer::new(&run.tools, &messages);
    let tools = runtime.tool_specs.specs(offer.tools());
    let mut usage = Usage::default();
    let used = estimate_fixed(&run.system_prompt, &tools) + estimate_all(&messages);
    let changed = compact(
        runtime,
        run,
        limits_for(runtime),
        &mut messages,
        &tools,
        Trigger::Manual,
        focus,
        used,
        &mut usage,
    )
    .await?;
    Ok((messages, usage, changed))
}

/// The part of a compaction that needs no model call, as the loop runs it:
/// old results over the threshold become stubs and the history is
/// estimated again. Returns how many results were cleared and the estimate
/// after. For the benchmarks.
#[doc(hidden)]
pub fn clear_old_results(messages: &mut [Message], limits: &ContextLimits) -> (usize, u64) {
    let cleared = clear::clearable(messages, limits.keep_turns, limits.clear_over_bytes);
    clear::clear(messages, &cleared);
    (cleared.len(), estimate_all(messages))
}

/// Applies a recorded `compacted` event to the history rebuilt so far from
/// a transcript: the same stubs, the same summary split.
pub fn replay_compaction(
    messages: &mut Vec<Message>,
    cleared: &[String],
    replaced: usize,
    summary: Option<&str>,
) {
    clear::clear(messages, cleared);
    if let Some(text) = summary
        && replaced > 0
    {
        *messages = summary::rebuild(messages, replaced, text);
    }
}
