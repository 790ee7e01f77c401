//! Renders scripted steps in the OpenAI Chat Completions wire format: the
//! `data: {chunk}` stream (role, content pieces, indexed tool call deltas,
//! finish reason, optional usage chunk, `[DONE]`), the non-streamed
//! completion, and the error body shape.

use serde_json::{Value, json};

use crate::script::{Block, StepKind, split_pieces};
use crate::wire::{Ctx, Ending, Sse};

fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// Builds chunks sharing one completion id.
struct Chunks<'c, 'a> {
    id: String,
    ctx: &'c Ctx<'a>,
    out: Vec<String>,
    role_sent: bool,
}

impl<'c, 'a> Chunks<'c, 'a> {
    fn new(ctx: &'c Ctx<'a>) -> Self {
        Chunks {
            id: format!("chatcmpl-fake{:06}", ctx.ids.next()),
            ctx,
            out: Vec::new(),
            role_sent: false,
        }
    }

    fn base(&self, choices: Value) -> Value {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.ctx.created,
            "model": self.ctx.model,
            "system_fingerprint": "fp_fake",
            "choices": choices
        });
        if self.ctx.include_usage {
            chunk["usage"] = Value::Null;
        }
        chunk
    }

    fn push_delta(&mut self, delta: Value, finish_reason: Option<&str>) {
        let chunk = self.base(json!([{
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish_reason
        }]));
        self.out.push(data(&chunk));
    }

    /// Content pieces; the first chunk of the stream also carries the role.
    fn text(&mut self, text: &str) {
        if !self.role_sent {
            self.role_sent = true;
            self.push_delta(
                json!({"role": "assistant", "content": "", "refusal": null}),
                None,
            );
        }
        for piece in split_pieces(text, self.ctx.piece_chars) {
            self.push_delta(json!({"content": piece}), None);
        }
    }

    fn tool_call(&mut self, index: usize, name: &str, arguments: &str) {
        let call_id = format!("call_fake{:06}", self.ctx.ids.next());
        let mut header = json!({
            "tool_calls": [{
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""}
            }]
        });
        if !self.role_sent {
            self.role_sent = true;
            header["role"] = json!("assistant");
            header["content"] = Value::Null;
        }
        self.push_delta(header, None);
        for piece in split_pieces(arguments, self.ctx.piece_chars) {
            self.push_delta(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                None,
            );
        }
    }

    fn finish(&mut self, reason: &str) {
        if !self.role_sent {
            self.text("");
        }
        self.push_delta(json!({}), Some(reason));
        if self.ctx.include_usage {
            let mut chunk = self.base(json!([]));
            chunk["usage"] = usage(self.ctx);
            self.out.push(data(&chunk));
        }
        self.out.push("data: [DONE]\n\n".to_string());
    }
}

/// OpenAI's usage object: `prompt_tokens` counts every prompt token,
/// cached or not, and `prompt_tokens_details.cached_tokens` the part read
/// from the cache (OpenAI has no cache writes to report: tokens another
/// provider would bill as written are plain prompt tokens here).
fn usage(ctx: &Ctx<'_>) -> Value {
    let prompt = ctx.input_tokens + ctx.cache_read + ctx.cache_write;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": ctx.output_tokens,
        "total_tokens": prompt + ctx.output_tokens,
        "prompt_tokens_details": {"cached_tokens": ctx.cache_read, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}
    })
}

fn finish_reason(blocks: &[Block], ctx: &Ctx<'_>) -> &'static str {
    if ctx.truncated {
        "length"
    } else if blocks.iter().any(Block::is_tool_call) {
        "tool_calls"
    } else {
        "stop"
    }
}

fn arguments_of(block: &Block) -> Option<(&str, String)> {
    match block {
        Block::Text(_) => None,
        Block::ToolCall { name, input } => Some((name, input.to_string())),
        Block::RawToolCall { name, arguments } => Some((name, arguments.clone())),
    }
}

/// The streamed body for a step (HTTP errors and hangs never get here).
pub(crate) fn stream(kind: &StepKind, ctx: &Ctx<'_>) -> Sse {
    let mut chunks = Chunks::new(ctx);
    let ending = match kind {
        StepKind::Reply(blocks) => {
            let mut tool_index = 0;
            for block in blocks {
                if let Block::Text(text) = block {
                    chunks.text(text);
                } else if let Some((name, arguments)) = arguments_of(block) {
                    chunks.tool_call(tool_index, name, &arguments);
                    tool_index += 1;
                }
            }
            chunks.finish(finish_reason(blocks, ctx));
            Ending::Complete
        }
        StepKind::DropMidStream(text) | StepKind::StallAfter(text) => {
            chunks.text(text);
            if matches!(kind, StepKind::DropMidStream(_)) {
                Ending::Abort
            } else {
                Ending::Stall
            }
        }
        StepKind::MalformedSse => {
            chunks.out.push("data: {this is not json\n\n".to_string());
            Ending::Complete
        }
        StepKind::ErrorEvent { kind, message } => {
            chunks.out.push(data(&error_body(kind, message)));
            Ending::Complete
        }
        StepKind::HttpError { .. } | StepKind::Hang => Ending::Complete,
    };
    Sse {
        events: chunks.out,
        ending,
    }
}

/// The non-streamed completion for a reply.
pub(crate) fn completion(blocks: &[Block], ctx: &Ctx<'_>) -> Value {
    let text: String = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let calls: Vec<Value> = blocks
        .iter()
        .filter_map(arguments_of)
        .map(|(name, arguments)| {
            json!({
                "id": format!("call_fake{:06}", ctx.ids.next()),
                "type": "function",
                "function": {"name": name, "arguments": arguments}
            })
        })
        .collect();
    let mut message = json!({
        "role": "assistant",
        "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) },
        "refusal": null
    });
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    json!({
        "id": format!("chatcmpl-fake{:06}", ctx.ids.next()),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "system_fingerprint": "fp_fake",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason(blocks, ctx)
        }],
        "usage": usage(ctx)
    })
}

/// OpenAI's error body: `{"error":{"message":..,"type":kind,"param":null,"code":null}}`.
pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}

/// OpenAI's model listing.
pub(crate) fn models(ids: &[String], created: u64) -> Value {
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": created, "owned_by": "alcove-testkit"}))
        .collect();
    json!({"object": "list", "data": data})
}
