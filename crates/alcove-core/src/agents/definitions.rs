//! Agent definitions: the kinds of child an `Agent` call can ask for.
//!
//! A definition is data — a system prompt, tool lists that can only narrow
//! the parent's, an optional model and turn cap — kept in one registry, so
//! definitions loaded from Markdown files later sit beside the built-ins.

/// One kind of child agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentDefinition {
    /// The name `subagent_type` selects it by.
    pub name: String,
    /// When to use it, for the model.
    pub description: String,
    /// Its instructions, placed before the delegation contract.
    pub system_prompt: String,
    /// When set, only these tools (of the parent's) are offered.
    pub tools: Option<Vec<String>>,
    /// Tools never offered.
    pub disallowed_tools: Vec<String>,
    /// `provider/name`, overriding the parent's model.
    pub model: Option<String>,
    /// Its turn cap, overriding `agents.max_turns`.
    pub max_turns: Option<u32>,
}

/// The definitions a session knows, by name, in a stable order.
#[derive(Debug, Clone)]
pub struct Definitions {
    definitions: Vec<AgentDefinition>,
}

/// The type used when an `Agent` call names none.
pub const DEFAULT_AGENT_TYPE: &str = "general-purpose";

impl Default for Definitions {
    /// The built-ins: `general-purpose` and `explore`.
    fn default() -> Definitions {
        Definitions {
            definitions: vec![
                AgentDefinition {
                    name: DEFAULT_AGENT_TYPE.to_owned(),
                    description:
                        "A capable agent for multi-step tasks: research, edits, running commands."
                            .to_owned(),
                    system_prompt:
                        "You are a general-purpose coding agent working on a task delegated by \
                                    another agent."
                            .to_owned(),
                    tools: None,
                    disallowed_tools: Vec::new(),
                    model: None,
                    max_turns: None,
                },
                AgentDefinition {
                    name: "explore".to_owned(),
                    description:
                        "A read-only agent that searches and reads the code base and reports \
                                  findings with file:line evidence."
                            .to_owned(),
                    system_prompt:
                        "You are an exploring agent. You can only read: search with Glob and Grep, \
                                    read with Read. Back every finding with file:line evidence."
                            .to_owned(),
                    tools: Some(vec![
                        "Read".to_owned(),
                        "Glob".to_owned(),
                        "Grep".to_owned(),
                    ]),
                    disallowed_tools: Vec::new(),
                    model: None,
                    max_turns: None,
                },
            ],
        }
    }
}

impl Definitions {
    /// Adds a definition, replacing one of the same name.
    pub fn insert(&mut self, definition: AgentDefinition) {
        match self
            .definitions
            .iter_mut()
            .find(|existing| existing.name == definition.name)
        {
            Some(existing) => *existing = definition,
            None => self.definitions.push(definition),
        }
    }

    /// The definition called `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.definitions
            .iter()
            .find(|definition| definition.name == name)
    }

    /// All definitions, in order.
    pub fn all(&self) -> &[AgentDefinition] {
        &self.definitions
    }

    /// The names, comma-separated, for error messages.
    pub fn names(&self) -> String {
        self.definitions
            .iter()
            .map(|definition| definition.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What every child is told about its final message.
pub(crate) const DELEGATION_CONTRACT: &str = "\
You were started by another agent to do one bounded task; you cannot ask it questions. \
Your final message is all it will see of your work: none of your tool calls or results reach it. \
End with a concise report:
- Findings, each with file:line evidence.
- Changes you made (files and what changed).
- Checks you ran and their results.
- Open questions or anything you could not finish.
Do not claim what you did not verify.";
