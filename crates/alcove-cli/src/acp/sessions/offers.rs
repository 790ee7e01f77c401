//! What an ACP session offers its editor: the permission modes (as ACP
//! modes and as a config option), the model option, and the commands a
//! user may run (`/init`, custom commands, skills, saved workflows).

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, CurrentModeUpdate,
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode,
    SessionModeState, SessionUpdate, UnstructuredCommandInput,
};
use alcove_core::PermissionMode;

use super::Live;
use crate::acp::models;

/// The permission modes, as ACP modes (id, name, description).
const MODES: [(PermissionMode, &str, &str); 5] = [
    (
        PermissionMode::Default,
        "Default",
        "Ask before edits and commands the rules do not allow",
    ),
    (
        PermissionMode::AcceptEdits,
        "Accept edits",
        "Edits in the workspace run without asking",
    ),
    (
        PermissionMode::Plan,
        "Plan",
        "Read and plan only: no edits, no commands",
    ),
    (
        PermissionMode::BypassPermissions,
        "Bypass permissions",
        "Everything runs without asking (deny rules still hold)",
    ),
    (
        PermissionMode::DontAsk,
        "Don't ask",
        "Whatever would be asked is denied",
    ),
];

/// The config option that is the permission mode.
pub(super) const MODE_OPTION: &str = "mode";

impl Live {
    /// The session's config options, with their current values: the
    /// permission mode (the same choice as its ACP modes, for clients that
    /// read config options instead) and the model.
    pub(crate) fn config_options(&self) -> Vec<SessionConfigOption> {
        let model = self
            .model
            .lock()
            .map(|chosen| chosen.spec.clone())
            .unwrap_or_else(|_| self.session.model_name.clone());
        let modes = self.modes();
        let mode = SessionConfigOption::select(
            MODE_OPTION,
            "Mode",
            modes.current_mode_id.0.to_string(),
            MODES
                .iter()
                .map(|(mode, name, description)| {
                    SessionConfigSelectOption::new(mode.as_str(), *name)
                        .description(description.to_string())
                })
                .collect::<Vec<_>>(),
        )
        .description("When alcove asks before it acts".to_owned())
        .category(SessionConfigOptionCategory::Mode);
        vec![mode, models::option(&self.session, &model)]
    }

    /// The modes offered, with the current one.
    pub(crate) fn modes(&self) -> SessionModeState {
        let current = self
            .mode
            .lock()
            .map(|mode| *mode)
            .unwrap_or(PermissionMode::Default);
        SessionModeState::new(
            current.as_str(),
            MODES
                .iter()
                .map(|(mode, name, description)| {
                    SessionMode::new(mode.as_str(), *name).description(description.to_string())
                })
                .collect(),
        )
    }

    /// `current_mode_update`.
    pub(crate) fn announce_mode(&self) {
        let current = self.modes().current_mode_id;
        self.updates.send(
            self.updates.top(),
            SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(current)),
        );
    }

    /// `available_commands_update`: `/init`, the custom commands and the
    /// skills a user may run.
    pub(crate) fn announce_commands(&self) {
        let hint = |text: &str| {
            Some(AvailableCommandInput::Unstructured(
                UnstructuredCommandInput::new(text.to_owned()),
            ))
        };
        let mut commands = vec![AvailableCommand::new(
            "init",
            "Create or update AGENTS.md from an exploration of the repository",
        )];
        for command in self.session.commands.all() {
            commands.push(
                AvailableCommand::new(
                    command.name.clone(),
                    command
                        .description
                        .clone()
                        .unwrap_or_else(|| format!("/{}", command.name)),
                )
                .input(hint(
                    command.argument_hint.as_deref().unwrap_or("arguments"),
                )),
            );
        }
        for skill in self.session.skills.all() {
            commands.push(
                AvailableCommand::new(skill.name.clone(), skill.description.clone())
                    .input(hint("arguments")),
            );
        }
        let workflows = crate::workflow_host::saved_workflows(&self.session.workflows);
        for workflow in workflows
            .into_iter()
            .filter_map(|saved| saved.workflow.ok())
        {
            commands.push(
                AvailableCommand::new(workflow.meta.name, workflow.meta.description)
                    .input(hint("args (JSON or text)")),
            );
        }
        self.updates.send(
            self.updates.top(),
            SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
        );
    }
}
