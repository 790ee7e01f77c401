//! One server per session, shared by every agent: four parallel children
//! use one server process, and a deny rule on one MCP tool holds (and hides
//! the tool) two levels down.

use alcove_testkit::{Block, FakeServer, Script, Step};
use serde_json::json;

use super::{BYPASS, assert_all_dead, npm_server, pids, test_env, write_mcp_json};
use crate::support::{assert_nothing_lost, exec, transcript};

fn agent(prompt: &str) -> Block {
    Block::tool_call("Agent", json!({"description": "use mcp", "prompt": prompt}))
}

#[test]
fn four_parallel_children_share_one_server_process() {
    let env = test_env();
    let pid_file = env.home().join("everything.pids");
    // The wrapper records the server's pid (`exec` keeps it) each time one starts.
    write_mcp_json(
        &env,
        json!({"everything": {
            "command": "sh",
            "args": ["-c", format!("echo $$ >> {}; exec node {} stdio", pid_file.display(), npm_server("server-everything"))],
        }}),
    );
    let mut script = Script::new().conversation(
        "fan out",
        vec![
            Step::reply(
                (1..=4)
                    .map(|n| agent(&format!("CHILD-{n}: echo")))
                    .collect(),
            ),
            Step::text("all four answered"),
        ],
    );
    for n in 1..=4 {
        script = script.conversation(
            &format!("CHILD-{n}:"),
            vec![
                Step::tool_call(
                    "mcp__everything__echo",
                    json!({"message": format!("child {n}")}),
                ),
                Step::text(&format!("child {n} done")),
            ],
        );
    }
    let server = FakeServer::start(script);
    let out = exec(
        &env,
        &server,
        &[
            BYPASS[0],
            BYPASS[1],
            "-c",
            "agents.max_concurrent=4",
            "--json",
            "fan out",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    for n in 1..=4 {
        let child = server.requests_for(&format!("CHILD-{n}:"));
        let (_, content, is_error) = child[1].tool_results().remove(0);
        assert_eq!(
            (content, is_error),
            (
                super::framed("everything", &format!("Echo: child {n}")),
                false
            )
        );
    }
    let started = pids(&pid_file);
    assert_eq!(
        started.len(),
        1,
        "one server process for the whole tree, got {started:?}"
    );
    assert_all_dead(&started);
    assert_nothing_lost(&out.events());
}

#[test]
fn a_deny_rule_on_one_mcp_tool_holds_in_a_grandchild_and_hides_it() {
    let env = test_env();
    write_mcp_json(&env, json!({"everything": super::everything_stdio()}));
    env.write_file(
        ".alcove/config.toml",
        "[permissions]\ndeny = [\"mcp__everything__echo\"]\n",
    );
    let server = FakeServer::start(
        Script::new()
            .conversation(
                "top",
                vec![
                    Step::reply(vec![agent("MIDDLE: delegate")]),
                    Step::text("top done"),
                ],
            )
            .conversation(
                "MIDDLE:",
                vec![
                    Step::reply(vec![agent("BOTTOM: try echo")]),
                    Step::text("middle done"),
                ],
            )
            .conversation(
                "BOTTOM:",
                vec![
                    // A model calling the tool the deny rule hid from it.
                    Step::reply(vec![
                        Block::tool_call("mcp__everything__echo", json!({"message": "sneaky"})),
                        Block::tool_call("mcp__everything__get-sum", json!({"a": 1, "b": 2})),
                    ])
                    .unoffered(),
                    Step::text("bottom done"),
                ],
            ),
    );
    let out = exec(
        &env,
        &server,
        &[
            BYPASS[0],
            BYPASS[1],
            "-c",
            "agents.max_depth=2",
            "--json",
            "top",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    for prompt in ["top", "MIDDLE:", "BOTTOM:"] {
        let tools = server.requests_for(prompt)[0].tool_names();
        assert!(
            !tools.iter().any(|tool| tool == "mcp__everything__echo"),
            "{prompt}: {tools:?}"
        );
        assert!(
            tools.iter().any(|tool| tool == "mcp__everything__get-sum"),
            "{prompt}: {tools:?}"
        );
    }
    let bottom = server.requests_for("BOTTOM:");
    let results = bottom[1].tool_results();
    assert!(results[0].2, "the denied tool ran: {results:?}");
    assert!(
        results[0]
            .1
            .contains("Unknown tool `mcp__everything__echo`"),
        "{results:?}"
    );
    assert_eq!(
        (results[1].1.clone(), results[1].2),
        (
            super::framed("everything", "The sum of 1 and 2 is 3."),
            false
        )
    );
    assert_nothing_lost(&transcript(&env));
}
