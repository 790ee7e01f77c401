//! `[telemetry]`: where OpenTelemetry traces go. The standard variables
//! (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT`,
//! `OTEL_SERVICE_NAME`) are the OpenTelemetry specification's, read as it
//! says (over the config keys), not a layer of alcove's: [`Target::resolve`]
//! takes them from its caller. Off unless something names a collector.

use serde::Deserialize;

/// `[telemetry]` in config.toml.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct TelemetryEntry {
    /// The collector's OTLP/HTTP base URL (`http://host:4318`); traces go
    /// to `<base>/v1/traces`.
    pub(crate) otlp_endpoint: Option<String>,
    /// Export message contents (prompts, answers, tool inputs and results).
    /// Off by default: spans carry names, sizes, tokens and statuses only.
    pub(crate) log_content: bool,
    /// The `service.name` of the spans (default `alcove`; `OTEL_SERVICE_NAME` wins).
    pub(crate) service_name: Option<String>,
}

/// Where traces go, from config and the standard environment variables.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Target {
    /// The full URL traces are POSTed to.
    pub(crate) traces_url: String,
    pub(crate) service_name: String,
    pub(crate) log_content: bool,
}

impl Target {
    /// The target, or `None` when nothing names a collector. The signal's
    /// own variable is used as it is; a base endpoint (the variable or the
    /// config key) gets `/v1/traces` appended, as the OTLP exporter
    /// specification says.
    pub(crate) fn resolve(
        entry: &TelemetryEntry,
        env: impl Fn(&str) -> Option<String>,
    ) -> Option<Target> {
        let non_empty = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        let traces_url = match non_empty("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(url) => url,
            None => {
                let base = non_empty("OTEL_EXPORTER_OTLP_ENDPOINT")
                    .or_else(|| entry.otlp_endpoint.clone())?;
                format!("{}/v1/traces", base.trim_end_matches('/'))
            }
        };
        let service_name = non_empty("OTEL_SERVICE_NAME")
            .or_else(|| entry.service_name.clone())
            .unwrap_or_else(|| "alcove".to_owned());
        Some(Target {
            traces_url,
            service_name,
            log_content: entry.log_content,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn nothing_named_means_no_telemetry() {
        assert_eq!(Target::resolve(&TelemetryEntry::default(), env(&[])), None);
    }

    #[test]
    fn the_signal_variable_wins_and_a_base_gets_the_traces_path() {
        let entry = TelemetryEntry {
            otlp_endpoint: Some("http://config:4318/".to_owned()),
            ..TelemetryEntry::default()
        };
        let from_config = Target::resolve(&entry, env(&[])).map(|t| t.traces_url);
        assert_eq!(from_config.as_deref(), Some("http://config:4318/v1/traces"));
        let base = Target::resolve(
            &entry,
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://b:1")]),
        );
        assert_eq!(
            base.map(|t| t.traces_url).as_deref(),
            Some("http://b:1/v1/traces")
        );
        let signal = Target::resolve(
            &entry,
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://b:1"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:2/custom"),
                ("OTEL_SERVICE_NAME", "ci-agents"),
            ]),
        );
        let signal = signal.expect("a target");
        assert_eq!(signal.traces_url, "http://t:2/custom");
        assert_eq!(signal.service_name, "ci-agents");
    }
}
