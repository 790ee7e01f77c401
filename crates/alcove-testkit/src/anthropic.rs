//! Renders scripted steps in the Anthropic Messages wire format: the SSE
//! event sequence of a streamed reply (`message_start`, `ping`,
//! `content_block_*`, `message_delta`, `message_stop`), the non-streamed JSON
//! message, and the error body shape.

use serde_json::{Value, json};

use crate::script::{Block, StepKind, split_pieces};
use crate::wire::{Ctx, Ending, Sse};

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn message_start(ctx: &Ctx<'_>) -> Vec<String> {
    let id = format!("msg_fake{:06}", ctx.ids.next());
    vec![
        event(
            "message_start",
            &json!({
                "type": "message_start",
                "message": {
                    "id": id,
                    "type": "message",
                    "role": "assistant",
                    "model": ctx.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": {
                        "input_tokens": ctx.input_tokens,
                        "cache_creation_input_tokens": ctx.cache_write,
                        "cache_read_input_tokens": ctx.cache_read,
                        "output_tokens": 1
                    }
                }
            }),
        ),
        event("ping", &json!({"type": "ping"})),
    ]
}

fn block_start(index: usize, block: Value) -> String {
    event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn delta(index: usize, delta: Value) -> String {
    event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn block_stop(index: usize) -> String {
    event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

/// `content_block_start` and the text deltas of a text block (no stop).
fn open_text(out: &mut Vec<String>, index: usize, text: &str, max: usize) {
    out.push(block_start(index, json!({"type": "text", "text": ""})));
    for piece in split_pieces(text, max) {
        out.push(delta(index, json!({"type": "text_delta", "text": piece})));
    }
}

fn tool_use(out: &mut Vec<String>, index: usize, name: &str, arguments: &str, ctx: &Ctx<'_>) {
    let id = format!("toolu_fake{:06}", ctx.ids.next());
    out.push(block_start(
        index,
        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
    ));
    // The real API opens every tool input with an empty partial_json.
    out.push(delta(
        index,
        json!({"type": "input_json_delta", "partial_json": ""}),
    ));
    for piece in split_pieces(arguments, ctx.piece_chars) {
        out.push(delta(
            index,
            json!({"type": "input_json_delta", "partial_json": piece}),
        ));
    }
    out.push(block_stop(index));
}

fn stop_reason(blocks: &[Block], ctx: &Ctx<'_>) -> &'static str {
    if ctx.truncated {
        "max_tokens"
    } else if blocks.iter().any(Block::is_tool_call) {
        "tool_use"
    } else {
        "end_turn"
    }
}

/// The thinking blocks a reply opens with when the request asked for
/// thinking: a signed `thinking` block streamed in deltas, its signature
/// in one `signature_delta`, and a `redacted_thinking` block when the step
/// asks. Returns how many blocks it wrote.
fn thinking(out: &mut Vec<String>, ctx: &Ctx<'_>) -> usize {
    if !ctx.thinking {
        return 0;
    }
    let text = format!(
        "Let me think about reply {} before I answer.",
        ctx.ids.next()
    );
    out.push(block_start(
        0,
        json!({"type": "thinking", "thinking": "", "signature": ""}),
    ));
    for piece in split_pieces(&text, ctx.piece_chars) {
        out.push(delta(
            0,
            json!({"type": "thinking_delta", "thinking": piece}),
        ));
    }
    out.push(delta(
        0,
        json!({"type": "signature_delta", "signature": crate::thinking::sign(&text)}),
    ));
    out.push(block_stop(0));
    if !ctx.redacted_thinking {
        return 1;
    }
    let data = crate::thinking::redacted(ctx.ids.next());
    out.push(block_start(
        1,
        json!({"type": "redacted_thinking", "data": data}),
    ));
    out.push(block_stop(1));
    2
}

/// The streamed body for a step (HTTP errors and hangs never get here).
pub(crate) fn stream(kind: &StepKind, ctx: &Ctx<'_>) -> Sse {
    let mut out = Vec::new();
    let ending = match kind {
        StepKind::Reply(blocks) => {
            out.extend(message_start(ctx));
            let first = thinking(&mut out, ctx);
            for (index, block) in blocks.iter().enumerate() {
                let index = index + first;
                match block {
                    Block::Text(text) => {
                        open_text(&mut out, index, text, ctx.piece_chars);
                        out.push(block_stop(index));
                    }
                    Block::ToolCall { name, input } => {
                        tool_use(&mut out, index, name, &input.to_string(), ctx)
                    }
                    Block::RawToolCall { name, arguments } => {
                        tool_use(&mut out, index, name, arguments, ctx)
                    }
                }
            }
            out.push(event(
                "message_delta",
                &json!({
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason(blocks, ctx), "stop_sequence": null},
                    "usage": {"output_tokens": ctx.output_tokens}
                }),
            ));
            out.push(event("message_stop", &json!({"type": "message_stop"})));
            Ending::Complete
        }
        StepKind::DropMidStream(text) | StepKind::StallAfter(text) => {
            out.extend(message_start(ctx));
            if !text.is_empty() {
                open_text(&mut out, 0, text, ctx.piece_chars);
            }
            if matches!(kind, StepKind::DropMidStream(_)) {
                Ending::Abort
            } else {
                Ending::Stall
            }
        }
        StepKind::MalformedSse => {
            out.push("event: content_block_delta\ndata: {this is not json\n\n".to_string());
            Ending::Complete
        }
        StepKind::ErrorEvent { kind, message } => {
            out.push(event("error", &error_body(kind, message)));
            Ending::Complete
        }
        StepKind::HttpError { .. } | StepKind::Hang => Ending::Complete,
    };
    Sse {
        events: out,
        ending,
    }
}

/// The non-streamed message for a reply.
pub(crate) fn message(blocks: &[Block], ctx: &Ctx<'_>) -> Value {
    let content: Vec<Value> = blocks
        .iter()
        .map(|b| match b {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::ToolCall { name, input } => json!({
                "type": "tool_use",
                "id": format!("toolu_fake{:06}", ctx.ids.next()),
                "name": name,
                "input": input
            }),
            Block::RawToolCall { name, arguments } => json!({
                "type": "tool_use",
                "id": format!("toolu_fake{:06}", ctx.ids.next()),
                "name": name,
                "input": serde_json::from_str::<Value>(arguments)
                    .unwrap_or_else(|_| Value::String(arguments.clone()))
            }),
        })
        .collect();
    json!({
        "id": format!("msg_fake{:06}", ctx.ids.next()),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason(blocks, ctx),
        "stop_sequence": null,
        "usage": {
            "input_tokens": ctx.input_tokens,
            "cache_creation_input_tokens": ctx.cache_write,
            "cache_read_input_tokens": ctx.cache_read,
            "output_tokens": ctx.output_tokens
        }
    })
}

/// Anthropic's error body: `{"type":"error","error":{"type":kind,"message":message}}`.
pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// Anthropic's model listing.
pub(crate) fn models(ids: &[String]) -> Value {
    let data: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({
                "type": "model",
                "id": id,
                "display_name": id,
                "created_at": "2025-01-01T00:00:00Z"
            })
        })
        .collect();
    json!({
        "data": data,
        "has_more": false,
        "first_id": ids.first(),
        "last_id": ids.last()
    })
}
