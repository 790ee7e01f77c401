//! The `alcove` binary: argument parsing, exit codes, and the front ends.
//!
//! This is the only crate that reads argv and the environment, prints, or
//! exits the process. `exec` runs one prompt headless; the interactive UI
//! (`tui`) renders the same event stream.

mod acp;
mod agent_setup;
mod agents_cmd;
mod attachments;
mod batch_cmd;
mod batch_progress;
mod claude_settings;
mod config;
mod config_check;
mod config_show;
mod context_setup;
mod error_advice;
mod exec;
mod familiar_flags;
mod heap;
mod hook_setup;
mod mcp_cmd;
mod mcp_serve;
mod mcp_setup;
mod model_aliases;
mod model_options;
mod openai_wire;
mod output;
mod output_format;
mod permission_setup;
mod prompt_commands;
mod provider;
mod report;
mod resume;
mod sandbox_setup;
mod session;
mod settings;
mod skills_cmd;
mod structured_output;
mod task_commands;
mod telemetry;
mod trust;
mod trust_cmd;
mod tui;
mod workflow_cmd;
mod workflow_host;
mod workflow_launch;
mod workflow_progress;
mod workflow_tool;
mod worktrees_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// A coding agent for the terminal whose headline is delegation.
#[derive(Debug, Parser)]
#[command(name = "alcove", version, about)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    print: familiar_flags::PrintFlags,
    /// Start the interactive session with this prompt (no subcommand: interactive UI).
    prompt: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

/// Options every subcommand takes.
#[derive(Debug, Clone, Args)]
struct CommonArgs {
    /// The model, written provider/name (anthropic/…, openai/…, ollama/…, or a [providers.<id>] from config).
    #[arg(long, global = true)]
    model: Option<String>,
    /// The workspace folder (default: the current folder).
    #[arg(long = "cd", global = true, value_name = "DIR")]
    cd: Option<PathBuf>,
    /// default | acceptEdits | plan | bypassPermissions | dontAsk.
    #[arg(long, global = true, value_name = "MODE")]
    permission_mode: Option<String>,
    /// Set a config value, e.g. -c max_turns=20 (repeatable).
    #[arg(short = 'c', long = "config", global = true, value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Allow calls matching a permission rule, e.g. --allow 'Bash(git diff:*)' (repeatable;
    /// also --allowedTools).
    #[arg(long, global = true, value_name = "RULE", aliases = ["allowedTools", "allowed-tools"])]
    allow: Vec<String>,
    /// Deny calls matching a permission rule, e.g. --deny 'Bash(rm:*)'; a bare tool name
    /// also hides the tool (repeatable; also --disallowedTools).
    #[arg(long, global = true, value_name = "RULE", aliases = ["disallowedTools", "disallowed-tools"])]
    deny: Vec<String>,
    /// Run every tool call without asking: --permission-mode bypassPermissions.
    #[arg(long, global = true)]
    dangerously_skip_permissions: bool,
    /// `--append-system-prompt` (set by the front end that read it).
    #[arg(skip)]
    append_system_prompt: Option<String>,
    /// The interactive UI's `--max-turns` (set by the front end that read it).
    #[arg(skip)]
    max_turns: Option<u32>,
    /// The permissions of the agent that started this process (set by a
    /// parent alcove's process runner); this session narrows them, never loosens them.
    #[arg(long, global = true, value_name = "POLICY", hide = true)]
    parent_policy: Option<String>,
    /// Where Bash commands run: workspace-write (default) | read-only | off.
    #[arg(long, global = true, value_name = "MODE")]
    sandbox: Option<String>,
    /// Trust this folder for this run: its own hooks, MCP servers, providers, mode and
    /// allow rules apply (`alcove trust` records it for good).
    #[arg(long, global = true, env = "ALCOVE_TRUST",
          value_parser = clap::builder::BoolishValueParser::new())]
    trust: bool,
}

impl CommonArgs {
    /// The workspace: `--cd`, else the current folder, resolved (a missing
    /// or unreadable folder is a usage error naming it).
    fn workspace(&self) -> anyhow::Result<alcove_tools::Workspace> {
        let dir = match &self.cd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()
                .map_err(|err| anyhow::anyhow!("cannot read the current folder: {err}"))?,
        };
        alcove_tools::Workspace::new(&dir)
            .map_err(|err| UsageError(format!("--cd {}: {err}", dir.display())).into())
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one prompt headless and print the final answer.
    Exec(exec::ExecArgs),
    /// Run every task of a JSONL file as a child agent: queued, budgeted, resumable.
    Batch(batch_cmd::BatchArgs),
    /// List the agent definitions with their source files and effective tools.
    Agents(agents_cmd::AgentsArgs),
    /// List the skills and custom commands with their source files.
    Skills(skills_cmd::SkillsArgs),
    /// Inspect the configuration (`alcove config show`, `alcove config check`).
    Config(config_show::ConfigArgs),
    /// MCP: `alcove mcp list`, `alcove mcp add`, `alcove mcp remove`, and `alcove mcp serve`
    /// (alcove as an MCP server that delegates tasks to its agents).
    Mcp(mcp_cmd::McpArgs),
    /// Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim, …).
    Acp(acp::AcpArgs),
    /// Continue an earlier session of this folder: pick one, `--last`, or give its id.
    Resume(tui::ResumeArgs),
    /// Apply a worktree child's branch to the workspace, listing conflicts.
    Merge(worktrees_cmd::MergeArgs),
    /// List (and with --clean remove) the worktrees and branches children left.
    Worktrees(worktrees_cmd::WorktreesArgs),
    /// Trust a folder (default: the workspace), so its own settings apply: `--list`, `--revoke`.
    Trust(trust_cmd::TrustArgs),
    /// Write one self-contained HTML page of a session: its tree over time, each agent's
    /// figures and conversation.
    Report(report::ReportArgs),
    /// Workflow scripts: `alcove workflow run FILE.js`, `alcove workflow list`.
    Workflow(workflow_cmd::WorkflowArgs),
}

/// `alcove exec …` parsed alone: the common case of a start. Parsing it
/// with the whole command tree copied every global option into every
/// subcommand first, most of parsing's time.
#[derive(Debug, Parser)]
#[command(name = "alcove exec")]
struct ExecOnly {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    args: exec::ExecArgs,
}

/// The arguments: an `exec` the short parser accepts takes that path;
/// anything else (another command, `--help`, a mistake) goes to the whole
/// parser, which says what `alcove` says.
fn parse_cli() -> Cli {
    parse_exec_alone(std::env::args_os()).unwrap_or_else(familiar_flags::parse_full)
}

fn parse_exec_alone(args: impl IntoIterator<Item = std::ffi::OsString>) -> Option<Cli> {
    let mut args = args.into_iter().skip(1).peekable();
    if args.peek().is_none_or(|first| first != "exec") {
        return None;
    }
    let only = ExecOnly::try_parse_from(args).ok()?;
    Some(Cli {
        common: only.common,
        print: familiar_flags::PrintFlags::default(),
        prompt: None,
        command: Some(Command::Exec(only.args)),
    })
}

/// A problem with how alcove was invoked or configured: exit status 2.
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

impl From<settings::SettingError> for UsageError {
    fn from(err: settings::SettingError) -> UsageError {
        UsageError(err.0)
    }
}

/// `alcove agents | head -1`: printing into a pipe whose reader has gone
/// is the end of the listing, not a crash. `println!` panics on EPIPE; the
/// panic with that message alone ends alcove quietly. (Not SIGPIPE's
/// default action: a hook that exits without reading its stdin would then
/// kill alcove.)
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    // The sandbox launcher (`alcove __sandbox …`) runs before anything
    // starts a thread: it must be single-threaded to enter namespaces.
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(alcove_sandbox::launcher::SUBCOMMAND)) {
        let code = alcove_sandbox::launcher::main(args.collect());
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    heap::keep_freed_memory();
    quiet_on_closed_stdout();
    // What a command leaves running outside its process group is alcove's
    // to end when it exits (`end_children` below).
    alcove_tools::adopt_orphans();
    let mut cli = parse_cli();
    if let Err(err) = familiar_flags::normalize(&mut cli.common) {
        eprintln!("alcove: {err}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("alcove: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    // The command runs as a task on the runtime's workers, not on this
    // thread: the HTTP connections' tasks run there too, so each streamed
    // chunk wakes the agent on the same thread instead of across two (a
    // third of a long session's CPU was thread switches).
    let command = runtime.spawn(async move {
        match cli.command {
            Some(Command::Exec(args)) => exec::run(&cli.common, args).await,
            Some(Command::Batch(args)) => batch_cmd::run(&cli.common, args).await,
            Some(Command::Agents(args)) => agents_cmd::run(&cli.common, &args),
            Some(Command::Skills(args)) => skills_cmd::run(&cli.common, &args),
            Some(Command::Config(args)) => config_show::run(&cli.common, &args).await,
            Some(Command::Mcp(args)) => mcp_cmd::run(&cli.common, args).await,
            Some(Command::Acp(args)) => acp::run(&cli.common, args).await,
            Some(Command::Resume(args)) => tui::resume(&cli.common, args).await,
            Some(Command::Merge(args)) => worktrees_cmd::merge(&cli.common, &args),
            Some(Command::Worktrees(args)) => worktrees_cmd::worktrees(&cli.common, &args),
            Some(Command::Report(args)) => report::run(&cli.common, &args),
            Some(Command::Trust(args)) => trust_cmd::run(&cli.common, &args),
            Some(Command::Workflow(args)) => workflow_cmd::run(&cli.common, args).await,
            None => familiar_flags::run_top_level(cli.common, cli.print, cli.prompt).await,
        }
    });
    let result = match runtime.block_on(command) {
        Ok(result) => result,
        Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
        Err(err) => Err(anyhow::anyhow!("the command was cancelled: {err}")),
    };
    // Do not wait for tasks still blocked on stdin or a child process.
    runtime.shutdown_background();
    // Nothing alcove started outlives it: what commands left running
    // (setsid, double forks) was handed to alcove as their parents ended.
    alcove_tools::end_children();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("alcove: {err:#}");
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(args: &[&str]) -> Option<String> {
        Cli::try_parse_from(args).ok().map(|cli| format!("{cli:?}"))
    }

    fn alone(args: &[&str]) -> Option<String> {
        parse_exec_alone(args.iter().map(std::ffi::OsString::from)).map(|cli| format!("{cli:?}"))
    }

    #[test]
    fn exec_parsed_alone_is_what_the_whole_parser_gives() {
        for args in [
            &["alcove", "exec", "say hi"][..],
            &[
                "alcove",
                "exec",
                "--json",
                "--max-turns",
                "3",
                "-c",
                "a=1",
                "-c",
                "b=2",
                "p",
            ],
            &[
                "alcove",
                "exec",
                "--model",
                "openai/x",
                "--cd",
                "/tmp",
                "--permission-mode",
                "plan",
                "p",
            ],
            &[
                "alcove",
                "exec",
                "--allow",
                "Bash(git:*)",
                "--deny",
                "Write",
                "--sandbox",
                "off",
            ],
            &["alcove", "exec", "--resume", "abc", "--compact=focus"],
            &["alcove", "exec", "--resume", "abc", "--compact"],
            &[
                "alcove",
                "exec",
                "--parent-policy",
                "{}",
                "--",
                "--not-an-option",
            ],
        ] {
            assert!(alone(args).is_some(), "{args:?} takes the short path");
            assert_eq!(alone(args), full(args), "{args:?}");
        }
    }

    #[test]
    fn anything_but_a_valid_exec_goes_to_the_whole_parser() {
        for args in [
            &["alcove"][..],
            &["alcove", "say hi"],
            &["alcove", "--model", "m", "exec", "p"],
            &["alcove", "exec", "--help"],
            &["alcove", "exec", "--version"],
            &["alcove", "exec", "--no-such-option"],
            &["alcove", "exec", "--compact=x"],
            &["alcove", "batch", "tasks.jsonl"],
        ] {
            assert_eq!(alone(args), None, "{args:?}");
        }
    }
}
