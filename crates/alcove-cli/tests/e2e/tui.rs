//! The interactive UI through the real binary in a real pseudo-terminal:
//! tmux runs `alcove` in an 80×24 pane, the test types into it with
//! `send-keys` and reads the screen with `capture-pane`, polling with a
//! deadline for what it expects to see.

use std::time::{Duration, Instant};

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::json;

use crate::support::{
    alcove, assert_nothing_lost, of_type, process_alive, read_jsonl, setup, transcripts,
    wait_for_file, wait_gone,
};

/// One tmux pane running alcove, and what a test reads of it.
mod pane;
/// A workflow run in the agents panel.
mod workflows;

pub(crate) use pane::{DEADLINE, Pane, patient, read_pid};

#[test]
fn a_session_answers_approves_a_child_is_interrupted_exits_and_resumes() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "CHILD: run the greeting command",
                vec![
                    Step::tool_call("Bash", json!({"command": "echo child-was-here"})),
                    Step::text("CHILD-REPORT: the command printed child-was-here."),
                ],
            )
            .conversation(
                "hello there",
                vec![
                    Step::text("ANSWER-ONE with a list:\n\n- first\n- second"),
                    Step::tool_call(
                        "Agent",
                        json!({"description": "greet", "prompt": "CHILD: run the greeting command"}),
                    ),
                    Step::text("PARENT-DONE after delegation"),
                    Step::stall_after("STILL-THINKING about it"),
                    Step::text("RESUMED-ANSWER"),
                ],
            ),
    );
    patient(&env);

    // This test approves a command by hand: the sandbox's auto-allow is off.
    let pane = Pane::start(&env, &server, &["-c", "sandbox.auto_allow=false"]);
    pane.wait_for_screen("Ask anything");
    pane.prompt("hello there");
    pane.wait_for("ANSWER-ONE");
    pane.wait_for("• second");

    pane.prompt("please delegate");
    let asked = pane.wait_for_screen("wants to run a command");
    assert!(asked.contains("main/agent-1 (greet)"), "{asked}");
    assert!(asked.contains("$ echo child-was-here"), "{asked}");
    assert!(
        asked.contains("agent-1"),
        "the delegation panel shows the child: {asked}"
    );
    pane.key("y");
    pane.wait_for("PARENT-DONE");

    pane.key("C-t");
    let child_view = pane.wait_for_screen("Esc back");
    assert!(
        child_view.contains("CHILD: run the greeting command"),
        "{child_view}"
    );
    assert!(child_view.contains("CHILD-REPORT"), "{child_view}");
    pane.key("Escape");
    pane.wait_for_screen("Ask anything");

    pane.prompt("think long");
    pane.wait_for_screen("STILL-THINKING");
    pane.key("Escape");
    pane.wait_for("Interrupted");

    pane.key("C-c");
    pane.wait_for_screen("Press Ctrl+C again");
    pane.key("C-c");
    assert_eq!(pane.wait_exit(), 0, "{}", pane.capture());
    assert!(pane.capture().contains("alcove resume"));

    let files = transcripts(&env);
    assert_eq!(files.len(), 1, "{files:?}");
    let events = read_jsonl(&files[0]);
    assert_nothing_lost(&events);
    // The child's calls are in its own transcript, which the session's names.
    let started = of_type(&events, "agent_started")[0].clone();
    let child_events = read_jsonl(std::path::Path::new(
        started["transcript"].as_str().unwrap(),
    ));
    assert_nothing_lost(&child_events);
    let bash = of_type(&child_events, "tool_call_finished")
        .into_iter()
        .find(|event| event["name"] == "Bash")
        .cloned()
        .unwrap();
    assert_eq!(bash["agent"], "main/agent-1");
    assert_eq!(bash["is_error"], false, "{bash}");
    assert!(bash["content"].as_str().unwrap().contains("child-was-here"));
    assert_eq!(of_type(&events, "session_ended").len(), 1);

    let resumed = Pane::start(&env, &server, &["resume", "--last"]);
    let shown = resumed.wait_for("Resumed session");
    assert!(shown.contains("ANSWER-ONE"), "{shown}");
    assert!(shown.contains("PARENT-DONE"), "{shown}");
    resumed.prompt("continue please");
    resumed.wait_for("RESUMED-ANSWER");
    let last = server.requests_for("hello there").pop().unwrap();
    assert!(
        last.message_count() > 6,
        "the whole conversation was sent again"
    );
    assert_eq!(last.last_user_text(), "continue please");
    resumed.prompt("/exit");
    assert_eq!(resumed.wait_exit(), 0);
    assert_eq!(
        transcripts(&env).len(),
        1,
        "a resumed session appends to its transcript"
    );
    assert_nothing_lost(&read_jsonl(&transcripts(&env)[0]));
}

#[test]
fn slash_commands_status_agents_model_clear_and_unknown() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "before the switch",
                vec![
                    Step::text("FIRST-MODEL-ANSWER"),
                    Step::text("SECOND-MODEL-ANSWER"),
                ],
            )
            .conversation("after clearing", vec![Step::text("FRESH-ANSWER")]),
    );
    let pane = Pane::start(&env, &server, &[]);
    pane.wait_for_screen("Ask anything");
    pane.prompt("/frobnicate");
    pane.wait_for("Unknown command /frobnicate");
    pane.prompt("/status");
    let status = pane.wait_for("transcript");
    assert!(status.contains("anthropic/fake-model"), "{status}");
    pane.prompt("/agents");
    pane.wait_for("general-purpose");

    pane.prompt("before the switch");
    pane.wait_for("FIRST-MODEL-ANSWER");
    pane.prompt("/model anthropic/second-model");
    pane.wait_for("Model switched to anthropic/second-model");
    pane.prompt("and now?");
    pane.wait_for("SECOND-MODEL-ANSWER");
    let requests = server.requests_for("before the switch");
    assert_eq!(requests[0].model(), "fake-model");
    assert_eq!(requests[1].model(), "second-model");
    assert_eq!(requests[1].message_count(), 3, "the conversation went on");

    pane.prompt("/clear");
    pane.wait_for("New conversation");
    pane.prompt("after clearing");
    pane.wait_for("FRESH-ANSWER");
    let fresh = server.requests_for("after clearing");
    assert_eq!(fresh[0].message_count(), 1, "a new conversation");
    pane.key("C-d");
    assert_eq!(pane.wait_exit(), 0);
    assert_eq!(transcripts(&env).len(), 2, "/clear starts a new session");
    for file in transcripts(&env) {
        assert_nothing_lost(&read_jsonl(&file));
    }
}

/// A UI session whose main agent delegates to a child that runs a
/// 300-second command; the parent then answers `after`. Returns once the
/// command runs, with its pid.
fn a_child_waiting_for_the_build(after: &str) -> (TestEnv, FakeServer, Pane, u32) {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "CHILD: wait for the build",
                vec![Step::tool_call(
                    "Bash",
                    json!({"command": "echo $$ > child.pid; sleep 300"}),
                )],
            )
            .conversation(
                "run the build in a child",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "build", "prompt": "CHILD: wait for the build"}),
                    ),
                    Step::text(after),
                ],
            ),
    );
    patient(&env);
    let pane = Pane::start(&env, &server, &["--permission-mode", "bypassPermissions"]);
    pane.wait_for_screen("Ask anything");
    pane.prompt("run the build in a child");
    let pid_file = env.path("child.pid");
    wait_for_file(&pid_file);
    let pid = read_pid(&pid_file);
    (env, server, pane, pid)
}

#[test]
fn esc_interrupts_a_child_kills_its_command_and_the_session_goes_on() {
    let (env, _server, pane, pid) = a_child_waiting_for_the_build("AFTER-THE-INTERRUPT");
    let screen = pane.wait_for_screen("Bash echo $$");
    assert!(screen.contains("agents · 1 running"), "{screen}");
    pane.key("Escape");
    pane.wait_for("Interrupted");
    wait_gone(pid, DEADLINE, "the child's command survived the interrupt");
    pane.prompt("go on");
    pane.wait_for("AFTER-THE-INTERRUPT");
    pane.prompt("/exit");
    assert_eq!(pane.wait_exit(), 0);
    let events = read_jsonl(&transcripts(&env)[0]);
    assert_nothing_lost(&events);
    let ended = of_type(&events, "agent_ended");
    assert_eq!(ended[0]["status"], "aborted", "{ended:?}");
}

/// One child stopped from its live view (Ctrl+T, then `x`): its command
/// dies, it ends `aborted` (an `Agent` child's status for a cancel, as for
/// ACP's `session/cancel` of one), and its parent reads that and goes on
/// with no interrupt of the turn.
#[test]
fn x_in_a_childs_view_stops_that_child_alone_and_its_parent_goes_on() {
    let (env, _server, pane, pid) = a_child_waiting_for_the_build("PARENT-WENT-ON");
    pane.wait_for_screen("Bash echo $$");
    pane.key("C-t");
    let view = pane.wait_for_screen("Esc back · x stop");
    assert!(view.contains("CHILD: wait for the build"), "{view}");
    pane.key("x");
    wait_gone(pid, DEADLINE, "the child's command survived its stop");
    pane.key("Escape");
    let screen = pane.wait_for("PARENT-WENT-ON");
    assert!(!screen.contains("Interrupted"), "{screen}");
    pane.prompt("/exit");
    assert_eq!(pane.wait_exit(), 0);
    let events = read_jsonl(&transcripts(&env)[0]);
    assert_nothing_lost(&events);
    let ended = of_type(&events, "agent_ended");
    assert_eq!(ended[0]["status"], "aborted", "{ended:?}");
}

#[test]
fn the_resume_picker_lists_this_folders_sessions() {
    let (env, server) = setup(Script::new().conversation(
        "an earlier question",
        vec![Step::text("EARLIER-ANSWER"), Step::text("LATER-ANSWER")],
    ));
    let out = crate::support::exec(&env, &server, &["an earlier question"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let pane = Pane::start(&env, &server, &["resume"]);
    let picker = pane.wait_for_screen("Resume a session of this folder");
    assert!(picker.contains("an earlier question"), "{picker}");
    pane.key("Enter");
    let shown = pane.wait_for("Resumed session");
    assert!(shown.contains("EARLIER-ANSWER"), "{shown}");
    pane.prompt("and later?");
    pane.wait_for("LATER-ANSWER");
    pane.prompt("/exit");
    assert_eq!(pane.wait_exit(), 0);
}

#[test]
fn without_a_terminal_it_answers_in_plain_lines() {
    let (env, server) =
        setup(Script::new().conversation("plain hello", vec![Step::text("PLAIN-ANSWER")]));
    let output = env
        .command(alcove(), &server)
        .arg("plain hello")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout.trim(), "PLAIN-ANSWER");
    assert!(!stdout.contains('\u{1b}'), "no escape codes: {stdout:?}");
}

#[test]
fn closing_the_terminal_ends_the_turn_kills_its_commands_and_records_the_end() {
    let (env, server) = setup(Script::new().conversation(
        "start the long job",
        vec![Step::tool_call(
            "Bash",
            json!({"command": "echo $$ > job.pid; sleep 300"}),
        )],
    ));
    patient(&env);
    let pane = Pane::start(&env, &server, &["--permission-mode", "bypassPermissions"]);
    pane.wait_for_screen("Ask anything");
    pane.prompt("start the long job");
    let pid_file = env.path("job.pid");
    wait_for_file(&pid_file);
    let pid = read_pid(&pid_file);
    assert!(process_alive(pid));
    pane.tmux(&["kill-session", "-t", "t"]);

    let deadline = Instant::now() + DEADLINE;
    let events = loop {
        let files = transcripts(&env);
        let events = files
            .first()
            .map(|file| read_jsonl(file))
            .unwrap_or_default();
        if !of_type(&events, "session_ended").is_empty() {
            break events;
        }
        assert!(
            Instant::now() < deadline,
            "no session_ended after SIGHUP: {events:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_nothing_lost(&events);
    assert_eq!(of_type(&events, "session_ended")[0]["status"], "aborted");
    wait_gone(pid, DEADLINE, "the command's process survived");
}

#[test]
fn slash_compact_compacts_the_conversation_and_the_footer_shows_the_context() {
    use crate::compaction::{HANDOVER, data_files, reading_turn};
    let mut steps: Vec<Step> = (0..4).map(reading_turn).collect();
    steps.push(Step::text("FOUR-FILES-READ"));
    steps.push(Step::text("AFTER-COMPACT-ANSWER"));
    let (env, server) = setup(
        Script::new()
            .conversation("read four files", steps)
            .count_tokens()
            .summarizer(HANDOVER, "FACT-"),
    );
    data_files(&env, 4, 4_000);
    env.write_file(".alcove/config.toml", "model_context_window = 50000\n");
    let pane = Pane::start(&env, &server, &["--permission-mode", "bypassPermissions"]);
    pane.wait_for_screen("Ask anything");
    pane.prompt("read four files");
    pane.wait_for("FOUR-FILES-READ");
    // The status line shows how full the window is.
    let screen = pane.wait_for_screen("ctx ");
    assert!(screen.contains("/50.0k"), "{screen}");
    pane.prompt("/status");
    let status = pane.wait_for("window from");
    assert!(status.contains("config model_context_window"), "{status}");

    pane.prompt("/compact the checksums");
    pane.wait_for("Context compacted (manual)");
    pane.prompt("go on");
    pane.wait_for("AFTER-COMPACT-ANSWER");
    let requests = server.requests_for("read four files");
    let handover = requests
        .iter()
        .find(|request| request.last_user_text().contains(HANDOVER))
        .expect("a summary request");
    assert!(
        handover
            .last_user_text()
            .contains("focus on: the checksums")
    );
    let last = requests.last().unwrap();
    assert!(
        last.first_user_message_text()
            .contains("FACT-0: the checksum")
    );
    assert!(last.message_count() < 10, "{}", last.message_count());
    pane.key("C-d");
    assert_eq!(pane.wait_exit(), 0);
    let recorded = read_jsonl(&transcripts(&env)[0]);
    assert_eq!(of_type(&recorded, "compacted").len(), 1);
    assert_nothing_lost(&recorded);
}

#[test]
fn slash_mcp_shows_the_servers_state_live() {
    let (env, server) = setup(Script::new().conversation(
        "crash the server",
        vec![
            Step::tool_call("mcp__faulty__crash", json!({})),
            Step::text("CRASH-REPORTED"),
            Step::tool_call("mcp__faulty__ok", json!({})),
            Step::text("RESTARTED-OK"),
        ],
    ));
    crate::mcp::write_mcp_json(
        &env,
        json!({"faulty": {"command": "python3", "args": [crate::mcp::server_script("faulty.py"), "serve"]}}),
    );
    let pane = Pane::start(&env, &server, &["--permission-mode", "bypassPermissions"]);
    pane.wait_for_screen("Ask anything");
    pane.prompt("/mcp");
    let shown = pane.wait_for("tools: ok, slow, crash, hang");
    assert!(shown.contains("faulty  ready  stdio: python3"), "{shown}");
    pane.prompt("crash the server");
    pane.wait_for("CRASH-REPORTED");
    pane.prompt("/mcp");
    pane.wait_for("faulty  crashed");
    // The next prompt still offers its tools: the next call restarts it.
    pane.prompt("and again");
    pane.wait_for("RESTARTED-OK");
    let again = server.requests_for("crash the server");
    assert!(
        again[2]
            .tool_names()
            .iter()
            .any(|tool| tool == "mcp__faulty__ok")
    );
    let (_, content, is_error) = again[3].tool_results().pop().unwrap();
    // The result comes framed as data from its server.
    assert!(!is_error && content.contains("\nok from "), "{content}");
    pane.key("C-d");
    assert_eq!(pane.wait_exit(), 0);
}

#[test]
fn the_main_agents_plan_is_drawn_under_the_conversation_and_a_childs_in_its_row() {
    let step = |content: &str, status: &str, active: &str| json!({"content": content, "status": status, "activeForm": active});
    let main_plan = json!({"todos": [
        step("Survey the code", "completed", "Surveying the code"),
        step("Delegate the look", "in_progress", "Delegating the look"),
        step("Write the answer", "pending", "Writing the answer"),
    ]});
    let child_plan = json!({"todos": [
        step("a", "completed", "a"), step("b", "completed", "b"), step("c", "completed", "c"),
        step("d", "in_progress", "d"), step("e", "pending", "e"),
    ]});
    let (env, server) = setup(
        Script::new()
            .conversation(
                "plan and delegate",
                vec![
                    Step::tool_call("TodoWrite", main_plan),
                    Step::tool_call(
                        "Agent",
                        json!({"description": "look", "prompt": "CHILD: keep a plan"}),
                    ),
                    Step::text("ALL-DONE"),
                ],
            )
            .conversation(
                "CHILD: keep a plan",
                vec![
                    Step::tool_call("TodoWrite", child_plan),
                    Step::tool_call(
                        "Bash",
                        json!({"command": "while [ ! -f release ]; do sleep 0.05; done"}),
                    ),
                    Step::text("looked"),
                ],
            ),
    );
    patient(&env);
    let pane = Pane::start(&env, &server, &["--permission-mode", "bypassPermissions"]);
    pane.wait_for_screen("Ask anything");
    pane.prompt("plan and delegate");
    let screen = pane.wait_for_screen("plan: 3/5");
    assert!(screen.contains("Plan 1/3"), "{screen}");
    assert!(screen.contains("▸ Delegating the look"), "{screen}");
    assert!(screen.contains("○ Write the answer"), "{screen}");
    env.write_file("release", "");
    pane.wait_for("ALL-DONE");
    // The plan stays in view once the turn is over.
    let screen = pane.wait_for_screen("Plan 1/3");
    assert!(screen.contains("✓ Survey the code"), "{screen}");
    pane.prompt("/exit");
    assert_eq!(pane.wait_exit(), 0);
}
