//! The agent (being written).
