//! Reads that fit a small window: a file cut to fit shows its last lines
//! and the exact `Read` call for the lines between, and a reply that makes
//! no call to a message naming a file is told once to read it.

use alcove_testkit::{Script, Step};
use serde_json::json;

use super::*;
use crate::support::{ReadCut, read_cut};

#[test]
fn a_file_cut_to_fit_shows_its_last_lines_and_the_read_call_for_the_lines_between() {
    // Seen with the real small model (issue 45, round 3): asked for the
    // last function of a file cut to fit, it named the last one it was
    // shown and never read on.
    let (env, server) = setup(Script::new().llama_cpp_window(8_192).conversation(
        "last function",
        vec![
            Step::tool_call("Read", json!({"file_path": "module_c.py"})),
            Step::text("c_fn_200"),
        ],
    ));
    modules(&env);
    let out = exec_openai(&env, &server, &["last function"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, result, _) = server.requests_for("last function")[1]
        .tool_results()
        .pop()
        .unwrap();
    let ReadCut {
        numbers,
        head_last,
        tail_first,
    } = read_cut(&result);
    assert_eq!(numbers[0], 1, "{result}");
    assert_eq!(
        numbers.last(),
        Some(&1_200),
        "the file's last line is shown"
    );
    assert!(
        result.ends_with(
            "  1198\tdef c_fn_200(value):\n  1199\t    return value * 200 + 1\n  1200\t"
        ),
        "{}",
        &result[result.len() - 200..]
    );
    assert!(result.contains("def c_fn_200(value)"), "{result}");
    assert!(
        result.contains(&format!(
            "(lines {}-{} of 1200 are not shown: they do not fit in what is left of the context window. To see them call Read {{\"file_path\": \"module_c.py\", \"offset\": {}, \"limit\": {head_last}}}, or Grep for what you need. The last lines of the window follow.)",
            head_last + 1,
            tail_first - 1,
            head_last + 1
        )),
        "{result}"
    );
}

#[test]
fn a_small_model_that_answers_without_a_call_is_told_once_to_read_the_file_named() {
    // Seen with the real small model (issue 45, rounds 3 and 4): asked
    // about pyproject.toml, it answered "your_package_name" without a
    // call, or described the call it would make.
    let reminded = |key: &str| {
        Script::new().llama_cpp_window(8_192).conversation(
            key,
            vec![
                Step::text("```json\n{\"name\": \"your_package_name\"}\n```"),
                Step::tool_call("Read", json!({"file_path": "pyproject.toml"})),
                Step::text("tidewater"),
            ],
        )
    };
    let (env, server) = setup(reminded("package name in pyproject.toml"));
    env.write_file("pyproject.toml", "[project]\nname = \"tidewater\"\n");
    let out = exec_openai(
        &env,
        &server,
        &["What is the package name in pyproject.toml?"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "tidewater");
    let requests = server.requests_for("package name in pyproject.toml");
    assert_eq!(
        requests[1].last_user_text(),
        "[alcove: you answered without calling a tool, and the message names pyproject.toml, in the workspace, which you have not read. Do not describe a call or guess what a file holds: call Read {\"file_path\": \"pyproject.toml\"} now, then answer from what it shows.]"
    );
    server.assert_script_finished();

    // Once per message: the reply after the reminder is the answer.
    let (env, server) = setup(Script::new().llama_cpp_window(8_192).conversation(
        "twice in pyproject.toml",
        vec![Step::text("guess one"), Step::text("guess two")],
    ));
    env.write_file("pyproject.toml", "[project]\nname = \"tidewater\"\n");
    let out = exec_openai(&env, &server, &["twice in pyproject.toml"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "guess two");
    server.assert_script_finished();

    // The attacker's side: a file a Read deny rule hides is never named;
    // and a frontier model (deferring profile) is not reminded at all.
    let (env, server) = setup(
        Script::new()
            .llama_cpp_window(8_192)
            .conversation("in secret.env", vec![Step::text("no idea")])
            .conversation("frontier pyproject.toml", vec![Step::text("no idea")]),
    );
    env.write_file("secret.env", "TOKEN=hunter2\n");
    env.write_file("pyproject.toml", "[project]\nname = \"tidewater\"\n");
    let out = exec_openai(
        &env,
        &server,
        &["--deny", "Read(secret.env)", "what is in secret.env"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests_for("in secret.env").len(), 1);
    let out = exec_openai(
        &env,
        &server,
        &["-c", "tool_profile=full", "frontier pyproject.toml"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests_for("frontier pyproject.toml").len(), 1);
}
