//! `Glob`: newest first, .gitignore and hidden files, caps.

use alcove_tools::Glob;
use serde_json::json;

use crate::common::Env;

#[tokio::test]
async fn newest_modified_first() {
    let env = Env::new();
    for (name, age) in [
        ("old.rs", 1),
        ("src/new.rs", 30),
        ("src/mid.rs", 20),
        ("notes.md", 40),
    ] {
        env.file(name, "x");
        env.touch(name, age);
    }
    let out = env
        .ok(&Glob::default(), json!({"pattern": "**/*.rs"}))
        .await;
    assert_eq!(out, "src/new.rs\nsrc/mid.rs\nold.rs");
    // `*` does not cross folders.
    let out = env.ok(&Glob::default(), json!({"pattern": "*.rs"})).await;
    assert_eq!(out, "old.rs");
}

#[tokio::test]
async fn respects_gitignore_outside_git_and_skips_hidden() {
    let env = Env::new();
    env.file(".gitignore", "target/\n*.log\n");
    env.file("target/debug/out.rs", "x");
    env.file("keep.rs", "x");
    env.file("trace.log", "x");
    env.file(".hidden/secret.rs", "x");
    env.file(".dot.rs", "x");
    let glob = Glob::default();
    assert_eq!(
        env.ok(&glob, json!({"pattern": "**/*.rs"})).await,
        "keep.rs"
    );
    assert_eq!(
        env.ok(&glob, json!({"pattern": "**/*.log"})).await,
        "No files found"
    );
    // Naming a hidden folder explicitly still searches it.
    assert_eq!(
        env.ok(&glob, json!({"pattern": ".hidden/*.rs"})).await,
        ".hidden/secret.rs"
    );
}

#[tokio::test]
async fn path_and_absolute_patterns() {
    let env = Env::new();
    env.file("a/b/one.txt", "x");
    env.file("a/two.txt", "x");
    env.file("c/three.txt", "x");
    env.touch("a/b/one.txt", 2);
    env.touch("a/two.txt", 1);
    let glob = Glob::default();
    let out = env
        .ok(&glob, json!({"pattern": "**/*.txt", "path": "a"}))
        .await;
    assert_eq!(out, "a/b/one.txt\na/two.txt");
    let abs = format!("{}/c/*.txt", env.root().display());
    assert_eq!(env.ok(&glob, json!({"pattern": abs})).await, "c/three.txt");
    assert_eq!(
        env.ok(&glob, json!({"pattern": "x/**/*.txt"})).await,
        "No files found"
    );
    let err = env
        .err(&glob, json!({"pattern": "*", "path": "missing"}))
        .await;
    assert!(err.contains("does not exist"), "{err}");
    let err = env
        .err(&glob, json!({"pattern": "*", "path": "a/two.txt"}))
        .await;
    assert!(err.contains("not a directory"), "{err}");
    let reason = alcove_tools::inspect(&glob, &json!({"pattern": "a/[b"}), &env.context.workspace)
        .unwrap_err();
    assert!(reason.contains("invalid glob"), "{reason}");
}

#[tokio::test]
async fn results_are_capped_at_100() {
    let env = Env::new();
    for i in 0..130 {
        let name = format!("f{i:03}.txt");
        env.file(&name, "x");
        env.touch(&name, i);
    }
    let out = env.ok(&Glob::default(), json!({"pattern": "*.txt"})).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 101);
    assert_eq!(lines[0], "f129.txt");
    assert_eq!(lines[99], "f030.txt");
    assert!(lines[100].contains("30 left out"), "{}", lines[100]);
}
