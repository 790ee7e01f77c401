//! `[sandbox]` (or `sandbox = "<mode>"`) and `[limits]`: how commands are
//! confined and what each may use.
//!
//! Layering: the user's file, the environment and `-c` replace key by
//! key; a project's file lives in the workspace commands may write, so
//! from it only `mode` is read, and it counts only when stricter (its
//! other keys are a warning). `--sandbox` wins over the config's mode.
//! `sandbox_setup.rs` turns the result into the confinement and probe.

use alcove_tools::{ResourceLimits, SandboxMode};
use serde::Deserialize;

use super::{SettingError, Untrusted};
use crate::config::{Layer, LayerKind};

/// An untrusted project keeps only the mode (taken only when stricter).
pub(crate) static UNTRUSTED: [(&str, Untrusted); 1] = [("sandbox", Untrusted::Only(&["mode"]))];

/// `[sandbox]`, or `sandbox = "<mode>"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum SandboxEntry {
    Mode(String),
    Table(SandboxTable),
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct SandboxTable {
    /// `workspace-write` (default), `read-only` or `off`.
    pub(crate) mode: Option<String>,
    /// Whether commands may use the network (default false).
    pub(crate) network: Option<bool>,
    /// With the network off: a loopback of their own (default false).
    pub(crate) allow_loopback: Option<bool>,
    /// What commands may not read (replaces the default credential list).
    pub(crate) deny_read: Option<Vec<String>>,
    /// More folders commands may write.
    pub(crate) writable_roots: Option<Vec<String>>,
    /// Whether sandboxed Bash runs without approval unless a rule asks
    /// (default true).
    pub(crate) auto_allow: Option<bool>,
}

/// `[limits]`: per command; 0 is no limit.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct LimitsTable {
    cpu_secs: Option<u64>,
    address_space_mb: Option<u64>,
    processes: Option<u64>,
    file_size_mb: Option<u64>,
    open_files: Option<u64>,
}

/// The sandbox settings of every layer, merged by the rule above.
#[derive(Debug, Default)]
pub(crate) struct SandboxSettings {
    /// The user's, the environment's and `-c`'s keys.
    pub(crate) table: SandboxTable,
    /// A project file's mode, which counts only when stricter.
    pub(crate) project_mode: Option<SandboxMode>,
    /// `[limits]` over the defaults.
    pub(crate) limits: ResourceLimits,
    /// The project keys that were ignored.
    pub(crate) warnings: Vec<String>,
}

/// Reads `[sandbox]` and `[limits]` from every layer.
pub(crate) fn read(layers: &[Layer]) -> Result<SandboxSettings, SettingError> {
    let mut warnings = Vec::new();
    let mut table = SandboxTable::default();
    let mut project_mode = None;
    let mut limits = ResourceLimits::default();
    for layer in layers {
        let is_project = matches!(layer.kind, LayerKind::Project(_));
        if let Some(value) = layer.table.get("sandbox") {
            let entry: SandboxEntry = value
                .clone()
                .try_into()
                .map_err(|err| SettingError(format!("{}: [sandbox]: {err}", layer.source)))?;
            let own = match entry {
                SandboxEntry::Mode(mode) => SandboxTable {
                    mode: Some(mode),
                    ..SandboxTable::default()
                },
                SandboxEntry::Table(own) => own,
            };
            if is_project {
                project_mode = own
                    .mode
                    .as_deref()
                    .map(|text| parse_mode(text, &layer.source))
                    .transpose()?;
                if own.network.is_some()
                    || own.allow_loopback.is_some()
                    || own.deny_read.is_some()
                    || own.writable_roots.is_some()
                    || own.auto_allow.is_some()
                {
                    warnings.push(format!(
                        "{}: only sandbox.mode is read from a project's config (and only when \
                         stricter); its other [sandbox] keys are ignored",
                        layer.source
                    ));
                }
            } else {
                merge(&mut table, own);
            }
        }
        if let Some(value) = layer.table.get("limits") {
            let own: LimitsTable = value
                .clone()
                .try_into()
                .map_err(|err| SettingError(format!("{}: [limits]: {err}", layer.source)))?;
            let set = |slot: &mut Option<u64>, value: Option<u64>| {
                if value.is_some() {
                    *slot = value;
                }
            };
            set(&mut limits.cpu_secs, own.cpu_secs);
            set(&mut limits.address_space_mb, own.address_space_mb);
            set(&mut limits.processes, own.processes);
            set(&mut limits.file_size_mb, own.file_size_mb);
            set(&mut limits.open_files, own.open_files);
        }
    }
    Ok(SandboxSettings {
        table,
        project_mode,
        limits,
        warnings,
    })
}

/// The mode: `flag` (`--sandbox`), else `sandbox.mode`, else
/// `workspace-write`; a project's mode when stricter.
pub(crate) fn mode(
    flag: Option<&str>,
    settings: &SandboxSettings,
) -> Result<SandboxMode, SettingError> {
    let mut mode = match (flag, &settings.table.mode) {
        (Some(text), _) => parse_mode(text, "--sandbox")?,
        (None, Some(text)) => parse_mode(text, "sandbox.mode")?,
        (None, None) => SandboxMode::default(),
    };
    if let Some(project) = settings.project_mode {
        mode = mode.stricter(project);
    }
    Ok(mode)
}

pub(crate) fn parse_mode(text: &str, source: &str) -> Result<SandboxMode, SettingError> {
    SandboxMode::parse(text).ok_or_else(|| {
        SettingError(format!(
            "{source}: unknown sandbox mode `{text}`; use workspace-write, read-only or off"
        ))
    })
}

fn merge(into: &mut SandboxTable, from: SandboxTable) {
    into.mode = from.mode.or(into.mode.take());
    into.network = from.network.or(into.network);
    into.allow_loopback = from.allow_loopback.or(into.allow_loopback);
    into.deny_read = from.deny_read.or(into.deny_read.take());
    into.writable_roots = from.writable_roots.or(into.writable_roots.take());
    into.auto_allow = from.auto_allow.or(into.auto_allow);
}

/// The defaults `config show` prints.
pub(crate) fn describe() -> Vec<(String, toml::Value)> {
    let mut lines = vec![
        (
            "sandbox.mode".to_owned(),
            SandboxMode::default().as_str().into(),
        ),
        ("sandbox.network".to_owned(), false.into()),
        ("sandbox.allow_loopback".to_owned(), false.into()),
        ("sandbox.auto_allow".to_owned(), true.into()),
    ];
    let limits = ResourceLimits::default();
    for (key, value) in [
        ("limits.cpu_secs", limits.cpu_secs),
        ("limits.address_space_mb", limits.address_space_mb),
        ("limits.processes", limits.processes),
        ("limits.file_size_mb", limits.file_size_mb),
        ("limits.open_files", limits.open_files),
    ] {
        lines.push((key.to_owned(), super::integer(value.unwrap_or(0))));
    }
    lines
}
