//! Slash commands: what the user can ask the UI itself rather than the model.
//!
//! Only `/word` at the start of a prompt is a command, so a prompt that
//! starts with a path (`/etc/hosts: what is this?`) still goes to the model.

use ratatui::text::{Line, Span};

use super::theme::Theme;

/// A parsed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    Help,
    Agents,
    Clear,
    /// `/model`, or `/model provider/name` to switch.
    Model(Option<String>),
    Status,
    Exit,
    /// Something that looks like a command but is none.
    Unknown(String),
}

/// The commands with what they do, for `/help` and completion.
pub(crate) const COMMANDS: &[(&str, &str)] = &[
    ("/help", "this list"),
    ("/agents", "child agents of this session (state, turns, tokens, time) and the agent types"),
    ("/clear", "start a new conversation (this one stays resumable)"),
    ("/model", "show the model; /model provider/name switches for the next turns"),
    ("/status", "model, permission mode, session, tokens used"),
    ("/exit", "leave (Ctrl+C twice or Ctrl+D on an empty prompt also do)"),
];

/// The keys, for `/help`.
const KEYS: &[(&str, &str)] = &[
    ("Enter", "send (while a turn runs: queue)"),
    ("Shift+Enter, Alt+Enter, Ctrl+J, \\Enter", "new line"),
    ("↑ / ↓", "earlier prompts"),
    ("Esc, Ctrl+C", "interrupt the turn (children too); the session stays"),
    ("Ctrl+T", "open a child's live transcript (Tab: next child, Esc: back)"),
    ("y / a / n", "answer an approval: once, always for this session, deny with a reason"),
];

/// The command `input` is, or `None` when it is a prompt.
pub(crate) fn parse(input: &str) -> Option<Command> {
    let trimmed = input.trim();
    let rest = trimmed.strip_prefix('/')?;
    let (word, argument) = match rest.split_once(char::is_whitespace) {
        Some((word, argument)) => (word, argument.trim()),
        None => (rest, ""),
    };
    if word.is_empty() || !word.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return None;
    }
    let command = match word {
        "help" | "?" => Command::Help,
        "agents" => Command::Agents,
        "clear" | "new" => Command::Clear,
        "model" => Command::Model((!argument.is_empty()).then(|| argument.to_owned())),
        "status" => Command::Status,
        "exit" | "quit" => Command::Exit,
        _ => Command::Unknown(format!("/{word}")),
    };
    Some(command)
}

/// The one command `prefix` starts, for Tab completion.
pub(crate) fn complete(prefix: &str) -> Option<&'static str> {
    if !prefix.starts_with('/') || prefix.contains(char::is_whitespace) {
        return None;
    }
    let mut matches = COMMANDS.iter().filter(|(name, _)| name.starts_with(prefix));
    let (first, _) = matches.next()?;
    matches.next().is_none().then_some(*first)
}

/// `/help`.
pub(crate) fn help_lines(theme: Theme) -> Vec<Line<'static>> {
    let mut out = vec![Line::styled("Commands", theme.strong())];
    for (name, what) in COMMANDS {
        out.push(Line::from(vec![
            Span::styled(format!("  {name:<9}"), theme.accent()),
            Span::styled(what.to_string(), theme.text()),
        ]));
    }
    out.push(Line::styled("Keys", theme.strong()));
    for (keys, what) in KEYS {
        out.push(Line::from(vec![
            Span::styled(format!("  {keys}"), theme.accent()),
            Span::styled(format!("  {what}"), theme.dim()),
        ]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_prompts_are_told_apart() {
        assert_eq!(parse("/help"), Some(Command::Help));
        assert_eq!(parse(" /model openai/gpt-5 "), Some(Command::Model(Some("openai/gpt-5".to_owned()))));
        assert_eq!(parse("/model"), Some(Command::Model(None)));
        assert_eq!(parse("/frobnicate now"), Some(Command::Unknown("/frobnicate".to_owned())));
        assert_eq!(parse("/etc/hosts: what is this?"), None);
        assert_eq!(parse("fix /help"), None);
        assert_eq!(complete("/ag"), Some("/agents"));
        assert_eq!(complete("/"), None);
    }
}
