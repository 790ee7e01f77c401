//! Skills: `SKILL.md` folders in the format Claude Code and Codex users
//! already keep, disclosed progressively.
//!
//! The system prompt gets only a bounded catalog (name and description per
//! skill); the `Skill` tool returns a skill's body when the model decides it
//! needs it, with `$ARGUMENTS` substituted and the skill folder's path, so the
//! model can Read the folder's other files or run its scripts through the
//! usual gate. A skill's `allowed-tools` narrows nothing and widens nothing by
//! itself: the tool asks the user, and only an approval turns them into
//! session allow rules. One [`SkillTool`] serves a whole session; children get
//! it from their parent's pool, by reference (seed 000, A6).
//!
//! ```text
//! .claude/skills/release-notes/SKILL.md
//! ---
//! name: release-notes
//! description: Writes release notes from the git log. Use when asked for a changelog.
//! allowed-tools: Bash(git log:*), Read
//! model: haiku
//! disable-model-invocation: false
//! ---
//! Run `scripts/collect.sh $ARGUMENTS` from this folder, then …
//! ```

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use alcove_protocol::ToolSpec;
use alcove_tools::{Access, Invocation, ToolContext, ToolOutput, TypedTool, Workspace};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::frontmatter::{self, DefinitionError, Names, substitute_arguments};
use crate::{Approval, ApprovalRequest, Approver, PermissionGate, Rule};

/// A skill body beyond this many bytes is cut (and the cut is stated).
pub const SKILL_BODY_CAP: usize = 32 * 1024;
/// The most skills the catalog lists; the rest are counted.
const CATALOG_ENTRIES: usize = 60;
/// The catalog's size bound in bytes.
const CATALOG_BYTES: usize = 12 * 1024;
/// A description longer than this is cut in the catalog.
const CATALOG_DESCRIPTION: usize = 300;

/// One skill.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Skill {
    /// What `/name` and the `Skill` tool call it (front matter `name`, else
    /// the folder's name).
    pub name: String,
    /// When to use it, for the model's catalog.
    pub description: String,
    /// Rules offered to the user as session allow rules when it runs.
    pub allowed_tools: Vec<String>,
    /// Its model as written (`provider/name` or an alias), for a direct run.
    pub model: Option<String>,
    /// Only the user may run it (`/name`); the catalog and the tool leave it out.
    pub disable_model_invocation: bool,
    /// Its instructions.
    pub body: String,
    /// Its folder.
    pub dir: PathBuf,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
struct SkillFront {
    name: Option<String>,
    description: Option<String>,
    #[serde(alias = "allowed_tools", alias = "allowedTools")]
    allowed_tools: Option<Names>,
    model: Option<String>,
    #[serde(alias = "disable_model_invocation", alias = "disableModelInvocation")]
    disable_model_invocation: Option<bool>,
}

/// Parses one `SKILL.md`; `folder` names the skill when the front matter
/// has no `name`.
pub fn parse_skill(text: &str, folder: &str) -> Result<Skill, DefinitionError> {
    let document = frontmatter::split(text, true)?;
    let front: SkillFront = frontmatter::parse(&document.yaml)?;
    let description = front
        .description
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
        .ok_or_else(|| document.error_at("description", "`description` is missing or empty"))?;
    if document.body.is_empty() {
        return Err(DefinitionError {
            line: document.closing_line,
            message: "the body (the skill's instructions) is empty".to_owned(),
        });
    }
    let mut body = document.body.to_owned();
    if body.len() > SKILL_BODY_CAP {
        let total = body.len();
        let end = crate::dispatch::cut(&body, SKILL_BODY_CAP).len();
        body.truncate(end);
        body.push_str(&format!(
            "\n\n[skill body cut at {SKILL_BODY_CAP} bytes: {} of {total} bytes not shown; Read SKILL.md for the rest]",
            total - end
        ));
    }
    Ok(Skill {
        name: front
            .name
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| folder.to_owned()),
        description,
        allowed_tools: front.allowed_tools.map(Names::into_vec).unwrap_or_default(),
        model: front
            .model
            .map(|model| model.trim().to_owned())
            .filter(|model| !model.is_empty() && model != "inherit"),
        disable_model_invocation: front.disable_model_invocation.unwrap_or(false),
        body,
        dir: PathBuf::new(),
    })
}

/// The skills a session knows, in a stable order.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    skills: Vec<Skill>,
}

impl Skills {
    /// Adds a skill, replacing one of the same name in its place.
    pub fn insert(&mut self, skill: Skill) {
        match self
            .skills
            .iter_mut()
            .find(|existing| existing.name.eq_ignore_ascii_case(&skill.name))
        {
            Some(existing) => *existing = skill,
            None => self.skills.push(skill),
        }
    }

    /// The skill called `name` (case-insensitive; its folder's name also works).
    pub fn get(&self, name: &str) -> Option<&Skill> {
        let name = name.trim().trim_start_matches('/');
        self.skills
            .iter()
            .find(|skill| skill.name.eq_ignore_ascii_case(name))
            .or_else(|| {
                self.skills.iter().find(|skill| {
                    skill
                        .dir
                        .file_name()
                        .is_some_and(|dir| dir.eq_ignore_ascii_case(name))
                })
            })
    }

    /// All skills, in order.
    pub fn all(&self) -> &[Skill] {
        &self.skills
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Rewrites every skill's model with `resolve` (see
    /// `Definitions::resolve_models`).
    pub fn resolve_models(&mut self, mut resolve: impl FnMut(&str) -> Option<String>) {
        for skill in &mut self.skills {
            skill.model = skill.model.as_deref().and_then(&mut resolve);
        }
    }

    /// The system prompt's catalog: name and description of each skill the
    /// model may invoke, no bodies, bounded, with a count of what was left
    /// out. Empty when there is no such skill.
    pub fn catalog(&self) -> String {
        let offered: Vec<&Skill> = self
            .skills
            .iter()
            .filter(|skill| !skill.disable_model_invocation)
            .collect();
        if offered.is_empty() {
            return String::new();
        }
        let mut text = String::from(
            "\n# Available skills\n\nA skill is a folder of instructions (and maybe scripts) for one kind of task. \
             When a task matches a skill's description, call the Skill tool with its name first and follow \
             what it returns.\n\n",
        );
        let mut listed = 0;
        for skill in &offered {
            let mut description = skill
                .description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if description.chars().count() > CATALOG_DESCRIPTION {
                description = description.chars().take(CATALOG_DESCRIPTION).collect();
                description.push('…');
            }
            let line = format!("- {}: {description}\n", skill.name);
            if listed == CATALOG_ENTRIES || text.len() + line.len() > CATALOG_BYTES {
                break;
            }
            text.push_str(&line);
            listed += 1;
        }
        if listed < offered.len() {
            text.push_str(&format!(
                "- … and {} more skills not listed here; the Skill tool loads any of them by name.\n",
                offered.len() - listed
            ));
        }
        text
    }

    /// What a run of `skill` with `arguments` reads: where it lives, then its
    /// body with the arguments substituted.
    pub fn render(skill: &Skill, arguments: &str) -> String {
        let mut body = substitute_arguments(&skill.body, arguments);
        if !arguments.trim().is_empty() && !skill.body.contains("$ARGUMENTS") {
            body.push_str(&format!("\n\nARGUMENTS: {}", arguments.trim()));
        }
        format!(
            "Launching skill: {}\nSkill folder: {} (Read its other files; run its scripts with Bash — \
             both through the usual permission checks)\n\n{body}",
            skill.name,
            skill.dir.display()
        )
    }
}

/// Loads `*/SKILL.md` of each of `dirs`, lowest precedence first (a later
/// skill replaces an earlier one of the same name). Missing folders are
/// skipped silently; a broken file is skipped with a warning naming the file
/// and line, and the rest load.
pub fn load_skills(dirs: &[PathBuf]) -> (Skills, Vec<String>) {
    let mut skills = Skills::default();
    let mut warnings = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.join("SKILL.md").is_file())
            .collect();
        folders.sort();
        for folder in folders {
            match load_skill(&folder) {
                Ok((skill, notes)) => {
                    let file = folder.join("SKILL.md");
                    for note in notes {
                        warnings.push(format!("{}: {note}", file.display()));
                    }
                    skills.insert(skill)
                }
                Err(warning) => warnings.push(warning),
            }
        }
    }
    (skills, warnings)
}

/// One skill folder, and warnings about keys of its front matter that are
/// ignored.
fn load_skill(folder: &Path) -> Result<(Skill, Vec<String>), String> {
    let file = folder.join("SKILL.md");
    let text = std::fs::read_to_string(&file)
        .map_err(|err| format!("{}: cannot read the skill: {err}", file.display()))?;
    let name = folder
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut skill = parse_skill(&text, &name).map_err(|err| {
        format!(
            "{}:{}: skill skipped: {}",
            file.display(),
            err.line,
            err.message
        )
    })?;
    skill.dir = folder.to_owned();
    let notes = frontmatter::split(&text, true)
        .map(|document| {
            static KNOWN: std::sync::OnceLock<crate::known_keys::KeyTree> =
                std::sync::OnceLock::new();
            let known = KNOWN.get_or_init(crate::known_keys::KeyTree::of::<SkillFront>);
            frontmatter::unknown_keys(known, &document, SKILL_KEYS_OF_OTHERS)
        })
        .unwrap_or_default();
    Ok((skill, notes))
}

/// Keys of the Agent Skills format alcove has no use for: not warned about.
const SKILL_KEYS_OF_OTHERS: &[&str] = &["license", "metadata", "version", "compatibility"];

/// Arguments of a `Skill` call.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SkillInput {
    /// The skill's name, as the catalog lists it.
    skill: String,
    /// Arguments for the skill (substituted for $ARGUMENTS in its instructions).
    #[serde(default)]
    args: Option<String>,
}

/// The `Skill` tool of a session.
pub struct SkillTool {
    skills: Arc<Skills>,
    /// Asks the user about a skill's `allowed-tools`.
    approver: Arc<dyn Approver>,
    /// The session's gate, which takes the approved rules.
    gate: Arc<PermissionGate>,
    /// Skills whose `allowed-tools` the user was already asked about.
    asked: Mutex<HashSet<String>>,
    spec: ToolSpec,
}

impl SkillTool {
    /// The tool for `skills`; approved `allowed-tools` become session rules of `gate`.
    pub fn new(
        skills: Arc<Skills>,
        approver: Arc<dyn Approver>,
        gate: Arc<PermissionGate>,
    ) -> SkillTool {
        SkillTool {
            skills,
            approver,
            gate,
            asked: Mutex::default(),
            spec: alcove_tools::tool_spec!(
                SkillInput,
                "Skill",
                "Load a skill's instructions by name (the system prompt lists the available skills). \
                 Returns the instructions and the skill's folder; follow them. Pass `args` when the \
                 skill takes arguments.",
            ),
        }
    }

    /// Asks the user, once per skill and session, whether its
    /// `allowed-tools` may become session allow rules; returns a note for
    /// the model about the outcome.
    async fn offer_allowed_tools(&self, skill: &Skill, context: &ToolContext) -> Option<String> {
        if skill.allowed_tools.is_empty() {
            return None;
        }
        let first_time = self
            .asked
            .lock()
            .is_ok_and(|mut asked| asked.insert(skill.name.to_lowercase()));
        if !first_time {
            return None;
        }
        let list = skill.allowed_tools.join(", ");
        let request = ApprovalRequest {
            agent: context.agent.clone(),
            agent_description: None,
            tool: "Skill".to_owned(),
            summary: format!(
                "skill `{}` asks to allow for this session: {list}",
                skill.name
            ),
            input: serde_json::json!({"skill": skill.name, "allowed-tools": skill.allowed_tools}),
            reason: format!(
                "the skill's allowed-tools ({list}) become session allow rules only if you approve"
            ),
        };
        match self.approver.approve(request).await {
            Approval::AllowOnce | Approval::AllowAlways => {
                let mut bad = Vec::new();
                for text in &skill.allowed_tools {
                    match Rule::parse(text, &format!("skill `{}` allowed-tools", skill.name)) {
                        Ok(rule) => self.gate.allow_for_session(rule),
                        Err(err) => bad.push(err.to_string()),
                    }
                }
                let mut note = format!("[allowed for this session by the user: {list}]");
                for err in bad {
                    note.push_str(&format!("\n[ignored: {err}]"));
                }
                Some(note)
            }
            Approval::Deny(_) => Some(format!(
                "[the skill's allowed-tools ({list}) were not approved; its calls are checked as usual]"
            )),
        }
    }
}

#[async_trait::async_trait]
impl TypedTool for SkillTool {
    type Input = SkillInput;
    /// The skill found, and the arguments for it.
    type Call = (Skill, Option<String>);

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::ReadOnly
    }

    fn inspect(
        &self,
        input: SkillInput,
        _workspace: &Workspace,
    ) -> Result<(Invocation, (Skill, Option<String>)), String> {
        let skill = self.skills.get(&input.skill).ok_or_else(|| {
            let names: Vec<&str> = self
                .skills
                .all()
                .iter()
                .filter(|skill| !skill.disable_model_invocation)
                .map(|skill| skill.name.as_str())
                .collect();
            format!(
                "Unknown skill `{}`. Available skills: {}.",
                input.skill,
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            )
        })?;
        if skill.disable_model_invocation {
            return Err(format!(
                "Skill `{}` can only be run by the user (/{}).",
                skill.name, skill.name
            ));
        }
        let invocation = Invocation {
            summary: skill.name.clone(),
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, (skill.clone(), input.args)))
    }

    async fn call(&self, call: (Skill, Option<String>), context: &ToolContext) -> ToolOutput {
        let (skill, args) = call;
        let mut text = Skills::render(&skill, args.as_deref().unwrap_or_default());
        if let Some(note) = self.offer_allowed_tools(&skill, context).await {
            text.push_str("\n\n");
            text.push_str(&note);
        }
        ToolOutput::ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_schema_is_the_input_types() {
        // A debug build stops on a kept schema that is not the type's.
        let spec = alcove_tools::tool_spec!(SkillInput, "Skill", "");
        assert_eq!(spec.input_schema.to_value()["required"][0], "skill");
    }

    #[test]
    fn front_matter_is_read_with_the_shared_parser() {
        let skill = parse_skill(
            "---\nname: notes\ndescription: Use when: writing notes\nallowed-tools: Read, Bash(git log:*)\n\
             model: haiku\ndisable-model-invocation: true\n---\nDo $ARGUMENTS.\n",
            "folder",
        )
        .unwrap();
        assert_eq!(skill.name, "notes");
        assert_eq!(skill.description, "Use when: writing notes");
        assert_eq!(skill.allowed_tools, ["Read", "Bash(git log:*)"]);
        assert_eq!(skill.model.as_deref(), Some("haiku"));
        assert!(skill.disable_model_invocation);
        let missing = parse_skill("---\nname: x\n---\nbody\n", "x").unwrap_err();
        assert!(missing.message.contains("description"), "{missing:?}");
        let bad = parse_skill("---\ndescription: d\nmodel: [\n---\nbody\n", "x").unwrap_err();
        assert_eq!(bad.line, 3);
    }

    #[test]
    fn the_catalog_is_bounded_and_counts_what_it_leaves_out() {
        let mut skills = Skills::default();
        for idx in 0..100 {
            skills.insert(Skill {
                name: format!("skill-{idx}"),
                description: "d".repeat(400),
                body: "SECRET BODY".to_owned(),
                ..Skill::default()
            });
        }
        let catalog = skills.catalog();
        assert!(catalog.len() <= CATALOG_BYTES + 200, "{}", catalog.len());
        assert!(!catalog.contains("SECRET BODY"));
        assert!(catalog.contains("more skills not listed"), "{catalog}");
        assert!(catalog.contains("- skill-0: "));
    }

    #[test]
    fn long_bodies_are_cut_with_a_note() {
        let text = format!("---\ndescription: d\n---\n{}", "x".repeat(40 * 1024));
        let skill = parse_skill(&text, "big").unwrap();
        assert!(skill.body.len() < SKILL_BODY_CAP + 200);
        assert!(skill.body.contains("skill body cut at 32768 bytes"));
    }
}
