//! The settings' one direction, checked on their sources: a module under
//! `settings/` may use the layers (`crate::config`), other settings and
//! the library crates, never a consumer (`crate::session`,
//! `crate::agent_setup`, …), and `config.rs` reads only the layer sources
//! (`claude_settings`). So consumers import settings and no import circle
//! runs through them.

use std::path::Path;

/// The first path segment after each `crate::` in `source` (each item of
/// a `crate::{a, b::c}` group), with the line it is on.
fn crate_imports(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or_default();
                for item in inner.split(',') {
                    let head = item.trim().split("::").next().unwrap_or_default();
                    if !head.is_empty() {
                        found.push((number + 1, head.to_owned()));
                    }
                }
            } else {
                let head: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                found.push((number + 1, head));
            }
        }
    }
    found
}

fn offenders(file: &Path, allowed: &[&str]) -> Vec<String> {
    let source = std::fs::read_to_string(file).unwrap();
    crate_imports(&source)
        .into_iter()
        .filter(|(_, head)| !allowed.contains(&head.as_str()))
        .map(|(line, head)| format!("{}:{line}: crate::{head}", file.display()))
        .collect()
}

#[test]
fn settings_import_only_the_layers_and_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut bad = Vec::new();
    let mut read = 0;
    for entry in std::fs::read_dir(src.join("settings")).unwrap() {
        let path = entry.unwrap().path();
        // This file's own examples name consumers on purpose.
        let own = path
            .file_name()
            .is_some_and(|name| name == "layering_tests.rs");
        if path.extension().is_some_and(|ext| ext == "rs") && !own {
            bad.extend(offenders(&path, &["config", "settings"]));
            read += 1;
        }
    }
    assert!(read >= 10, "only {read} settings modules read");
    bad.extend(offenders(&src.join("config.rs"), &["claude_settings"]));
    bad.extend(offenders(&src.join("claude_settings.rs"), &[]));
    assert!(
        bad.is_empty(),
        "settings depend on layers only; these imports make a circle:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_sees_grouped_and_inline_imports() {
    let found = crate_imports(
        "use crate::{config::Layer, session};\nlet x = crate::agent_setup::f(); // crate::ignored\n",
    );
    let heads: Vec<&str> = found.iter().map(|(_, head)| head.as_str()).collect();
    assert_eq!(heads, ["config", "session", "agent_setup"]);
}
