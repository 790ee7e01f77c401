//! Deferred tools: offered by name only until the agent loads them.
//!
//! Every tool definition is prefill in every request (on a CPU model, time
//! before the first answer), and the delegation, batch and web tools were
//! about half of the main agent's first request while most sessions never
//! call them. So, as Claude Code does with `ToolSearch`, the tools named in
//! [`DEFERRED_TOOLS`] (and MCP tools past [`MCP_DEFER_BYTES`]) are listed
//! by name in `ToolSearch`'s description, and a `ToolSearch` call loads
//! their definitions: from the next request on they are in the agent's
//! `tools`, appended at the end so the prefix before them is unchanged.
//!
//! The loaded set keeps no state of its own, like the plan (`plan.rs`): it
//! is read from the agent's history — the names each successful
//! `ToolSearch` result starts with, in order — so each agent (the main
//! one, each child) has its own, a spawned agent keeps its own between
//! submissions, and a resumed session reads it again. Compaction never
//! clears a `ToolSearch` result, and a summary that replaces one carries
//! the names in a block of its first message ([`loaded_block`]).
//!
//! An agent without `ToolSearch` (a bare rule denies it) defers nothing: it
//! is offered every tool in full.

use std::sync::Arc;

use crate::agents::DynTool;
use alcove_protocol::{ContentBlock, Message};

use crate::ToolCall;

/// The tool that loads deferred tools.
pub const TOOL_SEARCH: &str = "ToolSearch";

/// The built-in tools offered by name only. Deferring a tool is adding its
/// name here (docs/tools.md, "Deferred tools", says why each is).
pub const DEFERRED_TOOLS: &[&str] = &[
    crate::WEB_FETCH,
    crate::WEB_SEARCH,
    "spawn_agent",
    "send_input",
    "resume_agent",
    "wait",
    "close_agent",
    "spawn_batch",
    "retry_batch",
    "BashOutput",
    "KillShell",
];

/// An agent's MCP tools are deferred when their definitions together are
/// over this many bytes of JSON (10,000 tokens, 5 % of a 200k window;
/// Claude Code defers them past 10 % of the window): the servers a user
/// added stay in full unless they are a catalog.
pub const MCP_DEFER_BYTES: usize = 40_000;

/// What a `ToolSearch` result that loaded tools starts with, then their
/// names, comma-separated, on the same line.
pub(crate) const LOADED_LINE: &str = "Loaded: ";

/// What the block carrying the loaded names through a summary starts with.
const LOADED_MARK: &str = "[alcove: tools you loaded with ToolSearch before the conversation was compacted, still in your tools:";

fn is_mcp(name: &str) -> bool {
    name.starts_with("mcp__") || name == "ListMcpResources" || name == "ReadMcpResource"
}

/// Which of `tools` the rules defer, by position (ToolSearch or not).
fn deferrable(tools: &[Arc<DynTool>]) -> Vec<bool> {
    let mcp_bytes: usize = tools
        .iter()
        .filter(|tool| is_mcp(&tool.spec().name))
        .map(|tool| crate::compaction::json_bytes(std::slice::from_ref(tool.spec())))
        .sum();
    tools
        .iter()
        .map(|tool| {
            let name = tool.spec().name.as_str();
            DEFERRED_TOOLS.contains(&name) || (is_mcp(name) && mcp_bytes > MCP_DEFER_BYTES)
        })
        .collect()
}

/// The tools of `tools` offered by name only: none when `ToolSearch` is not
/// among them.
pub(crate) fn deferred_tools(tools: &[Arc<DynTool>]) -> Vec<Arc<DynTool>> {
    if !tools.iter().any(|tool| tool.spec().name == TOOL_SEARCH) {
        return Vec::new();
    }
    tools
        .iter()
        .zip(deferrable(tools))
        .filter(|(_, deferred)| *deferred)
        .map(|(tool, _)| tool.clone())
        .collect()
}

/// `tools` with `ToolSearch` appended when some of them are deferred and
/// `gate` offers it (an agent's tools are built by this, the main agent's
/// and each child's alike).
pub fn with_tool_search(
    mut tools: Vec<Arc<DynTool>>,
    gate: &crate::PermissionGate,
) -> Vec<Arc<DynTool>> {
    tools.retain(|tool| tool.spec().name != TOOL_SEARCH);
    let names: Vec<&str> = tools
        .iter()
        .zip(deferrable(&tools))
        .filter(|(_, deferred)| *deferred)
        .map(|(tool, _)| tool.spec().name.as_str())
        .collect();
    if names.is_empty() || !gate.offers(TOOL_SEARCH) {
        return tools;
    }
    let search: Arc<DynTool> = Arc::new(crate::tool_search::ToolSearch::new(&names));
    tools.push(search);
    tools
}

/// The names the successful `ToolSearch` results in `messages` loaded, and
/// those a summary's block carried, first loaded first.
pub(crate) fn loaded_in(messages: &[Message]) -> Vec<String> {
    let mut searches: Vec<&str> = Vec::new();
    let mut loaded: Vec<String> = Vec::new();
    for block in messages.iter().flat_map(|message| &message.content) {
        let names = match block {
            ContentBlock::ToolUse { id, name, .. } if name == TOOL_SEARCH => {
                searches.push(id.as_str());
                None
            }
            ContentBlock::Text { text } => carried_names(text),
            _ => loads_of(&searches, block),
        };
        for name in names.into_iter().flat_map(split_names) {
            if !loaded.contains(&name) {
                loaded.push(name);
            }
        }
    }
    loaded
}

/// The names `block` loaded, when it is a successful result of one of the
/// `ToolSearch` calls `searches`.
fn loads_of<'a>(searches: &[&str], block: &'a ContentBlock) -> Option<&'a str> {
    match block {
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error: false,
        } if searches.contains(&tool_use_id.as_str()) => loaded_names(content),
        _ => None,
    }
}

fn split_names(names: &str) -> impl Iterator<Item = String> + '_ {
    names
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}

/// The names on a `ToolSearch` result's first line.
fn loaded_names(result: &str) -> Option<&str> {
    result.lines().next()?.strip_prefix(LOADED_LINE)
}

fn carried_names(text: &str) -> Option<&str> {
    text.strip_prefix(LOADED_MARK)?.trim().strip_suffix(']')
}

/// The block that carries `names` through a summary.
pub(crate) fn loaded_block(names: &[String]) -> String {
    format!("{LOADED_MARK} {}]", names.join(", "))
}

/// Whether `text` is such a block.
pub(crate) fn is_loaded_block(text: &str) -> bool {
    text.starts_with(LOADED_MARK)
}

/// What one agent offers in its next request: every tool that is not
/// deferred, in the agent's order, then the deferred tools it loaded, in
/// the order it loaded them.
pub(crate) struct Offer {
    all: Vec<Arc<DynTool>>,
    deferred: Vec<Arc<DynTool>>,
    offered: Vec<Arc<DynTool>>,
    loaded: Vec<String>,
}

impl Offer {
    /// The offer of an agent with `tools` whose history is `messages`.
    pub(crate) fn new(tools: &[Arc<DynTool>], messages: &[Message]) -> Offer {
        let deferred = deferred_tools(tools);
        let mut offer = Offer {
            all: tools.to_vec(),
            offered: Vec::new(),
            loaded: Vec::new(),
            deferred,
        };
        if !offer.deferred.is_empty() {
            offer.load(&loaded_in(messages));
        }
        offer.rebuild();
        offer
    }

    /// The offer of an agent whose calls come from its front end, not a
    /// model (`alcove mcp serve`): every deferred tool counts as loaded.
    pub(crate) fn all_loaded(tools: &[Arc<DynTool>]) -> Offer {
        let deferred = deferred_tools(tools);
        let names: Vec<String> = deferred
            .iter()
            .map(|tool| tool.spec().name.clone())
            .collect();
        let mut offer = Offer {
            all: tools.to_vec(),
            offered: Vec::new(),
            loaded: Vec::new(),
            deferred,
        };
        offer.load(&names);
        offer.rebuild();
        offer
    }

    /// The tools the next request lists in full.
    pub(crate) fn tools(&self) -> &[Arc<DynTool>] {
        &self.offered
    }

    /// Whether `name` is a deferred tool this agent has not loaded.
    pub(crate) fn is_unloaded(&self, name: &str) -> bool {
        self.deferred.iter().any(|tool| tool.spec().name == name)
            && !self.loaded.iter().any(|loaded| loaded == name)
    }

    /// Takes in what this turn's `ToolSearch` calls loaded (`results` are
    /// the turn's results); true when the offer grew.
    pub(crate) fn learn(&mut self, calls: &[ToolCall], results: &[ContentBlock]) -> bool {
        if self.deferred.is_empty() {
            return false;
        }
        let searches: Vec<&str> = calls
            .iter()
            .filter(|call| call.name == TOOL_SEARCH)
            .map(|call| call.id.as_str())
            .collect();
        if searches.is_empty() {
            return false;
        }
        let names: Vec<String> = results
            .iter()
            .filter_map(|block| loads_of(&searches, block))
            .flat_map(split_names)
            .collect();
        let before = self.loaded.len();
        self.load(&names);
        if self.loaded.len() == before {
            return false;
        }
        self.rebuild();
        true
    }

    fn load(&mut self, names: &[String]) {
        for name in names {
            let known = self.deferred.iter().any(|tool| tool.spec().name == *name);
            if known && !self.loaded.contains(name) {
                self.loaded.push(name.clone());
            }
        }
    }

    fn rebuild(&mut self) {
        let deferred = |tool: &Arc<DynTool>| self.deferred.iter().any(|d| Arc::ptr_eq(d, tool));
        let mut offered: Vec<Arc<DynTool>> = self
            .all
            .iter()
            .filter(|tool| !deferred(tool))
            .cloned()
            .collect();
        for name in &self.loaded {
            if let Some(tool) = self.deferred.iter().find(|tool| tool.spec().name == *name) {
                offered.push(tool.clone());
            }
        }
        self.offered = offered;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alcove_protocol::Role;

    fn search(id: &str, result: &str, is_error: bool) -> [Message; 2] {
        [
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: id.to_owned(),
                    name: TOOL_SEARCH.to_owned(),
                    input: serde_json::json!({"query": "x"}),
                }],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: id.to_owned(),
                    content: result.to_owned().into(),
                    is_error,
                }],
            },
        ]
    }

    #[test]
    fn loads_are_read_from_successful_results_and_carried_blocks_in_order() {
        let mut messages = vec![Message::user_text("task")];
        assert!(loaded_in(&messages).is_empty());
        messages.extend(search("a", "Loaded: WebFetch, wait\nmore", false));
        messages.extend(search("b", "Loaded: spawn_agent", true));
        messages.extend(search("c", "No deferred tool matches", false));
        messages.extend(search("d", "Loaded: wait, WebSearch", false));
        assert_eq!(loaded_in(&messages), ["WebFetch", "wait", "WebSearch"]);
        // A result of another tool that happens to start the same way loads nothing.
        let mut other = search("e", "Loaded: close_agent", false);
        if let ContentBlock::ToolUse { name, .. } = &mut other[0].content[0] {
            *name = "Read".to_owned();
        }
        messages.extend(other);
        assert_eq!(loaded_in(&messages).len(), 3);

        let block = loaded_block(&loaded_in(&messages));
        assert!(is_loaded_block(&block));
        let carried = vec![Message::user_text(block)];
        assert_eq!(loaded_in(&carried), ["WebFetch", "wait", "WebSearch"]);
    }
}
