//! `/init`, saved workflows' `/<name>` and the other `/word` prompts that
//! are not the UI's own commands:
//! what a prompt becomes before it reaches the model, the same in `exec`,
//! the inline UI and the plain front end.
//!
//! `/init` explores the repository through an `explore` child (so the
//! parent's context stays small: only the child's report enters it) and
//! writes or updates `AGENTS.md`. The write goes through the gate like any
//! other, so in the default mode the user is asked — with the diff — before
//! the file is created or overwritten.

use alcove_core::{Expansion, Runtime, expand};
use alcove_protocol::{AgentPath, EventKind};

use crate::session::Session;

/// What `/init` asks the main agent to do.
pub(crate) const INIT_PROMPT: &str = "\
Create or update AGENTS.md, the instructions file for coding agents in this repository (alcove's /init).

1. Do not explore the repository yourself. Call the Agent tool once with subagent_type \"explore\" and a \
self-contained prompt asking it to report, with file:line evidence: the exact commands to build, test, lint \
and run the project; the layout (the main folders and what each holds); and the conventions (language and \
edition, style and naming, where tests live, error handling, anything unusual).
2. If AGENTS.md exists, Read it first and update it: keep what is still true and everything the user wrote, \
fix what is wrong, add what is missing. Never drop the user's content.
3. Write AGENTS.md: short and concrete, with the sections \"Build and test\", \"Layout\" and \"Conventions\"; \
no generic advice. The user is asked before the file is written.
4. Answer with one or two sentences saying what you wrote.";

/// `input` as the model should receive it: `/init`, a custom command or a
/// skill run expanded, or `None` when it is an ordinary prompt.
pub(crate) fn expand_prompt(session: &Session, input: &str) -> Option<Expansion> {
    let trimmed = input.trim();
    let word = trimmed.split_whitespace().next().unwrap_or_default();
    if word == "/init" {
        let extra = trimmed["/init".len()..].trim();
        let mut prompt = INIT_PROMPT.to_owned();
        if !extra.is_empty() {
            prompt.push_str(&format!("\n\nThe user adds: {extra}"));
        }
        return Some(Expansion {
            prompt,
            model: None,
        });
    }
    expand(input, &session.commands, &session.skills)
        .or_else(|| workflow_command(&session.workflows, trimmed))
}

/// `/<name> [args]` for a saved workflow (after custom commands and
/// skills of the same name): a turn asking the main agent to run it through
/// its `Workflow` tool — so the gate, the plan's approval and every
/// child's life are the tool's — and to wait for its result. The text
/// after the name is the script's `args`: JSON when it parses as JSON, else
/// the text as a string. `folders` are those the folder's trust allows.
pub(crate) fn workflow_command(folders: &[std::path::PathBuf], input: &str) -> Option<Expansion> {
    let rest = input.strip_prefix('/')?;
    let (name, text) = match rest.split_once(char::is_whitespace) {
        Some((name, text)) => (name, text.trim()),
        None => (rest, ""),
    };
    if name.is_empty() || folders.is_empty() {
        return None;
    }
    let (_, workflow) = crate::workflow_host::saved_workflow(folders, name)?;
    let mut call = serde_json::json!({ "name": name });
    if !text.is_empty() {
        call["args"] = serde_json::from_str(text)
            .unwrap_or_else(|_| serde_json::Value::String(text.to_owned()));
    }
    Some(Expansion {
        prompt: format!(
            "Run the saved workflow `{name}` ({}) now: call the Workflow tool with exactly {call}, \
             then call `wait` with its run_id until the run has ended, and report its result to me.",
            workflow.meta.description
        ),
        model: None,
    })
}

/// The prompt a turn sends for `input`, and the runtime it runs on (a
/// command's or skill's `model`, when it sets one that can be built; a
/// warning and the session's model otherwise).
pub(crate) fn prepare(session: &Session, input: String) -> (String, Runtime) {
    let Some(expansion) = expand_prompt(session, &input) else {
        return (input, session.runtime.clone());
    };
    match session.runtime_on(expansion.model.as_deref()) {
        Ok(runtime) => (expansion.prompt, runtime),
        Err(message) => {
            session
                .runtime
                .emit(&AgentPath::main(), EventKind::Warning { message });
            (expansion.prompt, session.runtime.clone())
        }
    }
}
