//! Tidy: the invariants ARCHITECTURE.md states that can be read off the
//! source tree, checked on every `cargo test` so the document only says
//! what is enforced.
//!
//! - The core crates (alcove-protocol, alcove-model, alcove-tools,
//!   alcove-core) neither print nor read the process's environment outside
//!   tests: the front end owns the terminal and the environment and passes
//!   what the core needs as data. The few exceptions are listed in
//!   [`ALLOWED`], each with its reason.
//! - A child's end record (`EventKind::AgentEnded`) is built in one place
//!   in the core: its one life (`agents/life.rs`).
//! - alcove-protocol is plain data: serde and serde_json are its only
//!   dependencies (no I/O, no tokio, no HTTP).
//!
//! Test code is skipped: files named `*_tests.rs` or under `tests/`, and
//! the item after a `#[cfg(test)]` line. Comments are skipped.
// A test's helpers: a tree that cannot be read fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// The core crates, relative to the workspace's `crates/`.
const CORE: [&str; 4] = [
    "alcove-protocol",
    "alcove-model",
    "alcove-tools",
    "alcove-core",
];

/// What prints or reads the environment in the core.
const PRINTS: [&str; 5] = ["println!", "eprintln!", "print!", "eprint!", "dbg!"];
/// What reads the process's environment, argv or working directory.
const READS_ENV: [&str; 7] = [
    "env::var(",
    "env::var_os(",
    "env::vars(",
    "env::vars_os(",
    "env::args(",
    "env::args_os(",
    "env::current_dir(",
];

/// Exceptions: (file relative to `crates/`, what it uses, why).
const ALLOWED: [(&str, &str, &str); 3] = [
    (
        "alcove-tools/src/bash.rs",
        "env::vars_os(",
        "a command gets the agent's environment less what env_policy.rs removes, \
         read once per tool (alcove never changes its own)",
    ),
    (
        "alcove-tools/src/schema.rs",
        "env::var_os(",
        "a debug build's check of the kept tool schemas rewrites them under \
         ALCOVE_BLESS_SCHEMAS=1 (a developer's switch, off in release builds)",
    ),
    (
        "alcove-tools/src/schema.rs",
        "eprintln!",
        "the same blessing says which kept schema file it could not write",
    ),
];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_owned()
}

/// Every `.rs` file under `dir` that is not test code.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") && !name.ends_with("_tests.rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// The file's lines that are code outside tests, with their numbers:
/// comments dropped, and the item after each `#[cfg(test)]` skipped (to
/// its closing brace, or its `;` for `mod tests;`).
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut skipping = false;
    let mut depth: i64 = 0;
    let mut opened = false;
    for (index, raw) in text.lines().enumerate() {
        let code = raw.split("//").next().unwrap_or("").trim().to_owned();
        if !skipping && code == "#[cfg(test)]" {
            skipping = true;
            depth = 0;
            opened = false;
            continue;
        }
        if skipping {
            depth += code.matches('{').count() as i64;
            depth -= code.matches('}').count() as i64;
            opened |= code.contains('{');
            let attribute = code.starts_with("#[");
            if (opened && depth <= 0) || (!opened && !attribute && code.ends_with(';')) {
                skipping = false;
            }
            continue;
        }
        if !code.is_empty() {
            lines.push((index + 1, code));
        }
    }
    lines
}

/// `(file relative to crates/, line, text)` of every core line using one of `needles`.
fn uses(needles: &[&str]) -> Vec<(String, usize, String)> {
    let root = crates_dir();
    let mut found = Vec::new();
    for krate in CORE {
        let mut files = Vec::new();
        sources(&root.join(krate).join("src"), &mut files);
        for file in files {
            let relative = file
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, code) in code_lines(&text) {
                for needle in needles {
                    let hit = code.match_indices(needle).any(|(at, _)| {
                        // `print!` inside `eprint!`/`println!` is counted once, as itself.
                        let before = code[..at].chars().next_back();
                        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    });
                    if hit {
                        found.push((relative.clone(), line, needle.to_string()));
                    }
                }
            }
        }
    }
    found
}

fn unexplained(needles: &[&str]) -> Vec<String> {
    uses(needles)
        .into_iter()
        .filter(|(file, _, needle)| {
            !ALLOWED
                .iter()
                .any(|(allowed, what, _)| allowed == file && what == needle)
        })
        .map(|(file, line, needle)| format!("{file}:{line}: {needle}"))
        .collect()
}

#[test]
fn the_core_crates_never_print() {
    let found = unexplained(&PRINTS);
    assert!(
        found.is_empty(),
        "the core prints (the front end owns the terminal; emit an event or return \
         the text, or add the line to ALLOWED with a reason):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_core_crates_never_read_the_environment() {
    let found = unexplained(&READS_ENV);
    assert!(
        found.is_empty(),
        "the core reads the environment (the CLI reads it and passes data; or add \
         the line to ALLOWED with a reason):\n{}",
        found.join("\n")
    );
}

#[test]
fn every_exception_is_still_needed() {
    let mut needles: Vec<&str> = PRINTS.to_vec();
    needles.extend(READS_ENV);
    let found = uses(&needles);
    for (file, what, why) in ALLOWED {
        assert!(
            found
                .iter()
                .any(|(at, _, needle)| at == file && needle == what),
            "{file} no longer uses {what}; remove its exception ({why})"
        );
    }
}

#[test]
fn a_childs_end_record_is_built_in_its_one_life_only() {
    let found = uses(&["AgentEnded"]);
    let elsewhere: Vec<String> = found
        .iter()
        .filter(|(file, _, _)| {
            file.starts_with("alcove-core/") && file != "alcove-core/src/agents/life.rs"
        })
        .map(|(file, line, _)| format!("{file}:{line}"))
        .collect();
    assert!(
        elsewhere.is_empty(),
        "AgentEnded is named outside the one life (agents/life.rs): {elsewhere:?}"
    );
    let built = uses(&["EventKind::AgentEnded {"])
        .into_iter()
        .filter(|(file, _, _)| file == "alcove-core/src/agents/life.rs")
        .count();
    assert_eq!(built, 1, "agents/life.rs builds AgentEnded exactly once");
}

#[test]
fn the_protocol_crate_depends_on_serde_only() {
    let manifest =
        std::fs::read_to_string(crates_dir().join("alcove-protocol/Cargo.toml")).unwrap();
    let mut section = String::new();
    let mut dependencies = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_owned();
        } else if section == "[dependencies]" && !line.is_empty() && !line.starts_with('#') {
            dependencies.push(
                line.split(['=', '.'])
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_owned(),
            );
        }
    }
    assert_eq!(dependencies, ["serde", "serde_json"], "{manifest}");
}

#[test]
fn test_code_is_told_apart_from_code() {
    let text = "fn a() { println!(\"x\"); }\n#[cfg(test)]\nmod tests {\n    fn b() {\n        println!(\"y\");\n    }\n}\n// println!(\"z\")\nfn c() {}\n#[cfg(test)]\n#[path = \"t.rs\"]\nmod t;\nfn d() {}\n";
    let lines: Vec<usize> = code_lines(text).into_iter().map(|(line, _)| line).collect();
    assert_eq!(lines, [1, 9, 13]);
}
