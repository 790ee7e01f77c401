//! Slash commands: what the user can ask the UI itself rather than the model.
//!
//! Only `/word` at the start of a prompt is a command, so a prompt that
//! starts with a path (`/etc/hosts: what is this?`) still goes to the model.

use std::time::Instant;

use ratatui::text::{Line, Span};

use super::app::App;
use super::cells::format_tokens;
use super::theme::Theme;
use super::wrap::wrap_line;

/// A parsed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    Help,
    Agents,
    Clear,
    /// `/model`, or `/model provider/name` to switch.
    Model(Option<String>),
    Status,
    /// `/memory`: the memory file and its path.
    Memory,
    /// `/init [focus]`: write or update AGENTS.md (a prompt for the model).
    Init,
    /// `/compact`, or `/compact focus` to say what the summary should keep.
    Compact(Option<String>),
    /// `/mcp`: the MCP servers, live.
    Mcp,
    /// `/permissions`: the mode and the rules this session added.
    Permissions,
    /// `/resume`: how to continue another session.
    Resume,
    Exit,
    /// Something that looks like a command but is none.
    Unknown(String),
}

/// The commands with what they do, for `/help` and completion.
pub(crate) const COMMANDS: &[(&str, &str)] = &[
    ("/help", "this list"),
    (
        "/agents",
        "child agents of this session (state, turns, tokens, time) and the agent types",
    ),
    (
        "/clear",
        "start a new conversation (this one stays resumable)",
    ),
    (
        "/model",
        "show the model; /model provider/name switches for the next turns",
    ),
    ("/status", "model, permission mode, session, tokens used"),
    ("/cost", "tokens and cost so far (as /status)"),
    (
        "/permissions",
        "the permission mode and the rules allowed for this session",
    ),
    ("/resume", "how to continue another session"),
    (
        "/mcp",
        "MCP servers: state, tools, where each is configured",
    ),
    (
        "/memory",
        "the agent's memory file (.agents/memory/MEMORY.md); `# text` adds a line to it",
    ),
    (
        "/init",
        "explore the repository (through a child) and write or update AGENTS.md",
    ),
    (
        "/compact",
        "compact the conversation now; /compact <focus> says what the summary must keep",
    ),
    (
        "/exit",
        "leave (Ctrl+C twice or Ctrl+D on an empty prompt also do)",
    ),
];

/// The keys, for `/help`.
const KEYS: &[(&str, &str)] = &[
    ("Enter", "send (while a turn runs: queue)"),
    ("Shift+Enter, Alt+Enter, Ctrl+J, \\Enter", "new line"),
    ("↑ / ↓", "earlier prompts"),
    (
        "Esc, Ctrl+C",
        "interrupt the turn (children too); the session stays",
    ),
    (
        "Ctrl+T",
        "open a child's live transcript (Tab: next child, x: stop it, Esc: back)",
    ),
    (
        "y / a / n",
        "answer an approval: once, always for this session, deny with a reason",
    ),
];

/// The command `input` is, or `None` when it is a prompt.
pub(crate) fn parse(input: &str) -> Option<Command> {
    let trimmed = input.trim();
    let rest = trimmed.strip_prefix('/')?;
    let (word, argument) = match rest.split_once(char::is_whitespace) {
        Some((word, argument)) => (word, argument.trim()),
        None => (rest, ""),
    };
    if word.is_empty()
        || !word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return None;
    }
    let command = match word {
        "help" | "?" => Command::Help,
        "agents" => Command::Agents,
        "clear" | "new" => Command::Clear,
        "model" => Command::Model((!argument.is_empty()).then(|| argument.to_owned())),
        "status" | "cost" => Command::Status,
        "permissions" => Command::Permissions,
        "resume" | "continue" => Command::Resume,
        "memory" => Command::Memory,
        "init" => Command::Init,
        "compact" => Command::Compact((!argument.is_empty()).then(|| argument.to_owned())),
        "mcp" => Command::Mcp,
        "exit" | "quit" => Command::Exit,
        _ => Command::Unknown(format!("/{word}")),
    };
    Some(command)
}

/// The one command `prefix` starts, for Tab completion: the UI's own, or
/// one of `custom` (custom commands and skills, `/name`).
pub(crate) fn complete(prefix: &str, custom: &[(String, String)]) -> Option<String> {
    if !prefix.starts_with('/') || prefix.contains(char::is_whitespace) {
        return None;
    }
    let mut matches = COMMANDS
        .iter()
        .map(|(name, _)| *name)
        .chain(custom.iter().map(|(name, _)| name.as_str()))
        .filter(|name| name.starts_with(prefix));
    let first = matches.next()?;
    matches.next().is_none().then(|| first.to_owned())
}

/// A `# text` line: text to append to the memory file.
pub(crate) fn memory_note(input: &str) -> Option<&str> {
    let note = input.trim().strip_prefix('#')?.trim();
    (!note.is_empty() && !input.trim().contains('\n')).then_some(note)
}

/// `/memory`: where the file is and what it says.
pub(crate) fn memory_lines(
    path: &std::path::Path,
    text: &str,
    width: usize,
    theme: Theme,
) -> Vec<Line<'static>> {
    let mut out = vec![Line::from(vec![
        Span::styled("Agent memory ", theme.strong()),
        Span::styled(path.display().to_string(), theme.dim()),
    ])];
    if text.trim().is_empty() {
        out.push(Line::styled(
            "  (empty; type `# something to remember` to add a line)",
            theme.dim(),
        ));
    }
    for line in text.lines() {
        let line = Line::styled(format!("  {line}"), theme.text());
        out.extend(wrap_line(&line, width, "  "));
    }
    out
}

/// `/help`, `width` columns wide, with the custom commands and skills.
pub(crate) fn help_lines(
    width: usize,
    theme: Theme,
    custom: &[(String, String)],
) -> Vec<Line<'static>> {
    let mut out = vec![Line::styled("Commands", theme.strong())];
    for (name, what) in COMMANDS {
        let line = Line::from(vec![
            Span::styled(format!("  {name:<9}"), theme.accent()),
            Span::styled(what.to_string(), theme.text()),
        ]);
        out.extend(wrap_line(&line, width, &" ".repeat(11)));
    }
    if !custom.is_empty() {
        out.push(Line::styled("Custom commands and skills", theme.strong()));
    }
    for (name, what) in custom {
        let line = Line::from(vec![
            Span::styled(format!("  {name} "), theme.accent()),
            Span::styled(what.clone(), theme.text()),
        ]);
        out.extend(wrap_line(&line, width, "    "));
    }
    out.push(Line::styled("Keys", theme.strong()));
    for (keys, what) in KEYS {
        let line = Line::from(vec![
            Span::styled(format!("  {keys}"), theme.accent()),
            Span::styled(format!("  {what}"), theme.dim()),
        ]);
        out.extend(wrap_line(&line, width, "    "));
    }
    out
}

/// `/agents`: every child of the session, then the agent types.
pub(crate) fn agents_lines(app: &App, now: Instant) -> Vec<Line<'static>> {
    let theme = app.theme;
    let width = usize::from(app.width);
    let mut out = vec![Line::styled("Child agents of this session", theme.strong())];
    let order = app.panel.tree_order(false);
    if order.is_empty() {
        out.push(Line::styled("  none yet", theme.dim()));
    }
    out.extend(app.panel.rows(&order, width, theme, now));
    out.push(Line::styled(
        "Agent types (the Agent tool's subagent_type)",
        theme.strong(),
    ));
    for (name, description) in &app.facts.definitions {
        let line = Line::from(vec![
            Span::styled(format!("  {name:<16} "), theme.accent()),
            Span::styled(description.clone(), theme.dim()),
        ]);
        out.extend(wrap_line(&line, width, &" ".repeat(19)));
    }
    let rules = app.rules.list();
    if !rules.is_empty() {
        out.push(Line::from(vec![
            Span::styled("Allowed for this session: ", theme.strong()),
            Span::styled(rules.join(", "), theme.text()),
        ]));
    }
    out
}

/// `/status`.
/// `/mcp`: each server's state and tools, as `alcove mcp list` prints them.
pub(crate) fn mcp_lines(app: &App) -> Vec<Line<'static>> {
    let theme = app.theme;
    let mut out = vec![Line::styled("MCP servers", theme.strong())];
    let lines = app
        .facts
        .mcp
        .as_ref()
        .map(|manager| crate::mcp_cmd::status_lines(manager))
        .unwrap_or_default();
    if lines.is_empty() {
        out.push(Line::styled(
            "  none configured (.mcp.json, .alcove/mcp.json or [mcp_servers.<name>] in config.toml)",
            theme.dim(),
        ));
    }
    for line in lines {
        out.push(Line::styled(format!("  {line}"), theme.text()));
    }
    out
}

pub(crate) fn status_lines(app: &App) -> Vec<Line<'static>> {
    let theme = app.theme;
    let row = |label: &str, value: String| {
        Line::from(vec![
            Span::styled(format!("  {label:<11}"), theme.dim()),
            Span::styled(value, theme.text()),
        ])
    };
    let children = app.panel.children.len();
    let mut lines = vec![
        Line::styled("Status", theme.strong()),
        row("model", app.facts.model.clone()),
        row("mode", app.facts.mode.clone()),
        row("session", app.facts.id.clone()),
        row("workspace", app.facts.workspace.display().to_string()),
        row(
            "tokens",
            format!(
                "{} ({} in · {} cache read · {} cache write · {} out; all agents, {children} children)",
                format_tokens(app.usage.budget_tokens()),
                format_tokens(app.usage.input_tokens),
                format_tokens(app.usage.cache_read_tokens),
                format_tokens(app.usage.cache_write_tokens),
                format_tokens(app.usage.output_tokens)
            ),
        ),
        row(
            "context",
            match app.context {
                Some((used, window)) => format!(
                    "{} of {} tokens · window from {}",
                    format_tokens(used),
                    format_tokens(window),
                    app.facts.window_source
                ),
                None => format!(
                    "{} tokens · window from {}",
                    format_tokens(app.facts.window),
                    app.facts.window_source
                ),
            },
        ),
        row(
            "cost",
            match &app.facts.price {
                Some(price) => format!("${:.4}", price.cost(&app.usage)),
                None => {
                    "no price for this model ([pricing.\"provider/model\"] in config)".to_owned()
                }
            },
        ),
        row("turns", app.main_turns.to_string()),
        row(
            "transcript",
            app.facts.transcript.clone().unwrap_or_default(),
        ),
    ];
    if let Some(tree) = &app.facts.tree {
        lines.push(row("tree", tree.describe()));
    }
    lines.push(row(
        "background",
        if app.background.is_empty() {
            "none running".to_owned()
        } else {
            let each: Vec<String> = app
                .background
                .iter()
                .map(|(id, command)| format!("{id} {command}"))
                .collect();
            format!("{} running: {}", app.background.len(), each.join(" · "))
        },
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_prompts_are_told_apart() {
        assert_eq!(parse("/help"), Some(Command::Help));
        assert_eq!(
            parse(" /model openai/gpt-5 "),
            Some(Command::Model(Some("openai/gpt-5".to_owned())))
        );
        assert_eq!(parse("/model"), Some(Command::Model(None)));
        assert_eq!(
            parse("/frobnicate now"),
            Some(Command::Unknown("/frobnicate".to_owned()))
        );
        assert_eq!(parse("/etc/hosts: what is this?"), None);
        assert_eq!(parse("fix /help"), None);
        assert_eq!(complete("/ag", &[]), Some("/agents".to_owned()));
        assert_eq!(complete("/", &[]), None);
        let custom = [("/review-pr".to_owned(), "Review a PR".to_owned())];
        assert_eq!(complete("/rev", &custom), Some("/review-pr".to_owned()));
        assert_eq!(complete("/m", &custom), None, "/model and /memory");
        assert_eq!(parse("/memory"), Some(Command::Memory));
        assert_eq!(
            memory_note("# use cargo nextest "),
            Some("use cargo nextest")
        );
        assert_eq!(memory_note("#"), None);
        assert_eq!(memory_note("# title\nbody"), None);
        assert_eq!(memory_note("not # a note"), None);
    }
}
