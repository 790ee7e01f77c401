//! `alcove exec`: one prompt, run headless to the end.
//!
//! Exit status: 0 completed, 1 runtime failure, 2 usage or configuration
//! error, 3 stopped by the turn cap, 130 interrupted (SIGINT), 143
//! terminated (SIGTERM).

use std::io::Read as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use alcove_core::{
    AgentLimits, AgentRun, Definitions, EventSink, FanOut, Limits, ModelFactory, NoApprover,
    NoHooks, PermissionGate, PermissionMode, ProjectContext, Runtime, Supervisor, Transcript,
    run_agent, system_prompt,
};
use alcove_protocol::{AgentPath, EventKind, Message, RunStatus};
use alcove_tools::Workspace;
use anyhow::Context;
use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::output::{JsonLines, Progress, Trace};
use crate::{CommonArgs, UsageError, config, provider};

/// Project instructions beyond this many bytes are cut (and the cut is stated).
const PROJECT_CONTEXT_CAP: usize = 64 * 1024;
/// Tool results beyond this many bytes keep their head and tail only.
const RESULT_CAP: usize = 64 * 1024;
const DEFAULT_MAX_TURNS: u32 = 100;
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// `alcove exec` arguments.
#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// The prompt; `-` or nothing reads it from stdin.
    prompt: Option<String>,
    /// Print every event as a JSON line on stdout (schema: docs/events.md).
    #[arg(long)]
    json: bool,
    /// The most model requests the main agent may make (default 100).
    #[arg(long, value_name = "N")]
    max_turns: Option<u32>,
}

pub(crate) async fn run(common: &CommonArgs, args: ExecArgs) -> anyhow::Result<u8> {
    let prompt = read_prompt(args.prompt)?;
    let workspace_dir = match &common.cd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current folder")?,
    };
    let workspace = Workspace::new(&workspace_dir)
        .map_err(|err| UsageError(format!("--cd {}: {err}", workspace_dir.display())))?;
    let dirs = config::Dirs::from_env().map_err(|err| UsageError(format!("{err:#}")))?;
    let config = config::load(&dirs, workspace.root(), &common.overrides)
        .map_err(|err| UsageError(format!("{err:#}")))?;

    let mode_text = common
        .permission_mode
        .clone()
        .or_else(|| config.permission_mode.clone());
    let mode = match mode_text.as_deref() {
        None => PermissionMode::Default,
        Some(text) => PermissionMode::parse(text).ok_or_else(|| {
            UsageError(format!(
                "unknown permission mode `{text}`; use default, acceptEdits, plan, bypassPermissions or dontAsk"
            ))
        })?,
    };
    let max_turns = args
        .max_turns
        .or(config.max_turns)
        .unwrap_or(DEFAULT_MAX_TURNS);
    if max_turns == 0 {
        return Err(UsageError("--max-turns must be at least 1".to_owned()).into());
    }

    let mut provider_config = provider::resolve(common.model.as_deref(), &config).await?;
    apply_retry_settings(&mut provider_config.retry, &config.retry);
    let model_name = format!("{}/{}", provider_config.id, provider_config.model);
    let model =
        alcove_model::connect(provider_config).map_err(|err| UsageError(err.to_string()))?;

    let session_id = uuid::Uuid::new_v4().to_string();
    let transcript_path: PathBuf = dirs
        .data
        .join("sessions")
        .join(format!("{session_id}.jsonl"));
    let transcript =
        Arc::new(Transcript::create(&transcript_path).with_context(|| {
            format!("cannot create the transcript {}", transcript_path.display())
        })?);
    let mut sinks = FanOut::default().with(transcript.clone());
    sinks = if args.json {
        sinks.with(Arc::new(JsonLines))
    } else {
        sinks.with(Arc::new(Progress))
    };
    if ["TRACE", "ALCOVE_TRACE"]
        .iter()
        .any(|var| std::env::var(var).is_ok_and(|value| value == "1"))
    {
        sinks = sinks.with(Arc::new(Trace));
    }
    let events: Arc<dyn EventSink> = Arc::new(sinks);

    let project = ProjectContext::load(workspace.root(), PROJECT_CONTEXT_CAP);
    let runtime = Runtime {
        model,
        approver: Arc::new(NoApprover),
        hooks: Arc::new(NoHooks),
        events,
        workspace: Arc::new(workspace),
        limits: Limits {
            max_tokens: config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            result_cap: RESULT_CAP,
            stop_hook_limit: 3,
        },
    };
    let limits = agent_limits(&config.agents);
    let factory_config = config.clone();
    let model_factory: Arc<ModelFactory> = Arc::new(move |spec: &str| {
        let mut provider_config =
            provider::resolve_spec(spec, &factory_config).map_err(|err| err.0)?;
        apply_retry_settings(&mut provider_config.retry, &factory_config.retry);
        alcove_model::connect(provider_config).map_err(|err| err.to_string())
    });
    let supervisor = Arc::new(
        Supervisor::new(
            runtime.clone(),
            limits,
            Definitions::default(),
            Some(dirs.data.join("sessions").join(&session_id)),
        )
        .with_model_factory(model_factory)
        .with_project_instructions(project.text.clone()),
    );
    let main = AgentPath::main();
    runtime.emit(
        &main,
        EventKind::SessionStarted {
            session_id: session_id.clone(),
            model: model_name,
            workspace: runtime.workspace.root().display().to_string(),
            transcript: Some(transcript_path.display().to_string()),
        },
    );

    let cancel = CancellationToken::new();
    let signal = tokio::spawn(watch_signals(cancel.clone()));
    let gate = Arc::new(PermissionGate::new(mode));
    let run = AgentRun {
        path: main.clone(),
        depth: 0,
        description: None,
        agent_type: None,
        tools: supervisor.tools_for(0, alcove_tools::builtin_tools(), &gate),
        gate,
        system_prompt: system_prompt(runtime.workspace.root(), &project),
        max_turns,
        cancel,
        token_budget: None,
    };
    let outcome = run_agent(&runtime, &run, Vec::new(), Message::user_text(prompt)).await;
    let signal_code = if outcome.status == RunStatus::Aborted {
        signal.await.ok().flatten()
    } else {
        signal.abort();
        None
    };

    runtime.emit(
        &main,
        EventKind::SessionEnded {
            status: outcome.status,
            turns: outcome.turns,
            usage: outcome.usage,
            error: outcome.error.clone(),
        },
    );
    if let Some(failure) = transcript.failure() {
        eprintln!("alcove: warning: {failure}");
    }
    let final_text = outcome.last_text().unwrap_or_default();
    match outcome.status {
        RunStatus::Completed => {
            if !args.json {
                println!("{final_text}");
            }
            Ok(0)
        }
        RunStatus::MaxTurns => {
            if !args.json && !final_text.is_empty() {
                println!("{final_text}");
            }
            eprintln!(
                "alcove: stopped after {} model turns (--max-turns {max_turns}) before the task was finished",
                outcome.turns
            );
            Ok(3)
        }
        RunStatus::Aborted => {
            eprintln!(
                "alcove: interrupted; the transcript is {}",
                transcript.path().display()
            );
            Ok(signal_code.unwrap_or(130))
        }
        RunStatus::Failed | RunStatus::Budget => {
            eprintln!(
                "alcove: the model failed: {}",
                outcome.error.unwrap_or_default()
            );
            Ok(1)
        }
    }
}

fn apply_retry_settings(retry: &mut alcove_model::RetryPolicy, settings: &config::RetryEntry) {
    if let Some(max_retries) = settings.max_retries {
        retry.max_retries = max_retries;
    }
    if let Some(ms) = settings.base_delay_ms {
        retry.base_delay = Duration::from_millis(ms);
    }
    if let Some(ms) = settings.max_delay_ms {
        retry.max_delay = Duration::from_millis(ms);
    }
    if let Some(ms) = settings.idle_timeout_ms {
        retry.idle_timeout = Duration::from_millis(ms);
    }
}

fn agent_limits(settings: &config::AgentsEntry) -> AgentLimits {
    let defaults = AgentLimits::default();
    AgentLimits {
        max_depth: settings.max_depth.unwrap_or(defaults.max_depth),
        max_turns: settings.max_turns.unwrap_or(defaults.max_turns),
        max_concurrent: settings.max_concurrent.unwrap_or(defaults.max_concurrent),
        timeout: settings
            .timeout_secs
            .filter(|secs| *secs > 0.0)
            .map(Duration::from_secs_f64),
        max_tokens: settings.max_tokens,
    }
}

fn read_prompt(argument: Option<String>) -> anyhow::Result<String> {
    let prompt = match argument {
        Some(prompt) if prompt != "-" => prompt,
        _ => {
            let mut prompt = String::new();
            std::io::stdin()
                .read_to_string(&mut prompt)
                .context("cannot read the prompt from stdin")?;
            prompt
        }
    };
    if prompt.trim().is_empty() {
        return Err(UsageError(
            "the prompt is empty; pass it as an argument or on stdin".to_owned(),
        )
        .into());
    }
    Ok(prompt)
}

/// Cancels the run on SIGINT or SIGTERM and returns the exit status that
/// signal calls for.
async fn watch_signals(cancel: CancellationToken) -> Option<u8> {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return None;
    };
    let code = tokio::select! {
        _ = interrupt.recv() => 130,
        _ = terminate.recv() => 143,
    };
    cancel.cancel();
    Some(code)
}
