//! One life for every face (issue 49): what a child held is freed when
//! `close_agent` returns, a child cut off by its turn cap ends with the same
//! record whichever face started it, and the evidence footer is the same on
//! both faces (the process runner's line included).

use alcove_testkit::{Block, Script, Step};
use serde_json::json;

use super::*;

/// `close_agent` of a running agent returns once its work has stopped, so
/// the slot it held is free for the very next call: with one slot, a
/// `spawn_agent` in the same message as the close starts.
#[test]
fn close_agent_frees_the_slot_before_it_returns() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent closes and spawns",
                vec![
                    crate::support::load_deferred(),
                    spawn("BUSY child"),
                    // Times out: the child's command is running by then.
                    wait_for(&["agent-1"], 1_000),
                    // The close and the next spawn in one message: nothing
                    // happens between them but the calls themselves.
                    Step::reply(vec![
                        Block::tool_call("close_agent", json!({"id": "agent-1"})),
                        Block::tool_call("spawn_agent", json!({"message": "NEXT child"})),
                    ]),
                    wait_for(&["agent-2"], 20_000),
                    Step::text("done"),
                ],
            )
            .conversation(
                "BUSY child",
                vec![
                    // It ignores SIGTERM, so stopping it takes the Bash tool's
                    // grace period before SIGKILL.
                    Step::tool_call("Bash", json!({"command": "trap '' TERM; sleep 30"})),
                    Step::text("never"),
                ],
            )
            .conversation("NEXT child", vec![Step::text("next done")]),
    );
    let out = run(
        &env,
        &server,
        &[
            "-c",
            "agents.max_concurrent=1",
            "--permission-mode",
            "bypassPermissions",
        ],
        "parent closes and spawns",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent closes and spawns");
    assert_eq!(results[2].0["status"], "closed", "{}", results[2].1);
    assert!(
        !results[3].2 && results[3].0["agent_id"] == "agent-2",
        "the closed agent's slot was still held: {}",
        results[3].1
    );
    assert_eq!(
        results[4].0["status"]["agent-2"], "completed",
        "{}",
        results[4].1
    );
    let events = out.events();
    let ended = of_type(&events, "agent_ended");
    assert_eq!(ended.len(), 2, "one end record per child: {ended:?}");
}

/// A child stopped by its turn cap with words to show ends `max_turns`, not
/// ok, on both faces: an `Agent` call and a spawned agent write the same end
/// record (success means the child completed its task).
#[test]
fn a_child_cut_off_by_its_turn_cap_ends_alike_on_both_faces() {
    let capped = || {
        vec![Step::reply(vec![
            Block::text("halfway there"),
            Block::tool_call("Glob", json!({"pattern": "*"})),
        ])]
    };
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent of capped children",
                vec![
                    crate::support::load_deferred(),
                    Step::tool_call(
                        "Agent",
                        json!({"description": "capped sync", "prompt": "CAPPED sync child"}),
                    ),
                    spawn("CAPPED spawned child"),
                    wait_for(&["agent-2"], 20_000),
                    Step::text("done"),
                ],
            )
            .conversation("CAPPED sync", capped())
            .conversation("CAPPED spawned", capped()),
    );
    let out = run(
        &env,
        &server,
        &["-c", "agents.max_turns=1"],
        "parent of capped children",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let ended = of_type(&events, "agent_ended");
    assert_eq!(ended.len(), 2, "{ended:?}");
    for end in &ended {
        assert_eq!(end["status"], "max_turns", "{end}");
        assert_eq!(end["ok"], false, "a capped child did not complete: {end}");
    }
    // The parent read the same words on both faces.
    let results = parent_results(&server, "parent of capped children");
    assert!(
        results[0].1.contains("incomplete: stopped by the turn cap"),
        "{}",
        results[0].1
    );
    assert_eq!(
        results[2].0["status"]["agent-2"], "errored",
        "{}",
        results[2].1
    );
}

/// The process runner's line of the evidence footer is on the spawned
/// face too, where the process runner runs (`agents.command`).
#[test]
fn a_spawned_process_runner_childs_evidence_says_the_process_runner_ran_it() {
    let (env, server) = setup(Script::new().conversation(
        "parent of a process",
        vec![
            crate::support::load_deferred(),
            spawn("echo:from the runner"),
            wait_for(&["agent-1"], 20_000),
            Step::text("done"),
        ],
    ));
    env.write_file("runner.sh", FAKE_RUNNER);
    let out = finish(with_runner(
        &env,
        &server,
        "runner.sh",
        &[],
        "parent of a process",
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent of a process");
    let details = &results[1].0["details"]["agent-1"];
    assert_eq!(details["last_output"], "from the runner", "{details}");
    let evidence = details["evidence"].as_str().unwrap_or_default();
    assert!(
        evidence.contains("[alcove evidence] status: completed"),
        "{evidence}"
    );
    assert!(
        evidence.contains("[alcove evidence] ran by the process runner | usage: not reported"),
        "{evidence}"
    );
}
