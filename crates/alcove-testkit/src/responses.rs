//! Renders scripted steps in the OpenAI Responses wire format: the typed
//! event stream (`response.created`, `response.output_item.added` /
//! `.done`, `response.output_text.delta`,
//! `response.function_call_arguments.delta`,
//! `response.reasoning_summary_text.delta`, `response.completed` or
//! `response.incomplete` with the usage), the non-streamed response
//! object, and the error shape (OpenAI's, as on Chat Completions).
//!
//! A step's reasoning ([`crate::Step::reasoning`]) becomes a reasoning item
//! before the reply's other items; its encrypted content is returned only
//! when the request's `include` asks for `reasoning.encrypted_content`, and
//! what was issued is handed back so the strict check
//! (`responses_strict.rs`) can hold the next request to it.

use serde_json::{Value, json};

use crate::script::{Block, StepKind, split_pieces};
use crate::wire::{Ctx, Ending, Sse};

/// A reasoning item the server returned with encrypted content, and the
/// function calls it preceded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Issued {
    pub(crate) reasoning_id: String,
    pub(crate) encrypted_content: String,
    pub(crate) call_ids: Vec<String>,
}

/// What a request asked of the reply beyond the step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked<'s> {
    /// The step's reasoning summary, if it has one.
    pub(crate) reasoning: Option<&'s str>,
    /// `include` holds `reasoning.encrypted_content`.
    pub(crate) encrypted: bool,
}

/// Whether a request body asks for encrypted reasoning.
pub(crate) fn asks_encrypted(body: &Value) -> bool {
    body["include"]
        .as_array()
        .is_some_and(|include| include.iter().any(|i| i == "reasoning.encrypted_content"))
}

/// Builds the events of one response.
struct Events<'c, 'a> {
    ctx: &'c Ctx<'a>,
    id: String,
    out: Vec<String>,
    sequence: u64,
    /// Finished output items, for `response.completed`.
    output: Vec<Value>,
}

impl<'c, 'a> Events<'c, 'a> {
    fn new(ctx: &'c Ctx<'a>) -> Self {
        Events {
            ctx,
            id: format!("resp_fake{:06}", ctx.ids.next()),
            out: Vec::new(),
            sequence: 0,
            output: Vec::new(),
        }
    }

    fn push(&mut self, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        self.out.push(format!("event: {kind}\ndata: {data}\n\n"));
    }

    fn response(&self, status: &str) -> Value {
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.ctx.created,
            "status": status,
            "model": self.ctx.model,
            "output": self.output,
            "parallel_tool_calls": true,
            "store": false,
        })
    }

    fn start(&mut self) {
        let response = self.response("in_progress");
        self.push("response.created", json!({ "response": response }));
        self.push("response.in_progress", json!({ "response": response }));
    }

    fn reasoning(&mut self, summary: &str, encrypted: bool) -> Option<(String, String)> {
        let index = self.output.len();
        let id = format!("rs_fake{:06}", self.ctx.ids.next());
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "reasoning", "summary": []}}),
        );
        let part = json!({"type": "summary_text", "text": ""});
        self.push(
            "response.reasoning_summary_part.added",
            json!({"item_id": id, "output_index": index, "summary_index": 0, "part": part}),
        );
        for piece in split_pieces(summary, self.ctx.piece_chars) {
            self.push(
                "response.reasoning_summary_text.delta",
                json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": piece}),
            );
        }
        self.push(
            "response.reasoning_summary_text.done",
            json!({"item_id": id, "output_index": index, "summary_index": 0, "text": summary}),
        );
        let part = json!({"type": "summary_text", "text": summary});
        self.push(
            "response.reasoning_summary_part.done",
            json!({"item_id": id, "output_index": index, "summary_index": 0, "part": part}),
        );
        let mut item = json!({"id": id, "type": "reasoning", "summary": [part]});
        let issued = encrypted.then(|| {
            let sealed = format!("gAAAAfake-sealed-{id}-{}", summary.len());
            item["encrypted_content"] = json!(sealed);
            (id.clone(), sealed)
        });
        self.done(index, item);
        issued
    }

    fn text(&mut self, text: &str) {
        let index = self.output.len();
        let id = format!("msg_fake{:06}", self.ctx.ids.next());
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
        );
        let part = json!({"type": "output_text", "text": "", "annotations": []});
        self.push(
            "response.content_part.added",
            json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
        );
        for piece in split_pieces(text, self.ctx.piece_chars) {
            self.push(
                "response.output_text.delta",
                json!({"item_id": id, "output_index": index, "content_index": 0, "delta": piece}),
            );
        }
        self.push(
            "response.output_text.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "text": text}),
        );
        let part = json!({"type": "output_text", "text": text, "annotations": []});
        self.push(
            "response.content_part.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
        );
        self.done(
            index,
            json!({"id": id, "type": "message", "status": "completed", "role": "assistant", "content": [part]}),
        );
    }

    /// A function call; a scripted name `NAMESPACE::NAME` is a call of a
    /// tool in a namespace (how Codex offers an MCP server's tools).
    fn call(&mut self, name: &str, arguments: &str) -> String {
        let index = self.output.len();
        let id = format!("fc_fake{:06}", self.ctx.ids.next());
        let call_id = format!("call_fake{:06}", self.ctx.ids.next());
        let (namespace, name) = match name.split_once("::") {
            Some((namespace, name)) => (Some(namespace), name),
            None => (None, name),
        };
        let with_namespace = |mut item: Value| {
            if let Some(namespace) = namespace {
                item["namespace"] = json!(namespace);
            }
            item
        };
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": with_namespace(json!({"id": id, "type": "function_call", "status": "in_progress",
                "call_id": call_id, "name": name, "arguments": ""}))}),
        );
        for piece in split_pieces(arguments, self.ctx.piece_chars) {
            self.push(
                "response.function_call_arguments.delta",
                json!({"item_id": id, "output_index": index, "delta": piece}),
            );
        }
        self.push(
            "response.function_call_arguments.done",
            json!({"item_id": id, "output_index": index, "arguments": arguments}),
        );
        self.done(
            index,
            with_namespace(
                json!({"id": id, "type": "function_call", "status": "completed", "call_id": call_id,
                "name": name, "arguments": arguments}),
            ),
        );
        call_id
    }

    fn done(&mut self, index: usize, item: Value) {
        self.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
        self.output.push(item);
    }

    fn finish(&mut self) {
        let mut response = if self.ctx.truncated {
            let mut response = self.response("incomplete");
            response["incomplete_details"] = json!({"reason": "max_output_tokens"});
            response
        } else {
            self.response("completed")
        };
        response["usage"] = usage(self.ctx);
        let kind = if self.ctx.truncated {
            "response.incomplete"
        } else {
            "response.completed"
        };
        self.push(kind, json!({ "response": response }));
    }
}

/// `input_tokens` counts the cached ones too, as OpenAI reports them.
fn usage(ctx: &Ctx<'_>) -> Value {
    let input = ctx.input_tokens + ctx.cache_read;
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": ctx.cache_read},
        "output_tokens": ctx.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + ctx.output_tokens,
    })
}

fn arguments_of(block: &Block) -> Option<(&str, String)> {
    match block {
        Block::Text(_) => None,
        Block::ToolCall { name, input } => Some((name, input.to_string())),
        Block::RawToolCall { name, arguments } => Some((name, arguments.clone())),
    }
}

/// Renders a reply's items; returns the reasoning issued with its calls.
fn reply(events: &mut Events<'_, '_>, blocks: &[Block], asked: Asked<'_>) -> Option<Issued> {
    let sealed = asked
        .reasoning
        .and_then(|summary| events.reasoning(summary, asked.encrypted));
    let mut call_ids = Vec::new();
    for block in blocks {
        match block {
            Block::Text(text) => events.text(text),
            other => {
                if let Some((name, arguments)) = arguments_of(other) {
                    call_ids.push(events.call(name, &arguments));
                }
            }
        }
    }
    sealed.map(|(reasoning_id, encrypted_content)| Issued {
        reasoning_id,
        encrypted_content,
        call_ids,
    })
}

/// The streamed body for a step (HTTP errors and hangs never get here),
/// and the reasoning it issued.
pub(crate) fn stream(kind: &StepKind, asked: Asked<'_>, ctx: &Ctx<'_>) -> (Sse, Option<Issued>) {
    let mut events = Events::new(ctx);
    let mut issued = None;
    let ending = match kind {
        StepKind::Reply(blocks) => {
            events.start();
            issued = reply(&mut events, blocks, asked);
            events.finish();
            Ending::Complete
        }
        StepKind::DropMidStream(text) | StepKind::StallAfter(text) => {
            events.start();
            let id = format!("msg_fake{:06}", ctx.ids.next());
            events.push(
                "response.output_item.added",
                json!({"output_index": 0, "item": {"id": id, "type": "message", "role": "assistant", "content": []}}),
            );
            for piece in split_pieces(text, ctx.piece_chars) {
                events.push(
                    "response.output_text.delta",
                    json!({"item_id": id, "output_index": 0, "content_index": 0, "delta": piece}),
                );
            }
            if matches!(kind, StepKind::DropMidStream(_)) {
                Ending::Abort
            } else {
                Ending::Stall
            }
        }
        StepKind::MalformedSse => {
            events
                .out
                .push("event: response.created\ndata: {this is not json\n\n".to_string());
            Ending::Complete
        }
        StepKind::ErrorEvent { kind, message } => {
            events.start();
            events.push(
                "error",
                json!({"code": kind, "message": message, "param": null}),
            );
            Ending::Complete
        }
        StepKind::HttpError { .. } | StepKind::Hang => Ending::Complete,
    };
    let sse = Sse {
        events: events.out,
        ending,
    };
    (sse, issued)
}

/// The non-streamed response object for a reply, and the reasoning it
/// issued.
pub(crate) fn response(
    blocks: &[Block],
    asked: Asked<'_>,
    ctx: &Ctx<'_>,
) -> (Value, Option<Issued>) {
    let mut events = Events::new(ctx);
    let issued = reply(&mut events, blocks, asked);
    let status = if ctx.truncated {
        "incomplete"
    } else {
        "completed"
    };
    let mut body = events.response(status);
    body["usage"] = usage(ctx);
    (body, issued)
}

/// The window overflow as the Responses API words it.
pub(crate) fn overflow_body() -> Value {
    json!({"error": {
        "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "type": "invalid_request_error",
        "param": "input",
        "code": "context_length_exceeded",
    }})
}
