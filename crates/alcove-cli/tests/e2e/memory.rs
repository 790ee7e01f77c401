//! The memory file (`.agents/memory/MEMORY.md`) through the real binary:
//! injected as `## Agent Memory`, re-read only when it changed (so the
//! request prefix stays byte-for-byte the same otherwise), and the UI's
//! `# note`, `/memory`, custom commands in `/help` and Tab (issue 15).

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use alcove_testkit::{RecordedRequest, Script, Step};

use crate::support::{alcove, exec, setup};
use crate::tui::{Pane, patient};

const MEMORY: &str = ".agents/memory/MEMORY.md";

/// What must stay the same for a provider's prompt cache: the system prompt
/// and the tools, as sent.
fn prefix(request: &RecordedRequest) -> String {
    format!(
        "{}\n{}",
        serde_json::to_string(&request.body["system"]).unwrap(),
        serde_json::to_string(&request.body["tools"]).unwrap()
    )
}

fn set_modified(path: &std::path::Path, time: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

#[test]
fn a_missing_memory_file_is_stated_as_empty() {
    let (env, server) = setup(Script::new().conversation("hello", vec![Step::text("hi")]));
    let out = exec(&env, &server, &["hello"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let system = server.requests_for("hello")[0].system_prompt();
    assert!(system.contains("## Agent Memory"), "{system}");
    assert!(system.contains("(currently empty)"), "{system}");
}

#[test]
fn memory_is_injected_refreshed_when_it_changes_and_not_otherwise() {
    let (env, server) = setup(Script::new().conversation(
        "turn one",
        vec![
            Step::text("REPLY-1"),
            Step::text("REPLY-2"),
            Step::text("REPLY-3"),
            Step::text("REPLY-4"),
        ],
    ));
    env.write_file(MEMORY, "- alpha\n");
    let memory = env.path(MEMORY);
    // The plain front end: one prompt per stdin line, one session.
    let mut child = env
        .command(alcove(), &server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (lines_tx, lines) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let mut turn = |prompt: &str, reply: &str| {
        writeln!(stdin, "{prompt}").unwrap();
        loop {
            let line = lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("{reply} never came"));
            if line.contains(reply) {
                break;
            }
        }
    };

    turn("turn one", "REPLY-1");
    // Same size, same modification time: not re-read.
    let modified = std::fs::metadata(&memory).unwrap().modified().unwrap();
    std::fs::write(&memory, "- ALPHA\n").unwrap();
    set_modified(&memory, modified);
    turn("turn two", "REPLY-2");
    // A real change: re-read.
    std::fs::write(&memory, "- beta, from a later edit\n").unwrap();
    set_modified(&memory, modified + Duration::from_secs(5));
    turn("turn three", "REPLY-3");
    turn("turn four", "REPLY-4");
    drop(stdin);
    assert!(child.wait().unwrap().success());

    let requests = server.requests_for("turn one");
    assert_eq!(requests.len(), 4);
    let system: Vec<String> = requests
        .iter()
        .map(RecordedRequest::system_prompt)
        .collect();
    assert!(system[0].contains("## Agent Memory"), "{}", system[0]);
    assert!(system[0].contains("- alpha"), "{}", system[0]);
    assert_eq!(
        prefix(&requests[0]),
        prefix(&requests[1]),
        "unchanged stamp: same bytes"
    );
    assert!(
        system[2].contains("- beta, from a later edit"),
        "{}",
        system[2]
    );
    assert!(!system[2].contains("alpha"), "{}", system[2]);
    assert_eq!(
        prefix(&requests[2]),
        prefix(&requests[3]),
        "no change: same bytes"
    );
    // Everything before the memory section never changed.
    let head = |text: &str| text[..text.find("## Agent Memory").unwrap()].to_owned();
    assert_eq!(head(&system[0]), head(&system[2]));
}

#[test]
fn the_ui_appends_hash_notes_shows_memory_and_runs_custom_commands() {
    let (env, server) =
        setup(Script::new().conversation("Review pull request 7", vec![Step::text("REVIEW-DONE")]));
    patient(&env);
    env.write_file(
        ".claude/commands/review-pr.md",
        "---\ndescription: Review a pull request\nargument-hint: <number>\n---\nReview pull request $1.\n",
    );
    let pane = Pane::start(&env, &server, &[]);
    pane.wait_for_screen("Ask anything");

    pane.prompt("# the tests need cargo nextest");
    pane.wait_for("Noted in");
    assert_eq!(env.read_file(MEMORY), "- the tests need cargo nextest\n");

    pane.prompt("/memory");
    let shown = pane.wait_for("- the tests need cargo nextest");
    assert!(shown.contains(".agents/memory/MEMORY.md"), "{shown}");

    pane.prompt("/help");
    let help = pane.wait_for("Custom commands and skills");
    assert!(help.contains("/review-pr"), "{help}");

    pane.type_text("/revi");
    pane.key("Tab");
    pane.wait_for_screen("/review-pr ");
    pane.type_text("7");
    pane.key("Enter");
    pane.wait_for("REVIEW-DONE");
    assert_eq!(
        server.requests_for("Review pull request")[0].first_user_text(),
        "Review pull request 7."
    );
    pane.type_text("/exit");
    pane.key("Enter");
    assert_eq!(pane.wait_exit(), 0);
}
