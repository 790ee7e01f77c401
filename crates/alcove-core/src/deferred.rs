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
//! An agent without `ToolSearch` (a bare rule denies it, or its model's
//! profile defers nothing: a small window or a server on this machine,
//! `Limits::defer_tools`) defers nothing: it is offered every tool in full.
//!
//! Where tools are deferred, a small model must not be left stranded by
//! the extra step (issue 45): a deferred built-in the user names in their
//! own words (`spawn_agent`, `WebFetch`) is loaded before the model is
//! asked ([`mentioned`]), and a call of a deferred tool not loaded yet is
//! loaded and run, its result starting with [`loaded_for_call`]'s note,
//! rather than refused. Both are read back from the history like a
//! `ToolSearch` load.

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
    "Workflow",
];

/// An agent's MCP tools are deferred when their definitions together are
/// over this many bytes of JSON (10,000 tokens, 5 % of a 200k window;
/// Claude Code defers them past 10 % of the window): the servers a user
/// added stay in full unless they are a catalog.
pub const MCP_DEFER_BYTES: usize = 40_000;

/// What a `ToolSearch` result that loaded tools starts with, then their
/// names, comma-separated, on the same line.
pub(crate) const LOADED_LINE: &str = "Loaded: ";

/// What the result of a call that loaded its own deferred tool starts with
/// (then the tool's name and [`LOADED_CALL_TAIL`]).
const LOADED_CALL_HEAD: &str = "[alcove: ";
const LOADED_CALL_TAIL: &str = " was offered by name only; alcove loaded it for this call, which ran, and it stays in your tools.]";

/// The note a call of the deferred tool `name`, not loaded yet, gets when
/// it runs: the history shows the tool loaded from then on.
pub(crate) fn loaded_for_call(name: &str) -> String {
    format!("{LOADED_CALL_HEAD}{name}{LOADED_CALL_TAIL}")
}

/// Built-in deferred tools a mention of one loads too: a background agent
/// is no use without `wait`.
const COMPANIONS: &[(&str, &str)] = &[
    ("spawn_agent", "wait"),
    ("spawn_batch", "wait"),
    ("Workflow", "wait"),
];

/// The deferred built-ins `text` (the user's words) names, in the order
/// named, each followed by its companions. A name counts as a whole word,
/// case and all; a name that is a plain English word (`wait`) only counts
/// in backticks.
pub(crate) fn mentioned(text: &str) -> Vec<&'static str> {
    let mut found: Vec<(usize, &'static str)> = Vec::new();
    for name in DEFERRED_TOOLS {
        let plain = name.chars().all(|c| c.is_ascii_lowercase());
        let hit = text.match_indices(name).find(|(at, _)| {
            let before = text[..*at].chars().next_back();
            let after = text[at + name.len()..].chars().next();
            let word = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            if plain {
                before == Some('`') && after == Some('`')
            } else {
                word(before) && word(after)
            }
        });
        if let Some((at, _)) = hit {
            found.push((at, name));
        }
    }
    found.sort_by_key(|(at, _)| *at);
    let mut names: Vec<&'static str> = Vec::new();
    for (_, name) in found {
        let companions = COMPANIONS
            .iter()
            .filter(|(of, _)| *of == name)
            .map(|(_, companion)| *companion);
        for name in std::iter::once(name).chain(companions) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

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

/// `tools` with `ToolSearch` appended when `defer` (the model's profile
/// defers tools, `Limits::defer_tools`), some of them are deferred and
/// `gate` offers it (an agent's tools are built by this, the main agent's
/// and each child's alike). Without it every tool is offered in full.
pub fn with_tool_search(
    mut tools: Vec<Arc<DynTool>>,
    gate: &crate::PermissionGate,
    defer: bool,
) -> Vec<Arc<DynTool>> {
    tools.retain(|tool| tool.spec().name != TOOL_SEARCH);
    if !defer {
        return tools;
    }
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

/// The names `messages` loaded, first loaded first: those the successful
/// `ToolSearch` results name, those a summary's block carried, the
/// deferred built-ins the user's own text names ([`mentioned`]) and those
/// a call loaded for itself ([`loaded_for_call`]).
pub(crate) fn loaded_in(messages: &[Message]) -> Vec<String> {
    let mut calls: Vec<(&str, &str)> = Vec::new();
    let mut loaded: Vec<String> = Vec::new();
    for message in messages {
        for block in &message.content {
            let names: Vec<String> = match block {
                ContentBlock::ToolUse { id, name, .. } => {
                    calls.push((id.as_str(), name.as_str()));
                    Vec::new()
                }
                ContentBlock::Text { text } => match carried_names(text) {
                    Some(names) => split_names(names).collect(),
                    None if message.role == alcove_protocol::Role::User => {
                        mentioned(text).into_iter().map(str::to_owned).collect()
                    }
                    None => Vec::new(),
                },
                _ => loads_of(&calls, block),
            };
            for name in names {
                if !loaded.contains(&name) {
                    loaded.push(name);
                }
            }
        }
    }
    loaded
}

/// The names `block` loaded, when it is the result of one of `calls` (id,
/// tool name): a successful `ToolSearch` result's names, or the tool of a
/// call that loaded it for itself.
fn loads_of(calls: &[(&str, &str)], block: &ContentBlock) -> Vec<String> {
    let ContentBlock::ToolResult {
        tool_use_id,
        content,
        is_error,
    } = block
    else {
        return Vec::new();
    };
    let Some((_, name)) = calls.iter().find(|(id, _)| *id == tool_use_id.as_str()) else {
        return Vec::new();
    };
    if *name == TOOL_SEARCH {
        if *is_error {
            return Vec::new();
        }
        return loaded_names(content)
            .map(|names| split_names(names).collect())
            .unwrap_or_default();
    }
    if content.starts_with(&loaded_for_call(name)) {
        return vec![(*name).to_owned()];
    }
    Vec::new()
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

    /// Takes in what this turn's calls loaded (`ToolSearch`, or a call of
    /// a deferred tool that loaded it; `results` are the turn's results);
    /// true when the offer grew.
    pub(crate) fn learn(&mut self, calls: &[ToolCall], results: &[ContentBlock]) -> bool {
        if self.deferred.is_empty() {
            return false;
        }
        let calls: Vec<(&str, &str)> = calls
            .iter()
            .map(|call| (call.id.as_str(), call.name.as_str()))
            .collect();
        let names: Vec<String> = results
            .iter()
            .flat_map(|block| loads_of(&calls, block))
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

    #[test]
    fn the_users_words_and_a_calls_own_load_count_as_loads() {
        assert_eq!(
            mentioned("Start a helper with spawn_agent, then use WebFetch."),
            ["spawn_agent", "wait", "WebFetch"]
        );
        // Whole words only; a plain word only in backticks.
        assert!(mentioned("respawn_agents and WebFetchers, please wait").is_empty());
        assert_eq!(mentioned("then call `wait`"), ["wait"]);

        let mut messages = vec![Message::user_text("fetch it with WebFetch")];
        messages.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "k".to_owned(),
                name: "KillShell".to_owned(),
                input: serde_json::json!({}),
            }],
        });
        messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "k".to_owned(),
                content: format!("{}\nkilled", loaded_for_call("KillShell")).into(),
                is_error: false,
            }],
        });
        assert_eq!(loaded_in(&messages), ["WebFetch", "KillShell"]);
        // The note on another tool's result loads nothing.
        if let ContentBlock::ToolUse { name, .. } = &mut messages[1].content[0] {
            *name = "Bash".to_owned();
        }
        assert_eq!(loaded_in(&messages), ["WebFetch"]);
        // An assistant's words are not the user's.
        let said = vec![Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text {
                text: "I could use WebFetch".to_owned(),
            }],
        }];
        assert!(loaded_in(&said).is_empty());
    }
}
