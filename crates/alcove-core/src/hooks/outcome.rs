//! Reading what a hook command said, per the Claude Code protocol.
//!
//! - exit 0: stdout is parsed as JSON when it is JSON — `continue`,
//!   `stopReason`, `systemMessage`, `decision` (`block` / `approve`),
//!   `reason`, `hookSpecificOutput.permissionDecision` (`allow` / `deny` /
//!   `ask`), `permissionDecisionReason`, `additionalContext` (inside
//!   `hookSpecificOutput` or at the top level). Plain stdout is context for
//!   `SessionStart` and `UserPromptSubmit`, and ignored otherwise.
//! - exit 2: a block; stderr is the reason the model reads.
//! - anything else (another status, a signal, a timeout, a failed start): a
//!   warning for the user, never a block.

use serde_json::Value;

use super::hook_process::{Exit, Ran};
use super::settings::HookEvent;

/// A hook's opinion on a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Permission {
    Allow,
    Ask(String),
    Deny(String),
}

/// What one hook command said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HookOutcome {
    /// Exit 2 (stderr) or `decision: "block"` (its `reason`).
    pub(crate) block: Option<String>,
    /// `continue: false`, with its `stopReason`.
    pub(crate) stop: Option<String>,
    /// `hookSpecificOutput.permissionDecision`, or the legacy `decision`
    /// `approve` (PreToolUse only).
    pub(crate) permission: Option<Permission>,
    /// Text for the model: `additionalContext`, or plain stdout where that
    /// counts as context.
    pub(crate) context: Option<String>,
    /// `systemMessage`: shown to the user.
    pub(crate) system_message: Option<String>,
    /// Why the hook did not work (shown to the user; never a block).
    pub(crate) warning: Option<String>,
}

/// Interprets a finished command run for `event`.
pub(crate) fn interpret(
    event: HookEvent,
    command: &str,
    timeout_secs: f64,
    ran: &Ran,
) -> HookOutcome {
    let name = event.as_str();
    let mut outcome = HookOutcome::default();
    match &ran.exit {
        Exit::Code(0) => read_stdout(event, command, &ran.stdout, &mut outcome),
        Exit::Code(2) => {
            let stderr = ran.stderr.trim();
            outcome.block = Some(if stderr.is_empty() {
                format!("{name} hook `{}` exited with status 2", short(command))
            } else {
                stderr.to_owned()
            });
        }
        Exit::Code(code) => {
            outcome.warning = Some(with_stderr(
                format!("{name} hook `{}` failed with status {code}", short(command)),
                &ran.stderr,
            ));
        }
        Exit::Signal => {
            outcome.warning = Some(with_stderr(
                format!("{name} hook `{}` was killed by a signal", short(command)),
                &ran.stderr,
            ));
        }
        Exit::TimedOut => {
            outcome.warning = Some(format!(
                "{name} hook `{}` timed out after {timeout_secs}s; it and its process group were killed",
                short(command)
            ));
        }
        Exit::NotStarted(reason) => {
            outcome.warning = Some(format!(
                "{name} hook `{}` could not be run: {reason}",
                short(command)
            ));
        }
    }
    outcome
}

fn read_stdout(event: HookEvent, command: &str, stdout: &str, outcome: &mut HookOutcome) {
    let text = stdout.trim();
    if text.starts_with('{') {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(object)) => {
                read_json(event, &Value::Object(object), outcome);
                return;
            }
            _ => {
                outcome.warning = Some(format!(
                    "{} hook `{}` printed output that starts like JSON but does not parse; it was ignored",
                    event.as_str(),
                    short(command)
                ));
                return;
            }
        }
    }
    let plain_is_context = matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit);
    if plain_is_context && !text.is_empty() {
        outcome.context = Some(text.to_owned());
    }
}

fn read_json(event: HookEvent, json: &Value, outcome: &mut HookOutcome) {
    let text = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    if json.get("continue") == Some(&Value::Bool(false)) {
        outcome.stop = Some(text(json, "stopReason").unwrap_or_default());
    }
    outcome.system_message = text(json, "systemMessage");
    let reason = text(json, "reason");
    let specific = json.get("hookSpecificOutput").cloned().unwrap_or_default();
    match json.get("decision").and_then(Value::as_str) {
        Some("block") => {
            outcome.block =
                Some(reason.clone().unwrap_or_else(|| {
                    format!("{} hook blocked without a reason", event.as_str())
                }));
        }
        Some("approve") if event == HookEvent::PreToolUse => {
            outcome.permission = Some(Permission::Allow);
        }
        _ => {}
    }
    let decision_reason = text(&specific, "permissionDecisionReason").or(reason);
    let because = |what: &str| match &decision_reason {
        Some(reason) => reason.clone(),
        None => format!("a PreToolUse hook decided `{what}` without a reason"),
    };
    if event == HookEvent::PreToolUse {
        match specific.get("permissionDecision").and_then(Value::as_str) {
            Some("allow") => outcome.permission = Some(Permission::Allow),
            Some("ask") => outcome.permission = Some(Permission::Ask(because("ask"))),
            Some("deny") => outcome.permission = Some(Permission::Deny(because("deny"))),
            _ => {}
        }
    }
    outcome.context =
        text(&specific, "additionalContext").or_else(|| text(json, "additionalContext"));
}

fn with_stderr(message: String, stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        return message;
    }
    let cut: String = stderr.chars().take(500).collect();
    format!("{message}: {cut}")
}

/// The command as named in messages: its first line, at most 80 characters.
pub(crate) fn short(command: &str) -> String {
    let line = command.lines().next().unwrap_or_default();
    if line.chars().count() <= 80 && !command.contains('\n') {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(80).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(code: i32, stdout: &str, stderr: &str) -> Ran {
        Ran {
            exit: Exit::Code(code),
            stdout: stdout.to_owned(),
            stderr: stderr.to_owned(),
        }
    }

    fn pre(code: i32, stdout: &str, stderr: &str) -> HookOutcome {
        interpret(
            HookEvent::PreToolUse,
            "check.sh",
            60.0,
            &ran(code, stdout, stderr),
        )
    }

    #[test]
    fn exit_two_blocks_with_stderr() {
        let outcome = pre(2, "ignored", "  no rm please \n");
        assert_eq!(outcome.block.as_deref(), Some("no rm please"));
        assert_eq!(outcome.permission, None);
        assert!(
            pre(2, "", "")
                .block
                .unwrap()
                .contains("exited with status 2")
        );
    }

    #[test]
    fn other_statuses_warn_and_never_block() {
        let outcome = pre(1, "", "boom");
        assert_eq!(outcome.block, None);
        let warning = outcome.warning.unwrap();
        assert!(
            warning.contains("status 1") && warning.contains("boom"),
            "{warning}"
        );
        let timed_out = interpret(
            HookEvent::Stop,
            "sleep 9",
            1.5,
            &Ran {
                exit: Exit::TimedOut,
                stdout: String::new(),
                stderr: String::new(),
            },
        );
        assert!(timed_out.warning.unwrap().contains("timed out after 1.5s"));
    }

    #[test]
    fn permission_decisions_and_reasons() {
        let deny = pre(
            0,
            r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not on main"}}"#,
            "",
        );
        assert_eq!(
            deny.permission,
            Some(Permission::Deny("not on main".to_owned()))
        );
        let ask = pre(
            0,
            r#"{"hookSpecificOutput": {"permissionDecision": "ask"}}"#,
            "",
        );
        assert!(matches!(ask.permission, Some(Permission::Ask(_))));
        let allow = pre(
            0,
            r#"{"hookSpecificOutput": {"permissionDecision": "allow"}}"#,
            "",
        );
        assert_eq!(allow.permission, Some(Permission::Allow));
        let legacy = pre(0, r#"{"decision": "approve"}"#, "");
        assert_eq!(legacy.permission, Some(Permission::Allow));
        let legacy_block = pre(0, r#"{"decision": "block", "reason": "nope"}"#, "");
        assert_eq!(legacy_block.block.as_deref(), Some("nope"));
    }

    #[test]
    fn common_fields_and_context() {
        let outcome = interpret(
            HookEvent::PostToolUse,
            "x",
            60.0,
            &ran(
                0,
                r#"{"continue": false, "stopReason": "enough", "systemMessage": "hi user",
                   "hookSpecificOutput": {"additionalContext": "lint: 2 warnings"}}"#,
                "",
            ),
        );
        assert_eq!(outcome.stop.as_deref(), Some("enough"));
        assert_eq!(outcome.system_message.as_deref(), Some("hi user"));
        assert_eq!(outcome.context.as_deref(), Some("lint: 2 warnings"));
        let top_level = interpret(
            HookEvent::PostToolUse,
            "x",
            60.0,
            &ran(0, r#"{"additionalContext": "flat"}"#, ""),
        );
        assert_eq!(top_level.context.as_deref(), Some("flat"));
    }

    #[test]
    fn plain_stdout_is_context_only_where_claude_code_reads_it() {
        let prompt = interpret(
            HookEvent::UserPromptSubmit,
            "x",
            60.0,
            &ran(0, "today is Monday\n", ""),
        );
        assert_eq!(prompt.context.as_deref(), Some("today is Monday"));
        assert_eq!(pre(0, "just chatter", ""), HookOutcome::default());
        let broken = pre(0, "{not json", "");
        assert!(broken.warning.unwrap().contains("does not parse"));
    }

    #[test]
    fn long_commands_are_shortened() {
        assert_eq!(short("a.sh"), "a.sh");
        assert!(short(&"x".repeat(200)).ends_with('…'));
        assert_eq!(short("one\ntwo"), "one…");
    }
}
