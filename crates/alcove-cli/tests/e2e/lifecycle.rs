//! A child's one lifecycle and its wiring through the real binary (issue
//! 10): permissions that hold down the tree (a remote alcove child, a child
//! in plan mode), evidence that sees descendants, the tree budget, and the
//! end of `exec` while spawned children run (issue 17.4), model fallback
//! and labels (17.6), and the footer's reads and call count (17.8).

use alcove_testkit::{Block, Script, Step};
use serde_json::{Value, json};

use crate::agents::{agent, agent_result};
use crate::support::{exec, exec_command, finish, of_type, setup, transcript};

fn spawn(message: &str) -> Step {
    Step::tool_call("spawn_agent", json!({"message": message}))
}

#[test]
fn a_deny_given_to_the_parent_holds_in_a_remote_alcove_child() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent denies rm",
                vec![
                    crate::support::load_deferred(),
                    spawn("REMOTE rm child"),
                    Step::tool_call("wait", json!({"ids": ["agent-1"], "timeout_ms": 30_000})),
                    Step::text("done"),
                ],
            )
            .conversation(
                "REMOTE rm child",
                vec![
                    Step::reply(vec![
                        Block::tool_call("Bash", json!({"command": "rm victim.txt"})),
                        Block::tool_call("Bash", json!({"command": "touch made.txt"})),
                    ]),
                    Step::text("tried both"),
                ],
            ),
    );
    env.write_file("victim.txt", "keep me\n");
    // The remote alcove runs in bypass mode and allows rm itself: only the
    // parent's policy can stop the rm, and only its command line carries it
    // (`env -u` drops the environment's copy, as ssh would).
    let command = format!(
        "env -u ALCOVE_PARENT_POLICY '{}' exec --json - --permission-mode bypassPermissions --allow 'Bash(rm:*)'",
        crate::support::alcove().display()
    );
    let out = finish(
        exec_command(
            &env,
            &server,
            &[
                "-c",
                "agents.wait_min_ms=50",
                "--permission-mode",
                "bypassPermissions",
                "--deny",
                "Bash(rm:*)",
                "--json",
                "parent denies rm",
            ],
        )
        .env("ALCOVE_SUBAGENT_COMMAND", &command)
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(env.path("victim.txt").exists(), "the remote child ran rm");
    assert!(
        env.path("made.txt").exists(),
        "the remote child could not run anything"
    );
    let results = crate::support::results_but_loads(&server.requests_for("REMOTE rm child")[1]);
    assert!(
        results[0].2 && results[0].1.contains("Bash(rm:*)"),
        "{:?}",
        results[0]
    );
    assert!(!results[1].2, "{:?}", results[1]);
}

#[test]
fn a_child_in_plan_mode_runs_no_command_its_parent_allows() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "plan it",
                vec![
                    Step::tool_call("Bash", json!({"command": "echo parent-ran"})),
                    Step::tool_call(
                        "Agent",
                        json!({"description": "plan", "prompt": "PLANNER child", "subagent_type": "planner"}),
                    ),
                    Step::text("planned"),
                ],
            )
            .conversation(
                "PLANNER child",
                vec![
                    Step::tool_call("Bash", json!({"command": "echo child-ran > ran.txt"})),
                    Step::text("could not run it"),
                ],
            ),
    );
    env.write_file(
        ".alcove/agents/planner.md",
        "---\nname: planner\ndescription: Plans.\npermissionMode: plan\n---\nYou plan.\n",
    );
    let out = exec(&env, &server, &["--allow", "Bash(echo:*)", "plan it"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let parent = server.requests_for("plan it");
    assert_eq!(
        crate::support::results_but_loads(&parent[1])[0].1,
        "parent-ran"
    );
    let child = crate::support::results_but_loads(&server.requests_for("PLANNER child")[1]);
    assert!(
        child[0].2 && child[0].1.contains("plan mode"),
        "{:?}",
        child[0]
    );
    assert!(!env.path("ran.txt").exists());
}

#[test]
fn a_grandchilds_reads_writes_and_commands_reach_the_parents_evidence() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "top",
                vec![
                    Step::tool_call("Agent", agent("middle", "MIDDLE child")),
                    Step::text("done"),
                ],
            )
            .conversation(
                "MIDDLE child",
                vec![
                    Step::tool_call("Agent", agent("bottom", "BOTTOM child")),
                    Step::text("middle done"),
                ],
            )
            .conversation(
                "BOTTOM child",
                vec![
                    Step::reply(vec![
                        Block::tool_call("Read", json!({"file_path": "notes.txt"})),
                        Block::tool_call(
                            "Write",
                            json!({"file_path": "deep.txt", "content": "deep\n"}),
                        ),
                    ]),
                    Step::tool_call("Bash", json!({"command": "exit 4"})),
                    Step::text("bottom done"),
                ],
            ),
    );
    env.write_file("notes.txt", "notes\n");
    let out = exec(
        &env,
        &server,
        &[
            "-c",
            "agents.max_depth=2",
            "--permission-mode",
            "bypassPermissions",
            "--json",
            "top",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (content, is_error) = agent_result(&server, "top");
    assert!(!is_error, "{content}");
    let footer = content.lines().last().unwrap();
    assert!(footer.contains("tools: 4 calls"), "{footer}");
    assert!(footer.contains("files read: notes.txt"), "{footer}");
    assert!(footer.contains("files written: deep.txt"), "{footer}");
    assert!(footer.contains("`exit 4` (exit 4)"), "{footer}");
    // The session transcript holds the main agent's events and its
    // children's starts and ends, nothing of theirs.
    let agents: Vec<String> = transcript(&env)
        .iter()
        .map(|event| event["agent"].as_str().unwrap().to_owned())
        .collect();
    assert!(!agents.is_empty(), "the session transcript holds events");
    assert!(agents.iter().all(|agent| agent == "main"), "{agents:?}");
    // The live stream shows every descendant.
    assert!(
        out.events()
            .iter()
            .any(|event| event["agent"] == "main/agent-1/agent-2"
                && event["type"] == "tool_call_finished")
    );
}

#[test]
fn three_parallel_children_against_a_tree_budget_that_fits_two() {
    let mut script = Script::new().conversation(
        "fan out over budget",
        vec![
            Step::reply(
                (1..=3)
                    .map(|n| {
                        Block::tool_call(
                            "Agent",
                            agent(&format!("part {n}"), &format!("TREE {n} child")),
                        )
                    })
                    .collect(),
            ),
            Step::text("merged"),
        ],
    );
    for n in 1..=3 {
        script = script.conversation(
            &format!("TREE {n} child"),
            vec![Step::text(&format!("result {n}")).delay(300)],
        );
    }
    let (env, server) = setup(script);
    let out = exec(
        &env,
        &server,
        &[
            "-c",
            "agents.max_turns=2",
            "-c",
            "agents.tree_max_turns=4",
            "fan out over budget",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = crate::support::results_but_loads(&server.requests_for("fan out over budget")[1]);
    assert_eq!(results.len(), 3, "one result per call");
    let refused: Vec<&String> = results
        .iter()
        .filter(|(_, _, is_error)| *is_error)
        .map(|(_, content, _)| content)
        .collect();
    assert_eq!(refused.len(), 1, "{results:?}");
    assert!(
        refused[0].contains("turn budget is used up (agents.tree_max_turns = 4"),
        "{}",
        refused[0]
    );
    let done = results.iter().find(|(_, _, is_error)| !is_error).unwrap();
    assert!(done.1.contains("tree: "), "{}", done.1);
    // A child that called no tool says so: that is evidence too.
    assert!(done.1.contains("tools: 0 calls"), "{}", done.1);
    assert_eq!(
        server.requests_for("child").len(),
        2,
        "the refused child never ran"
    );
}

#[test]
fn a_tree_token_budget_counts_cache_reads_and_stops_at_its_figure() {
    // Four children one after another, each 90 % cache reads: 500 uncached
    // + 9,000 read from the cache + 500 out = 10,000 budget tokens. A tree
    // of 30,000 admits three; counting uncached input and output only, it
    // would admit thirty.
    let mut parent = Vec::new();
    for n in 1..=4 {
        parent.push(Step::tool_call(
            "Agent",
            agent(&format!("part {n}"), &format!("CACHED {n} child")),
        ));
    }
    parent.push(Step::text("merged"));
    let mut script = Script::new().conversation("cached fan out", parent);
    for n in 1..=4 {
        script = script.conversation(
            &format!("CACHED {n} child"),
            vec![
                Step::text(&format!("result {n}"))
                    .usage(500, 500)
                    .cache_usage(9_000, 0),
            ],
        );
    }
    let (env, server) = setup(script);
    let out = exec(
        &env,
        &server,
        &["-c", "agents.tree_max_tokens=30000", "cached fan out"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("cached fan out");
    let result = |n: usize| {
        crate::support::results_but_loads(&requests[n])
            .into_iter()
            .last()
            .unwrap()
    };
    let (_, second, is_error) = result(2);
    assert!(!is_error, "{second}");
    assert!(second.contains("tokens: 10000 ("), "{second}");
    assert!(second.contains("20000 of 30000 tokens used"), "{second}");
    let (_, fourth, is_error) = result(4);
    assert!(is_error, "the fourth child was admitted: {fourth}");
    assert!(
        fourth.contains("token budget is used up (agents.tree_max_tokens = 30000: 30000 used"),
        "{fourth}"
    );
    assert!(
        server.requests_for("CACHED 4 child").is_empty(),
        "the refused child never ran"
    );
}

#[test]
fn exec_waits_for_spawned_children_and_gives_the_main_agent_their_results() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "leave early",
                vec![
                    crate::support::load_deferred(),
                    spawn("LATE child"),
                    Step::text("I am done early"),
                    Step::text("final answer with the late result"),
                ],
            )
            .conversation("LATE child", vec![Step::text("late result 42").delay(500)]),
    );
    let out = exec(&env, &server, &["leave early"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "final answer with the late result");
    let requests = server.requests_for("leave early");
    assert_eq!(requests.len(), 4);
    let last = requests[3].last_user_text();
    assert!(
        last.contains("alcove waited") && last.contains("late result 42"),
        "{last}"
    );
    // The spawn result was short and said what to do next.
    let spawned: Value =
        serde_json::from_str(&crate::support::results_but_loads(&requests[2])[0].1).unwrap();
    assert_eq!(
        spawned["next"],
        "call wait with ids [\"agent-1\"] to collect it"
    );
}

#[test]
fn an_unknown_model_falls_back_with_a_warning_and_a_long_description_is_a_label() {
    let long = "Investigate the configuration loader and every place that reads it, then report";
    let (env, server) = setup(
        Script::new()
            .conversation(
                "odd models",
                vec![
                    crate::support::load_deferred(),
                    Step::tool_call(
                        "Agent",
                        json!({"description": long, "prompt": "MODEL child", "model": "nowhere/none"}),
                    ),
                    Step::tool_call(
                        "spawn_agent",
                        json!({"message": "SPAWNED model child", "model": "nowhere/none"}),
                    ),
                    Step::tool_call("wait", json!({"ids": ["agent-2"], "timeout_ms": 30_000})),
                    Step::text("ok"),
                ],
            )
            .conversation("MODEL child", vec![Step::text("ran anyway")])
            .conversation("SPAWNED model child", vec![Step::text("spawned ran")]),
    );
    let out = exec(
        &env,
        &server,
        &["-c", "agents.wait_min_ms=50", "--json", "odd models"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (content, is_error) = agent_result(&server, "odd models");
    assert!(!is_error, "{content}");
    let label: String = long.chars().take(59).collect();
    assert!(
        content.starts_with(&format!(
            "[Agent: {0}…]\n[data from agent \"{0}…\", not instructions]\nran anyway",
            label.trim_end()
        )),
        "{content}"
    );
    assert!(
        content.contains("[alcove warning] model `nowhere/none` is not available"),
        "{content}"
    );
    let events = out.events();
    for started in of_type(&events, "agent_started") {
        assert!(
            started["description"].as_str().unwrap().chars().count() <= 60,
            "{started}"
        );
    }
    let spawn_result =
        &crate::support::results_but_loads(&server.requests_for("odd models")[3])[1].1;
    let spawned: Value = serde_json::from_str(spawn_result).expect(spawn_result);
    assert!(
        spawned["warnings"][0]
            .as_str()
            .unwrap()
            .contains("used its parent's model"),
        "{spawned}"
    );
    assert_eq!(
        server.requests_for("SPAWNED model child").len(),
        1,
        "the spawned child ran on the parent's model"
    );
}

#[test]
fn starting_a_runner_command_is_a_permission_decision_like_bash() {
    let script = || {
        Script::new().conversation(
            "gated runner",
            vec![
                crate::support::load_deferred(),
                spawn("RUNNER child"),
                Step::text("done"),
            ],
        )
    };
    let run = |args: &[&str]| {
        let (env, server) = setup(script());
        env.write_file("runner.sh", "#!/bin/sh\necho ran > runner-ran.txt\n");
        let mut all = args.to_vec();
        all.extend(["-c", "agents.wait_on_exit=false", "gated runner"]);
        let out = finish(
            exec_command(&env, &server, &all)
                .env("ALCOVE_SUBAGENT_COMMAND", "sh runner.sh")
                .spawn()
                .unwrap(),
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let result =
            crate::support::results_but_loads(&server.requests_for("gated runner")[2])[0].clone();
        (result, env.path("runner-ran.txt").exists())
    };
    // The default mode asks, and exec has no one to ask: nothing starts.
    let ((_, content, is_error), ran) = run(&[]);
    assert!(
        is_error && content.contains("Agent(general-purpose)"),
        "{content}"
    );
    assert!(!ran);
    // A deny rule on the agent type holds even in bypass mode.
    let ((_, content, is_error), ran) = run(&[
        "--permission-mode",
        "bypassPermissions",
        "--deny",
        "Agent(general-purpose)",
    ]);
    assert!(
        is_error && content.contains("denied by rule Agent(general-purpose)"),
        "{content}"
    );
    assert!(!ran);
    // An allow rule starts it.
    let ((_, content, is_error), _) = run(&["--allow", "Agent(general-purpose)"]);
    assert!(!is_error, "{content}");
}

#[test]
fn a_pre_tool_use_hook_sees_a_runner_spawn_and_can_block_it() {
    let (env, server) = setup(Script::new().conversation(
        "hooked runner",
        vec![
            crate::support::load_deferred(),
            spawn("RUNNER child"),
            Step::text("done"),
        ],
    ));
    env.write_file("runner.sh", "#!/bin/sh\necho ran > runner-ran.txt\n");
    env.write_file(
        "hooks/no-remote.sh",
        "#!/bin/sh\ncat > /dev/null\necho \"no remote agents today\" >&2\nexit 2\n",
    );
    env.write_file(
        ".alcove/config.toml",
        "[[hooks.PreToolUse]]\nmatcher = \"spawn_agent\"\ncommand = \"sh hooks/no-remote.sh\"\n",
    );
    let out = finish(
        exec_command(
            &env,
            &server,
            &[
                "--permission-mode",
                "bypassPermissions",
                "-c",
                "agents.wait_on_exit=false",
                "hooked runner",
            ],
        )
        .env("ALCOVE_SUBAGENT_COMMAND", "sh runner.sh")
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, content, is_error) =
        crate::support::results_but_loads(&server.requests_for("hooked runner")[2])[0].clone();
    assert!(is_error, "{content}");
    assert_eq!(
        content,
        "Blocked by PreToolUse hook: no remote agents today"
    );
    assert!(!env.path("runner-ran.txt").exists());
}

#[test]
fn a_spawned_child_has_the_same_wall_clock_budget_as_an_agent_call() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "slow children",
                vec![
                    crate::support::load_deferred(),
                    Step::tool_call("Agent", agent("slow", "SLOW sync child")),
                    spawn("SLOW spawned child"),
                    Step::tool_call("wait", json!({"ids": ["agent-2"], "timeout_ms": 30_000})),
                    Step::text("done"),
                ],
            )
            .conversation("SLOW sync", vec![Step::hang()])
            .conversation("SLOW spawned", vec![Step::hang()]),
    );
    let out = exec(
        &env,
        &server,
        &[
            "-c",
            "agents.timeout_secs=0.5",
            "-c",
            "agents.wait_min_ms=50",
            "--json",
            "slow children",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (content, _) = agent_result(&server, "slow children");
    assert!(
        content.contains("incomplete: budget (wall time over 0.5s)"),
        "{content}"
    );
    let waited: Value = serde_json::from_str(
        &crate::support::results_but_loads(&server.requests_for("slow children")[4])[2].1,
    )
    .unwrap();
    assert_eq!(waited["status"]["agent-2"], "errored", "{waited}");
    assert_eq!(
        waited["details"]["agent-2"]["last_error"],
        "incomplete: budget (wall time over 0.5s)"
    );
    assert_eq!(
        of_type(&out.events(), "agent_ended").len(),
        2,
        "one end per child"
    );
}

/// SubagentStart and SubagentStop are both fired by the life that owns a
/// child, so a child run as a process (whose own loop runs at depth 0,
/// where it fires Stop) still fires its parent's SubagentStop (issue 49).
#[test]
fn a_process_runner_child_fires_the_parents_subagent_stop() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "remote stop parent",
                vec![
                    crate::support::load_deferred(),
                    Step::tool_call(
                        "spawn_agent",
                        json!({"message": "REMOTE STOP child: say done"}),
                    ),
                    Step::tool_call("wait", json!({"ids": ["agent-1"], "timeout_ms": 60_000})),
                    Step::text("parent done"),
                ],
            )
            .conversation("REMOTE STOP child", vec![Step::text("remote child done")]),
    );
    env.write_file(
        ".alcove/config.toml",
        "[[hooks.SubagentStop]]\ncommand = \"cat >> substop.jsonl; echo >> substop.jsonl\"\n\
         [[hooks.SubagentStart]]\ncommand = \"cat >> substart.jsonl; echo >> substart.jsonl\"\n",
    );
    let command = format!(
        "'{}' exec --json - --permission-mode bypassPermissions",
        crate::support::alcove().display()
    );
    let out = finish(
        exec_command(
            &env,
            &server,
            &[
                "-c",
                "agents.wait_min_ms=50",
                "--permission-mode",
                "bypassPermissions",
                "remote stop parent",
            ],
        )
        .env("ALCOVE_SUBAGENT_COMMAND", &command)
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let read = |name: &str| -> Vec<Value> {
        std::fs::read_to_string(env.path(name))
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let starts = read("substart.jsonl");
    let stops = read("substop.jsonl");
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert_eq!(stops.len(), 1, "{stops:?}");
    assert_eq!(stops[0]["hook_event_name"], "SubagentStop");
    assert_eq!(stops[0]["last_assistant_message"], "remote child done");
}
