//! Custom commands: Markdown prompts in `.claude/commands/` (and alcove's
//! own folders) that users already have, run as `/name arguments`.
//!
//! ```text
//! .claude/commands/review-pr.md      →  /review-pr 42
//! ---
//! description: Review a pull request
//! argument-hint: <number>
//! allowed-tools: Bash(gh pr view:*)
//! model: sonnet
//! ---
//! Review pull request $1 ($ARGUMENTS) …
//! ```
//!
//! The front matter is optional (Claude Code's commands often have none) and
//! read with the same parser as agent definitions and skills. A `/word`
//! prompt that names a command — or else a skill — becomes that command's
//! prompt (or the skill's instructions) with the arguments substituted.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::frontmatter::{self, DefinitionError, Names, substitute_arguments};
use crate::skills::Skills;

/// One custom command.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CustomCommand {
    /// The file's name without `.md`: what follows the `/`.
    pub name: String,
    /// One line for `/help`.
    pub description: Option<String>,
    /// What the arguments are, for `/help` (`<number>`).
    pub argument_hint: Option<String>,
    /// As written; shown, never granted by itself.
    pub allowed_tools: Vec<String>,
    /// The model for its turn, as written (`provider/name` or an alias).
    pub model: Option<String>,
    /// The prompt.
    pub body: String,
    /// The file.
    pub source: PathBuf,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
struct CommandFront {
    description: Option<String>,
    #[serde(alias = "argument_hint", alias = "argumentHint")]
    argument_hint: Option<String>,
    #[serde(alias = "allowed_tools", alias = "allowedTools")]
    allowed_tools: Option<Names>,
    model: Option<String>,
}

/// Parses one command file named `name`.
pub fn parse_command(text: &str, name: &str) -> Result<CustomCommand, DefinitionError> {
    let document = frontmatter::split(text, false)?;
    let front: CommandFront = frontmatter::parse(&document.yaml)?;
    if document.body.is_empty() {
        return Err(DefinitionError {
            line: document.closing_line.max(1),
            message: "the command's prompt is empty".to_owned(),
        });
    }
    let trimmed = |text: Option<String>| {
        text.map(|text| text.trim().to_owned())
            .filter(|text| !text.is_empty())
    };
    Ok(CustomCommand {
        name: name.to_owned(),
        description: trimmed(front.description),
        argument_hint: trimmed(front.argument_hint),
        allowed_tools: front.allowed_tools.map(Names::into_vec).unwrap_or_default(),
        model: trimmed(front.model).filter(|model| model != "inherit"),
        body: document.body.to_owned(),
        source: PathBuf::new(),
    })
}

/// The custom commands of a session, by name.
#[derive(Debug, Clone, Default)]
pub struct Commands {
    commands: Vec<CustomCommand>,
}

impl Commands {
    /// Adds a command, replacing one of the same name.
    pub fn insert(&mut self, command: CustomCommand) {
        match self
            .commands
            .iter_mut()
            .find(|existing| existing.name == command.name)
        {
            Some(existing) => *existing = command,
            None => self.commands.push(command),
        }
    }

    /// The command called `name`.
    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|command| command.name == name)
    }

    /// All commands, in order.
    pub fn all(&self) -> &[CustomCommand] {
        &self.commands
    }

    /// Rewrites every command's model with `resolve`.
    pub fn resolve_models(&mut self, mut resolve: impl FnMut(&str) -> Option<String>) {
        for command in &mut self.commands {
            command.model = command.model.as_deref().and_then(&mut resolve);
        }
    }
}

/// What a `/name arguments` prompt runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Expansion {
    /// The prompt the model receives.
    pub prompt: String,
    /// The model for this turn (`provider/name`), when the command or skill sets one.
    pub model: Option<String>,
}

/// `input` as a custom command or skill run, when it is `/name [arguments]`
/// and `name` is one (commands first, then skills).
pub fn expand(input: &str, commands: &Commands, skills: &Skills) -> Option<Expansion> {
    let rest = input.trim_start().strip_prefix('/')?;
    let (name, arguments) = match rest.split_once(char::is_whitespace) {
        Some((name, arguments)) => (name, arguments.trim()),
        None => (rest.trim_end(), ""),
    };
    if let Some(command) = commands.get(name) {
        return Some(Expansion {
            prompt: substitute_arguments(&command.body, arguments),
            model: command.model.clone(),
        });
    }
    let skill = skills.get(name)?;
    Some(Expansion {
        prompt: Skills::render(skill, arguments),
        model: skill.model.clone(),
    })
}

/// Loads the `*.md` commands of `dirs` (and of their subfolders, Claude
/// Code's namespaces), lowest precedence first. Missing
/// folders are skipped silently; a broken file with a warning naming the
/// file and line.
pub fn load_commands(dirs: &[PathBuf]) -> (Commands, Vec<String>) {
    let mut commands = Commands::default();
    let mut warnings = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let entries: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .collect();
        // Claude Code's namespaces: `frontend/component.md` is `/component`.
        let nested = entries
            .iter()
            .filter(|path| path.is_dir())
            .filter_map(|sub| std::fs::read_dir(sub).ok())
            .flat_map(|entries| entries.filter_map(Result::ok).map(|entry| entry.path()));
        let mut files: Vec<PathBuf> = nested
            .chain(entries.iter().cloned())
            .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
            .collect();
        // Subfolders first, so a top-level file of the same name wins.
        files.sort_by_key(|path| (path.parent() == Some(dir.as_path()), path.clone()));
        for path in files {
            match load_command(&path) {
                Ok(command) => commands.insert(command),
                Err(warning) => warnings.push(warning),
            }
        }
    }
    (commands, warnings)
}

fn load_command(path: &Path) -> Result<CustomCommand, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("{}: cannot read the command: {err}", path.display()))?;
    let name = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut command = parse_command(&text, &name).map_err(|err| {
        format!(
            "{}:{}: command skipped: {}",
            path.display(),
            err.line,
            err.message
        )
    })?;
    command.source = path.to_owned();
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::Skill;

    #[test]
    fn commands_come_before_skills_and_get_their_arguments() {
        let mut commands = Commands::default();
        commands.insert(
            parse_command(
                "---\ndescription: Review a PR\nargument-hint: <n>\nmodel: opus\n---\nReview PR $1: $ARGUMENTS\n",
                "review-pr",
            )
            .unwrap(),
        );
        commands.insert(parse_command("Just a prompt, no front matter.", "plain").unwrap());
        let mut skills = Skills::default();
        skills.insert(Skill {
            name: "notes".to_owned(),
            body: "Write notes about $ARGUMENTS.".to_owned(),
            ..Skill::default()
        });
        let review = expand("/review-pr 42 now", &commands, &skills).unwrap();
        assert_eq!(review.prompt, "Review PR 42: 42 now");
        assert_eq!(review.model.as_deref(), Some("opus"));
        assert_eq!(
            expand("/plain", &commands, &skills).unwrap().prompt,
            "Just a prompt, no front matter."
        );
        let notes = expand("/notes the API", &commands, &skills).unwrap();
        assert!(
            notes.prompt.contains("Write notes about the API."),
            "{}",
            notes.prompt
        );
        assert_eq!(expand("/nothing here", &commands, &skills), None);
        assert_eq!(expand("no slash", &commands, &skills), None);
        assert!(parse_command("---\ndescription: [\n---\nbody", "bad").is_err());
    }
}
