//! The `alcove` binary: argument parsing, exit codes, and the front ends.
//!
//! This is the only crate that reads argv and the environment, prints, or
//! exits the process. `exec` runs one prompt headless; the interactive UI
//! comes later on the same event stream.

mod config;
mod exec;
mod output;
mod provider;
mod session;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// A coding agent for the terminal whose headline is delegation.
#[derive(Debug, Parser)]
#[command(name = "alcove", version, about)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
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
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one prompt headless and print the final answer.
    Exec(exec::ExecArgs),
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

fn main() -> ExitCode {
    let cli = Cli::parse();
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
    let result = runtime.block_on(async {
        match cli.command {
            Some(Command::Exec(args)) => exec::run(&cli.common, args).await,
            None => Err(anyhow::Error::new(UsageError(
                "the interactive UI is not built yet; use `alcove exec \"prompt\"`".to_owned(),
            ))),
        }
    });
    // Do not wait for tasks still blocked on stdin or a child process.
    runtime.shutdown_background();
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
