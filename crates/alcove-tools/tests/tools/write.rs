//! `Write`: creates folders, says created vs updated.

use alcove_tools::{Access, Tool, Write};
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
    assert_eq!(write.access(), Access::Edit);
    assert!(!write.concurrency_safe());
    let invocation = write
        .inspect(
            &json!({"file_path": "../escape.txt", "content": ""}),
            &env.context.workspace,
        )
        .unwrap();
    let path = &invocation.paths[0];
    assert_eq!(path, &env.root().parent().unwrap().join("escape.txt"));
    assert!(!env.context.workspace.contains(path));
    let err = write
        .inspect(&json!({"file_path": "x"}), &env.context.workspace)
        .unwrap_err();
    assert!(err.contains("content"), "{err}");
}

/// The path the gate checked (what `inspect` resolved, handed over in
/// `ToolContext::paths`) is the path written, and the effects say so.
#[tokio::test]
async fn writes_the_path_inspect_resolved_and_reports_it_as_an_effect() {
    let env = Env::new();
    let write = Write::default();
    let input = json!({"file_path": "checked.txt", "content": "abc"});
    let invocation = write.inspect(&input, &env.context.workspace).unwrap();
    assert_eq!(invocation.paths, [env.root().join("checked.txt")]);
    let mut context = env.context.clone();
    // Had the tool resolved `file_path` again, it would write `checked.txt`.
    context.paths = vec![env.root().join("elsewhere.txt")];
    let out = write.call(input, &context).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(env.root().join("elsewhere.txt").exists());
    assert!(!env.root().join("checked.txt").exists());
    assert_eq!(out.effects.files_written, ["elsewhere.txt"]);
    assert_eq!(out.effects.bytes, Some(3));
}
