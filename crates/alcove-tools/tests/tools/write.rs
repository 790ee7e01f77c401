//! `Write`: creates folders, says created vs updated.

use alcove_tools::{Access, Tool, TypedTool, Write};
use serde_json::json;

use crate::common::Env;

#[tokio::test]
async fn creates_nested_folders_then_updates() {
    let env = Env::new();
    let write = Write::default();
    let out = env
        .ok(
            &write,
            json!({"file_path": "a/b/c/new.txt", "content": "héllo\n"}),
        )
        .await;
    assert_eq!(out, "Created a/b/c/new.txt (7 bytes)");
    assert_eq!(env.read("a/b/c/new.txt"), "héllo\n");
    let out = env
        .ok(
            &write,
            json!({"file_path": env.root().join("a/b/c/new.txt"), "content": ""}),
        )
        .await;
    assert_eq!(out, "Updated a/b/c/new.txt (0 bytes)");
    assert_eq!(env.read("a/b/c/new.txt"), "");
}

#[tokio::test]
async fn refuses_a_directory() {
    let env = Env::new();
    std::fs::create_dir(env.root().join("d")).unwrap();
    let err = env
        .err(&Write::default(), json!({"file_path": "d", "content": "x"}))
        .await;
    assert!(err.contains("directory"), "{err}");
}

#[tokio::test]
async fn inspect_reports_the_path_even_outside() {
    let env = Env::new();
    let write = Write::default();
    assert_eq!(TypedTool::access(&write), Access::Edit);
    assert!(!TypedTool::concurrency_safe(&write));
    let invocation = alcove_tools::inspect(
        &write,
        &json!({"file_path": "../escape.txt", "content": ""}),
        &env.context.workspace,
    )
    .unwrap();
    let path = &invocation.paths[0];
    assert_eq!(path, &env.root().parent().unwrap().join("escape.txt"));
    assert!(!env.context.workspace.contains(path));
    let err = alcove_tools::inspect(&write, &json!({"file_path": "x"}), &env.context.workspace)
        .unwrap_err();
    assert!(err.contains("content"), "{err}");
}

/// The path the gate checked (what `prepare` resolved, held by the
/// prepared call) is the path written, and the effects say so.
#[tokio::test]
async fn writes_the_path_prepare_resolved_and_reports_it_as_an_effect() {
    let env = Env::new();
    let other = Env::new();
    let write = Write::default();
    let input = json!({"file_path": "checked.txt", "content": "abc"});
    let prepared = Tool::<()>::prepare(&write, &input, &env.context.workspace).unwrap();
    assert_eq!(prepared.invocation.paths, [env.root().join("checked.txt")]);
    // Had the tool resolved `file_path` again, against the workspace the
    // call runs with, it would write into `other`.
    let out = prepared.run(&other.context, &()).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(env.root().join("checked.txt").exists());
    assert!(!other.root().join("checked.txt").exists());
    assert_eq!(out.effects.files_written.len(), 1);
    assert_eq!(out.effects.bytes, Some(3));
}
