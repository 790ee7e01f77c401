//! `alcove batch`'s live progress on stderr: done/running/queued/failed,
//! tokens, elapsed, ETA. On a terminal one line is redrawn in place;
//! otherwise a line is printed when the counts change, at most once a second.

use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alcove_core::batch::{Batch, Counts};

/// One progress line.
pub(crate) fn line(batch: &Batch) -> String {
    let counts = batch.counts();
    let failed =
        counts.failed + counts.cut_short + counts.refused + counts.cancelled + counts.halted;
    let eta = batch
        .eta()
        .map(|eta| format!(" · ETA {}", clock(eta)))
        .unwrap_or_default();
    format!(
        "batch {}: {}/{} done · {} running · {} queued · {} failed · {} tokens · {} elapsed{eta}",
        batch.id(),
        counts.done(),
        counts.total,
        counts.running,
        counts.queued,
        failed,
        tokens(counts.tokens),
        clock(batch.elapsed()),
    )
}

/// Redraws (terminal) or prints (otherwise) progress until aborted.
pub(crate) async fn show(batch: Arc<Batch>, terminal: bool) {
    let mut last: Option<Counts> = None;
    let mut printed = Instant::now() - Duration::from_secs(1);
    loop {
        let counts = batch.counts();
        if terminal {
            eprint!("\r\x1b[2K{}", line(&batch));
            let _ = std::io::stderr().flush();
        } else if last.as_ref() != Some(&counts) && printed.elapsed() >= Duration::from_secs(1) {
            eprintln!("{}", line(&batch));
            printed = Instant::now();
            last = Some(counts);
        }
        tokio::time::sleep(Duration::from_millis(if terminal { 200 } else { 250 })).await;
    }
}

/// `1:05` or `1:02:03`.
fn clock(duration: Duration) -> String {
    let secs = duration.as_secs();
    if secs >= 3600 {
        format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
    } else {
        format!("{}:{:02}", secs / 60, secs % 60)
    }
}

/// `950`, `34.2k`, `1.5M`.
fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", count as f64 / 1e3),
        _ => format!("{:.1}M", count as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_and_token_counts_read_short() {
        assert_eq!(clock(Duration::from_secs(65)), "1:05");
        assert_eq!(clock(Duration::from_secs(3723)), "1:02:03");
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(34_200), "34.2k");
        assert_eq!(tokens(1_500_000), "1.5M");
    }
}
