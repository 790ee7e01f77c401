//! [`CommandHooks`]: the Claude Code command-hook protocol as a [`Hooks`],
//! so the hook scripts users already have work unchanged.
//!
//! Each event builds one JSON payload (`session_id`, `transcript_path`,
//! `cwd`, `permission_mode`, `hook_event_name`, the event's own fields, and
//! `agent_id` / `agent_type` inside a child), runs every matching command in
//! parallel, and folds their outcomes: the strictest PreToolUse verdict wins
//! (deny > ask > allow > continue), any block keeps a stopping agent at work
//! unless some hook said `continue: false`. Warnings and `systemMessage`s
//! reach the user as `warning` events of the agent the hook ran for.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use alcove_protocol::{AgentEvent, AgentPath, EventKind};
use alcove_tools::ToolOutput;
use futures::future::join_all;
use serde_json::{Map, Value, json};

use super::hook_process::{self, Invocation};
use super::outcome::{HookOutcome, Permission, interpret};
use super::settings::{HookConfig, HookEvent};
use super::{HookCall, HookScope, Hooks, PostToolNote, PreToolVerdict};
use crate::EventSink;

/// What the protocol tells hooks about the session, fixed when it opens.
#[derive(Debug, Clone)]
pub struct HookSession {
    /// The session id.
    pub session_id: String,
    /// The main transcript.
    pub transcript_path: PathBuf,
    /// The workspace root: hooks run there and see it as `cwd`.
    pub cwd: PathBuf,
    /// The session's permission mode, as spelled in config.
    pub permission_mode: String,
    /// Variables removed from every hook command's environment (the caller
    /// lists the sensitive ones it has, by `alcove_tools::EnvPolicy`).
    pub env_remove: Vec<String>,
}

/// Runs configured shell commands at the points of a session.
pub struct CommandHooks {
    config: HookConfig,
    session: HookSession,
    env_add: Vec<(String, String)>,
    events: Arc<dyn EventSink>,
    /// `SessionStart` context, delivered with the first prompt.
    pending_context: Mutex<Vec<String>>,
}

impl CommandHooks {
    /// Hooks of `config` for `session`; warnings go to `events`.
    pub fn new(
        config: HookConfig,
        session: HookSession,
        events: Arc<dyn EventSink>,
    ) -> CommandHooks {
        let root = session.cwd.display().to_string();
        CommandHooks {
            config,
            env_add: vec![
                ("ALCOVE_PROJECT_DIR".to_owned(), root.clone()),
                // Claude Code scripts find their files through this one.
                ("CLAUDE_PROJECT_DIR".to_owned(), root),
            ],
            session,
            events,
            pending_context: Mutex::new(Vec::new()),
        }
    }

    /// Runs the commands of `event` that match `target`, in parallel.
    async fn fire(
        &self,
        event: HookEvent,
        target: &str,
        scope: Option<HookScope<'_>>,
        fields: Value,
    ) -> Vec<HookOutcome> {
        let commands = self.config.matching(event, target);
        if commands.is_empty() {
            return Vec::new();
        }
        let mut payload = Map::new();
        payload.insert("session_id".into(), json!(self.session.session_id));
        payload.insert(
            "transcript_path".into(),
            json!(self.session.transcript_path.display().to_string()),
        );
        payload.insert("cwd".into(), json!(self.session.cwd.display().to_string()));
        payload.insert(
            "permission_mode".into(),
            json!(self.session.permission_mode),
        );
        payload.insert("hook_event_name".into(), json!(event.as_str()));
        if let Some(scope) = scope.filter(|scope| scope.depth > 0) {
            payload.insert("agent_id".into(), json!(scope.agent.as_str()));
            payload.insert("agent_type".into(), json!(scope.agent_type));
        }
        if let Value::Object(fields) = fields {
            payload.extend(fields);
        }
        let stdin = serde_json::to_vec(&Value::Object(payload)).unwrap_or_default();
        let runs = commands.iter().map(|command| {
            let stdin = stdin.clone();
            async move {
                let ran = hook_process::run(Invocation {
                    command: &command.command,
                    cwd: &self.session.cwd,
                    env_remove: &self.session.env_remove,
                    env_add: &self.env_add,
                    stdin,
                    timeout: command.timeout,
                })
                .await;
                interpret(event, &command.command, command.timeout.as_secs_f64(), &ran)
            }
        });
        let outcomes = join_all(runs).await;
        let agent = scope.map_or_else(AgentPath::main, |scope| scope.agent.clone());
        for outcome in &outcomes {
            if let Some(warning) = &outcome.warning {
                self.warn(&agent, warning.clone());
            }
            if let Some(message) = &outcome.system_message {
                self.warn(&agent, format!("{} hook: {message}", event.as_str()));
            }
        }
        outcomes
    }

    fn warn(&self, agent: &AgentPath, message: String) {
        self.events.emit(&AgentEvent {
            agent: agent.clone(),
            kind: EventKind::Warning { message },
        });
    }

    /// Events that cannot block say so when a hook tried.
    fn cannot_block(&self, event: HookEvent, agent: &AgentPath, outcomes: &[HookOutcome]) {
        for reason in outcomes.iter().filter_map(|outcome| outcome.block.as_ref()) {
            self.warn(
                agent,
                format!(
                    "{} hooks cannot block; a hook tried: {reason}",
                    event.as_str()
                ),
            );
        }
    }
}

/// The strictest of several PreToolUse verdicts (deny > ask > allow >
/// continue); the reasons of the winning kind are joined.
pub(crate) fn strictest(verdicts: Vec<PreToolVerdict>) -> PreToolVerdict {
    let rank = |verdict: &PreToolVerdict| match verdict {
        PreToolVerdict::Continue => 0,
        PreToolVerdict::Allow => 1,
        PreToolVerdict::Ask(_) => 2,
        PreToolVerdict::Deny(_) => 3,
    };
    let top = verdicts.iter().map(rank).max().unwrap_or(0);
    let reasons: Vec<&str> = verdicts
        .iter()
        .filter(|verdict| rank(verdict) == top)
        .filter_map(|verdict| match verdict {
            PreToolVerdict::Ask(reason) | PreToolVerdict::Deny(reason) => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    match top {
        3 => PreToolVerdict::Deny(reasons.join("\n")),
        2 => PreToolVerdict::Ask(reasons.join("\n")),
        1 => PreToolVerdict::Allow,
        _ => PreToolVerdict::Continue,
    }
}

fn pre_verdict(outcome: &HookOutcome) -> PreToolVerdict {
    if let Some(reason) = &outcome.stop {
        return PreToolVerdict::Deny(if reason.is_empty() {
            "a PreToolUse hook stopped processing".to_owned()
        } else {
            reason.clone()
        });
    }
    if let Some(reason) = &outcome.block {
        return PreToolVerdict::Deny(reason.clone());
    }
    match &outcome.permission {
        Some(Permission::Deny(reason)) => PreToolVerdict::Deny(reason.clone()),
        Some(Permission::Ask(reason)) => {
            PreToolVerdict::Ask(format!("a PreToolUse hook asks for approval: {reason}"))
        }
        Some(Permission::Allow) => PreToolVerdict::Allow,
        None => PreToolVerdict::Continue,
    }
}

#[async_trait::async_trait]
impl Hooks for CommandHooks {
    async fn session_start(&self) {
        let outcomes = self
            .fire(
                HookEvent::SessionStart,
                "startup",
                None,
                json!({"source": "startup"}),
            )
            .await;
        self.cannot_block(HookEvent::SessionStart, &AgentPath::main(), &outcomes);
        let contexts = outcomes.into_iter().filter_map(|outcome| outcome.context);
        if let Ok(mut pending) = self.pending_context.lock() {
            pending.extend(contexts);
        }
    }

    async fn user_prompt_submit(&self, prompt: &str) -> Result<Option<String>, String> {
        let outcomes = self
            .fire(
                HookEvent::UserPromptSubmit,
                "",
                None,
                json!({"prompt": prompt}),
            )
            .await;
        if let Some(reason) = outcomes.iter().find_map(|outcome| outcome.stop.as_ref()) {
            return Err(if reason.is_empty() {
                "a UserPromptSubmit hook stopped the session".to_owned()
            } else {
                reason.clone()
            });
        }
        let blocks: Vec<&str> = outcomes
            .iter()
            .filter_map(|outcome| outcome.block.as_deref())
            .collect();
        if !blocks.is_empty() {
            return Err(blocks.join("\n"));
        }
        let mut contexts = self
            .pending_context
            .lock()
            .map(|mut pending| std::mem::take(&mut *pending))
            .unwrap_or_default();
        contexts.extend(outcomes.into_iter().filter_map(|outcome| outcome.context));
        Ok((!contexts.is_empty()).then(|| contexts.join("\n\n")))
    }

    async fn pre_tool_use(&self, scope: HookScope<'_>, call: HookCall<'_>) -> PreToolVerdict {
        let fields = json!({
            "tool_name": call.name,
            "tool_input": call.input,
            "tool_use_id": call.id,
        });
        let outcomes = self
            .fire(HookEvent::PreToolUse, call.name, Some(scope), fields)
            .await;
        strictest(outcomes.iter().map(pre_verdict).collect())
    }

    async fn post_tool_use(
        &self,
        scope: HookScope<'_>,
        call: HookCall<'_>,
        output: &ToolOutput,
    ) -> PostToolNote {
        let fields = json!({
            "tool_name": call.name,
            "tool_input": call.input,
            "tool_use_id": call.id,
            "tool_response": {"content": output.content, "is_error": output.is_error},
        });
        let outcomes = self
            .fire(HookEvent::PostToolUse, call.name, Some(scope), fields)
            .await;
        let notes: Vec<String> = outcomes
            .into_iter()
            .flat_map(|outcome| {
                [
                    outcome.block,
                    outcome.stop.filter(|s| !s.is_empty()),
                    outcome.context,
                ]
            })
            .flatten()
            .collect();
        PostToolNote {
            additional_context: (!notes.is_empty()).then(|| notes.join("\n")),
        }
    }

    async fn subagent_start(&self, scope: HookScope<'_>) {
        let target = scope.agent_type.unwrap_or_default();
        let outcomes = self
            .fire(HookEvent::SubagentStart, target, Some(scope), json!({}))
            .await;
        self.cannot_block(HookEvent::SubagentStart, scope.agent, &outcomes);
    }

    async fn stop(&self, scope: HookScope<'_>, last_text: &str, active: bool) -> Option<String> {
        let event = if scope.depth == 0 {
            HookEvent::Stop
        } else {
            HookEvent::SubagentStop
        };
        let fields = json!({
            "stop_hook_active": active,
            "last_assistant_message": last_text,
        });
        let target = scope.agent_type.unwrap_or_default();
        let outcomes = self.fire(event, target, Some(scope), fields).await;
        if outcomes.iter().any(|outcome| outcome.stop.is_some()) {
            return None;
        }
        let blocks: Vec<&str> = outcomes
            .iter()
            .filter_map(|outcome| outcome.block.as_deref())
            .collect();
        (!blocks.is_empty()).then(|| blocks.join("\n"))
    }

    async fn session_end(&self, reason: &str) {
        let outcomes = self
            .fire(
                HookEvent::SessionEnd,
                reason,
                None,
                json!({"reason": reason}),
            )
            .await;
        self.cannot_block(HookEvent::SessionEnd, &AgentPath::main(), &outcomes);
    }

    async fn pre_compact(&self, scope: HookScope<'_>, trigger: &str, instructions: &str) {
        let fields = json!({"trigger": trigger, "custom_instructions": instructions});
        let outcomes = self
            .fire(HookEvent::PreCompact, trigger, Some(scope), fields)
            .await;
        self.cannot_block(HookEvent::PreCompact, scope.agent, &outcomes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strictest_verdict_wins() {
        use PreToolVerdict::*;
        assert_eq!(strictest(vec![]), Continue);
        assert_eq!(strictest(vec![Continue, Allow]), Allow);
        assert_eq!(
            strictest(vec![Allow, Ask("a".into()), Continue]),
            Ask("a".into())
        );
        assert_eq!(
            strictest(vec![
                Deny("x".into()),
                Allow,
                Ask("a".into()),
                Deny("y".into())
            ]),
            Deny("x\ny".into())
        );
    }

    #[test]
    fn outcomes_become_verdicts() {
        let blocked = HookOutcome {
            block: Some("stderr text".into()),
            permission: Some(Permission::Allow),
            ..HookOutcome::default()
        };
        assert_eq!(
            pre_verdict(&blocked),
            PreToolVerdict::Deny("stderr text".into())
        );
        let asked = HookOutcome {
            permission: Some(Permission::Ask("why".into())),
            ..HookOutcome::default()
        };
        assert!(
            matches!(pre_verdict(&asked), PreToolVerdict::Ask(reason) if reason.ends_with("why"))
        );
        let stopped = HookOutcome {
            stop: Some(String::new()),
            ..HookOutcome::default()
        };
        assert!(matches!(pre_verdict(&stopped), PreToolVerdict::Deny(_)));
        assert_eq!(
            pre_verdict(&HookOutcome::default()),
            PreToolVerdict::Continue
        );
    }
}
