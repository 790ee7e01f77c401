//! The question the interactive UI asks before it starts, in a folder the
//! user has not trusted that has settings of its own which would be
//! ignored (as Claude Code asks): trust it (remembered, as `alcove trust`
//! records it), continue without its settings, or quit. Asked on the
//! plain terminal, before the UI takes the screen.

use std::io::Write;

use crate::CommonArgs;
use crate::config::Dirs;
use crate::trust::{ProjectSettings, Trust};

/// What the user answered.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Trust,
    Without,
    Quit,
}

/// Asks when the folder needs it; `false` when the user chose to quit.
/// A "trust" answer is recorded and makes this run trusted.
pub(super) async fn ask_if_needed(common: &mut CommonArgs) -> anyhow::Result<bool> {
    if common.trust {
        return Ok(true);
    }
    let workspace = common.workspace()?.root().to_owned();
    let dirs = Dirs::from_env().map_err(|err| crate::UsageError(format!("{err:#}")))?;
    // A broken file is reported when the session opens.
    let Ok(settings) = ProjectSettings::of(common, &dirs, &workspace) else {
        return Ok(true);
    };
    if settings.trust == Trust::Trusted || !settings.ignored_any() {
        return Ok(true);
    }
    let notice = settings.notice().unwrap_or_default();
    let question = format!(
        "{notice}\n\nDo you trust the files in this folder?\n  \
         t  trust it (remembered in your config.toml)\n  \
         c  continue without its settings\n  \
         q  quit\n> "
    );
    let answer = tokio::task::spawn_blocking(move || {
        let mut out = std::io::stdout();
        let _ = out.write_all(question.as_bytes());
        let _ = out.flush();
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => Answer::Quit,
            Ok(_) => parse(&line),
        }
    })
    .await?;
    match answer {
        Answer::Trust => {
            crate::trust_cmd::update(&dirs, &workspace, crate::trust_cmd::Level::Trusted)?;
            common.trust = true;
            Ok(true)
        }
        Answer::Without => Ok(true),
        Answer::Quit => Ok(false),
    }
}

fn parse(line: &str) -> Answer {
    match line.trim().to_ascii_lowercase().as_str() {
        "t" | "trust" | "y" | "yes" => Answer::Trust,
        "c" | "continue" | "n" | "no" => Answer::Without,
        _ => Answer::Quit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_clear_answer_trusts() {
        assert_eq!(parse("t\n"), Answer::Trust);
        assert_eq!(parse(" Yes "), Answer::Trust);
        assert_eq!(parse("c"), Answer::Without);
        assert_eq!(parse(""), Answer::Quit);
        assert_eq!(parse("maybe"), Answer::Quit);
    }
}
