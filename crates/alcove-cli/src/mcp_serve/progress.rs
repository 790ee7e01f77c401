//! What a client sees while its calls' children work: the server's event
//! stream turned into MCP progress notifications (turns, tokens, the
//! current tool) for the call whose child emitted it, and warnings into
//! MCP log messages. Nothing here writes to stdout, which carries only the
//! protocol.
// Logging is deprecated by the protocol's 2026 revision (SEP-2577), but it
// is how every client of the versions in use today shows a server's log.
#![allow(deprecated, reason = "MCP logging: see above")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use alcove_core::EventSink;
use alcove_protocol::{AgentEvent, AgentPath, EventKind};
use rmcp::model::LoggingLevel;
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;

/// The connected client, once the handshake is done (the session opens
/// first, so its sinks and approver are built before there is a peer).
/// Over HTTP several clients may connect: the last one that called a tool
/// gets approvals and log lines.
#[derive(Default)]
pub(crate) struct ClientLink(Mutex<Option<Peer<RoleServer>>>);

impl ClientLink {
    pub(crate) fn connect(&self, peer: Peer<RoleServer>) {
        if let Ok(mut current) = self.0.lock() {
            *current = Some(peer);
        }
    }

    pub(crate) fn peer(&self) -> Option<Peer<RoleServer>> {
        self.0.lock().ok().and_then(|current| current.clone())
    }
}

/// What one call's child and its descendants did so far.
#[derive(Default)]
struct Activity {
    turns: u32,
    tokens: u64,
    tool: Option<String>,
}

/// One watched call: its child's path once announced, and where its
/// progress lines go.
struct Watch {
    child: Option<AgentPath>,
    activity: Activity,
    lines: mpsc::UnboundedSender<String>,
}

/// Routes the server's events to the calls that watch them, and warnings
/// to the client's log.
pub(crate) struct EventRouter {
    link: Arc<ClientLink>,
    watches: Mutex<HashMap<String, Watch>>,
    /// The least severe level the client wants (`logging/setLevel`).
    min_level: AtomicU8,
}

impl EventRouter {
    pub(crate) fn new(link: Arc<ClientLink>) -> EventRouter {
        EventRouter {
            link,
            watches: Mutex::new(HashMap::new()),
            min_level: AtomicU8::new(LoggingLevel::Info as u8),
        }
    }

    /// `logging/setLevel`: lines less severe than `level` are not sent.
    pub(crate) fn set_level(&self, level: LoggingLevel) {
        self.min_level.store(level as u8, Ordering::Relaxed);
    }

    /// Watches the child the call `call_id` starts: a line for each turn,
    /// each request's tokens and each tool call of it or its descendants.
    pub(crate) fn watch(&self, call_id: &str) -> mpsc::UnboundedReceiver<String> {
        let (lines, receiver) = mpsc::unbounded_channel();
        if let Ok(mut watches) = self.watches.lock() {
            watches.insert(
                call_id.to_owned(),
                Watch {
                    child: None,
                    activity: Activity::default(),
                    lines,
                },
            );
        }
        receiver
    }

    /// Stops watching `call_id` (its child ended).
    pub(crate) fn unwatch(&self, call_id: &str) {
        if let Ok(mut watches) = self.watches.lock() {
            watches.remove(call_id);
        }
    }

    fn route(&self, event: &AgentEvent) {
        let Ok(mut watches) = self.watches.lock() else {
            return;
        };
        if let EventKind::AgentStarted { child, call_id, .. } = &event.kind
            && let Some(watch) = watches.get_mut(call_id)
            && watch.child.is_none()
        {
            watch.child = Some(child.clone());
            return;
        }
        let Some(watch) = watches.values_mut().find(|watch| {
            watch
                .child
                .as_ref()
                .is_some_and(|child| is_within(&event.agent, child))
        }) else {
            return;
        };
        let own = watch.child.as_ref() == Some(&event.agent);
        let activity = &mut watch.activity;
        match &event.kind {
            EventKind::TurnStarted { turn } if own => activity.turns = *turn,
            EventKind::Usage { usage } => activity.tokens += usage.budget_tokens(),
            EventKind::ToolCallStarted { name, .. } => {
                activity.tool = Some(if own {
                    name.clone()
                } else {
                    format!("{name} (in {})", event.agent)
                });
            }
            EventKind::AgentStarted { child, .. } => {
                activity.tool = Some(format!("{child} started"));
            }
            _ => return,
        }
        let mut line = format!("turn {} · {} tokens", activity.turns, activity.tokens);
        if let Some(tool) = &activity.tool {
            line.push_str(" · ");
            line.push_str(tool);
        }
        let _ = watch.lines.send(line);
    }

    /// A line for the client's log, or for stderr before a client is there.
    fn log(&self, level: LoggingLevel, message: &str) {
        if (level as u8) < self.min_level.load(Ordering::Relaxed) {
            return;
        }
        match self.link.peer() {
            Some(peer) => {
                let Ok(handle) = tokio::runtime::Handle::try_current() else {
                    return;
                };
                let message = message.to_owned();
                handle.spawn(async move {
                    let param = rmcp::model::LoggingMessageNotificationParam::new(
                        level,
                        serde_json::Value::String(message),
                    );
                    let _ = peer.notify_logging_message(param).await;
                });
            }
            None => eprintln!("alcove: {message}"),
        }
    }
}

impl EventSink for EventRouter {
    fn emit(&self, event: &AgentEvent) {
        match &event.kind {
            EventKind::Warning { message } => self.log(LoggingLevel::Warning, message),
            // A call's child ended (also when its call was cancelled and
            // no result goes back): the client's log says how.
            EventKind::AgentEnded {
                child,
                status,
                turns,
                usage,
                ..
            } if event.agent == AgentPath::main() => self.log(
                LoggingLevel::Info,
                &format!(
                    "{child} ended: {} after {turns} turns, {} tokens",
                    super::children::status_name(*status),
                    usage.budget_tokens()
                ),
            ),
            _ => {}
        }
        self.route(event);
    }
}

/// Whether `agent` is `child` or one of its descendants.
pub(crate) fn is_within(agent: &AgentPath, child: &AgentPath) -> bool {
    agent == child
        || agent
            .as_str()
            .strip_prefix(child.as_str())
            .is_some_and(|rest| rest.starts_with('/'))
}
