//! `Read`: numbering, windows, long lines, binary and missing files.

use alcove_tools::Read;
use serde_json::json;

use crate::common::Env;

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn numbers_lines_like_cat_n() {
    let env = Env::new();
    env.file("a.txt", "alpha\nbeta\r\n\ngamma");
    let out = env
        .ok(&Read::default(), json!({"file_path": "a.txt"}))
        .await;
    assert_eq!(out, "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma");
}

#[tokio::test]
async fn absolute_paths_and_junk_keys_are_accepted() {
    let env = Env::new();
    env.file("dir/a.txt", "x\n");
    let path = env.root().join("dir/a.txt");
    let out = env
        .ok(&Read::default(), json!({"file_path": path, "pages": "1-2"}))
        .await;
    assert_eq!(out, "     1\tx");
}

#[tokio::test]
async fn offset_and_limit_select_a_window() {
    let env = Env::new();
    env.file("big.txt", numbered(10));
    let read = Read::default();
    let out = env
        .ok(
            &read,
            json!({"file_path": "big.txt", "offset": 3, "limit": 2}),
        )
        .await;
    assert_eq!(
        out,
        "     3\tline 3\n     4\tline 4\n\n(showing lines 3-4 of 10; read on with offset=5)"
    );
    // Offset 0 is line 1.
    let out = env
        .ok(
            &read,
            json!({"file_path": "big.txt", "offset": 0, "limit": 1}),
        )
        .await;
    assert!(out.starts_with("     1\tline 1\n"), "{out}");
    // A window reaching the end has no note.
    let out = env
        .ok(&read, json!({"file_path": "big.txt", "offset": 9}))
        .await;
    assert_eq!(out, "     9\tline 9\n    10\tline 10");
    let err = env
        .err(&read, json!({"file_path": "big.txt", "offset": 11}))
        .await;
    assert!(err.contains("only 10 lines"), "{err}");
}

#[tokio::test]
async fn default_limit_is_2000_lines() {
    let env = Env::new();
    env.file("huge.txt", numbered(5000));
    let out = env
        .ok(&Read::default(), json!({"file_path": "huge.txt"}))
        .await;
    assert!(out.contains("  2000\tline 2000\n"), "last line shown");
    assert!(!out.contains("line 2001"));
    assert!(
        out.ends_with("(showing lines 1-2000 of 5000; read on with offset=2001)"),
        "{}",
        &out[out.len() - 100..]
    );
}

#[tokio::test]
async fn a_file_larger_than_the_room_left_is_shown_from_its_head_and_tail_with_the_call_for_the_rest()
 {
    let mut env = Env::new();
    env.file("big.txt", numbered(5000));
    env.context.result_room = 1_000;
    let out = env
        .ok(&Read::default(), json!({"file_path": "big.txt"}))
        .await;
    assert!(out.len() <= 1_000, "{} bytes", out.len());
    assert!(out.starts_with("     1\tline 1\n"), "{out}");
    let numbers: Vec<usize> = out
        .lines()
        .filter_map(|line| line.trim_start().split_once('\t'))
        .filter_map(|(number, _)| number.parse().ok())
        .collect();
    let gap = numbers
        .windows(2)
        .position(|pair| pair[1] != pair[0] + 1)
        .unwrap();
    let (last, tail_first) = (numbers[gap], numbers[gap + 1]);
    assert!((20..60).contains(&last), "{last}");
    assert!((4980..5000).contains(&tail_first), "{tail_first}");
    assert!(
        out.contains(&format!(
            "(lines {}-{} of 5000 are not shown: they do not fit in what is left of the context window. To see them call Read {{\"file_path\": \"big.txt\", \"offset\": {}, \"limit\": {last}}}, or Grep for what you need. The last lines of the window follow.)",
            last + 1,
            tail_first - 1,
            last + 1
        )),
        "{out}"
    );
    assert!(out.ends_with("  5000\tline 5000"), "{out}");
}

#[tokio::test]
async fn a_window_asked_for_and_cut_to_fit_keeps_its_own_last_lines() {
    let mut env = Env::new();
    env.file("big.txt", numbered(5000));
    env.context.result_room = 1_000;
    let out = env
        .ok(
            &Read::default(),
            json!({"file_path": "big.txt", "offset": 101, "limit": 400}),
        )
        .await;
    assert!(out.starts_with("   101\tline 101\n"), "{out}");
    assert!(out.contains("   500\tline 500\n"), "{out}");
    assert!(!out.contains("line 501"), "{out}");
    assert!(out.ends_with("; read on with offset=501)"), "{out}");
}

#[tokio::test]
async fn long_lines_are_cut_with_a_marker() {
    let env = Env::new();
    env.file("long.txt", format!("{}\nshort\n", "x".repeat(5000)));
    let out = env
        .ok(&Read::default(), json!({"file_path": "long.txt"}))
        .await;
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("     1\t{}…", "x".repeat(2000))),
        "{}",
        &first[..20]
    );
    assert!(
        first.contains("[line cut at 2000 chars: 5001 bytes long]"),
        "{first}"
    );
    assert!(out.ends_with("     2\tshort"));
}

#[tokio::test]
async fn binary_files_are_refused() {
    let env = Env::new();
    env.file("blob.bin", b"ELF\x00\x01\x02 text");
    let err = env
        .err(&Read::default(), json!({"file_path": "blob.bin"}))
        .await;
    assert!(err.contains("binary"), "{err}");
}

#[tokio::test]
async fn missing_directory_and_empty() {
    let env = Env::new();
    let read = Read::default();
    let err = env.err(&read, json!({"file_path": "nope.txt"})).await;
    assert!(
        err.contains("does not exist") && err.contains("nope.txt"),
        "{err}"
    );
    std::fs::create_dir(env.root().join("sub")).unwrap();
    let err = env.err(&read, json!({"file_path": "sub"})).await;
    assert!(err.contains("directory"), "{err}");
    env.file("empty.txt", "");
    let out = env.ok(&read, json!({"file_path": "empty.txt"})).await;
    assert!(out.contains("empty"), "{out}");
}

#[tokio::test]
async fn inspect_resolves_against_the_workspace() {
    let env = Env::new();
    let invocation = alcove_tools::inspect(
        &Read::default(),
        &json!({"file_path": "src/../lib.rs"}),
        &env.context.workspace,
    )
    .unwrap();
    assert_eq!(invocation.paths, vec![env.root().join("lib.rs")]);
    assert_eq!(invocation.summary, "lib.rs");
    assert_eq!(invocation.command, None);
}

/// An editor holding `text` for every file it is asked about.
struct Editor(&'static str);

#[async_trait::async_trait]
impl alcove_tools::FileSource for Editor {
    async fn text(&self, _path: &std::path::Path) -> Option<String> {
        Some(self.0.to_owned())
    }
}

#[tokio::test]
async fn a_file_source_is_read_for_text_files_only_and_a_difference_is_said() {
    let env = Env::new();
    let read = Read::reading_from(std::sync::Arc::new(Editor("one\ntwo\nthree\n")));
    env.file("a.txt", "one\ntwo\nthree\n");
    env.file("b.txt", "old\n");
    env.file("blob.bin", b"ELF\x00\x01\x02 text");
    // The same text as the disk: shown with no note, windowed as ever.
    let out = env
        .ok(
            &read,
            json!({"file_path": "a.txt", "offset": 2, "limit": 1}),
        )
        .await;
    assert_eq!(
        out,
        "     2\ttwo\n\n(showing lines 2-2 of 3; read on with offset=3)"
    );
    // Other text than the disk's: the buffer, and a word about the disk.
    let out = env.ok(&read, json!({"file_path": "b.txt"})).await;
    assert!(out.starts_with("     1\tone\n     2\ttwo"), "{out}");
    assert!(out.contains("the file on disk differs"), "{out}");
    // What the disk says is binary or missing stays so.
    let err = env.err(&read, json!({"file_path": "blob.bin"})).await;
    assert!(err.contains("binary"), "{err}");
    let err = env.err(&read, json!({"file_path": "nope.txt"})).await;
    assert!(err.contains("does not exist"), "{err}");
}
