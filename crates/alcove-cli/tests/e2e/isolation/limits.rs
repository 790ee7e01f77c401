//! Resource limits of commands: CPU, processes, and bounded output.

use alcove_testkit::{Block, Script, Step};
use serde_json::json;

use crate::support::{exec, setup};

#[test]
fn cpu_and_process_limits_stop_a_command_name_the_limit_and_alcove_carries_on() {
    let (env, server) = setup(Script::new().conversation(
        "limits",
        vec![
            Step::reply(vec![
                Block::tool_call("Bash", json!({"command": "while :; do :; done"})),
                Block::tool_call(
                    "Bash",
                    json!({"command": "for i in $(seq 200); do sleep 5 & done; wait", "timeout": 8000}),
                ),
                Block::tool_call("Bash", json!({"command": "echo still here"})),
            ]),
            Step::text("done"),
        ],
    ));
    let out = exec(
        &env,
        &server,
        &[
            "-c",
            "limits.cpu_secs=1",
            "-c",
            "limits.processes=50",
            "limits",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests()[1].tool_results();
    assert!(results[0].2, "{:?}", results[0]);
    assert!(
        results[0].1.contains("limits.cpu_secs = 1"),
        "{:?}",
        results[0]
    );
    assert!(results[1].2, "{:?}", results[1]);
    assert!(
        results[1].1.contains("limits.processes = 50"),
        "{:?}",
        results[1]
    );
    assert!(
        !results[2].2 && results[2].1.contains("still here"),
        "{:?}",
        results[2]
    );
}

#[test]
fn a_flood_of_output_keeps_a_bounded_result() {
    let (env, server) = setup(Script::new().conversation(
        "flood",
        vec![
            Step::tool_call("Bash", json!({"command": "yes | head -c 20000000"})),
            Step::text("done"),
        ],
    ));
    let out = exec(&env, &server, &["flood"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, content, _) = server.requests()[1].tool_results().remove(0);
    // 30000 characters kept, plus the line saying how much was cut.
    assert!(content.len() < 31_000, "{} bytes kept", content.len());
    assert!(
        content.contains("chars cut from the middle"),
        "{}",
        &content[..200]
    );
    let cut: usize = content
        .split("... [")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert_eq!(cut, 20_000_000 - 30_000);
}
