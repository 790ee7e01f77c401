//! Plain data that every alcove crate speaks: the provider-neutral message
//! model, tool specifications, token usage and the agent event stream.
//!
//! This crate does no I/O and knows nothing of tokio, HTTP or terminals, so
//! the model clients, the agent loop, the tools and every front end can share
//! it without dragging each other in.
//!
//! - [`Message`] and [`ContentBlock`]: a conversation, in the shape both wire
//!   protocols can be translated to and from.
//! - [`ToolSpec`]: what the model is offered.
//! - [`AgentEvent`]: everything a user can observe, tagged with the
//!   [`AgentPath`] of the agent it came from. The JSONL output, the
//!   transcripts and the TRACE lines are all renderings of this one stream.
#![deny(missing_docs)]

mod child_end;
mod event;
mod message;
mod plan;
mod schema;
mod text;

pub use child_end::{ChildEvidence, CommandRun, ProcessRun};
pub use event::{AgentEvent, AgentPath, Effects, EventKind, RunStatus};
pub use message::{ContentBlock, Message, Role, StopReason, ToolSpec, Usage};
pub use plan::{Todo, TodoStatus, completed_count};
pub use schema::Schema;
pub use text::SharedText;
