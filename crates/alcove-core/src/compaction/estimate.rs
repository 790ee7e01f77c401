//! Estimating a request's size in tokens without a tokenizer: a message's
//! JSON bytes over four (images at a fixed price), counted without building
//! the JSON. Compaction scales these by the model's calibration.

use alcove_protocol::{Message, ToolSpec};

/// Estimated tokens of one message: its JSON size over four, rounded up.
/// Real tokenizers give about four bytes of English or code per token; the
/// JSON framing makes this err on the large side.
/// An image counts as [`IMAGE_TOKENS`], not its base64 over four.
pub(crate) fn estimate(message: &Message) -> u64 {
    let mut counter = ByteCount(0);
    let _ = serde_json::to_writer(&mut counter, message);
    let mut images = 0u64;
    let mut image_bytes = 0usize;
    for block in &message.content {
        if let alcove_protocol::ContentBlock::Image { data, .. } = block {
            images += 1;
            image_bytes += data.len();
        }
    }
    (counter.0.saturating_sub(image_bytes) as u64).div_ceil(4) + images * IMAGE_TOKENS
}

/// What one image costs a model: Anthropic's is about width × height / 750
/// tokens, at most about 1,600 once it scales the image to 1,568 px.
const IMAGE_TOKENS: u64 = 1_600;

pub(super) fn estimate_all(messages: &[Message]) -> u64 {
    messages.iter().map(estimate).sum()
}

/// Estimated tokens of the system prompt and tool specs.
pub(super) fn estimate_fixed(system: &str, tools: &[ToolSpec]) -> u64 {
    fixed_from_bytes(system, json_bytes(tools))
}

/// Estimated tokens of the system prompt and tool specs whose JSON takes
/// `tool_bytes`.
pub(super) fn fixed_from_bytes(system: &str, tool_bytes: usize) -> u64 {
    ((system.len() + tool_bytes) as u64).div_ceil(4)
}

/// The size of `tools`' JSON, counted without building it.
pub(crate) fn json_bytes(tools: &[ToolSpec]) -> usize {
    let mut counter = ByteCount(0);
    let _ = serde_json::to_writer(&mut counter, tools);
    counter.0
}

struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_grow_with_the_text() {
        let small = estimate(&Message::user_text("hi"));
        let big = estimate(&Message::user_text("x".repeat(4000)));
        assert!(small < 20, "{small}");
        assert!((1000..1100).contains(&big), "{big}");
    }
}
