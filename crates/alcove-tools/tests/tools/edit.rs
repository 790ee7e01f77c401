//! `Edit`: unique match, counts in errors, replace_all.

use alcove_tools::Edit;
use serde_json::json;

use crate::common::Env;

#[tokio::test]
async fn replaces_a_unique_match() {
    let env = Env::new();
    env.file("src/lib.rs", "fn a() {}\nfn b() {}\n");
    let out = env
        .ok(
            &Edit::default(),
            json!({"file_path": "src/lib.rs", "old_string": "fn b", "new_string": "pub fn b"}),
        )
        .await;
    assert_eq!(out, "Edited src/lib.rs: replaced 1 occurrence");
    assert_eq!(env.read("src/lib.rs"), "fn a() {}\npub fn b() {}\n");
}

#[tokio::test]
async fn several_matches_need_context_or_replace_all() {
    let env = Env::new();
    env.file("f.txt", "x = 1\nx = 2\nx = 3\n");
    let edit = Edit::default();
    let err = env
        .err(
            &edit,
            json!({"file_path": "f.txt", "old_string": "x =", "new_string": "y ="}),
        )
        .await;
    assert!(err.contains("matches 3 times"), "{err}");
    assert!(err.contains("replace_all"), "{err}");
    assert_eq!(env.read("f.txt"), "x = 1\nx = 2\nx = 3\n", "unchanged");
    let out = env
        .ok(
            &edit,
            json!({"file_path": "f.txt", "old_string": "x =", "new_string": "y =", "replace_all": true}),
        )
        .await;
    assert_eq!(out, "Edited f.txt: replaced 3 occurrences");
    assert_eq!(env.read("f.txt"), "y = 1\ny = 2\ny = 3\n");
}

#[tokio::test]
async fn zero_matches_same_strings_empty_and_missing() {
    let env = Env::new();
    env.file("f.txt", "hello\n");
    let edit = Edit::default();
    let err = env
        .err(
            &edit,
            json!({"file_path": "f.txt", "old_string": "bye", "new_string": "x"}),
        )
        .await;
    assert!(err.contains("not found"), "{err}");
    let err = env
        .err(
            &edit,
            json!({"file_path": "f.txt", "old_string": "hello", "new_string": "hello"}),
        )
        .await;
    assert!(err.contains("same"), "{err}");
    let err = env
        .err(
            &edit,
            json!({"file_path": "f.txt", "old_string": "", "new_string": "x"}),
        )
        .await;
    assert!(err.contains("old_string is empty"), "{err}");
    let err = env
        .err(
            &edit,
            json!({"file_path": "nope.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(err.contains("does not exist"), "{err}");
    // inspect leaves what the strings hold to the call: an edit of a file
    // not read yet is first told to read it (dispatch).
    assert!(
        alcove_tools::inspect(
            &edit,
            &json!({"file_path": "f.txt", "old_string": "", "new_string": "x"}),
            &env.context.workspace,
        )
        .is_ok()
    );
    assert_eq!(env.read("f.txt"), "hello\n");
}
