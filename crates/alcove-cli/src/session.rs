//! Opening a session: everything a front end needs before the first prompt.
//!
//! Reads the workspace, config layers, provider and permission mode, opens
//! the transcript, and builds the shared [`Runtime`], the main agent's gate
//! and the [`Supervisor`]. `exec` and the interactive UI both start here and
//! differ only in the sinks and approver they pass in.

mod end;
mod open_steps;
mod tally;

pub(crate) use end::SessionEnd;

use std::path::PathBuf;
use std::sync::Arc;

use alcove_core::{
    AgentRun, Approver, Charter, Commands, Definitions, EventSink, FanOut, HookSession, Limits,
    Memory, ModelFactory, POLICY_ENV, ParentPolicy, PermissionGate, PermissionMode, ProjectContext,
    Runtime, SkillTool, Skills, Supervisor, Transcript, system_prompt,
};
use alcove_mcp::McpManager;
use alcove_protocol::{AgentPath, EventKind, Message};
use alcove_tools::EnvPolicy;
use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::agent_setup::{ProfileChoice, ToolProfile, agent_limits, choose_profile};
use crate::config::Dirs;
use crate::context_setup::{self, WindowChoice};
use crate::model_aliases::Aliases;
use crate::resume::{Resumed, next_child_number, resumed_history};
use crate::settings::Config;
use crate::trust::ProjectSettings;
use crate::{
    CommonArgs, UsageError, agents_cmd, hook_setup, mcp_setup, permission_setup, provider,
    sandbox_setup, skills_cmd,
};
use open_steps::*;

/// Project instructions beyond this many bytes are cut (and the cut is stated).
const PROJECT_CONTEXT_CAP: usize = 64 * 1024;
/// Tool results beyond this many bytes keep their head and tail only.
const RESULT_CAP: usize = 64 * 1024;

/// What a front end adds to a session.
pub(crate) struct FrontEnd {
    /// Where events go besides the transcript.
    pub(crate) sinks: Vec<Arc<dyn EventSink>>,
    /// Who answers approval requests.
    pub(crate) approver: Arc<dyn Approver>,
    /// `--max-turns`, when given.
    pub(crate) max_turns: Option<u32>,
    /// The id of an earlier session to continue: its transcript is read back
    /// and appended to.
    pub(crate) resume: Option<String>,
    /// MCP servers the front end adds to the configured ones (an ACP
    /// client's `mcpServers`); one of the same name replaces the configured one.
    pub(crate) extra_mcp: Vec<alcove_mcp::ServerConfig>,
    /// Where Read gets a text file's contents before the disk (an ACP
    /// client's unsaved buffers); `None` reads the disk.
    pub(crate) file_source: Option<Arc<dyn alcove_tools::FileSource>>,
}

/// An open session.
#[allow(
    dead_code,
    reason = "id, config and dirs are for the interactive UI and hooks, which are being built"
)]
pub(crate) struct Session {
    pub(crate) id: String,
    /// What every agent of the session used, for `session_ended`.
    tally: Arc<tally::TreeTally>,
    /// When the session was opened.
    opened: std::time::Instant,
    pub(crate) runtime: Runtime,
    pub(crate) supervisor: Arc<Supervisor>,
    pub(crate) gate: Arc<PermissionGate>,
    /// The config layers, for a gate in another mode (`gate_in_mode`).
    layers: Vec<crate::config::Layer>,
    /// The policy a parent alcove passed, which every gate narrows.
    parent: Option<ParentPolicy>,
    pub(crate) transcript: Arc<Transcript>,
    /// The main agent's system prompt without the memory section, which
    /// [`Session::main_run`] appends (re-read only when the file changed).
    pub(crate) system_prompt: String,
    pub(crate) max_turns: u32,
    /// The main agent's token budget: what a parent alcove gave this one.
    pub(crate) token_budget: Option<u64>,
    /// The main agent's wall time: what a parent alcove gave this one.
    pub(crate) deadline: Option<std::time::Duration>,
    pub(crate) skills: Arc<Skills>,
    pub(crate) commands: Arc<Commands>,
    pub(crate) memory: Arc<Memory>,
    /// The session's own tools, built once (`session_tools`).
    tools: Vec<Arc<alcove_core::DynTool>>,
    /// The tool profile and why it was chosen (`lean` and `local` leave
    /// the everyday extras out; `local` defers nothing).
    pub(crate) profile: ProfileChoice,
    /// Builds a client for another `provider/name` (a command's `model`).
    model_factory: Arc<ModelFactory>,
    pub(crate) config: Config,
    pub(crate) dirs: Dirs,
    /// The main agent's conversation so far (empty unless resumed;
    /// compacted as the transcript's `compacted` events say).
    pub(crate) history: Vec<Message>,
    /// The resumed session's last run ended because its request did not
    /// fit the context window (so its history is not cut mid-turn).
    pub(crate) ended_by_overflow: bool,
    /// `provider/model`.
    pub(crate) model_name: String,
    /// The model aliases of this provider and config, each with the
    /// `provider/name` it stands for.
    pub(crate) model_aliases: std::collections::BTreeMap<String, String>,
    /// The model's context window and where the figure came from.
    pub(crate) context_window: WindowChoice,
    /// The session's MCP servers: one connection each, lent to every agent.
    pub(crate) mcp: Arc<McpManager>,
    /// Whether the start-up warnings were emitted (or, for the sandbox, are being).
    startup_reported: std::sync::atomic::AtomicBool,
    /// The task reporting the sandbox probe's answer.
    sandbox_report: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// When that probe may start.
    probe_start: Arc<sandbox_setup::ProbeStart>,
    /// The command sandbox and limits.
    pub(crate) sandbox: sandbox_setup::SandboxSetup,
    /// The line naming what an untrusted folder's settings asked for and
    /// did not get (also a start-up warning).
    pub(crate) trust_notice: Option<String>,
    /// The folders of the saved workflows `/<name>` runs (the project's
    /// only when trusted); empty when the `Workflow` tool is not offered.
    pub(crate) workflows: Vec<PathBuf>,
}

impl Session {
    /// Reads everything and emits `session_started`. Each concern is
    /// resolved once, in its own step, into values the session and its
    /// children share: the settings, the permissions (mode, parent policy,
    /// sandbox, gate, budgets, environment policy), the model (options,
    /// window, limits), the catalogs, the sinks, then the runtime and the
    /// supervisor.
    pub(crate) async fn open(common: &CommonArgs, front_end: FrontEnd) -> anyhow::Result<Session> {
        let opened = std::time::Instant::now();
        let tally = Arc::new(tally::TreeTally::default());
        let Settings {
            workspace,
            dirs,
            config,
            layers,
            files_root,
            notice,
            warnings: settings_warnings,
        } = Settings::read(common)?;
        let permissions = Permissions::resolve(
            common,
            &config,
            &layers,
            workspace.root(),
            front_end.max_turns.or(common.max_turns),
        )?;
        let (id, resumed) = match &front_end.resume {
            Some(id) => (id.clone(), resumed_history(&dirs, id)?),
            None => (uuid::Uuid::new_v4().to_string(), Resumed::default()),
        };
        // One gate between every agent of the session and its provider.
        let health = Arc::new(alcove_model::ProviderHealth::new());
        let mut chosen =
            ModelChoice::connect(common, &config, &permissions.env, &id, &health).await?;

        let mut setup_warnings: Vec<String> = notice.iter().cloned().collect();
        setup_warnings.extend(settings_warnings.join().unwrap_or_default());
        setup_warnings.extend(crate::claude_settings::warnings(workspace.root()));
        let (hook_config, hook_warnings) = hook_setup::load(&layers, files_root.as_deref())?;
        setup_warnings.extend(hook_warnings);
        setup_warnings.extend(permissions.sandbox.warnings.iter().cloned());
        setup_warnings.extend(crate::worktrees_cmd::leftover_warning(workspace.root()));
        let (definitions, skills, commands) = load_catalogs(
            &dirs,
            workspace.root(),
            &mut chosen.aliases,
            &mut setup_warnings,
        );
        let model_aliases = chosen.aliases.table().clone();
        let skills = Arc::new(skills);

        let transcript_path: PathBuf = dirs.data.join("sessions").join(format!("{id}.jsonl"));
        let transcript = Arc::new(
            Transcript::create(&transcript_path)
                .with_context(|| {
                    format!("cannot create the transcript {}", transcript_path.display())
                })?
                .with_redactor(chosen.redactor.clone()),
        );
        // MCP servers start now, in the background; the first model request
        // waits for them at most their startup timeout (`ready`).
        let (mut mcp_configs, mcp_warnings) =
            mcp_setup::configs_from(layers.clone(), files_root.as_deref());
        setup_warnings.extend(mcp_warnings);
        for extra in front_end.extra_mcp {
            mcp_configs.retain(|config| config.name != extra.name);
            mcp_configs.push(extra);
        }
        // MCP servers and hooks get the same `[env]` policy as Bash: they
        // do not see the secrets. Matching the environment against it is
        // done only when either exists (it was a twelfth of start-up's
        // instructions, done twice, for sessions that have neither).
        let env_remove = if mcp_configs.is_empty() && hook_config.is_empty() {
            Vec::new()
        } else {
            permissions.env.names_to_remove(std::env::vars_os())
        };
        let mcp = McpManager::start(
            mcp_configs,
            workspace.root(),
            &dirs.data.join("sessions").join(&id).join("mcp"),
            &env_remove,
        );
        let Sinks {
            telemetry,
            observers,
            probe_start,
            events,
        } = {
            // The tally sees what the front end sees: every agent's events.
            let mut sinks = front_end.sinks;
            sinks.push(tally.clone());
            Sinks::new(&config, &transcript, sinks, &mut setup_warnings)
        };
        let hooks = hook_setup::build(
            hook_config,
            HookSession {
                session_id: id.clone(),
                transcript_path: transcript_path.clone(),
                cwd: workspace.root().to_owned(),
                permission_mode: permissions.mode.as_str().to_owned(),
                env_remove,
            },
            events.clone(),
        );

        let project = ProjectContext::load(workspace.root(), PROJECT_CONTEXT_CAP);
        let runtime = Runtime {
            model: chosen.model,
            approver: front_end.approver,
            hooks,
            events,
            workspace: Arc::new(workspace),
            limits: session_limits(
                &config,
                chosen.limits,
                chosen.profile.profile.defers_tools(),
                chosen.profile.profile != ToolProfile::Full,
            ),
            inbox: Arc::default(),
            tool_specs: Default::default(),
            file_reads: Arc::default(),
            background: Arc::new(alcove_tools::BackgroundShells::new(
                crate::settings::background::resolve(&config.background),
            )),
            calibration: Arc::default(),
        };
        let model_factory = model_factory(config.clone(), id.clone(), health.clone());
        let batch_runner = crate::task_commands::model_batch_runner(common, &config)?;
        let mut supervisor = Supervisor::new(
            agent_limits(&config.agents, chosen.profile.profile),
            definitions,
            Some(dirs.data.join("sessions").join(&id)),
        )
        .with_model_factory(model_factory.clone())
        .with_provider_health(health)
        .with_project_instructions(project.text.clone())
        .with_skills(skills.clone())
        .with_redactor(chosen.redactor.clone())
        .with_observers(observers)
        .with_first_child_number(next_child_number(&dirs.data.join("sessions").join(&id)))
        .with_command(config.agents.command.clone())
        .with_batch_runner(batch_runner);
        // With traces on, a process-runner child continues this trace.
        if let Some(telemetry) = &telemetry {
            let sink = telemetry.sink();
            let env: Arc<alcove_core::ProcessEnv> =
                Arc::new(move |agent, call_id, child| sink.child_env(agent, call_id, child));
            supervisor = supervisor.with_process_env(env);
        }
        let supervisor = Arc::new(supervisor);
        runtime.emit(
            &AgentPath::main(),
            EventKind::SessionStarted {
                session_id: id.clone(),
                model: chosen.name.clone(),
                workspace: runtime.workspace.root().display().to_string(),
                transcript: Some(transcript_path.display().to_string()),
            },
        );
        for message in setup_warnings {
            runtime.emit(&AgentPath::main(), EventKind::Warning { message });
        }
        let mut tools = session_tools(
            &config,
            &permissions,
            &skills,
            &runtime,
            front_end.file_source.clone(),
        )?;
        // Workflows (the full tool profile): the engine is built only when one runs.
        let mut workflows = Vec::new();
        if chosen.profile.profile == ToolProfile::Full {
            workflows = crate::workflow_host::saved_folders(files_root.as_deref(), &dirs.config);
            let prices = crate::workflow_launch::prices(&config, &chosen.name);
            tools.push(Arc::new(crate::workflow_tool::WorkflowTool::new(
                &supervisor,
                &dirs.data,
                workflows.clone(),
                (chosen.name.clone(), prices),
            )));
        }
        // Instructions, then the skill catalog; the memory section comes last
        // (see `main_run`), so its changes leave the rest of the prefix as it was.
        let mut prompt = system_prompt(runtime.workspace.root(), &project);
        prompt.push_str(&skills.catalog());
        if let Some(text) = &common.append_system_prompt {
            prompt.push_str("\n\n");
            prompt.push_str(text);
        }
        Ok(Session {
            id,
            tally,
            opened,
            system_prompt: prompt,
            memory: Arc::new(Memory::new(runtime.workspace.root())),
            skills,
            commands: Arc::new(commands),
            tools,
            profile: chosen.profile,
            model_factory,
            runtime,
            supervisor,
            gate: permissions.gate,
            layers,
            parent: permissions.parent,
            transcript,
            max_turns: permissions.max_turns,
            token_budget: permissions.charter.max_tokens,
            deadline: permissions
                .charter
                .wall_secs
                .map(std::time::Duration::from_secs),
            config,
            dirs,
            history: resumed.history,
            ended_by_overflow: resumed.ended_by_overflow,
            model_name: chosen.name,
            model_aliases,
            context_window: chosen.window,
            mcp,
            startup_reported: std::sync::atomic::AtomicBool::new(false),
            sandbox_report: std::sync::Mutex::new(None),
            probe_start,
            sandbox: permissions.sandbox,
            trust_notice: notice,
            workflows,
        })
    }

    /// Waits for every MCP server (each within its startup timeout) and
    /// warns once about each that failed; starts reporting what the sandbox
    /// probe finds (see [`Session::reported`]).
    pub(crate) async fn ready(&self) {
        let warnings = self.mcp.wait_started().await;
        if !self
            .startup_reported
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            for message in warnings {
                self.runtime
                    .emit(&AgentPath::main(), EventKind::Warning { message });
            }
            let report = sandbox_setup::report_unavailable(
                &self.sandbox,
                &self.runtime,
                self.probe_start.clone(),
            );
            if let Ok(mut slot) = self.sandbox_report.lock() {
                *slot = Some(report);
            }
        }
    }

    /// Waits until what [`Session::ready`] started reporting is reported:
    /// before a session ends, so no start-up warning is lost.
    pub(crate) async fn reported(&self) {
        self.probe_start.now();
        let report = self
            .sandbox_report
            .lock()
            .ok()
            .and_then(|mut slot| slot.take());
        if let Some(report) = report {
            let _ = report.await;
        }
    }

    /// Stops every background command still running (`Bash` with
    /// `run_in_background`) and waits until they are gone: at the
    /// session's end, after its agents were closed.
    pub(crate) async fn stop_background(&self) {
        self.runtime.background.kill_all("the session ended").await;
    }

    /// The main agent's run, cancelled by `cancel`.
    pub(crate) fn main_run(&self, cancel: CancellationToken) -> AgentRun {
        AgentRun {
            path: AgentPath::main(),
            depth: 0,
            description: None,
            agent_type: None,
            tools: {
                // A bare tool name in a deny rule takes the tool away, from children too.
                // The lean and local profiles (small models) leave the
                // everyday extras out.
                let left_out: Vec<&str> = match self.profile.profile {
                    ToolProfile::Full => Vec::new(),
                    ToolProfile::Lean => LEAN_LEAVES_OUT.to_vec(),
                    ToolProfile::Local => [&LEAN_LEAVES_OUT[..], &LOCAL_LEAVES_OUT[..]].concat(),
                };
                let offered = |tool: &Arc<alcove_core::DynTool>| {
                    let name = tool.spec().name.as_str();
                    self.gate.offers(name) && !left_out.contains(&name)
                };
                // MCP tools join the same pool, so children narrow them like
                // built-ins and share their servers by reference.
                let pool = self
                    .tools
                    .iter()
                    .cloned()
                    .chain(self.mcp.tools())
                    .filter(offered)
                    .collect();
                let tools = self
                    .supervisor
                    .tools_for(0, pool, &self.gate)
                    .into_iter()
                    .filter(offered)
                    .collect();
                // Rarely used tools are offered by name only (docs/tools.md).
                alcove_core::with_tool_search(tools, &self.gate, self.runtime.limits.defer_tools)
            },
            gate: self.gate.clone(),
            system_prompt: format!("{}{}", self.system_prompt, self.memory.section()),
            max_turns: self.max_turns,
            cancel,
            token_budget: self.token_budget,
            lineage: None,
            sandbox: self.sandbox.scope,
            effort: None,
        }
    }
}

impl Session {
    /// The session's runtime, on the model `spec` (`provider/name`) when
    /// given: a custom command or skill run by the user may ask for one.
    pub(crate) fn runtime_on(&self, spec: Option<&str>) -> Result<Runtime, String> {
        let mut runtime = self.runtime.clone();
        if let Some(spec) = spec {
            runtime.model =
                (self.model_factory)(spec).map_err(|err| format!("model {spec}: {err}"))?;
        }
        Ok(runtime)
    }
}

impl Session {
    /// A new gate for the main agent in `mode`, built as the session's was
    /// (an editor switching modes mid-session; rules granted "always" are
    /// the caller's to carry over).
    pub(crate) fn gate_in_mode(
        &self,
        common: &CommonArgs,
        mode: PermissionMode,
    ) -> anyhow::Result<Arc<PermissionGate>> {
        session_gate(
            mode,
            &self.layers,
            common,
            self.parent.clone(),
            self.sandbox.auto_allow,
            Arc::new(self.sandbox.confinement.access_policy()),
        )
    }
}

/// Reads an environment variable, treating empty as unset.
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}
