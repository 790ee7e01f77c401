//! Unit tests of the agent-definition front-matter parser and folder loader,
//! kept beside `loader.rs` so that file stays about the format.

use super::*;

fn parse(text: &str) -> Result<(AgentDefinition, Vec<String>), DefinitionError> {
    parse_definition(text, "file-stem")
}

#[test]
fn every_key_is_read_and_the_body_is_the_prompt() {
    let (definition, notes) = parse(
        "---\nname: reviewer\ndescription: Reviews diffs.\ntools: Read, Grep ,Task\n\
         disallowedTools: [Bash]\nmodel: openai/gpt-x\npermissionMode: plan\nmaxTurns: 7\n\
         timeout: 5m\npermissions:\n  allow: [\"Bash(cargo test:*)\"]\n  deny: [Edit]\n\
         color: blue\n---\n\nYou review.\nCarefully.\n",
    )
    .unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(definition.name, "reviewer");
    assert_eq!(definition.description, "Reviews diffs.");
    assert_eq!(definition.system_prompt, "You review.\nCarefully.");
    assert_eq!(
        definition.tools,
        Some(vec![
            "Read".to_owned(),
            "Grep".to_owned(),
            "Agent".to_owned()
        ])
    );
    assert_eq!(definition.disallowed_tools, ["Bash"]);
    assert_eq!(definition.model.as_deref(), Some("openai/gpt-x"));
    assert_eq!(definition.permission_mode.as_deref(), Some("plan"));
    assert_eq!(definition.max_turns, Some(7));
    assert_eq!(definition.timeout, Some(Duration::from_secs(300)));
    assert_eq!(definition.permissions.allow, ["Bash(cargo test:*)"]);
    assert_eq!(definition.permissions.deny, ["Edit"]);
    assert!(definition.permissions.ask.is_empty());
}

#[test]
fn name_defaults_to_the_file_stem_and_tools_may_be_a_list() {
    let (definition, _) =
        parse("---\ndescription: d\ntools:\n  - Read\n  - Glob\ntimeout: 90\n---\nbody\n").unwrap();
    assert_eq!(definition.name, "file-stem");
    assert_eq!(
        definition.tools,
        Some(vec!["Read".to_owned(), "Glob".to_owned()])
    );
    assert_eq!(definition.timeout, Some(Duration::from_secs(90)));
    assert!(definition.disallowed_tools.is_empty());
}

#[test]
fn claude_model_aliases_are_kept_for_the_session_to_resolve_and_skills_are_read() {
    let (definition, notes) =
        parse("---\ndescription: d\nmodel: sonnet\nskills: [a, b]\n---\nbody").unwrap();
    assert_eq!(definition.model.as_deref(), Some("sonnet"));
    assert_eq!(definition.skills, ["a", "b"]);
    assert!(notes.is_empty(), "{notes:?}");
    let (definition, notes) = parse("---\ndescription: d\nmodel: inherit\n---\nbody").unwrap();
    assert_eq!(definition.model, None);
    assert!(notes.is_empty());
}

#[test]
fn errors_name_the_line_of_the_file() {
    let bad_yaml = parse("---\nname: x\ndescription: d\ntools: [Read,\n---\nbody\n").unwrap_err();
    assert!(bad_yaml.line >= 4, "{bad_yaml:?}");
    assert!(!bad_yaml.message.contains(" at line "), "{bad_yaml:?}");

    let bad_type = parse("---\ndescription: d\nmaxTurns: many\n---\nbody\n").unwrap_err();
    assert_eq!(bad_type.line, 3, "{bad_type:?}");

    let bad_mode =
        parse("---\nname: x\ndescription: d\npermissionMode: yolo\n---\nbody").unwrap_err();
    assert_eq!(bad_mode.line, 4);
    assert!(bad_mode.message.contains("yolo"));

    let bad_timeout = parse("---\ndescription: d\ntimeout: soon\n---\nbody").unwrap_err();
    assert_eq!(bad_timeout.line, 3);

    let no_description = parse("---\nname: x\n---\nbody").unwrap_err();
    assert!(no_description.message.contains("description"));

    assert_eq!(parse("just text").unwrap_err().line, 1);
    assert!(
        parse("---\ndescription: d\nbody")
            .unwrap_err()
            .message
            .contains("never closed")
    );
    assert!(
        parse("---\ndescription: d\n---\n\n")
            .unwrap_err()
            .message
            .contains("body")
    );
}

#[test]
fn unquoted_colons_in_values_are_read_as_claude_code_reads_them() {
    let (definition, _) = parse(
        "---\nname: helper\ndescription: Use this agent when: the user asks. It's fine.\n---\nbody",
    )
    .unwrap();
    assert_eq!(
        definition.description,
        "Use this agent when: the user asks. It's fine."
    );
}

#[test]
fn durations_take_units() {
    assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
    assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
    assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
    assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(parse_duration("12"), Some(Duration::from_secs(12)));
    assert_eq!(parse_duration("0s"), None);
    assert_eq!(parse_duration("soon"), None);
}

#[test]
fn later_folders_win_broken_files_are_skipped_and_builtins_can_be_replaced() {
    let root = tempfile::tempdir().unwrap();
    let compat = root.path().join("claude");
    let own = root.path().join("alcove");
    std::fs::create_dir_all(&compat).unwrap();
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(
        compat.join("a.md"),
        "---\nname: shared\ndescription: from claude\n---\nclaude body\n",
    )
    .unwrap();
    std::fs::write(
        compat.join("explore.md"),
        "---\nname: Explore\ndescription: my explorer\ntools: Read\n---\nexplore body\n",
    )
    .unwrap();
    std::fs::write(
        own.join("b.md"),
        "---\nname: shared\ndescription: from alcove\n---\nalcove body\n",
    )
    .unwrap();
    std::fs::write(
        own.join("broken.md"),
        "---\nname: broken\ndescription: [oops\n---\nbody\n",
    )
    .unwrap();
    std::fs::write(own.join("notes.txt"), "not a definition").unwrap();

    let (definitions, warnings) =
        load_definitions(&[compat, own.clone(), root.path().join("missing")]);
    let shared = definitions.get("shared").unwrap();
    assert_eq!(shared.description, "from alcove");
    assert_eq!(shared.source.as_deref(), Some(own.join("b.md").as_path()));
    let explore = definitions.get("explore").unwrap();
    assert_eq!(explore.description, "my explorer");
    assert_eq!(definitions.get("EXPLORE"), Some(explore));
    assert!(definitions.get("general_purpose").is_some());
    assert!(definitions.get("broken").is_none());
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("broken.md:3: agent definition skipped"),
        "{warnings:?}"
    );
}

/// Found by fuzzing (`agent_definition`): a timeout past `Duration`'s range
/// panicked in `Duration::from_secs_f64`; it is now refused like any other
/// bad timeout, and so is one that rounds to zero.
#[test]
fn timeouts_too_large_or_too_small_for_a_duration_are_refused() {
    for timeout in [
        "1e30",
        "99999999999999999999999",
        "99999999999999999999999h",
        "1e-12",
        "0.0000000001s",
    ] {
        let error = parse(&format!(
            "---\ndescription: d\ntimeout: {timeout}\n---\nbody"
        ))
        .expect_err(timeout);
        assert_eq!(error.line, 3, "{timeout}: {error:?}");
        assert!(error.message.contains("timeout"), "{timeout}: {error:?}");
    }
    let (definition, _) = parse("---\ndescription: d\ntimeout: 1e9\n---\nbody").unwrap();
    assert_eq!(definition.timeout, Some(Duration::from_secs(1_000_000_000)));
}

#[test]
fn leave_spawned_is_off_unless_a_definition_asks_for_it() {
    let (plain, _) = parse("---\nname: a\ndescription: d\n---\nbody\n").unwrap();
    assert!(!plain.leave_spawned);
    for key in ["leaveSpawned", "leave_spawned"] {
        let (leaving, notes) = parse(&format!(
            "---\nname: a\ndescription: d\n{key}: true\n---\nbody\n"
        ))
        .unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert!(leaving.leave_spawned, "{key}");
    }
}
