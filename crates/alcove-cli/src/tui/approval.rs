//! Approvals: the permission layer's "ask" decisions as prompts.
//!
//! [`ChannelApprover`] is the session's `Approver`. Each request becomes an
//! [`Ask`] on a channel to the UI loop, which queues them; the asking agent
//! waits on a oneshot reply while every other agent (and the display) goes
//! on. A request whose agent was cancelled drops its reply receiver, and
//! the queue forgets it. "Allow always" adds the gate's suggested rules for
//! the call with `PermissionGate::allow_for_session` (so no agent of the
//! session is asked again) and answers the queued asks they cover.

use std::collections::VecDeque;
use std::sync::Mutex;

use alcove_core::{Approval, ApprovalRequest, Approver, PermissionGate, Rule};
use alcove_tools::Workspace;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::diff::{self, FileDiff};
use super::theme::Theme;
use super::wrap::{text_width, truncate, wrap_line};

/// Diff rows shown in an approval prompt (it must fit 24 rows with the rest).
const DIFF_ROWS: usize = 10;
/// Command rows shown in an approval prompt.
const COMMAND_ROWS: usize = 6;
/// Lines of a summary's further lines (a workflow's plan) shown.
const SUMMARY_ROWS: usize = 10;

/// One approval waiting for the user.
pub(crate) struct Ask {
    pub(crate) request: ApprovalRequest,
    pub(crate) reply: oneshot::Sender<Approval>,
}

/// The rules "allow always" added in this session, as text (for `/agents`
/// and for answering queued asks they cover).
#[derive(Debug, Default)]
pub(crate) struct SessionRules {
    rules: Mutex<Vec<String>>,
}

impl SessionRules {
    /// Whether every one of `rules` was granted (and there is one).
    pub(crate) fn cover(&self, rules: &[Rule]) -> bool {
        !rules.is_empty()
            && self.rules.lock().is_ok_and(|granted| {
                rules
                    .iter()
                    .all(|rule| granted.iter().any(|text| text == rule.text()))
            })
    }

    /// Grants `rules` for the rest of the session, in the gate and here.
    pub(crate) fn grant(&self, rules: &[Rule], gate: Option<&PermissionGate>) {
        if let Some(gate) = gate {
            for rule in rules {
                gate.allow_for_session(rule.clone());
            }
        }
        if let Ok(mut granted) = self.rules.lock() {
            for rule in rules {
                if !granted.iter().any(|text| text == rule.text()) {
                    granted.push(rule.text().to_owned());
                }
            }
        }
    }

    /// The rules, in the order they were added.
    pub(crate) fn list(&self) -> Vec<String> {
        self.rules
            .lock()
            .map(|rules| rules.clone())
            .unwrap_or_default()
    }
}

/// The rules "allow always" would add for `request`, as the gate suggests
/// them (none for a command it cannot take apart safely).
pub(crate) fn rules_for(
    request: &ApprovalRequest,
    gate: &PermissionGate,
    workspace: &Workspace,
) -> Vec<Rule> {
    gate.suggest_rules(&request.tool, &request.input, workspace)
}

/// The session's approver: asks the UI loop through a channel.
pub(crate) struct ChannelApprover {
    asks: mpsc::UnboundedSender<Ask>,
}

impl ChannelApprover {
    /// An approver sending its questions to `asks`. Unbounded because an
    /// ask is one small message per waiting tool call, and a bounded channel
    /// would make a child block on another's unanswered question.
    pub(crate) fn new(asks: mpsc::UnboundedSender<Ask>) -> ChannelApprover {
        ChannelApprover { asks }
    }
}

#[async_trait::async_trait]
impl Approver for ChannelApprover {
    async fn approve(&self, request: ApprovalRequest) -> Approval {
        let (reply, answer) = oneshot::channel();
        if self.asks.send(Ask { request, reply }).is_err() {
            return Approval::Deny(None);
        }
        answer.await.unwrap_or(Approval::Deny(None))
    }
}

/// An ask with what the prompt shows.
pub(crate) struct Pending {
    pub(crate) ask: Ask,
    pub(crate) diff: Option<FileDiff>,
    /// What "allow always" grants; empty when it is not offered.
    pub(crate) rules: Vec<Rule>,
}

/// The asks waiting for the user, oldest first; the first one is shown.
#[derive(Default)]
pub(crate) struct ApprovalQueue {
    items: VecDeque<Pending>,
    /// 0 allow once, 1 allow always, 2 deny.
    selected: usize,
    /// The deny reason being typed, once "deny" was chosen.
    reason: Option<String>,
}

impl ApprovalQueue {
    /// Queues an ask.
    pub(crate) fn push(&mut self, ask: Ask, gate: &PermissionGate, workspace: &Workspace) {
        let diff = diff::for_tool(&ask.request.tool, &ask.request.input, workspace.root());
        let rules = rules_for(&ask.request, gate, workspace);
        self.items.push_back(Pending { ask, diff, rules });
    }

    /// Forgets asks nobody waits for any more (their agent was cancelled).
    pub(crate) fn prune(&mut self) {
        let before = self.items.front().map(|pending| pending as *const Pending);
        self.items.retain(|pending| !pending.ask.reply.is_closed());
        if self.items.front().map(|pending| pending as *const Pending) != before {
            self.selected = 0;
            self.reason = None;
        }
    }

    /// How many asks wait.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether none waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Whether a deny reason is being typed.
    pub(crate) fn typing_reason(&self) -> bool {
        self.reason.is_some()
    }

    /// Answers the first ask. "Allow always" also adds its rule and answers
    /// every other queued ask the rule allows.
    pub(crate) fn answer(
        &mut self,
        approval: Approval,
        rules: &SessionRules,
        gate: Option<&PermissionGate>,
    ) {
        let Some(pending) = self.items.pop_front() else {
            return;
        };
        self.selected = 0;
        self.reason = None;
        if approval == Approval::AllowAlways && !pending.rules.is_empty() {
            rules.grant(&pending.rules, gate);
            let (allowed, rest): (VecDeque<Pending>, VecDeque<Pending>) =
                std::mem::take(&mut self.items)
                    .into_iter()
                    .partition(|other| rules.cover(&other.rules));
            self.items = rest;
            for other in allowed {
                let _ = other.ask.reply.send(Approval::AllowOnce);
            }
        }
        let _ = pending.ask.reply.send(approval);
    }

    /// Handles a key meant for the prompt; returns the answer it gives.
    pub(crate) fn on_key(&mut self, key: KeyEvent) -> Option<Approval> {
        let has_rule = self
            .items
            .front()
            .is_some_and(|pending| !pending.rules.is_empty());
        if let Some(reason) = &mut self.reason {
            match key.code {
                KeyCode::Enter => {
                    let text = reason.trim().to_owned();
                    return Some(Approval::Deny((!text.is_empty()).then_some(text)));
                }
                KeyCode::Esc => self.reason = None,
                KeyCode::Backspace => {
                    reason.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    reason.push(c)
                }
                _ => {}
            }
            return None;
        }
        let choice = match key.code {
            KeyCode::Char('y' | '1') => Some(0),
            KeyCode::Char('a' | '2') if has_rule => Some(1),
            KeyCode::Char('n' | '3') => Some(2),
            KeyCode::Enter => Some(self.selected),
            KeyCode::Left | KeyCode::Up | KeyCode::BackTab => {
                self.selected = self.step(has_rule, false);
                None
            }
            KeyCode::Right | KeyCode::Down | KeyCode::Tab => {
                self.selected = self.step(has_rule, true);
                None
            }
            _ => None,
        };
        match choice? {
            0 => Some(Approval::AllowOnce),
            1 => Some(Approval::AllowAlways),
            _ => {
                self.reason = Some(String::new());
                None
            }
        }
    }

    /// Adds pasted text to the deny reason being typed.
    pub(crate) fn paste(&mut self, text: &str) {
        if let Some(reason) = &mut self.reason {
            reason.push_str(&text.replace(['\r', '\n'], " "));
        }
    }

    fn step(&self, has_rule: bool, forward: bool) -> usize {
        let choices: &[usize] = if has_rule { &[0, 1, 2] } else { &[0, 2] };
        let at = choices
            .iter()
            .position(|c| *c == self.selected)
            .unwrap_or(0);
        let next = if forward {
            (at + 1) % choices.len()
        } else {
            (at + choices.len() - 1) % choices.len()
        };
        choices[next]
    }

    /// The prompt for the first ask, or nothing.
    pub(crate) fn lines(&self, width: usize, theme: Theme) -> Vec<Line<'static>> {
        let Some(pending) = self.items.front() else {
            return Vec::new();
        };
        let request = &pending.ask.request;
        let mut out = vec![Line::styled("─".repeat(width), theme.warn())];
        let who = match &request.agent_description {
            Some(description) => format!("{} ({description})", request.agent),
            None => request.agent.to_string(),
        };
        let count = if self.items.len() > 1 {
            format!("1 of {}", self.items.len())
        } else {
            String::new()
        };
        let in_background = request.input.get("run_in_background") == Some(&Value::Bool(true));
        let verb = match request.tool.as_str() {
            "Bash" if in_background => "run a command in the background".to_owned(),
            "Bash" => "run a command".to_owned(),
            "Edit" | "Write" => format!("{} a file", request.tool.to_lowercase()),
            other => format!("use {other}"),
        };
        let head = format!("? {who} wants to {verb}");
        let head = truncate(&head, width.saturating_sub(text_width(&count) + 1));
        let pad = width.saturating_sub(text_width(&head) + text_width(&count));
        out.push(Line::from(vec![
            Span::styled(
                head,
                theme.warn().add_modifier(ratatui::style::Modifier::BOLD),
            ),
            Span::raw(" ".repeat(pad)),
            Span::styled(count, theme.dim()),
        ]));
        match request.input.get("command").and_then(Value::as_str) {
            Some(command) if request.tool == "Bash" => {
                let lines: Vec<&str> = command.lines().collect();
                for (idx, line) in lines.iter().take(COMMAND_ROWS).enumerate() {
                    let lead = if idx == 0 { "  $ " } else { "    " };
                    out.extend(wrap_line(
                        &Line::styled(format!("{lead}{line}"), theme.strong()),
                        width,
                        "    ",
                    ));
                }
                if lines.len() > COMMAND_ROWS {
                    out.push(Line::styled(
                        format!("    … +{} lines", lines.len() - COMMAND_ROWS),
                        theme.dim(),
                    ));
                }
            }
            _ => {
                let mut lines = request.summary.lines();
                out.push(Line::styled(
                    format!(
                        "  {}: {}",
                        request.tool,
                        truncate(
                            lines.next().unwrap_or_default(),
                            width.saturating_sub(4 + request.tool.len())
                        )
                    ),
                    theme.strong(),
                ));
                // A summary of several lines (a workflow's plan) is shown whole, bounded.
                let rest: Vec<&str> = lines.collect();
                for line in rest.iter().take(SUMMARY_ROWS) {
                    out.extend(wrap_line(
                        &Line::styled(format!("    {line}"), theme.text()),
                        width,
                        "      ",
                    ));
                }
                if rest.len() > SUMMARY_ROWS {
                    out.push(Line::styled(
                        format!("    … +{} lines", rest.len() - SUMMARY_ROWS),
                        theme.dim(),
                    ));
                }
            }
        }
        if let Some(diff) = &pending.diff {
            out.extend(diff::render(diff, width, DIFF_ROWS, theme));
        }
        out.extend(wrap_line(
            &Line::styled(format!("  {}", request.reason), theme.dim()),
            width,
            "  ",
        ));
        if let Some(reason) = &self.reason {
            out.push(Line::from(vec![
                Span::styled(
                    "  Deny. Reason for the model (Enter sends, empty for none, Esc back): ",
                    theme.dim(),
                ),
                Span::styled(reason.clone(), theme.text()),
                Span::styled("▏", theme.accent()),
            ]));
            return out;
        }
        let mut choices = vec![Span::raw("  ")];
        let mut option = |idx: usize, label: String| {
            let style = if self.selected == idx {
                theme.selected()
            } else {
                theme.text()
            };
            choices.push(Span::styled(label, style));
            choices.push(Span::raw("   "));
        };
        option(0, "[y] allow once".to_owned());
        if !pending.rules.is_empty() {
            let texts: Vec<&str> = pending.rules.iter().map(Rule::text).collect();
            option(1, format!("[a] always: {}", texts.join(", ")));
        }
        option(2, "[n] deny…".to_owned());
        out.extend(wrap_line(&Line::from(choices), width, "  "));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alcove_core::PermissionMode;
    use alcove_protocol::AgentPath;
    use serde_json::json;
    use std::sync::Arc;

    fn request(command: &str) -> ApprovalRequest {
        ApprovalRequest {
            agent: AgentPath::main().child("agent-1"),
            agent_description: Some("run tests".to_owned()),
            tool: "Bash".to_owned(),
            summary: command.to_owned(),
            input: json!({"command": command}),
            reason: "needs approval".to_owned(),
        }
    }

    #[tokio::test]
    async fn asks_queue_and_always_grants_the_gate_rule_and_answers_what_it_covers() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let gate = PermissionGate::new(PermissionMode::Default);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let approver = Arc::new(ChannelApprover::new(tx));
        let rules = SessionRules::default();
        let mut queue = ApprovalQueue::default();
        let mut waiting = Vec::new();
        for command in ["cargo test", "make", "cargo test --doc"] {
            let approver = approver.clone();
            waiting.push(tokio::spawn(async move {
                approver.approve(request(command)).await
            }));
            queue.push(rx.recv().await.unwrap(), &gate, &workspace);
        }
        assert_eq!(queue.len(), 3);
        assert_eq!(
            queue.on_key(KeyEvent::from(KeyCode::Char('a'))),
            Some(Approval::AllowAlways)
        );
        queue.answer(Approval::AllowAlways, &rules, Some(&gate));
        assert_eq!(rules.list(), vec!["Bash(cargo test:*)".to_owned()]);
        assert_eq!(
            queue.len(),
            1,
            "the other cargo test ask was answered by the rule"
        );
        assert_eq!(queue.on_key(KeyEvent::from(KeyCode::Char('n'))), None);
        assert!(queue.typing_reason());
        for c in "nope".chars() {
            queue.on_key(KeyEvent::from(KeyCode::Char(c)));
        }
        let deny = queue.on_key(KeyEvent::from(KeyCode::Enter)).unwrap();
        queue.answer(deny, &rules, Some(&gate));
        let answers: Vec<Approval> = futures::future::join_all(waiting)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            answers,
            vec![
                Approval::AllowAlways,
                Approval::Deny(Some("nope".to_owned())),
                Approval::AllowOnce
            ]
        );
        let suggested = rules_for(&request("cargo test -q"), &gate, &workspace);
        assert!(rules.cover(&suggested));
    }

    #[tokio::test]
    async fn an_ask_whose_agent_gave_up_is_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let gate = PermissionGate::new(PermissionMode::Default);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let approver = Arc::new(ChannelApprover::new(tx));
        let task = tokio::spawn(async move { approver.approve(request("sleep 1")).await });
        let mut queue = ApprovalQueue::default();
        queue.push(rx.recv().await.unwrap(), &gate, &workspace);
        task.abort();
        let _ = task.await;
        queue.prune();
        assert!(queue.is_empty());
    }
}
