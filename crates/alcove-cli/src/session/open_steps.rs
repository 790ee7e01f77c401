//! The steps `Session::open` takes, each resolving one concern once into
//! values the session and its children share: the settings, the
//! permissions, the model, the catalogs (definitions, skills, commands),
//! the sinks, the limits and the session's own tools; and the gate in a
//! mode, which a mode switch builds again.

use super::*;

/// Starts OpenTelemetry export when a collector is named (config or the
/// standard variables); a session whose export cannot start goes on with a
/// warning. A process-runner child continues the trace its parent passed.
pub(super) fn start_telemetry(
    config: &Config,
    warnings: &mut Vec<String>,
) -> Option<crate::telemetry::Telemetry> {
    let target = crate::settings::telemetry::Target::resolve(&config.telemetry, env_var)?;
    let parent = env_var(crate::telemetry::TRACEPARENT_ENV);
    match crate::telemetry::Telemetry::start(&target, parent.as_deref()) {
        Ok(telemetry) => Some(telemetry),
        Err(message) => {
            warnings.push(message);
            None
        }
    }
}

/// The workspace and the configuration, read once and held to the
/// folder's trust (`trust.rs`): nothing after this step reads a project
/// setting the trust decision did not leave.
pub(super) struct Settings {
    pub(super) workspace: alcove_tools::Workspace,
    pub(super) dirs: Dirs,
    pub(super) config: Config,
    /// The config layers, each with its source: rules, hooks, MCP servers
    /// and the sandbox read them.
    pub(super) layers: Vec<crate::config::Layer>,
    /// The workspace when trusted: where its hook and MCP files are read.
    pub(super) files_root: Option<PathBuf>,
    /// What an untrusted folder's settings asked for and did not get.
    pub(super) notice: Option<String>,
    /// Unknown config keys, each with its file and line (`config_check`),
    /// found off the start-up path.
    pub(super) warnings: std::thread::JoinHandle<Vec<String>>,
}

impl Settings {
    pub(super) fn read(common: &CommonArgs) -> anyhow::Result<Settings> {
        let workspace = common.workspace()?;
        let dirs = Dirs::from_env().map_err(|err| UsageError(format!("{err:#}")))?;
        let usage = |err: anyhow::Error| UsageError(format!("{err:#}"));
        let project = ProjectSettings::of(common, &dirs, workspace.root()).map_err(usage)?;
        let config = project.config().map_err(usage)?;
        let warnings =
            crate::config_check::session_warnings(&dirs, workspace.root(), &common.overrides);
        Ok(Settings {
            files_root: project.files_root().map(ToOwned::to_owned),
            notice: project.notice(),
            workspace,
            dirs,
            config,
            layers: project.layers,
            warnings,
        })
    }
}

/// What the main agent may do, resolved once: its mode, the policy a parent
/// alcove passed and the budgets in it, the sandbox, the gate, the turn
/// limit, and the environment policy commands, hooks and MCP servers share.
pub(super) struct Permissions {
    pub(super) mode: PermissionMode,
    pub(super) parent: Option<ParentPolicy>,
    pub(super) charter: Charter,
    pub(super) sandbox: sandbox_setup::SandboxSetup,
    pub(super) gate: Arc<PermissionGate>,
    pub(super) max_turns: u32,
    pub(super) env: EnvPolicy,
}

impl Permissions {
    pub(super) fn resolve(
        common: &CommonArgs,
        config: &Config,
        layers: &[crate::config::Layer],
        root: &std::path::Path,
        max_turns: Option<u32>,
    ) -> anyhow::Result<Permissions> {
        let mode = permission_setup::mode(common, config)?;
        let parent = parent_policy(common)?;
        // A parent alcove's budgets for this one are ceilings on its own.
        let charter = parent
            .as_ref()
            .map(ParentPolicy::charter)
            .unwrap_or_default();
        // A parent alcove's sandbox is a ceiling for this one's.
        let ceiling = parent.as_ref().and_then(ParentPolicy::sandbox);
        let sandbox = sandbox_setup::setup(layers, common, root, ceiling)?;
        // One access policy: the file tools are held to what the sandbox
        // lets commands read and write.
        let access = Arc::new(sandbox.confinement.access_policy());
        let gate = session_gate(
            mode,
            layers,
            common,
            parent.clone(),
            sandbox.auto_allow,
            access,
        )?;
        let max_turns = crate::settings::turns::max_turns(max_turns, config, charter.max_turns)?;
        Ok(Permissions {
            mode,
            parent,
            charter,
            sandbox,
            gate,
            max_turns,
            env: permission_setup::env_policy(config),
        })
    }
}

/// The main agent's model, connected: its options, window and the
/// context limits from it, its tool profile, the session's redactor (the
/// secrets no sink writes), and the aliases the catalogs resolve their
/// `model:` fields with.
pub(super) struct ModelChoice {
    pub(super) model: Arc<dyn alcove_model::Model>,
    /// `provider/model`.
    pub(super) name: String,
    pub(super) window: WindowChoice,
    pub(super) limits: alcove_core::ContextLimits,
    pub(super) profile: ProfileChoice,
    pub(super) redactor: Arc<alcove_core::Redactor>,
    pub(super) aliases: Aliases,
}

impl ModelChoice {
    pub(super) async fn connect(
        common: &CommonArgs,
        config: &Config,
        env: &EnvPolicy,
        session_id: &str,
        health: &Arc<alcove_model::ProviderHealth>,
    ) -> anyhow::Result<ModelChoice> {
        let mut provider_config = provider::resolve(common.model.as_deref(), config).await?;
        model_options(&mut provider_config, config, session_id, health);
        let name = format!("{}/{}", provider_config.id, provider_config.model);
        let aliases = Aliases::new(
            &provider_config.id,
            provider_config.protocol,
            &config.model_aliases,
        );
        let redactor = Arc::new(permission_setup::redactor(
            env,
            provider_config.api_key.as_deref(),
        ));
        let window = context_setup::window(config, &provider_config).await;
        let limits = context_setup::limits(config, window.tokens)?;
        let profile = choose_profile(config, &provider_config, &window)?;
        provider_config.context_window = Some(window.tokens);
        let model =
            alcove_model::connect(provider_config).map_err(|err| UsageError(err.to_string()))?;
        Ok(ModelChoice {
            model,
            name,
            window,
            limits,
            profile,
            redactor,
            aliases,
        })
    }
}

/// A provider's options from the config (timeouts, temperature, wire,
/// effort) and its prompt cache key: the same for the main agent's model
/// and every other a child or command asks for.
pub(super) fn model_options(
    provider_config: &mut alcove_model::ProviderConfig,
    config: &Config,
    id: &str,
    health: &Arc<alcove_model::ProviderHealth>,
) {
    crate::model_options::apply(provider_config, config);
    provider_config.health = Some(health.clone());
    provider_config.prompt_cache_key = context_setup::cache_key(config, &provider_config.id, id);
}

/// Builds a client for another `provider/name` (a child's or a command's
/// `model`), with the options [`model_options`] gives the main one.
pub(super) fn model_factory(
    config: Config,
    id: String,
    health: Arc<alcove_model::ProviderHealth>,
) -> Arc<ModelFactory> {
    Arc::new(move |spec: &str| {
        let mut provider_config = provider::resolve_spec(spec, &config).map_err(|err| err.0)?;
        model_options(&mut provider_config, &config, &id, &health);
        // A child on another model compacts against that model's window
        // (config or table: the factory does not ask servers).
        provider_config.context_window =
            Some(context_setup::child_window(&config, &provider_config).tokens);
        alcove_model::connect(provider_config).map_err(|err| err.to_string())
    })
}

/// Agent definitions, skills and custom commands, their `model:` fields
/// resolved through the session's aliases; what they warn about goes to
/// `warnings`.
pub(super) fn load_catalogs(
    dirs: &Dirs,
    root: &std::path::Path,
    aliases: &mut Aliases,
    warnings: &mut Vec<String>,
) -> (Definitions, Skills, Commands) {
    let (mut definitions, definition_warnings) = agents_cmd::load(dirs, root);
    warnings.extend(definition_warnings);
    let (mut skills, mut commands, skill_warnings) = skills_cmd::load(dirs, root);
    warnings.extend(skill_warnings);
    definitions.resolve_models(|spec| aliases.resolve(spec));
    skills.resolve_models(|spec| aliases.resolve(spec));
    commands.resolve_models(|spec| aliases.resolve(spec));
    warnings.extend(aliases.warning());
    (definitions, skills, commands)
}

/// Where the session's events go: the transcript, the observers (the
/// front end's sinks and the trace exporter, which children's events reach
/// too) and the sandbox probe's trigger.
pub(super) struct Sinks {
    pub(super) telemetry: Option<crate::telemetry::Telemetry>,
    pub(super) observers: Arc<dyn EventSink>,
    pub(super) probe_start: Arc<sandbox_setup::ProbeStart>,
    pub(super) events: Arc<dyn EventSink>,
}

impl Sinks {
    pub(super) fn new(
        config: &Config,
        transcript: &Arc<Transcript>,
        front_end: Vec<Arc<dyn EventSink>>,
        warnings: &mut Vec<String>,
    ) -> Sinks {
        let telemetry = start_telemetry(config, warnings);
        let mut observers = FanOut::default();
        if let Some(telemetry) = &telemetry {
            observers = observers.with(telemetry.sink());
        }
        for sink in front_end {
            observers = observers.with(sink);
        }
        // Every sink but the transcripts (which redact their lines with the
        // same redactor) sees the stream through the one redaction.
        let observers =
            alcove_core::RedactingSink::wrap(transcript.redactor().clone(), Arc::new(observers));
        let probe_start = Arc::new(sandbox_setup::ProbeStart::default());
        let events: Arc<dyn EventSink> = Arc::new(
            FanOut::default()
                .with(transcript.clone())
                .with(observers.clone())
                .with(probe_start.clone()),
        );
        if let Some(telemetry) = &telemetry {
            telemetry.warn_to(events.clone());
        }
        Sinks {
            telemetry,
            observers,
            probe_start,
            events,
        }
    }
}

/// The loop's limits from the config, with the model's context limits and
/// what its tool profile asks: whether it defers tools, and whether a reply
/// without a tool call is told once to read the files a message names.
pub(super) fn session_limits(
    config: &Config,
    context: alcove_core::ContextLimits,
    defer_tools: bool,
    remind_to_read: bool,
) -> Limits {
    Limits {
        max_tokens: crate::settings::model::max_tokens(config),
        result_cap: RESULT_CAP,
        stop_hook_limit: crate::settings::hooks::stop_hook_limit(config),
        max_tool_calls_per_reply: crate::settings::turns::max_tool_calls_per_reply(config),
        context,
        defer_tools,
        remind_to_read,
    }
}

/// The session's own tools, built once: the built-ins (Bash confined and
/// with the environment policy), `WebFetch` (and `WebSearch` when
/// `[web] search_url` is set), and `Skill` when there is a skill the model
/// may invoke. [`Session::main_run`] adds the MCP servers' tools.
pub(super) fn session_tools(
    config: &Config,
    permissions: &Permissions,
    skills: &Arc<Skills>,
    runtime: &Runtime,
    file_source: Option<Arc<dyn alcove_tools::FileSource>>,
) -> anyhow::Result<Vec<Arc<alcove_core::DynTool>>> {
    let confinement = Some(permissions.sandbox.confinement.clone());
    let mut tools =
        alcove_tools::builtin_tools_confined(permissions.env.clone(), confinement, file_source);
    tools.push(Arc::new(alcove_core::WebFetch::default()));
    if let Some(url) = crate::settings::web::search_url(&config.web) {
        tools.push(Arc::new(
            alcove_core::WebSearch::new(url).map_err(UsageError)?,
        ));
    }
    if skills
        .all()
        .iter()
        .any(|skill| !skill.disable_model_invocation)
    {
        tools.push(Arc::new(SkillTool::new(
            skills.clone(),
            runtime.approver.clone(),
            permissions.gate.clone(),
        )));
    }
    Ok(tools)
}

/// The tools `tool_profile = "lean"` leaves out of the main agent's (and
/// so its children's) pool: each costs prefill on a small local model.
pub(super) const LEAN_LEAVES_OUT: [&str; 5] = [
    alcove_tools::TODO_WRITE,
    alcove_tools::BASH_OUTPUT,
    alcove_tools::KILL_SHELL,
    alcove_core::WEB_FETCH,
    alcove_core::WEB_SEARCH,
];

/// What `tool_profile = "local"` leaves out besides: the batch tools, a
/// sixth of a small model's first request (the background agents stay).
pub(super) const LOCAL_LEAVES_OUT: [&str; 2] = ["spawn_batch", "retry_batch"];

/// The main agent's gate in `mode`: the config's and the flags' rules, and
/// the policy of a parent alcove (which it narrows, never loosens).
pub(super) fn session_gate(
    mode: PermissionMode,
    layers: &[crate::config::Layer],
    common: &CommonArgs,
    parent: Option<ParentPolicy>,
    sandboxed_commands: bool,
    access: Arc<alcove_sandbox::AccessPolicy>,
) -> anyhow::Result<Arc<PermissionGate>> {
    let gate = permission_setup::gate(mode, layers, common)?;
    // An alcove started by another's process runner narrows the policy
    // its parent passed, never loosens it.
    Ok(match parent {
        Some(policy) => {
            let mut gate = policy
                .gate(std::env::var_os("HOME").map(PathBuf::from))
                .map_err(UsageError)?
                .narrowed(Some(gate.mode()), gate.rules().clone());
            // Its own commands run in its own sandbox.
            if let Some(level) = Arc::get_mut(&mut gate) {
                level.set_sandboxed_commands(sandboxed_commands);
                level.set_access(access);
            }
            gate
        }
        None => Arc::new(
            gate.with_sandboxed_commands(sandboxed_commands)
                .with_access(access),
        ),
    })
}

/// The policy a parent alcove passed (`--parent-policy`, or
/// `ALCOVE_PARENT_POLICY` when the flag is absent).
pub(super) fn parent_policy(common: &CommonArgs) -> Result<Option<ParentPolicy>, UsageError> {
    let text = common.parent_policy.clone().or_else(|| env_var(POLICY_ENV));
    text.map(|text| ParentPolicy::parse(&text).map_err(UsageError))
        .transpose()
}
