//! Agent definitions through the real binary: Claude Code files from
//! `.claude/agents/` used via `subagent_type`, precedence between folders,
//! broken files skipped with a warning, and `alcove agents`.

use std::path::Path;

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{alcove, exec, of_type, setup};

const REVIEWER: &str = "---\nname: code-reviewer\ndescription: Reviews code for bugs; use after edits.\n\
tools: Read, Grep\nmodel: sonnet\ncolor: purple\n---\nYou are REVIEWER-7, a meticulous code reviewer.\n";

#[test]
fn a_definition_from_claude_agents_is_used_via_subagent_type() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "get a review",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "review", "prompt": "REVIEW-CHILD: look", "subagent_type": "code-reviewer"}),
                    ),
                    Step::text("reviewed"),
                ],
            )
            .conversation("REVIEW-CHILD", vec![Step::text("looks fine")]),
    );
    env.write_file(".claude/agents/code-reviewer.md", REVIEWER);
    let out = exec(&env, &server, &["--json", "get a review"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let parent = &server.requests_for("get a review")[0];
    let agent_tool = parent.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "Agent")
        .unwrap();
    assert!(
        agent_tool["description"]
            .as_str()
            .unwrap()
            .contains("- code-reviewer: Reviews code for bugs; use after edits."),
        "{agent_tool}"
    );
    let child = &server.requests_for("REVIEW-CHILD")[0];
    assert_eq!(child.tool_names(), ["Read", "Grep"]);
    assert!(
        child.system_prompt().starts_with("You are REVIEWER-7"),
        "{}",
        child.system_prompt()
    );
    // Issue 15: on the Anthropic protocol a family alias is that family's current model.
    assert_eq!(child.model(), "claude-sonnet-4-5");
    let events = out.events();
    assert!(
        of_type(&events, "warning").is_empty(),
        "no warning for a known alias: {}",
        out.stdout
    );
}

#[test]
fn a_broken_definition_is_skipped_with_a_warning_and_the_others_load() {
    let (env, server) = setup(Script::new().conversation("anything", vec![Step::text("ok")]));
    env.write_file(
        ".alcove/agents/helper.md",
        "---\ndescription: Helps with chores.\n---\nYou help.\n",
    );
    env.write_file(
        ".alcove/agents/broken.md",
        "---\nname: broken\ndescription: [unclosed\n---\nbody\n",
    );
    let out = exec(&env, &server, &["--json", "anything"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let warnings: Vec<&str> = of_type(&events, "warning")
        .iter()
        .map(|event| event["message"].as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|warning| warning.contains("broken.md:3: agent definition skipped")),
        "{warnings:?}"
    );
    let tools = server.requests_for("anything")[0].body["tools"].to_string();
    assert!(tools.contains("- helper: Helps with chores."), "{tools}");
    assert!(!tools.contains("- broken:"), "{tools}");
}

fn agents_command(env: &TestEnv, server: &FakeServer, args: &[&str]) -> std::process::Output {
    env.command(alcove(), server)
        .arg("agents")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn alcove_agents_lists_definitions_with_sources_and_effective_tools() {
    let env = TestEnv::new();
    let server = FakeServer::start(Script::new());
    env.write_file(".claude/agents/code-reviewer.md", REVIEWER);
    env.write_file(
        ".alcove/agents/reviewer.md",
        "---\nname: code-reviewer\ndescription: alcove's reviewer\ntools: [Read, Glob, Bash]\n\
         disallowedTools: Bash\npermissionMode: plan\npermissions:\n  deny: [\"Read(./secrets/**)\"]\n---\nbody\n",
    );
    env.write_file(
        ".claude/agents/explore.md",
        "---\nname: Explore\ndescription: my own explorer\ntools: Grep\n---\nexplore\n",
    );
    env.write_file(".alcove/agents/broken.md", "---\nname: [x\n---\nbody\n");
    let out = agents_command(&env, &server, &[]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("general-purpose  (built-in)\n"), "{stdout}");
    assert!(
        stdout.contains(
            "tools: Read, Glob, Grep, Write, Edit, Bash, BashOutput, KillShell, TodoWrite, WebFetch\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "code-reviewer  (.alcove/agents/reviewer.md)\n  alcove's reviewer\n  tools: Read, Glob\n  permissionMode: plan\n  permissions.deny: Read(./secrets/**)\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("Explore  (.claude/agents/explore.md)\n  my own explorer\n  tools: Grep\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("explore  (built-in)"), "{stdout}");
    assert!(
        stderr.contains("broken.md:2: agent definition skipped"),
        "{stderr}"
    );

    let out = agents_command(&env, &server, &["--json"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let reviewer = list
        .as_array()
        .unwrap()
        .iter()
        .find(|definition| definition["name"] == "code-reviewer")
        .unwrap();
    assert!(
        Path::new(reviewer["source"].as_str().unwrap()).ends_with(".alcove/agents/reviewer.md"),
        "{reviewer}"
    );
    assert_eq!(reviewer["tools"], json!(["Read", "Glob"]));
    assert_eq!(reviewer["permission_mode"], "plan");
}
