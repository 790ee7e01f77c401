//! Paths that try to leave the workspace (`..`, symlinks to outside, in the
//! main agent and in a child, with an allow rule naming the link) or to slip
//! past a deny rule through a symlink, files that are not text (binary,
//! named pipes, devices) and file names that are not UTF-8. Writes outside
//! are refused even in acceptEdits; everything else ends as a clear result,
//! never a hang.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;

use alcove_testkit::{Block, Script, Step};
use serde_json::{Value, json};

use super::{ACCEPT_EDITS, Case, assert_error, end_status};

fn reply(calls: &[(&str, Value)]) -> Step {
    Step::reply(
        calls
            .iter()
            .map(|(name, input)| Block::tool_call(name, input.clone()))
            .collect(),
    )
}

fn write(path: &str) -> (&'static str, Value) {
    ("Write", json!({"file_path": path, "content": "escaped\n"}))
}

fn edit(path: &str) -> (&'static str, Value) {
    (
        "Edit",
        json!({"file_path": path, "old_string": "untouched", "new_string": "touched"}),
    )
}

#[test]
fn dot_dot_paths_never_write_outside_the_workspace_even_with_accept_edits() {
    let case = Case::build(|case| {
        let absolute = format!("{}/../outside/absolute.txt", case.ws("").display());
        let from_root = format!("/../../..{}", case.outside("rooted.txt").display());
        let calls = [
            write("../outside/new.txt"),
            write("sub/../../outside/new.txt"),
            write("./../escaped.txt"),
            write("a/b/../../../escaped.txt"),
            write(&absolute),
            write(&from_root),
            edit("../outside/sentinel.txt"),
            edit("sub/../../outside/sentinel.txt"),
            write("inner/../kept.txt"),
            write(""),
            write("."),
            write("nul\u{0}byte.txt"),
        ];
        Script::new().conversation("dot dot", vec![reply(&calls), Step::text("done")])
    });
    let out = case.run(&[ACCEPT_EDITS[0], ACCEPT_EDITS[1], "dot dot"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(end_status(&out), "completed");
    let results = case.results("dot dot", 1);
    for result in &results[..8] {
        assert_error(result, &["outside the workspace"]);
    }
    assert_eq!(results[8], ("Created kept.txt (8 bytes)".to_owned(), false));
    assert_error(&results[9], &["is a directory"]);
    assert_error(&results[10], &["is a directory"]);
    assert_error(&results[11], &["unexpected NUL byte"]);
    assert_eq!(case.ws_files(), ["kept.txt"]);
}

#[test]
fn write_and_edit_through_symlinks_out_of_the_workspace_are_refused_even_in_accept_edits() {
    let calls = [
        write("link-dir/new.txt"),
        edit("link-dir/sentinel.txt"),
        write("link-file"),
        edit("link-file"),
        write("dangling"),
        write("chain/deeper/new.txt"),
        write("loop/x.txt"),
        write("link-dir/../beside.txt"),
    ];
    let case = Case::new(
        Script::new()
            .conversation(
                "symlinks out",
                vec![
                    reply(&calls),
                    Step::tool_call(
                        "Agent",
                        json!({"description": "escape", "prompt": "LINK child"}),
                    ),
                    Step::text("done"),
                ],
            )
            .conversation(
                "LINK child",
                vec![reply(&calls[..2]), Step::text("child done")],
            )
            .conversation(
                "allowed by rule",
                vec![reply(&calls[..2]), Step::text("done")],
            ),
    );
    symlink(case.outside(""), case.ws("link-dir")).unwrap();
    symlink(case.outside("sentinel.txt"), case.ws("link-file")).unwrap();
    symlink(case.outside("not-yet.txt"), case.ws("dangling")).unwrap();
    symlink(case.ws("link-dir"), case.ws("chain")).unwrap();
    symlink(case.ws("loop"), case.ws("loop")).unwrap();
    let out = case.run(&[ACCEPT_EDITS[0], ACCEPT_EDITS[1], "symlinks out"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = case.results("symlinks out", 1);
    for result in &results[..6] {
        assert_error(result, &["Permission denied", "outside the workspace"]);
    }
    assert_error(&results[6], &["Cannot create the folder loop"]);
    assert_eq!(
        results[7],
        ("Created beside.txt (8 bytes)".to_owned(), false),
        "`..` after a link is resolved in the workspace, as the gate saw it"
    );
    // A child inherits the confinement.
    for result in case.results("LINK child", 1) {
        assert_error(&result, &["Permission denied", "outside the workspace"]);
    }
    // An allow rule relative to the workspace never reaches through a link;
    // the refusal names the rule that would (absolute, deliberate).
    let out = case.run(&["--allow", "Edit(link-dir/**)", "allowed by rule"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = case.results("allowed by rule", 1);
    let root = case.ws("").canonicalize().unwrap();
    for (result, file) in results.iter().zip(["new.txt", "sentinel.txt"]) {
        let hint = format!("--allow 'Edit({}/link-dir/{file})'", root.display());
        assert_error(result, &["outside the workspace", &hint]);
    }
    assert_eq!(
        case.ws_files(),
        [
            "beside.txt",
            "chain",
            "dangling",
            "link-dir",
            "link-file",
            "loop"
        ]
    );
}

#[test]
fn binary_files_are_refused_by_read_and_edit_and_skipped_by_grep() {
    let calls = [
        ("Read", json!({"file_path": "blob.bin"})),
        ("Read", json!({"file_path": "latin1.txt"})),
        ("Grep", json!({"pattern": "needle"})),
        ("Glob", json!({"pattern": "*.bin"})),
        ("Read", json!({"file_path": "/dev/zero"})),
        (
            "Edit",
            json!({"file_path": "blob.bin", "old_string": "needle", "new_string": "pin"}),
        ),
        (
            "Edit",
            json!({"file_path": "latin1.txt", "old_string": "caf", "new_string": "tea"}),
        ),
    ];
    let case =
        Case::new(Script::new().conversation("binary", vec![reply(&calls), Step::text("done")]));
    let mut blob = b"\x7fELF\x00\x01\xff\xfe needle ".to_vec();
    blob.extend((0..=255u8).cycle().take(64 * 1024));
    case.write("blob.bin", &blob);
    case.write("latin1.txt", b"caf\xe9 needle\n");
    let out = case.run(&[ACCEPT_EDITS[0], ACCEPT_EDITS[1], "binary"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = case.results("binary", 1);
    assert_error(&results[0], &["blob.bin looks like a binary file"]);
    assert_eq!(
        results[1],
        ("     1\tcaf\u{FFFD} needle".to_owned(), false),
        "text that is not UTF-8 is shown lossily"
    );
    assert_eq!(
        results[2],
        ("Found 1 file\nlatin1.txt".to_owned(), false),
        "Grep skips binary files"
    );
    assert_eq!(results[3], ("blob.bin".to_owned(), false));
    assert_error(&results[4], &["/dev/zero is not a regular file"]);
    // Read refused blob.bin, so an Edit of it is told to read it first.
    assert_error(&results[5], &["blob.bin has not been read yet"]);
    assert_error(&results[6], &["latin1.txt is not valid UTF-8 text"]);
    assert_eq!(std::fs::read(case.ws("blob.bin")).unwrap(), blob);
    assert_eq!(case.ws_files(), ["blob.bin", "latin1.txt"]);
}

#[test]
fn file_names_that_are_not_utf8_are_listed_searched_and_refused_cleanly() {
    let calls = [
        ("Glob", json!({"pattern": "**/*.txt"})),
        ("Grep", json!({"pattern": "needle"})),
        (
            "Grep",
            json!({"pattern": "needle", "output_mode": "content"}),
        ),
        ("Grep", json!({"pattern": "needle", "output_mode": "count"})),
        ("Read", json!({"file_path": "bad\u{FFFD}.txt"})),
        ("Glob", json!({"pattern": "*", "path": "dir\u{FFFD}"})),
        (
            "Edit",
            json!({"file_path": "bad\u{FFFD}.txt", "old_string": "needle", "new_string": "pin"}),
        ),
    ];
    let case =
        Case::new(Script::new().conversation("odd names", vec![reply(&calls), Step::text("done")]));
    let name = |bytes: &[u8]| case.ws("").join(OsStr::from_bytes(bytes));
    std::fs::write(name(b"bad\xff.txt"), "needle in a bad name\n").unwrap();
    std::fs::create_dir(name(b"dir\xfe")).unwrap();
    std::fs::write(name(b"dir\xfe/inner.txt"), "needle inside\n").unwrap();
    case.write("good.txt", "needle in a good name\n");
    // Glob and Grep list the newest first: ages set apart, so the order
    // does not hang on which clock tick each write fell in.
    let now = std::time::SystemTime::now();
    for (bytes, age) in [
        (&b"good.txt"[..], 0),
        (b"bad\xff.txt", 10),
        (b"dir\xfe/inner.txt", 20),
    ] {
        std::fs::File::options()
            .write(true)
            .open(name(bytes))
            .unwrap()
            .set_modified(now - std::time::Duration::from_secs(age))
            .unwrap();
    }
    let out = case.run(&[ACCEPT_EDITS[0], ACCEPT_EDITS[1], "odd names"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results: Vec<String> = case
        .results("odd names", 1)
        .into_iter()
        .map(|(text, is_error)| format!("{}{text}", if is_error { "error: " } else { "" }))
        .collect();
    let bad = "bad\u{FFFD}.txt";
    let inner = "dir\u{FFFD}/inner.txt";
    assert_eq!(
        results,
        [
            format!("good.txt\n{bad}\n{inner}"),
            format!("Found 3 files\ngood.txt\n{bad}\n{inner}"),
            format!(
                "{bad}:1:needle in a bad name\n{inner}:1:needle inside\ngood.txt:1:needle in a good name"
            ),
            format!("{bad}:1\n{inner}:1\ngood.txt:1\n\nFound 3 matching lines in 3 files"),
            format!(
                "error: File does not exist: {bad}. No file named {bad} is in the workspace; look for it with Glob (e.g. \"**/*bad\u{FFFD}*\")."
            ),
            "error: Directory does not exist: dir\u{FFFD}".to_owned(),
            format!(
                "error: File does not exist: {bad}. No file named {bad} is in the workspace; look for it with Glob (e.g. \"**/*bad\u{FFFD}*\"). To create a new file, use Write."
            ),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(name(b"bad\xff.txt")).unwrap(),
        "needle in a bad name\n"
    );
}

#[test]
fn named_pipes_are_refused_instead_of_hanging_the_session() {
    let calls = [
        ("Read", json!({"file_path": "pipe"})),
        ("Grep", json!({"pattern": "x", "path": "pipe"})),
        ("Glob", json!({"pattern": "*", "path": "pipe"})),
        (
            "Edit",
            json!({"file_path": "pipe", "old_string": "a", "new_string": "b"}),
        ),
        ("Write", json!({"file_path": "pipe", "content": "x"})),
    ];
    let case =
        Case::new(Script::new().conversation("pipes", vec![reply(&calls), Step::text("done")]));
    let made = std::process::Command::new("mkfifo")
        .arg(case.ws("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    // Before the tools checked for regular files, opening the pipe blocked
    // forever and so did the session.
    let out = case.run(&[ACCEPT_EDITS[0], ACCEPT_EDITS[1], "pipes"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = case.results("pipes", 1);
    assert_error(
        &results[0],
        &["pipe is not a regular file", "Read only shows files"],
    );
    assert_eq!(results[1], ("No matches found".to_owned(), false));
    assert_error(&results[2], &["pipe is not a directory"]);
    assert_error(
        &results[3],
        &["pipe is not a regular file", "Edit only changes files"],
    );
    assert_error(
        &results[4],
        &["pipe is not a regular file", "Write only writes files"],
    );
}

#[test]
fn deny_rules_hold_through_symlinks_to_what_they_deny() {
    let calls = [
        ("Read", json!({"file_path": "secrets/key.txt"})),
        ("Read", json!({"file_path": "innocent/key.txt"})),
        ("Read", json!({"file_path": "alias.txt"})),
        edit("alias.txt"),
        write("innocent/new.txt"),
        ("Read", json!({"file_path": "notes.txt"})),
    ];
    let case = Case::new(
        Script::new().conversation("deny links", vec![reply(&calls), Step::text("done")]),
    );
    case.write("secrets/key.txt", "untouched TOPSECRET\n");
    case.write("notes.txt", "notes\n");
    symlink(case.ws("secrets"), case.ws("innocent")).unwrap();
    symlink(case.ws("secrets/key.txt"), case.ws("alias.txt")).unwrap();
    let out = case.run(&[
        ACCEPT_EDITS[0],
        ACCEPT_EDITS[1],
        "--deny",
        "Read(./secrets/**)",
        "--deny",
        "Edit(./secrets/**)",
        "deny links",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = case.results("deny links", 1);
    for (result, rule) in results[..5]
        .iter()
        .zip(["Read", "Read", "Read", "Edit", "Edit"])
    {
        assert_error(
            result,
            &[&format!("denied by rule {rule}(./secrets/**) from --deny")],
        );
    }
    assert_eq!(results[5], ("     1\tnotes".to_owned(), false));
    assert_eq!(
        std::fs::read_to_string(case.ws("secrets/key.txt")).unwrap(),
        "untouched TOPSECRET\n"
    );
    assert!(!case.ws("secrets/new.txt").exists());
}
