//! End-to-end tests of the built-in tools through the public [`Tool`] trait,
//! in real temporary directories. One test binary, one module per tool.
// Test helpers outside `#[test]` functions panic on setup failures too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bash;
mod common;
mod edit;
mod glob;
mod grep;
mod read;
mod schema;
mod write;
