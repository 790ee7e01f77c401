//! Children as subagent sessions, and as tool calls without the capability.
