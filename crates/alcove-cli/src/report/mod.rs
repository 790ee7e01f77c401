//! `alcove report`: one self-contained HTML file from a session's
//! transcripts, to look at a delegation tree rather than read it.
//!
//! The page shows the whole tree over time (one lane per agent, children
//! under their parent, model requests, tool calls, waits and compactions
//! as bars), each agent's figures (status, turns, tokens, cost, wall time,
//! evidence footer, worktree branch), any agent's conversation on a click,
//! and a summary (the task, the outcome, totals, the costliest agents, the
//! failed commands). It works for sessions that finished, were interrupted
//! or crashed: it shows only what the transcripts hold (whose secrets were
//! redacted when they were written).
//!
//! - `read`: the transcripts, streamed line by line, one event at a time.
//! - `children`: what a parent's transcript says of each child's start and end.
//! - `content`: what a message or tool result holds (blocks, footers).
//! - `runs`: workflow runs, their agents' lanes grouped by phase.
//! - `assemble`: the lanes joined into a [`model::Report`], in tree order.
//! - `model`: what the page shows, with every text capped.
//! - `page`: the HTML file, its CSS and script inline, the data as JSON.

mod assemble;
mod children;
mod content;
mod model;
mod page;
mod read;
#[cfg(test)]
mod read_tests;
mod runs;

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;

use crate::config::Dirs;
use crate::resume::{find_session, list_sessions};
use crate::{CommonArgs, UsageError};

/// `alcove report` arguments.
#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// The session id (or its first characters); without it, the most recent
    /// session of this folder.
    id: Option<String>,
    /// The most recent session of this folder (the default).
    #[arg(long, conflicts_with = "id")]
    last: bool,
    /// Where to write the page (default: alcove-report-<id>.html in the
    /// current folder).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub(crate) fn run(common: &CommonArgs, args: &ReportArgs) -> anyhow::Result<u8> {
    let dirs = Dirs::from_env().map_err(|err| UsageError(format!("{err:#}")))?;
    let workspace = common.workspace()?.root().to_owned();
    // `--last` is what no id means; clap keeps the two apart.
    let info = match (&args.id, args.last) {
        (Some(id), _) => find_session(&dirs.data, id)?,
        (None, _) => list_sessions(&dirs.data, Some(&workspace))
            .into_iter()
            .next()
            .ok_or_else(|| {
                UsageError(format!(
                    "no session in {}; `alcove report <id>` reports one from elsewhere",
                    workspace.display()
                ))
            })?,
    };
    let sessions = dirs.data.join("sessions");
    let transcript = sessions.join(format!("{}.jsonl", info.id));
    // Prices come from today's config; a report without them shows tokens.
    let price = match crate::trust::ProjectSettings::of(common, &dirs, &workspace)
        .and_then(|settings| settings.config())
    {
        Ok(config) => {
            let model = read_model(&transcript);
            model.and_then(|model| config.pricing.get(&model).copied())
        }
        Err(err) => {
            eprintln!("alcove: warning: no prices (the config did not load: {err:#})");
            None
        }
    };
    let report = read::read_session(&transcript, &sessions.join(&info.id), price)?;
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "alcove-report-{}.html",
            info.id.chars().take(8).collect::<String>()
        ))
    });
    let file =
        std::fs::File::create(&out).with_context(|| format!("cannot write {}", out.display()))?;
    let mut writer = std::io::BufWriter::new(file);
    page::write_page(&report, &mut writer)
        .and_then(|()| writer.flush())
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!("{}", out.display());
    Ok(0)
}

/// The session's model (`provider/name`), from its first line.
fn read_model(transcript: &std::path::Path) -> Option<String> {
    use std::io::BufRead as _;
    let file = std::fs::File::open(transcript).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file).read_line(&mut line).ok()?;
    let event: serde_json::Value = serde_json::from_str(&line).ok()?;
    event.get("model")?.as_str().map(str::to_owned)
}
