//! A scripted fake model server for end-to-end tests of the real `alcove`
//! binary, since no model service is reachable from tests.
//!
//! [`FakeServer`] listens on 127.0.0.1 and speaks the real wire protocols —
//! Anthropic Messages SSE on `POST /v1/messages`, OpenAI Chat Completions
//! SSE on `POST /v1/chat/completions` and OpenAI Responses SSE on
//! `POST /v1/responses` (plus `GET /v1/models`). Each request is
//! recorded, matched to a scripted conversation by the text of its first user
//! message, and answered with that conversation's next [`Step`]. [`TestEnv`]
//! runs the binary in a temporary home and workspace pointed at the server.
//!
//! ```
//! use alcove_testkit::{Block, FakeServer, Script, Step};
//! use serde_json::json;
//!
//! let server = FakeServer::start(
//!     Script::new()
//!         .conversation("fix the typo", vec![
//!             Step::tool_call("read_file", json!({"path": "README.md"})),
//!             Step::reply(vec![
//!                 Block::text("Found it."),
//!                 Block::tool_call("edit_file", json!({"path": "README.md", "old": "teh", "new": "the"})),
//!             ]),
//!             Step::text("Fixed."),
//!         ])
//!         .conversation("flaky", vec![
//!             Step::overloaded().with_retry_after(1),
//!             Step::drop_mid_stream("partial"),
//!             Step::text("ok").delay(50).usage(1200, 30),
//!         ]),
//! );
//! // Point the client at server.url() (Anthropic) or server.openai_url() (OpenAI),
//! // run it, then inspect what it sent:
//! assert!(server.requests().is_empty());
//! ```
//!
//! A request that matches no conversation, or whose conversation has used all
//! its steps, gets a 400 whose error message says so and quotes the prompt.
//!
//! The server is strict by default: a request whose history a real server
//! would refuse (tool call arguments that are not a JSON object, a tool call
//! not answered in the next message, roles out of turn, a Responses function
//! call sent without the reasoning item it followed) gets that server's
//! error (`strict.rs`, `responses_strict.rs`; [`Script::lenient`] turns it
//! off). With the `published-schemas` feature it also refuses a body that
//! breaks the provider's published request schema (`schemas.rs`). A
//! Messages request that asks for thinking gets replies that open
//! with a signed thinking block, which must come back unchanged
//! (`thinking.rs`). [`Script::one_slot`]
//! answers one request at a time, like a one-slot local server, and
//! [`Step::first_byte_after`] holds back the first byte like a long prefill.

mod anthropic;
mod context;
mod env;
mod from_result;
mod openai;
mod record;
mod reply;
mod responses;
mod responses_strict;
#[cfg(feature = "published-schemas")]
pub mod schemas;
mod script;
mod server;
mod strict;
mod thinking;
mod wire;

pub use context::OverflowStyle;
pub use env::TestEnv;
pub use from_result::from_last_result;
pub use record::{Protocol, RecordedRequest};
pub use script::{
    Block, DEFAULT_INPUT_TOKENS, DEFAULT_MODEL, DEFAULT_OUTPUT_TOKENS, PIECE_CHARS, Script, Step,
};
pub use server::FakeServer;
