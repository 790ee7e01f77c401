//! Broken files alcove reads before the first request: a config layer or
//! `.alcove/settings.json` that does not parse is exit 2 naming the file and
//! line (and no request is made); someone else's `.claude/settings.json`
//! and agent definitions are skipped with a warning naming file and line.

use alcove_testkit::{Block, Script, Step};
use serde_json::json;

use super::{Case, assert_error, warnings};

/// A case whose prompt "anything" is answered `runs` times.
fn answering(runs: usize) -> Case {
    Case::new(Script::new().conversation("anything", vec![Step::text("ok"); runs]))
}

/// Runs with only `file` (in the workspace) holding `text`; returns the outcome.
fn with_file(case: &Case, file: &str, text: &[u8]) -> crate::support::Outcome {
    for old in [
        ".alcove/config.toml",
        ".alcove/settings.json",
        ".claude/settings.json",
    ] {
        let _ = std::fs::remove_file(case.ws(old));
    }
    case.write(file, text);
    case.run(&["anything"])
}

#[test]
fn config_and_settings_files_that_do_not_parse_exit_2_naming_file_and_line() {
    let case = answering(3);
    let config = ".alcove/config.toml";
    let failures: [(&str, &[u8], &[&str]); 5] = [
        (
            config,
            b"model = \"x\"\n\nmax_turns = [\n",
            &[".alcove/config.toml", "line 3", "unclosed array"],
        ),
        (
            config,
            b"# fine\nmax_turns = \"many\"\n",
            &[".alcove/config.toml", "line 2", "max_turns", "expected u32"],
        ),
        (
            config,
            b"[agents]\nmax_concurrent = -1\n",
            &[".alcove/config.toml", "line 2", "expected usize"],
        ),
        (
            config,
            b"# caf\xe9\nmax_turns = 3\n",
            &[".alcove/config.toml", "not contain valid UTF-8"],
        ),
        (
            ".alcove/settings.json",
            b"{\n  \"hooks\": {,\n}",
            &[".alcove/settings.json", "line 2"],
        ),
    ];
    for (file, text, needles) in failures {
        let out = with_file(&case, file, text);
        assert_eq!(out.code, 2, "{file}: {}", out.stderr);
        for needle in needles {
            assert!(out.stderr.contains(needle), "{needle:?}: {}", out.stderr);
        }
    }
    assert!(case.server.requests().is_empty(), "a request was made");

    // Someone else's file: a warning, and the session runs.
    let out = with_file(&case, ".claude/settings.json", b"{\n  \"hooks\": {,\n}");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warned = warnings(&out);
    assert!(
        warned
            .iter()
            .any(|warning| warning.contains(".claude/settings.json")
                && warning.contains("line 2")
                && warning.contains("its hooks were skipped")),
        "{warned:?}"
    );
    // Values no duration can hold are refused, not a crash.
    let out = with_file(
        &case,
        config,
        b"[[hooks.PreToolUse]]\ncommand = \"true\"\ntimeout = 1e30\n",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        warnings(&out)
            .iter()
            .any(|warning| warning.contains("timeout 1000000000000000000000000000000")),
        "{:?}",
        warnings(&out)
    );
    let out = case.run(&["-c", "agents.timeout_secs=inf", "anything"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn agent_definitions_that_do_not_parse_are_skipped_with_a_warning_naming_file_and_line() {
    let case = answering(1);
    let broken: [(&str, &[u8], &str); 11] = [
        (
            "unclosed.md",
            b"---\nname: unclosed\ndescription: x\n",
            ":1: agent definition skipped: the front matter is never closed",
        ),
        (
            "tabs.md",
            b"---\nname: tabs\ndescription: x\npermissions:\n\tallow: []\n---\nbody\n",
            ":5: agent definition skipped: found character that cannot start any token",
        ),
        (
            "types.md",
            b"---\nname: types\ndescription: x\nmaxTurns: many\n---\nbody\n",
            ":4: agent definition skipped: maxTurns: invalid type",
        ),
        (
            "tools.md",
            b"---\nname: tools\ndescription: x\ntools: 5\n---\nbody\n",
            ":2: agent definition skipped",
        ),
        (
            "huge.md",
            b"---\nname: huge\ndescription: x\ntimeout: 1e30\n---\nbody\n",
            ":4: agent definition skipped: timeout must be positive",
        ),
        (
            "mode.md",
            b"---\nname: mode\ndescription: x\npermissionMode: yolo\n---\nbody\n",
            ":4: agent definition skipped: unknown permissionMode `yolo`",
        ),
        (
            "rule.md",
            b"---\nname: rule\ndescription: x\npermissions:\n  deny: [\"Bash(rm:*\"]\n---\nbody\n",
            ":4: agent definition skipped: invalid permission rule `Bash(rm:*`",
        ),
        (
            "list.md",
            b"---\n- a\n- b\n---\nbody\n",
            ":2: agent definition skipped: invalid type: sequence",
        ),
        (
            "empty.md",
            b"",
            ":1: agent definition skipped: no YAML front matter",
        ),
        (
            "latin1.md",
            b"---\nname: latin\ndescription: caf\xe9\n---\nbody\n",
            ": cannot read the agent definition: stream did not contain valid UTF-8",
        ),
        (
            "binary.md",
            b"\x7fELF\x00\x01\x02\xff",
            ": cannot read the agent definition",
        ),
    ];
    case.write(
        ".alcove/agents/good.md",
        "---\ndescription: Loads fine.\n---\nYou help.\n",
    );
    for (name, text, _) in &broken {
        case.write(&format!(".alcove/agents/{name}"), text);
    }
    let out = case.run(&["anything"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warned = warnings(&out);
    for (name, _, expected) in &broken {
        let needle = format!("{name}{expected}");
        assert!(
            warned.iter().any(|warning| warning.contains(&needle)),
            "{needle:?} not in {warned:?}"
        );
    }
    let tools = case.server.requests_for("anything")[0].body["tools"].to_string();
    assert!(tools.contains("- good: Loads fine."), "{tools}");
    for (name, _, _) in &broken {
        let stem = name.trim_end_matches(".md");
        assert!(!tools.contains(&format!("- {stem}:")), "{stem} loaded");
    }
}

#[test]
fn a_definition_that_asks_for_more_than_its_parent_gets_no_more() {
    let case = Case::new(
        Script::new()
            .conversation(
                "delegate loosely",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "loose", "prompt": "LOOSE child", "subagent_type": "loose"}),
                    ),
                    Step::text("parent done"),
                ],
            )
            .conversation(
                "LOOSE child",
                vec![
                    Step::reply(vec![
                        Block::tool_call("Bash", json!({"command": "touch made.txt"})),
                        Block::tool_call("Bash", json!({"command": "rm victim.txt"})),
                        Block::tool_call("Write", json!({"file_path": "w.txt", "content": "x"})),
                    ]),
                    Step::text("child done"),
                ],
            ),
    );
    case.write(
        ".alcove/agents/loose.md",
        "---\nname: loose\ndescription: wants everything\npermissionMode: bypassPermissions\n\
         permissions:\n  allow: [\"Bash\", \"Edit\", \"Bash(rm:*)\"]\n---\nYou may do anything.\n",
    );
    case.write("victim.txt", "keep me\n");
    let out = case.run(&[
        "-c",
        "sandbox.auto_allow=false",
        "--deny",
        "Bash(rm:*)",
        "delegate loosely",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = case.results("LOOSE child", 1);
    assert_error(&results[0], &["needs approval"]);
    assert_error(&results[1], &["denied by rule Bash(rm:*) from --deny"]);
    assert_error(&results[2], &["needs approval"]);
    assert_eq!(case.ws_files(), [".alcove/agents/loose.md", "victim.txt"]);
}
