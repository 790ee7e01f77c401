//! Skills, custom commands, `/init` and model aliases through the real
//! binary (issue 15): the formats Claude Code users already have, copied in
//! as they are.

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{alcove, exec, exec_command, finish, setup};

/// A Claude Code skill folder, as such folders are found in the wild: an
/// unquoted colon in the description, a list of allowed tools, a script.
fn claude_code_skill(env: &TestEnv) {
    env.write_file(
        ".claude/skills/release-notes/SKILL.md",
        "---\nname: release-notes\ndescription: Writes release notes. Use when: the user asks for a changelog\n\
         allowed-tools: Bash(sh:*), Read\n---\n# Release notes\n\nSKILL-BODY-MARKER: collect changes since $ARGUMENTS,\n\
         then run scripts/collect.sh.\n",
    );
    env.write_file(
        ".claude/skills/release-notes/scripts/collect.sh",
        "echo collected > collected.txt\necho SCRIPT-RAN\n",
    );
}

/// `alcove exec ARGS` with `HOME` set to the test's home, so
/// `~/.claude/skills` is the test's too.
fn exec_home(env: &TestEnv, server: &FakeServer, args: &[&str]) -> crate::support::Outcome {
    let mut command = exec_command(env, server, args);
    command.env("HOME", env.home());
    finish(command.spawn().unwrap())
}

#[test]
fn the_catalog_lists_names_not_bodies_and_a_skill_call_returns_the_body_with_arguments() {
    let (env, server) = setup(Script::new().conversation(
        "write the notes",
        vec![
            Step::tool_call("Skill", json!({"skill": "release-notes", "args": "v1.2"})),
            Step::text("done"),
        ],
    ));
    claude_code_skill(&env);
    let out = exec_home(&env, &server, &["write the notes"]);
    assert_eq!(out.code, 0, "{}", out.stderr);

    let requests = server.requests_for("write the notes");
    let system = requests[0].system_prompt();
    assert!(
        system.contains(
            "- release-notes: Writes release notes. Use when: the user asks for a changelog"
        ),
        "{system}"
    );
    assert!(
        !system.contains("SKILL-BODY-MARKER"),
        "no bodies in the catalog"
    );
    assert!(requests[0].tool_names().contains(&"Skill".to_owned()));

    let (_, content, is_error) = requests[1].tool_results().remove(0);
    assert!(!is_error, "{content}");
    assert!(
        content.contains("SKILL-BODY-MARKER: collect changes since v1.2,"),
        "{content}"
    );
    let folder = env.path(".claude/skills/release-notes");
    let folder = folder.canonicalize().unwrap();
    assert!(content.contains(&folder.display().to_string()), "{content}");
    // Nobody can approve in exec: allowed-tools widen nothing.
    assert!(content.contains("were not approved"), "{content}");
}

#[test]
fn without_skills_there_is_no_skill_tool_and_no_catalog() {
    let (env, server) = setup(Script::new().conversation("plain task", vec![Step::text("ok")]));
    let out = exec_home(&env, &server, &["plain task"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let request = &server.requests_for("plain task")[0];
    assert!(!request.tool_names().contains(&"Skill".to_owned()));
    assert!(!request.system_prompt().contains("# Available skills"));
}

#[test]
fn a_skills_script_run_through_bash_obeys_the_gate() {
    let script = || {
        Script::new().conversation(
            "collect the notes",
            vec![
                Step::tool_call("Skill", json!({"skill": "release-notes"})),
                Step::tool_call(
                    "Bash",
                    json!({"command": "sh .claude/skills/release-notes/scripts/collect.sh"}),
                ),
                Step::text("done"),
            ],
        )
    };
    // Headless in the default mode: the skill's allowed-tools are not granted
    // by themselves, so the script is refused like any command. (The
    // sandbox's auto-allow is off: this test is about the gate.)
    let (env, server) = setup(script());
    claude_code_skill(&env);
    let out = exec_home(
        &env,
        &server,
        &["-c", "sandbox.auto_allow=false", "collect the notes"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, content, is_error) = server.requests_for("collect the notes")[2]
        .tool_results()
        .pop()
        .unwrap();
    assert!(is_error, "{content}");
    assert!(!env.path("collected.txt").exists());

    // The user approves the allowed-tools when asked (plain front end: the
    // next stdin line answers): the script runs without another question.
    let (env, server) = setup(script());
    claude_code_skill(&env);
    let mut command = env.command(alcove(), &server);
    command
        .env("HOME", env.home())
        .args(["-c", "sandbox.auto_allow=false", "collect the notes"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"y\n").unwrap();
    }
    let out = finish(child);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("skill `release-notes` asks to allow"),
        "{}",
        out.stderr
    );
    let (_, content, is_error) = server.requests_for("collect the notes")[2]
        .tool_results()
        .pop()
        .unwrap();
    assert!(!is_error, "{content}");
    assert!(content.contains("SCRIPT-RAN"), "{content}");
    assert_eq!(env.read_file("collected.txt"), "collected\n");
}

#[test]
fn a_child_loads_a_skill_and_a_definitions_skills_are_preloaded() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "delegate the notes",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "notes", "prompt": "CHILD-A: load a skill", "subagent_type": "general-purpose"}),
                    ),
                    Step::tool_call(
                        "Agent",
                        json!({"description": "writer", "prompt": "CHILD-B: write", "subagent_type": "writer"}),
                    ),
                    Step::text("parent done"),
                ],
            )
            .conversation(
                "CHILD-A",
                vec![
                    Step::tool_call("Skill", json!({"skill": "release-notes", "args": "v9"})),
                    Step::text("child A done"),
                ],
            )
            .conversation("CHILD-B", vec![Step::text("child B done")]),
    );
    claude_code_skill(&env);
    env.write_file(
        ".claude/agents/writer.md",
        "---\nname: writer\ndescription: Writes notes.\ntools: Read, Write\nskills: [release-notes]\n---\nYou write notes.\n",
    );
    let out = exec_home(&env, &server, &["delegate the notes"]);
    assert_eq!(out.code, 0, "{}", out.stderr);

    let child_a = server.requests_for("CHILD-A");
    assert!(child_a[0].tool_names().contains(&"Skill".to_owned()));
    assert!(child_a[0].system_prompt().contains("- release-notes: "));
    let (_, content, is_error) = child_a[1].tool_results().remove(0);
    assert!(!is_error, "{content}");
    assert!(content.contains("collect changes since v9"), "{content}");

    let child_b = server.requests_for("CHILD-B");
    let system = child_b[0].system_prompt();
    assert!(system.contains("SKILL-BODY-MARKER"), "preloaded: {system}");
    assert!(!child_b[0].tool_names().contains(&"Skill".to_owned()));
}

#[test]
fn claude_code_commands_run_from_exec_with_their_arguments() {
    let (env, server) = setup(
        Script::new()
            .conversation("Review pull request 42", vec![Step::text("reviewed")])
            .conversation("SKILL-BODY-MARKER", vec![Step::text("noted")]),
    );
    claude_code_skill(&env);
    env.write_file(
        ".claude/commands/review-pr.md",
        "---\ndescription: Review a pull request\nargument-hint: <number> [focus]\nallowed-tools: Bash(gh pr view:*)\n---\n\
         Review pull request $1, focusing on $2 (all: $ARGUMENTS).\n",
    );
    env.write_file(".alcove/commands/plain.md", "No front matter at all.\n");
    env.write_file(
        ".claude/commands/frontend/component.md",
        "Make a component.\n",
    );
    let out = exec_home(&env, &server, &["/review-pr 42 tests"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        server.requests_for("Review pull request")[0].first_user_text(),
        "Review pull request 42, focusing on tests (all: 42 tests)."
    );

    let out = exec_home(&env, &server, &["/release-notes v2.0"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first = server.requests_for("SKILL-BODY-MARKER")[0].first_user_text();
    assert!(first.contains("collect changes since v2.0"), "{first}");

    let listed = std::process::Command::new(alcove())
        .current_dir(env.workspace())
        .env("ALCOVE_HOME", env.home())
        .env("HOME", env.home())
        .args(["skills", "--json"])
        .output()
        .unwrap();
    assert!(listed.status.success());
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed["skills"][0]["name"], "release-notes");
    let names: Vec<&str> = listed["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|command| command["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["component", "review-pr", "plain"]);
}

#[test]
fn later_folders_win_and_broken_files_warn_with_file_and_line_while_the_rest_load() {
    let (env, server) = setup(Script::new().conversation("which skills", vec![Step::text("ok")]));
    std::fs::create_dir_all(env.home().join(".claude/skills/dup")).unwrap();
    std::fs::write(
        env.home().join(".claude/skills/dup/SKILL.md"),
        "---\ndescription: FROM-HOME\n---\nbody\n",
    )
    .unwrap();
    env.write_file(
        ".alcove/skills/dup/SKILL.md",
        "---\ndescription: FROM-WORKSPACE\n---\nbody\n",
    );
    env.write_file(
        ".agents/skills/good/SKILL.md",
        "---\ndescription: GOOD-ONE\n---\nbody\n",
    );
    env.write_file(
        ".claude/skills/broken/SKILL.md",
        "---\nname: broken\ndescription: [unclosed\n---\nbody\n",
    );
    env.write_file(".claude/commands/bad.md", "---\nmodel: [\n---\nbody\n");
    let out = exec_home(&env, &server, &["which skills"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let system = server.requests_for("which skills")[0].system_prompt();
    assert!(system.contains("- dup: FROM-WORKSPACE"), "{system}");
    assert!(!system.contains("FROM-HOME"), "{system}");
    assert!(system.contains("- good: GOOD-ONE"), "{system}");
    assert!(!system.contains("broken"), "{system}");
    assert!(
        out.stderr
            .contains(".claude/skills/broken/SKILL.md:3: skill skipped"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains(".claude/commands/bad.md:2: command skipped"),
        "{}",
        out.stderr
    );
}

#[test]
fn init_delegates_to_an_explore_child_and_writes_agents_md() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "Create or update AGENTS.md",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "survey", "prompt": "INIT-CHILD: report build commands and layout", "subagent_type": "explore"}),
                    ),
                    Step::tool_call(
                        "Write",
                        json!({"file_path": "AGENTS.md", "content": "# Build and test\n\ncargo test\n"}),
                    ),
                    Step::text("Wrote AGENTS.md."),
                ],
            )
            .conversation(
                "INIT-CHILD",
                vec![Step::text("Build: cargo build (Cargo.toml:1). Tests: cargo test.")],
            ),
    );
    env.write_file("Cargo.toml", "[package]\nname = \"demo\"\n");
    let out = exec(
        &env,
        &server,
        &["--permission-mode", "acceptEdits", "/init"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let parent = server.requests_for("Create or update AGENTS.md");
    assert!(
        parent[0]
            .first_user_text()
            .contains("subagent_type \"explore\""),
        "{}",
        parent[0].first_user_text()
    );
    let child = server.requests_for("INIT-CHILD");
    let mut tools = child[0].tool_names();
    tools.sort();
    assert_eq!(tools, ["Glob", "Grep", "Read"], "an explore child");
    let (_, report, _) = parent[1].tool_results().remove(0);
    assert!(report.contains("cargo build (Cargo.toml:1)"), "{report}");
    assert_eq!(
        env.read_file("AGENTS.md"),
        "# Build and test\n\ncargo test\n"
    );
}

#[test]
fn init_does_not_overwrite_agents_md_without_asking() {
    let (env, server) = setup(Script::new().conversation(
        "Create or update AGENTS.md",
        vec![
            Step::tool_call(
                "Write",
                json!({"file_path": "AGENTS.md", "content": "replaced\n"}),
            ),
            Step::text("Could not write."),
        ],
    ));
    env.write_file("AGENTS.md", "the user's own rules\n");
    // Headless in the default mode nobody can say yes: the write is refused.
    let out = exec(&env, &server, &["/init"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, content, is_error) = server.requests_for("Create or update AGENTS.md")[1]
        .tool_results()
        .remove(0);
    assert!(is_error, "{content}");
    assert_eq!(env.read_file("AGENTS.md"), "the user's own rules\n");
}

fn alias_definitions(env: &TestEnv) {
    for (name, model) in [
        ("uses-sonnet", "sonnet"),
        ("uses-opus", "opus"),
        ("uses-haiku", "haiku"),
        ("uses-inherit", "inherit"),
    ] {
        env.write_file(
            &format!(".claude/agents/{name}.md"),
            &format!("---\nname: {name}\ndescription: d\nmodel: {model}\n---\nYou help.\n"),
        );
    }
}

fn alias_script() -> Script {
    Script::new()
        .conversation(
            "use the aliases",
            vec![
                Step::tool_call(
                    "Agent",
                    json!({"description": "a", "prompt": "ALIAS-SONNET", "subagent_type": "uses-sonnet"}),
                ),
                Step::tool_call(
                    "Agent",
                    json!({"description": "b", "prompt": "ALIAS-INHERIT", "subagent_type": "uses-inherit"}),
                ),
                Step::text("done"),
            ],
        )
        .conversation("ALIAS-SONNET", vec![Step::text("s")])
        .conversation("ALIAS-INHERIT", vec![Step::text("i")])
}

#[test]
fn family_aliases_map_to_a_current_model_on_anthropic_and_inherit_is_silent() {
    let (env, server) = setup(alias_script());
    alias_definitions(&env);
    let out = exec(&env, &server, &["use the aliases"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    assert_eq!(
        server.requests_for("ALIAS-SONNET")[0].model(),
        "claude-sonnet-4-5"
    );
    assert_eq!(
        server.requests_for("ALIAS-INHERIT")[0].model(),
        "fake-model"
    );

    // `[model_aliases]` overrides the table.
    let (env, server) = setup(alias_script());
    alias_definitions(&env);
    env.write_file(
        ".alcove/config.toml",
        "[model_aliases]\nsonnet = \"anthropic/my-pinned-sonnet\"\n",
    );
    let out = exec(&env, &server, &["use the aliases"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        server.requests_for("ALIAS-SONNET")[0].model(),
        "my-pinned-sonnet"
    );
}

#[test]
fn other_providers_use_the_parents_model_with_one_warning_per_session() {
    let (env, server) = setup(alias_script());
    alias_definitions(&env);
    let mut command = env.command_openai(alcove(), &server);
    command
        .args(["exec", "use the aliases"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = finish(command.spawn().unwrap());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests_for("ALIAS-SONNET")[0].model(), "fake-model");
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|line| line.contains("warning"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stderr);
    assert!(
        warnings[0].contains("model haiku, opus, sonnet "),
        "{}",
        out.stderr
    );

    // `alcove agents` loads the files without a warning per alias.
    let listed = std::process::Command::new(alcove())
        .current_dir(env.workspace())
        .env("ALCOVE_HOME", env.home())
        .arg("agents")
        .output()
        .unwrap();
    assert!(listed.status.success());
    assert_eq!(String::from_utf8_lossy(&listed.stderr), "");
}

#[test]
fn in_the_ui_a_skill_runs_by_its_slash_name_and_its_allowed_tools_need_the_users_yes() {
    let (env, server) = setup(Script::new().conversation(
        "SKILL-BODY-MARKER",
        vec![
            Step::tool_call("Skill", json!({"skill": "release-notes"})),
            Step::tool_call(
                "Bash",
                json!({"command": "sh .claude/skills/release-notes/scripts/collect.sh"}),
            ),
            Step::text("NOTES-DONE"),
        ],
    ));
    crate::tui::patient(&env);
    claude_code_skill(&env);
    let pane = crate::tui::Pane::start(&env, &server, &[]);
    pane.wait_for_screen("Ask anything");
    pane.prompt("/release-notes v3");
    let asked = pane.wait_for_screen("wants to use Skill");
    assert!(asked.contains("asks to allow"), "{asked}");
    pane.key("y");
    // The approved `Bash(sh:*)` lets the script run without a second question.
    pane.wait_for("NOTES-DONE");
    assert_eq!(env.read_file("collected.txt"), "collected\n");
    let first = server.requests_for("SKILL-BODY-MARKER")[0].first_user_text();
    assert!(first.contains("collect changes since v3"), "{first}");
    pane.type_text("/exit");
    pane.key("Enter");
    assert_eq!(pane.wait_exit(), 0);
}

#[test]
fn a_user_only_skill_is_left_out_of_the_catalog_and_a_commands_model_is_used_for_its_turn() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "try the deploy skill",
                vec![
                    Step::tool_call("Skill", json!({"skill": "deploy"})),
                    Step::text("refused"),
                ],
            )
            .conversation("DEPLOY-BODY", vec![Step::text("deployed")])
            .conversation("QUICK-COMMAND", vec![Step::text("quick")]),
    );
    claude_code_skill(&env);
    env.write_file(
        ".claude/skills/deploy/SKILL.md",
        "---\ndescription: Deploys.\ndisable-model-invocation: true\n---\nDEPLOY-BODY to $ARGUMENTS\n",
    );
    env.write_file(
        ".claude/commands/quick.md",
        "---\nmodel: haiku\n---\nQUICK-COMMAND $ARGUMENTS\n",
    );
    let out = exec_home(&env, &server, &["try the deploy skill"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("try the deploy skill");
    assert!(!requests[0].system_prompt().contains("- deploy:"));
    let (_, content, is_error) = requests[1].tool_results().remove(0);
    assert!(is_error, "{content}");
    assert!(content.contains("only be run by the user"), "{content}");

    let out = exec_home(&env, &server, &["/deploy staging"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        server.requests_for("DEPLOY-BODY")[0]
            .first_user_text()
            .contains("DEPLOY-BODY to staging")
    );

    let out = exec_home(&env, &server, &["/quick now"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        server.requests_for("QUICK-COMMAND")[0].model(),
        "claude-haiku-4-5"
    );
}
