//! Wrong types, missing fields and huge values for every built-in tool: each
//! call ends as an error result naming what is wrong, the session goes on,
//! and nothing is written.

use alcove_testkit::{Block, Script, Step};
use serde_json::{Value, json};

use super::{BYPASS, Case, assert_error, end_status};

/// One reply made of these calls, then a final answer; the deferred
/// tools are loaded first when a call names one (the reply's results are
/// then the third request's).
fn calls(prompt: &str, calls: &[(&str, Value)]) -> Script {
    let blocks = calls
        .iter()
        .map(|(name, input)| Block::tool_call(name, input.clone()))
        .collect();
    let mut steps = vec![Step::reply(blocks), Step::text("recovered")];
    if calls
        .iter()
        .any(|(name, _)| alcove_core::DEFERRED_TOOLS.contains(name))
    {
        steps.insert(0, crate::support::load_deferred());
    }
    Script::new().conversation(prompt, steps)
}

#[test]
fn wrong_types_and_missing_fields_are_error_results_naming_the_field() {
    let cases: Vec<(&str, Value, &[&str])> = vec![
        (
            "Read",
            json!({"file_path": 5}),
            &["Read", "file_path", "invalid type"],
        ),
        ("Read", json!({}), &["missing field `file_path`"]),
        (
            "Read",
            json!({"file_path": "a.txt", "offset": "ten"}),
            &["offset"],
        ),
        (
            "Read",
            json!({"file_path": "a.txt", "limit": -1}),
            &["limit"],
        ),
        ("Read", json!("a.txt"), &["Read", "JSON object"]),
        ("Read", json!([1, 2]), &["Read", "invalid type"]),
        ("Read", json!(null), &["Read", "invalid type: null"]),
        (
            "Write",
            json!({"file_path": "w.txt"}),
            &["missing field `content`"],
        ),
        (
            "Write",
            json!({"file_path": "w.txt", "content": {"a": 1}}),
            &["content"],
        ),
        (
            "Write",
            json!({"file_path": ["w.txt"], "content": "x"}),
            &["file_path"],
        ),
        (
            "Edit",
            json!({"file_path": "a.txt", "old_string": 1, "new_string": "x"}),
            &["old_string"],
        ),
        (
            "Edit",
            json!({"file_path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": "yes"}),
            &["replace_all"],
        ),
        (
            "Edit",
            json!({"file_path": "a.txt", "new_string": "b"}),
            &["missing field `old_string`"],
        ),
        ("Glob", json!({"pattern": ["*.rs"]}), &["pattern"]),
        ("Glob", json!({}), &["missing field `pattern`"]),
        ("Grep", json!({"pattern": "x", "-A": "three"}), &["-A"]),
        (
            "Grep",
            json!({"pattern": "x", "output_mode": "everything"}),
            &["output_mode", "unknown variant"],
        ),
        ("Grep", json!({"pattern": null}), &["pattern"]),
        ("Bash", json!({"command": ["ls"]}), &["command"]),
        (
            "Bash",
            json!({"command": "touch neg.txt", "timeout": -5}),
            &["timeout"],
        ),
        ("Bash", json!({}), &["missing field `command`"]),
        (
            "Agent",
            json!({"description": "d", "prompt": 5}),
            &["prompt"],
        ),
        (
            "Agent",
            json!({"description": "d"}),
            &["missing field `prompt`"],
        ),
        (
            "Agent",
            json!({"description": "d", "prompt": "p", "tool_names": "Read"}),
            &["tool_names"],
        ),
        (
            "Agent",
            json!({"description": "d", "prompt": "p", "model": "nosuch/x"}),
            &["Agent failed", "nosuch"],
        ),
        ("spawn_agent", json!({"message": 1}), &["message"]),
        (
            "spawn_agent",
            json!({"message": "m", "agent_type": ["x"]}),
            &["agent_type"],
        ),
        ("spawn_agent", json!({}), &["missing field `message`"]),
        ("send_input", json!({"id": 3, "message": "hi"}), &["id"]),
        ("wait", json!({"ids": "agent-1"}), &["ids"]),
        (
            "wait",
            json!({"ids": []}),
            &["ids must list at least one agent id"],
        ),
        (
            "wait",
            json!({"ids": [""]}),
            &["ids must list at least one agent id"],
        ),
        (
            "wait",
            json!({"ids": ["agent-1"], "timeout_ms": "soon"}),
            &["timeout_ms"],
        ),
        ("close_agent", json!({}), &["missing field `id`"]),
        ("resume_agent", json!({"id": null}), &["id"]),
    ];
    let list: Vec<(&str, Value)> = cases.iter().map(|(n, i, _)| (*n, i.clone())).collect();
    let case = Case::new(calls("wrong types", &list));
    case.write("a.txt", "a\n");
    // More calls than one reply may run by default (32).
    let out = case.run(&[
        BYPASS[0],
        BYPASS[1],
        "-c",
        "max_tool_calls_per_reply=64",
        "wrong types",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(end_status(&out), "completed");
    let results = case.results("wrong types", 2);
    assert_eq!(results.len(), cases.len());
    for ((name, input, needles), result) in cases.iter().zip(&results) {
        assert!(result.1, "{name} {input} was accepted: {}", result.0);
        assert_error(result, needles);
    }
    assert_eq!(case.ws_files(), ["a.txt"], "a bad call wrote something");
}

#[test]
fn huge_numbers_are_clamped_or_refused_and_never_overflow() {
    let big = 1_000_000_000_000_000_000_u64;
    let cases: Vec<(&str, Value)> = vec![
        ("Read", json!({"file_path": "a.txt", "offset": big})),
        (
            "Read",
            json!({"file_path": "a.txt", "offset": u64::MAX, "limit": u64::MAX}),
        ),
        ("Read", json!({"file_path": "a.txt", "limit": big})),
        ("Read", json!({"file_path": "a.txt", "offset": 1e30})),
        (
            "Grep",
            json!({"pattern": "line", "output_mode": "content", "-C": u32::MAX, "head_limit": u64::MAX}),
        ),
        ("Grep", json!({"pattern": "line", "-A": u64::MAX})),
        (
            "Bash",
            json!({"command": "echo bounded", "timeout": u64::MAX}),
        ),
        ("wait", json!({"ids": ["agent-9"], "timeout_ms": i64::MAX})),
        ("wait", json!({"ids": ["agent-9"], "timeout_ms": i64::MIN})),
    ];
    let case = Case::new(calls("huge numbers", &cases));
    case.write("a.txt", "line one\nline two\nline three\n");
    let out = case.run(&[BYPASS[0], BYPASS[1], "huge numbers"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = case.results("huge numbers", 2);
    assert_error(
        &r[0],
        &["only 3 lines", "offset 1000000000000000000 is past the end"],
    );
    assert_error(&r[1], &["past the end"]);
    assert!(
        !r[2].1 && r[2].0.ends_with("     3\tline three"),
        "{:?}",
        r[2]
    );
    assert_error(&r[3], &["offset", "floating point"]);
    assert!(
        !r[4].1 && r[4].0.contains("a.txt:3:line three"),
        "{:?}",
        r[4]
    );
    assert_error(&r[5], &["-A", "expected u32"]);
    assert_eq!(
        r[6],
        ("bounded".to_owned(), false),
        "the timeout is clamped"
    );
    assert!(!r[7].1 && r[7].0.contains("not_found"), "{:?}", r[7]);
    assert_error(&r[8], &["timeout_ms must be greater than zero"]);
    assert_eq!(case.ws_files(), ["a.txt"]);
}

#[test]
fn ten_megabyte_strings_are_written_whole_or_refused_cleanly() {
    let content = "0123456789abcdef".repeat(10 * 1024 * 1024 / 16);
    let cases: Vec<(&str, Value)> = vec![
        // An Edit needs a Read of the file first.
        ("Read", json!({"file_path": "small.txt"})),
        ("Write", json!({"file_path": "big.txt", "content": content})),
        (
            "Edit",
            json!({"file_path": "small.txt", "old_string": &content[..64 * 1024], "new_string": "y"}),
        ),
        ("Read", json!({"file_path": "one-line.txt"})),
        ("Grep", json!({"pattern": "a{1000}{1000}{1000}"})),
        (
            "Glob",
            json!({"pattern": format!("{}*", "[ab]".repeat(2_000))}),
        ),
    ];
    let blocks = cases
        .iter()
        .map(|(name, input)| Block::tool_call(name, input.clone()))
        .collect();
    let case = Case::new(Script::new().conversation(
        "huge strings",
        // Big pieces keep the debug-build run short; the size is the point.
        vec![
            Step::reply(blocks).piece_chars(1 << 20),
            Step::text("recovered"),
        ],
    ));
    case.write("small.txt", "small\n");
    case.write("one-line.txt", "x".repeat(300_000));
    // The fake server builds the whole 10 MB reply before its first byte;
    // on a loaded machine (the suite runs in parallel) that took over the
    // suite's 3 s idle timeout, and the retry ate the next step.
    std::fs::write(
        case.env.home().join("config.toml"),
        "[retry]\nbase_delay_ms = 10\nmax_delay_ms = 3000\nidle_timeout_ms = 60000\n",
    )
    .unwrap();
    let out = case.run(&[BYPASS[0], BYPASS[1], "huge strings"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = case.results("huge strings", 1);
    let r = &r[1..];
    assert_eq!(r[0], ("Created big.txt (10485760 bytes)".to_owned(), false));
    assert!(
        std::fs::read_to_string(case.ws("big.txt")).unwrap() == content,
        "big.txt was not written whole"
    );
    assert_error(&r[1], &["old_string not found"]);
    assert!(
        !r[2].1
            && r[2]
                .0
                .ends_with("… [line cut at 2000 chars: 300000 bytes long]"),
        "{}",
        &r[2].0[r[2].0.len().saturating_sub(200)..]
    );
    assert_error(&r[3], &["invalid regex pattern", "size limit"]);
    assert_eq!(r[4], ("No files found".to_owned(), false));
    assert_eq!(case.ws_files(), ["big.txt", "one-line.txt", "small.txt"]);
    assert_eq!(
        std::fs::read_to_string(case.ws("small.txt")).unwrap(),
        "small\n"
    );
}
