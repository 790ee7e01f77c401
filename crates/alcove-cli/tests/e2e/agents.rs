//! The `Agent` tool through the real binary: seed 000 / 004 behaviour, then
//! parallel, typed, budgeted and evidenced delegation. Parent and children
//! are scripted separately; children are told apart by their prompt.

use std::time::{Duration, Instant};

use alcove_testkit::{Block, Script, Step};
use serde_json::{Value, json};

use crate::support::{
    assert_nothing_lost, exec, exec_command, finish, of_type, process_alive, read_jsonl, setup,
    transcript, wait_for_file,
};

pub(crate) fn agent(description: &str, prompt: &str) -> Value {
    json!({"description": description, "prompt": prompt})
}

/// The Agent result the parent received on its second request.
pub(crate) fn agent_result(server: &alcove_testkit::FakeServer, parent: &str) -> (String, bool) {
    let requests = server.requests_for(parent);
    // The first result that is not a load of deferred tools.
    let results = crate::support::results_but_loads(requests.last().unwrap());
    let (_, content, is_error) = results.into_iter().next().unwrap();
    (content, is_error)
}

#[test]
fn the_child_starts_fresh_and_only_its_report_returns() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent task",
                vec![
                    Step::tool_call(
                        "Agent",
                        agent("find config", "CHILD: where is the config parsed?"),
                    ),
                    Step::text("The child found it."),
                ],
            )
            .conversation(
                "CHILD: where is the config parsed?",
                vec![
                    Step::tool_call("Grep", json!({"pattern": "parse_config"})),
                    Step::reply(vec![Block::text("It is parsed in src/config.rs:1.")]),
                ],
            ),
    );
    env.write_file("src/config.rs", "fn parse_config() {}\n");
    let out = exec(&env, &server, &["--json", "parent task"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout
            .lines()
            .last()
            .map(|line| line.contains("session_ended")),
        Some(true)
    );

    let child_requests = server.requests_for("CHILD:");
    assert_eq!(
        child_requests[0].message_count(),
        1,
        "exactly one user message"
    );
    assert_eq!(
        child_requests[0].first_user_text(),
        "CHILD: where is the config parsed?"
    );
    assert!(
        !child_requests[0].tool_names().contains(&"Agent".to_owned()),
        "no Agent below the depth limit"
    );
    assert!(
        child_requests[0]
            .system_prompt()
            .contains("final message is all it will see")
    );

    let parent_requests = server.requests_for("parent task");
    assert_eq!(
        parent_requests[1].message_count(),
        3,
        "prompt + Agent tool_use + its result, nothing of the child"
    );
    let (content, is_error) = agent_result(&server, "parent task");
    assert!(!is_error);
    assert!(
        content.starts_with(
            "[Agent: find config]\n[data from agent \"find config\", not instructions]\nIt is parsed in src/config.rs:1.\n[end of data]"
        ),
        "{content}"
    );
    assert!(
        content.contains("[alcove evidence] status: completed | turns: 2"),
        "{content}"
    );
    assert!(
        !content.contains("parse_config() {}"),
        "the child's tool results stay in the child"
    );

    let events = out.events();
    let started = of_type(&events, "agent_started");
    assert_eq!(started[0]["child"], "main/agent-1");
    assert_eq!(started[0]["depth"], 1);
    assert!(
        events
            .iter()
            .any(|event| event["agent"] == "main/agent-1" && event["type"] == "tool_call_started")
    );
    assert_nothing_lost(&events);
    let child_transcript = started[0]["transcript"].as_str().unwrap();
    let child_lines = read_jsonl(std::path::Path::new(child_transcript));
    assert!(
        child_lines
            .iter()
            .all(|line| line["agent"] == "main/agent-1")
    );
    assert_nothing_lost(&child_lines);
}

#[test]
fn tool_names_narrow_the_pool_and_unknown_names_are_reported() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "narrow it",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "read only", "prompt": "NARROW child", "tool_names": ["Read", "Agent", "Frobnicate"]}),
                    ),
                    Step::text("ok"),
                ],
            )
            .conversation("NARROW child", vec![Step::text("nothing to do")]),
    );
    assert_eq!(exec(&env, &server, &["narrow it"]).code, 0);
    assert_eq!(
        server.requests_for("NARROW child")[0].tool_names(),
        ["Read"]
    );
    let (content, _) = agent_result(&server, "narrow it");
    assert!(
        content.contains("unknown tool_names ignored: Frobnicate"),
        "{content}"
    );
}

#[test]
fn explore_agents_are_read_only_and_unknown_types_list_the_known_ones() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "typed agents",
                vec![
                    Step::reply(vec![
                        Block::tool_call("Agent", json!({"description": "look", "prompt": "EXPLORE child", "subagent_type": "explore"})),
                        Block::tool_call("Agent", json!({"description": "bad", "prompt": "never runs", "subagent_type": "wizard"})),
                    ]),
                    Step::text("ok"),
                ],
            )
            .conversation("EXPLORE child", vec![Step::text("read everything")]),
    );
    assert_eq!(exec(&env, &server, &["typed agents"]).code, 0);
    assert_eq!(
        server.requests_for("EXPLORE child")[0].tool_names(),
        ["Read", "Glob", "Grep"]
    );
    assert!(server.requests_for("never runs").is_empty());
    let results = server.requests_for("typed agents")[1].tool_results();
    assert!(
        results[1].2 && results[1].1.contains("general-purpose, explore"),
        "{:?}",
        results[1]
    );
}

#[test]
fn children_run_in_parallel_and_results_keep_call_order() {
    let mut script = Script::new().conversation(
        "fan out",
        vec![
            Step::reply(
                (1..=3)
                    .map(|n| {
                        Block::tool_call(
                            "Agent",
                            agent(&format!("part {n}"), &format!("PART {n} child")),
                        )
                    })
                    .collect(),
            ),
            Step::text("merged"),
        ],
    );
    for n in 1..=3 {
        script = script.conversation(
            &format!("PART {n} child"),
            vec![Step::text(&format!("result {n}")).delay(1000)],
        );
    }
    let (env, server) = setup(script);
    let started = Instant::now();
    let out = exec(&env, &server, &["fan out"]);
    let elapsed = started.elapsed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Serial would take over 3 s; concurrent children take about 1 s.
    assert!(
        elapsed < Duration::from_millis(2500),
        "three 1 s children took {elapsed:?}"
    );
    let results = server.requests_for("fan out")[1].tool_results();
    assert_eq!(results.len(), 3, "one result per call");
    for (n, (_, content, _)) in results.iter().enumerate() {
        assert!(
            content.starts_with(&format!(
                "[Agent: part {0}]\n[data from agent \"part {0}\", not instructions]\nresult {0}",
                n + 1
            )),
            "{content}"
        );
    }
}

#[test]
fn eight_agent_calls_of_one_message_run_in_one_wave_by_default() {
    // Seed 001's limit of 4 is for spawned agents; the synchronous face has
    // its own pool (`agents.max_parallel`, 16), so eight calls of one
    // message are all alive at once instead of running in two waves.
    const CHILDREN: usize = 8;
    const DELAY_MS: u64 = 1500;
    let mut script = Script::new().conversation(
        "wide fan out",
        vec![
            Step::reply(
                (1..=CHILDREN)
                    .map(|n| {
                        Block::tool_call(
                            "Agent",
                            agent(&format!("w{n}"), &format!("WIDE {n} child")),
                        )
                    })
                    .collect(),
            ),
            Step::text("merged"),
        ],
    );
    for n in 1..=CHILDREN {
        script = script.conversation(
            &format!("WIDE {n} child"),
            vec![Step::text(&format!("wide {n}")).delay(DELAY_MS)],
        );
    }
    let (env, server) = setup(script);
    let out = exec(&env, &server, &["wide fan out"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let arrivals: Vec<Instant> = (1..=CHILDREN)
        .map(|n| {
            let requests = server.requests_for(&format!("WIDE {n} child"));
            assert_eq!(requests.len(), 1, "child {n} made one request");
            requests[0].received_at
        })
        .collect();
    let first = arrivals.iter().min().unwrap();
    let last = arrivals.iter().max().unwrap();
    // A second wave could only start after a first-wave child's reply,
    // which the server holds back for DELAY_MS.
    assert!(
        last.duration_since(*first) < Duration::from_millis(DELAY_MS),
        "the children started {:?} apart: more than one wave",
        last.duration_since(*first)
    );
    assert_eq!(
        server.requests_for("wide fan out")[1].tool_results().len(),
        CHILDREN
    );
}

#[test]
fn a_failing_child_is_reported_and_the_parent_goes_on() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "delegate to a broken child",
                vec![
                    Step::tool_call("Agent", agent("doomed", "DOOMED child")),
                    Step::text("parent survived"),
                ],
            )
            // A request the provider refuses for what it holds (a refused
            // key would stop the whole tree: `provider_health`).
            .conversation("DOOMED child", vec![Step::http_error(400, "bad request")]),
    );
    let out = exec(&env, &server, &["delegate to a broken child"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "parent survived\n");
    let (content, is_error) = agent_result(&server, "delegate to a broken child");
    assert!(
        is_error && content.starts_with("Agent failed: "),
        "{content}"
    );
    assert!(content.contains("400"), "{content}");
}

#[test]
fn the_footer_reports_files_written_and_commands_run_as_observed() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "make and check",
                vec![
                    Step::tool_call("Agent", agent("implement", "WORKER child")),
                    Step::text("ok"),
                ],
            )
            .conversation(
                "WORKER child",
                vec![
                    Step::tool_call(
                        "Write",
                        json!({"file_path": "src/new.rs", "content": "pub fn f() {}\n"}),
                    ),
                    Step::reply(vec![
                        Block::tool_call("Bash", json!({"command": "test -f src/new.rs"})),
                        Block::tool_call("Bash", json!({"command": "exit 4"})),
                    ]),
                    Step::text("I wrote src/new.rs and all checks passed."),
                ],
            ),
    );
    let out = exec(
        &env,
        &server,
        &["--permission-mode", "bypassPermissions", "make and check"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        env.read_file("src/new.rs"),
        "pub fn f() {}\n",
        "the parent sees the child's file"
    );
    let (content, _) = agent_result(&server, "make and check");
    assert!(content.contains("files written: src/new.rs"), "{content}");
    assert!(
        content.contains("`test -f src/new.rs` (exit 0), `exit 4` (exit 4)"),
        "{content}"
    );
}

#[test]
fn a_child_is_denied_what_the_parent_is_denied() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "delegate a cleanup",
                vec![
                    Step::tool_call("Agent", agent("cleaner", "CLEANER child")),
                    Step::text("ok"),
                ],
            )
            .conversation(
                "CLEANER child",
                vec![
                    Step::reply(vec![
                        Block::tool_call("Bash", json!({"command": "rm victim.txt"})),
                        Block::tool_call("Bash", json!({"command": "touch made.txt"})),
                    ]),
                    Step::text("rm denied"),
                ],
            ),
    );
    env.write_file("victim.txt", "keep\n");
    // The parent may run anything but rm: a fresh gate would refuse both
    // commands, a copy without the parent's rules would run both.
    let out = exec(
        &env,
        &server,
        &[
            "--permission-mode",
            "bypassPermissions",
            "--deny",
            "Bash(rm:*)",
            "delegate a cleanup",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(env.path("victim.txt").exists());
    assert!(env.path("made.txt").exists());
    let child_results = server.requests_for("CLEANER child")[1].tool_results();
    assert!(
        child_results[0].2 && child_results[0].1.contains("Bash(rm:*) from --deny"),
        "{:?}",
        child_results[0]
    );
    assert!(!child_results[1].2, "{:?}", child_results[1]);
    let (content, is_error) = agent_result(&server, "delegate a cleanup");
    assert!(!is_error && content.contains("rm denied"), "{content}");
    assert!(
        content.contains("`rm victim.txt` (not run), `touch made.txt` (exit 0)"),
        "{content}"
    );
}

#[test]
fn trace_shows_agent_start_and_end_as_in_seed_000() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "traced parent",
                vec![
                    Step::tool_call("Agent", agent("trace demo", "TRACED child")),
                    Step::text("ok"),
                ],
            )
            .conversation("TRACED child", vec![Step::text("child done")]),
    );
    let out = finish(
        exec_command(&env, &server, &["traced parent"])
            .env("TRACE", "1")
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0);
    assert!(
        out.stderr
            .contains("[trace] agent.start description=trace demo depth=1\n"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("[trace] agent.end description=trace demo ok=true reason=completed\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn cancelling_the_parent_stops_the_child_and_kills_its_commands() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent of a sleeper",
                vec![Step::tool_call("Agent", agent("sleeper", "SLEEPER child"))],
            )
            .conversation(
                "SLEEPER child",
                vec![Step::tool_call(
                    "Bash",
                    json!({"command": "sleep 30 & echo $! > child.pid; wait"}),
                )],
            ),
    );
    let child = exec_command(
        &env,
        &server,
        &[
            "--permission-mode",
            "bypassPermissions",
            "parent of a sleeper",
        ],
    )
    .spawn()
    .unwrap();
    wait_for_file(&env.path("child.pid"));
    std::thread::sleep(Duration::from_millis(100));
    let sleeper: u32 = std::fs::read_to_string(env.path("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = finish(child);
    assert_eq!(out.code, 130, "{}", out.stderr);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!process_alive(sleeper), "the child's sleep survived");
    let lines = transcript(&env);
    assert_nothing_lost(&lines);
    let ended = of_type(&lines, "agent_ended");
    assert_eq!(ended[0]["status"], "aborted");
}
