//! Where skills and custom commands come from, and `alcove skills`, which
//! lists both with their source files (like `alcove agents`), so a user can
//! see which file won.
//!
//! Skill folders, later wins: `~/.claude/skills`, the user's config dir
//! `skills/`, then the workspace's `.claude/skills`, `.agents/skills` and
//! `.alcove/skills`, each holding `<name>/SKILL.md`. Command folders, later
//! wins: `~/.claude/commands`, the config dir's `commands/`, the workspace's
//! `.claude/commands` and `.alcove/commands`, each holding `<name>.md`.

use std::path::{Path, PathBuf};

use alcove_core::{Commands, Skills, load_commands, load_skills};
use clap::Args;
use serde_json::{Value, json};

use crate::config::Dirs;
use crate::{CommonArgs, UsageError};

/// `alcove skills` arguments.
#[derive(Debug, Args)]
pub(crate) struct SkillsArgs {
    /// Print the skills and commands as one JSON object.
    #[arg(long)]
    json: bool,
}

fn home_dir(rel: &str) -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(|home| PathBuf::from(home).join(rel))
}

/// The skill folders for `workspace`, lowest precedence first.
pub(crate) fn skill_dirs(dirs: &Dirs, workspace: &Path) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = home_dir(".claude/skills").into_iter().collect();
    folders.push(dirs.config.join("skills"));
    for rel in [".claude/skills", ".agents/skills", ".alcove/skills"] {
        folders.push(workspace.join(rel));
    }
    folders
}

/// The custom command folders for `workspace`, lowest precedence first.
pub(crate) fn command_dirs(dirs: &Dirs, workspace: &Path) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = home_dir(".claude/commands").into_iter().collect();
    folders.push(dirs.config.join("commands"));
    folders.push(workspace.join(".claude/commands"));
    folders.push(workspace.join(".alcove/commands"));
    folders
}

/// The skills and commands found for `workspace`, and a warning per skipped file.
pub(crate) fn load(dirs: &Dirs, workspace: &Path) -> (Skills, Commands, Vec<String>) {
    let (skills, mut warnings) = load_skills(&skill_dirs(dirs, workspace));
    let (commands, command_warnings) = load_commands(&command_dirs(dirs, workspace));
    warnings.extend(command_warnings);
    (skills, commands, warnings)
}

pub(crate) fn run(common: &CommonArgs, args: &SkillsArgs) -> anyhow::Result<u8> {
    let workspace = common.workspace()?.root().to_owned();
    let dirs = Dirs::from_env().map_err(|err| UsageError(format!("{err:#}")))?;
    let (skills, commands, warnings) = load(&dirs, &workspace);
    for warning in &warnings {
        eprintln!("alcove: warning: {warning}");
    }
    let shown = |path: &Path| {
        path.strip_prefix(&workspace)
            .unwrap_or(path)
            .display()
            .to_string()
    };
    if args.json {
        let skills: Vec<Value> = skills
            .all()
            .iter()
            .map(|skill| {
                json!({
                    "name": skill.name,
                    "description": skill.description,
                    "source": skill.dir.join("SKILL.md").display().to_string(),
                    "allowed_tools": skill.allowed_tools,
                    "model": skill.model,
                    "disable_model_invocation": skill.disable_model_invocation,
                })
            })
            .collect();
        let commands: Vec<Value> = commands
            .all()
            .iter()
            .map(|command| {
                json!({
                    "name": command.name,
                    "description": command.description,
                    "argument_hint": command.argument_hint,
                    "source": command.source.display().to_string(),
                    "allowed_tools": command.allowed_tools,
                    "model": command.model,
                })
            })
            .collect();
        println!("{}", json!({"skills": skills, "commands": commands}));
        return Ok(0);
    }
    if skills.is_empty() {
        println!(
            "No skills. Put <name>/SKILL.md under .claude/skills, .agents/skills or .alcove/skills."
        );
    }
    for skill in skills.all() {
        println!("{}  ({})", skill.name, shown(&skill.dir.join("SKILL.md")));
        println!("  {}", one_line(&skill.description));
        let mut settings = Vec::new();
        if !skill.allowed_tools.is_empty() {
            settings.push(format!("allowed-tools: {}", skill.allowed_tools.join(", ")));
        }
        if let Some(model) = &skill.model {
            settings.push(format!("model: {model}"));
        }
        if skill.disable_model_invocation {
            settings.push("user-invoked only".to_owned());
        }
        if !settings.is_empty() {
            println!("  {}", settings.join(" · "));
        }
    }
    if !commands.all().is_empty() {
        println!("Commands");
    }
    for command in commands.all() {
        let hint = command
            .argument_hint
            .as_deref()
            .map(|hint| format!(" {hint}"))
            .unwrap_or_default();
        println!("/{}{hint}  ({})", command.name, shown(&command.source));
        if let Some(description) = &command.description {
            println!("  {}", one_line(description));
        }
    }
    Ok(0)
}

fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= 160 {
        return flat;
    }
    let mut cut: String = flat.chars().take(160).collect();
    cut.push('…');
    cut
}
