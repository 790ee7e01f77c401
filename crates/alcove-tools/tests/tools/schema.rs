//! Specs: Claude Code's parameter names, descriptions, and argument errors.

use alcove_tools::{Access, Read, Tool, builtin_tools};
use serde_json::{Value, json};

fn properties(tool: &dyn Tool) -> Vec<String> {
    let schema = &tool.spec().input_schema.to_value();
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("{} has no properties: {schema}", tool.spec().name))
        .keys()
        .cloned()
        .collect();
    names.sort();
    names
}

fn required(tool: &dyn Tool) -> Vec<String> {
    let mut names: Vec<String> = tool.spec().input_schema.to_value()["required"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn builtins_keep_their_order_and_names() {
    let tools = builtin_tools::<()>();
    let names: Vec<&str> = tools.iter().map(|tool| tool.spec().name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Read",
            "Glob",
            "Grep",
            "Write",
            "Edit",
            "Bash",
            "BashOutput",
            "KillShell",
            "TodoWrite"
        ]
    );
    let access: Vec<Access> = tools.iter().map(|tool| tool.access()).collect();
    use Access::*;
    assert_eq!(
        access,
        [
            ReadOnly, ReadOnly, ReadOnly, Edit, Edit, Execute, ReadOnly, ReadOnly, ReadOnly
        ]
    );
    let safe: Vec<bool> = tools.iter().map(|tool| tool.concurrency_safe()).collect();
    assert_eq!(
        safe,
        [true, true, true, false, false, false, true, false, false]
    );
}

#[test]
fn schemas_use_claude_code_parameter_names() {
    let tools = builtin_tools::<()>();
    let expected: [(&[&str], &[&str]); 8] = [
        (&["file_path", "limit", "offset"], &["file_path"]),
        (&["path", "pattern"], &["pattern"]),
        (
            &[
                "-A",
                "-B",
                "-C",
                "-i",
                "-n",
                "glob",
                "head_limit",
                "multiline",
                "output_mode",
                "path",
                "pattern",
                "type",
            ],
            &["pattern"],
        ),
        (&["content", "file_path"], &["content", "file_path"]),
        (
            &["file_path", "new_string", "old_string", "replace_all"],
            &["file_path", "new_string", "old_string"],
        ),
        (
            &["command", "description", "run_in_background", "timeout"],
            &["command"],
        ),
        (&["bash_id", "filter"], &["bash_id"]),
        (&["shell_id"], &["shell_id"]),
    ];
    for (tool, (props, req)) in tools.iter().zip(expected) {
        assert_eq!(properties(tool.as_ref()), props, "{}", tool.spec().name);
        assert_eq!(required(tool.as_ref()), req, "{}", tool.spec().name);
        let spec = tool.spec();
        assert!(
            spec.description.len() > 50,
            "{} needs a description",
            spec.name
        );
        assert_eq!(spec.input_schema.to_value()["type"], "object");
        assert!(spec.input_schema.to_value().get("$schema").is_none());
        let text = spec.input_schema.to_string();
        assert!(
            !text.contains("$ref"),
            "{} schema is not self-contained: {text}",
            spec.name
        );
        for (name, prop) in spec.input_schema.to_value()["properties"]
            .as_object()
            .unwrap()
        {
            assert!(
                prop.get("description")
                    .and_then(Value::as_str)
                    .is_some_and(|d| !d.is_empty()),
                "{}.{name} has no description: {prop}",
                spec.name
            );
        }
    }
}

#[test]
fn output_mode_lists_its_values() {
    let tools = builtin_tools::<()>();
    let text = tools[2].spec().input_schema.to_string();
    for mode in ["content", "files_with_matches", "count"] {
        assert!(text.contains(&format!("\"{mode}\"")), "{text}");
    }
}

#[test]
fn invalid_arguments_name_the_field() {
    let env = crate::common::Env::new();
    let ws = &env.context.workspace;
    let read = Read::default();
    let reason = alcove_tools::inspect(&read, &json!({}), ws).unwrap_err();
    assert!(
        reason.contains("Read") && reason.contains("missing field `file_path`"),
        "{reason}"
    );
    let reason =
        alcove_tools::inspect(&read, &json!({"file_path": "a", "offset": "ten"}), ws).unwrap_err();
    assert!(
        reason.contains("offset") && reason.contains("invalid type"),
        "{reason}"
    );
    let reason = alcove_tools::inspect(&read, &json!("a.txt"), ws).unwrap_err();
    assert!(reason.contains("invalid type"), "{reason}");
    let tools = builtin_tools::<()>();
    let reason = alcove_tools::inspect(
        tools[2].as_ref(),
        &json!({"pattern": "x", "output_mode": "lines"}),
        ws,
    )
    .unwrap_err();
    assert!(
        reason.contains("output_mode") && reason.contains("files_with_matches"),
        "{reason}"
    );
    let reason = alcove_tools::inspect(tools[2].as_ref(), &json!({"pattern": "x", "-A": -1}), ws)
        .unwrap_err();
    assert!(reason.contains("-A"), "{reason}");
    let reason =
        alcove_tools::inspect(tools[5].as_ref(), &json!({"command": ["ls"]}), ws).unwrap_err();
    assert!(reason.contains("command"), "{reason}");
}
