//! How one run is measured, and the statistics every figure shares.
//!
//! CPU time and peak RSS come from `getrusage(RUSAGE_CHILDREN)` taken by a
//! wrapper — this same binary started as `alcove-bench __rusage OUT -- CMD…`
//! — whose only child is the measured process, so the figures cover exactly
//! that run: alcove and the tool processes it waited for (a Bash call's
//! shell), nothing of the driver or the fake server. Wall-clock latencies
//! come from the fake server's arrival timestamps instead (see `scenarios`).

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use nix::sys::resource::{UsageWho, getrusage};
use serde_json::json;

/// What the wrapper saw of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Usage {
    /// User plus system CPU time.
    pub(crate) cpu: Duration,
    /// Peak resident set size of the largest process, in KiB.
    pub(crate) max_rss_kib: u64,
}

/// The wrapper mode: runs `args[2..]` (after `OUT --`), then writes the
/// RUSAGE_CHILDREN figures to OUT as JSON and exits with the child's status.
pub(crate) fn wrapper_main(args: &[OsString]) -> anyhow::Result<i32> {
    let [out, dashes, program, rest @ ..] = args else {
        bail!("usage: alcove-bench __rusage OUT -- PROGRAM [ARGS…]");
    };
    if dashes != "--" {
        bail!("usage: alcove-bench __rusage OUT -- PROGRAM [ARGS…]");
    }
    let status = Command::new(program)
        .args(rest)
        .status()
        .with_context(|| format!("cannot start {}", program.to_string_lossy()))?;
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage")?;
    let micros = |tv: nix::sys::time::TimeVal| tv.tv_sec() * 1_000_000 + tv.tv_usec();
    let report = json!({
        "user_us": micros(usage.user_time()),
        "sys_us": micros(usage.system_time()),
        "max_rss_kib": usage.max_rss(),
    });
    std::fs::write(out, report.to_string()).with_context(|| format!("cannot write {out:?}"))?;
    Ok(status.code().unwrap_or(128))
}

/// Runs `inner` (its program, arguments, environment and folder) under the
/// wrapper and returns its usage. A run that exits non-zero is an error that
/// quotes its stderr.
pub(crate) fn run_measured(inner: &Command, scratch: &Path) -> anyhow::Result<Usage> {
    run_measured_output(inner, scratch).map(|(usage, _)| usage)
}

/// [`run_measured`], also returning what the run wrote on stdout.
pub(crate) fn run_measured_output(
    inner: &Command,
    scratch: &Path,
) -> anyhow::Result<(Usage, Vec<u8>)> {
    let out = scratch.join("rusage.json");
    let _ = std::fs::remove_file(&out);
    let mut command = Command::new(std::env::current_exe().context("cannot find myself")?);
    command
        .arg("__rusage")
        .arg(&out)
        .arg("--")
        .arg(inner.get_program())
        .args(inner.get_args());
    for (key, value) in inner.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    if let Some(dir) = inner.get_current_dir() {
        command.current_dir(dir);
    }
    let output = command
        .stdin(Stdio::null())
        .output()
        .context("cannot run the wrapper")?;
    if !output.status.success() {
        bail!(
            "{:?} exited with {}: {}",
            inner.get_args().collect::<Vec<_>>(),
            output.status,
            tail(&String::from_utf8_lossy(&output.stderr), 2000)
        );
    }
    let text = std::fs::read_to_string(&out).context("the wrapper wrote no figures")?;
    let value: serde_json::Value = serde_json::from_str(&text)?;
    let field = |name: &str| value[name].as_u64().unwrap_or(0);
    let usage = Usage {
        cpu: Duration::from_micros(field("user_us") + field("sys_us")),
        max_rss_kib: field("max_rss_kib"),
    };
    Ok((usage, output.stdout))
}

/// CPU time of the driver's own waited children so far (to time commands
/// the driver runs directly, by difference).
pub(crate) fn children_cpu() -> anyhow::Result<Duration> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage")?;
    let micros = |tv: nix::sys::time::TimeVal| {
        u64::try_from(tv.tv_sec() * 1_000_000 + tv.tv_usec()).unwrap_or(0)
    };
    Ok(Duration::from_micros(
        micros(usage.user_time()) + micros(usage.system_time()),
    ))
}

/// The median (the mean of the middle two for an even count); 0 when empty.
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Milliseconds as a float.
pub(crate) fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The last `n` bytes of `text` (on a character boundary).
pub(crate) fn tail(text: &str, n: usize) -> &str {
    let mut start = text.len().saturating_sub(n);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(tail("héllo", 4), "llo");
    }
}
