//! `Grep`: output modes, flags, filters, caps.

use alcove_tools::Grep;
use serde_json::json;

use crate::common::Env;

/// A small tree: two Rust files, a Python file, an ignored and a hidden one.
fn tree() -> Env {
    let env = Env::new();
    env.file(".gitignore", "ignored/\n");
    env.file("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
    env.file(
        "src/lib.rs",
        "// hello world\npub fn hello() {}\nfn other() {}\n",
    );
    env.file("tools/run.py", "def hello():\n    return 'HELLO'\n");
    env.file("ignored/skip.rs", "hello\n");
    env.file(".hidden/skip.rs", "hello\n");
    env.touch("src/main.rs", 10);
    env.touch("src/lib.rs", 30);
    env.touch("tools/run.py", 20);
    env
}

#[tokio::test]
async fn files_with_matches_is_the_default_newest_first() {
    let env = tree();
    let out = env.ok(&Grep::default(), json!({"pattern": "hello"})).await;
    assert_eq!(out, "Found 2 files\nsrc/lib.rs\ntools/run.py");
    let out = env
        .ok(&Grep::default(), json!({"pattern": "(?i)hello"}))
        .await;
    assert_eq!(out, "Found 3 files\nsrc/lib.rs\ntools/run.py\nsrc/main.rs");
    let out = env
        .ok(&Grep::default(), json!({"pattern": "nothing-like-this"}))
        .await;
    assert_eq!(out, "No matches found");
}

#[tokio::test]
async fn content_mode_numbers_lines_by_default() {
    let env = tree();
    let grep = Grep::default();
    let out = env
        .ok(
            &grep,
            json!({"pattern": "hello", "output_mode": "content", "-i": true}),
        )
        .await;
    assert_eq!(
        out,
        "src/lib.rs:1:// hello world\nsrc/lib.rs:2:pub fn hello() {}\n\
         src/main.rs:2:    println!(\"Hello\");\n\
         tools/run.py:1:def hello():\ntools/run.py:2:    return 'HELLO'"
    );
    let out = env
        .ok(&grep, json!({"pattern": "fn \\w+\\(\\)", "output_mode": "content", "-n": false, "path": "src/lib.rs"}))
        .await;
    assert_eq!(
        out,
        "src/lib.rs:pub fn hello() {}\nsrc/lib.rs:fn other() {}"
    );
}

#[tokio::test]
async fn count_mode() {
    let env = tree();
    let out = env
        .ok(
            &Grep::default(),
            json!({"pattern": "hello", "output_mode": "count", "-i": true}),
        )
        .await;
    assert_eq!(
        out,
        "src/lib.rs:2\nsrc/main.rs:1\ntools/run.py:2\n\nFound 5 matching lines in 3 files"
    );
}

#[tokio::test]
async fn context_lines_use_dashes_and_breaks() {
    let env = Env::new();
    let body: String = (1..=12)
        .map(|i| {
            if i == 3 || i == 10 {
                "MATCH\n".to_owned()
            } else {
                format!("l{i}\n")
            }
        })
        .collect();
    env.file("c.txt", body);
    let grep = Grep::default();
    let out = env
        .ok(
            &grep,
            json!({"pattern": "MATCH", "output_mode": "content", "-C": 1}),
        )
        .await;
    assert_eq!(
        out,
        "c.txt-2-l2\nc.txt:3:MATCH\nc.txt-4-l4\n--\nc.txt-9-l9\nc.txt:10:MATCH\nc.txt-11-l11"
    );
    let out = env
        .ok(
            &grep,
            json!({"pattern": "MATCH", "output_mode": "content", "-A": 2, "-B": 0, "-C": 5}),
        )
        .await;
    assert_eq!(
        out,
        "c.txt:3:MATCH\nc.txt-4-l4\nc.txt-5-l5\n--\nc.txt:10:MATCH\nc.txt-11-l11\nc.txt-12-l12"
    );
    // Context is for content mode only.
    let out = env.ok(&grep, json!({"pattern": "MATCH", "-C": 1})).await;
    assert_eq!(out, "Found 1 file\nc.txt");
}

#[tokio::test]
async fn type_and_glob_filters() {
    let env = tree();
    let grep = Grep::default();
    let out = env
        .ok(&grep, json!({"pattern": "hello", "type": "py"}))
        .await;
    assert_eq!(out, "Found 1 file\ntools/run.py");
    let out = env
        .ok(
            &grep,
            json!({"pattern": "hello", "type": "rust", "-i": true}),
        )
        .await;
    assert_eq!(out, "Found 2 files\nsrc/lib.rs\nsrc/main.rs");
    let out = env
        .ok(&grep, json!({"pattern": "hello", "glob": "*.py"}))
        .await;
    assert_eq!(out, "Found 1 file\ntools/run.py");
    let out = env
        .ok(&grep, json!({"pattern": "hello", "glob": "*.{py,rs}"}))
        .await;
    assert_eq!(out, "Found 2 files\nsrc/lib.rs\ntools/run.py");
    let out = env
        .ok(&grep, json!({"pattern": "hello", "glob": "!*.py"}))
        .await;
    assert_eq!(out, "Found 1 file\nsrc/lib.rs");
    let err = env
        .err(&grep, json!({"pattern": "x", "type": "klingon"}))
        .await;
    assert!(err.contains("unknown file type"), "{err}");
}

#[tokio::test]
async fn multiline_spans_lines() {
    let env = tree();
    let grep = Grep::default();
    let input = json!({"pattern": "hello\\(\\) \\{\\}.fn other", "output_mode": "content"});
    let out = env.ok(&grep, input).await;
    assert_eq!(out, "No matches found");
    let input = json!({"pattern": "hello\\(\\) \\{\\}.fn other", "output_mode": "content", "multiline": true});
    let out = env.ok(&grep, input).await;
    assert_eq!(
        out,
        "src/lib.rs:2:pub fn hello() {}\nsrc/lib.rs:3:fn other() {}"
    );
    let err = env.err(&grep, json!({"pattern": "a\\nb"})).await;
    assert!(err.contains("multiline"), "{err}");
}

#[tokio::test]
async fn head_limit_caps_every_mode() {
    let env = Env::new();
    for i in 0..5 {
        env.file(&format!("f{i}.txt"), "a\na\na\n");
        env.touch(&format!("f{i}.txt"), i);
    }
    let grep = Grep::default();
    let out = env
        .ok(&grep, json!({"pattern": "a", "head_limit": 2}))
        .await;
    assert_eq!(
        out,
        "Found 5 files\nf4.txt\nf3.txt\n\n(head_limit 2 reached: 3 more files not shown)"
    );
    let out = env
        .ok(
            &grep,
            json!({"pattern": "a", "output_mode": "content", "head_limit": 4}),
        )
        .await;
    assert_eq!(
        out,
        "f0.txt:1:a\nf0.txt:2:a\nf0.txt:3:a\nf1.txt:1:a\n\n(head_limit 4 reached: 11 more lines not shown)"
    );
    let out = env
        .ok(
            &grep,
            json!({"pattern": "a", "output_mode": "count", "head_limit": 1}),
        )
        .await;
    assert!(
        out.starts_with("f0.txt:3\n\n(head_limit 1 reached: 4 more entries not shown)"),
        "{out}"
    );
    let out = env
        .ok(&grep, json!({"pattern": "a", "head_limit": 0}))
        .await;
    assert_eq!(out.lines().count(), 6);
}

#[tokio::test]
async fn binary_files_are_skipped_and_single_files_searched() {
    let env = tree();
    env.file("data.bin", b"hello\x00\x01binary");
    let grep = Grep::default();
    let out = env
        .ok(&grep, json!({"pattern": "hello", "path": "data.bin"}))
        .await;
    assert_eq!(out, "No matches found");
    let out = env
        .ok(&grep, json!({"pattern": "hello", "path": "src"}))
        .await;
    assert_eq!(out, "Found 1 file\nsrc/lib.rs");
    let out = env
        .ok(&grep, json!({"pattern": "fn", "path": env.root().join("src/main.rs"), "output_mode": "content"}))
        .await;
    assert_eq!(out, "src/main.rs:1:fn main() {");
    let err = env
        .err(&grep, json!({"pattern": "x", "path": "missing"}))
        .await;
    assert!(err.contains("does not exist"), "{err}");
    let reason =
        alcove_tools::inspect(&grep, &json!({"pattern": "("}), &env.context.workspace).unwrap_err();
    assert!(reason.contains("invalid regex"), "{reason}");
}

#[tokio::test]
async fn output_is_capped_with_a_note() {
    let env = Env::new();
    let line = format!("match {}\n", "y".repeat(90));
    env.file("big.txt", line.repeat(2000));
    let out = env
        .ok(
            &Grep::default(),
            json!({"pattern": "match", "output_mode": "content"}),
        )
        .await;
    assert!(out.len() < 31_000, "{}", out.len());
    assert!(
        out.contains("[output cut at 30000 chars:"),
        "{}",
        &out[out.len() - 200..]
    );
    assert!(out.contains("more lines not shown"));
}

#[tokio::test]
async fn results_are_deterministic() {
    let env = Env::new();
    for i in 0..200 {
        env.file(&format!("d{}/f{i}.txt", i % 7), format!("needle {i}\n"));
    }
    let grep = Grep::default();
    let input = json!({"pattern": "needle", "output_mode": "content"});
    let first = env.ok(&grep, input.clone()).await;
    assert_eq!(first.lines().count(), 200);
    for _ in 0..3 {
        assert_eq!(env.ok(&grep, input.clone()).await, first);
    }
}

#[tokio::test]
async fn a_tree_too_large_for_the_single_threaded_walk_is_searched_whole_with_the_same_filters() {
    let env = Env::new();
    env.file(".gitignore", "ignored/\n");
    env.file("ignored/f.txt", "needle\n");
    env.file(".hidden/f.txt", "needle\n");
    env.file("d00/notes.md", "needle\n");
    // 400 files in 20 folders: more entries than one thread walks alone
    // (on a machine of one CPU, that thread walks them all).
    for n in 0..400 {
        let text = if n % 50 == 7 {
            "hay\nneedle\n"
        } else {
            "hay\n"
        };
        env.file(&format!("d{:02}/f{n:03}.txt", n / 20), text);
    }
    let out = env
        .ok(
            &Grep::default(),
            json!({"pattern": "needle", "output_mode": "count", "glob": "*.txt"}),
        )
        .await;
    let expected: Vec<String> = (0..400)
        .filter(|n| n % 50 == 7)
        .map(|n| format!("d{:02}/f{n:03}.txt:1", n / 20))
        .collect();
    assert_eq!(
        out,
        format!(
            "{}\n\nFound 8 matching lines in 8 files",
            expected.join("\n")
        )
    );
}
