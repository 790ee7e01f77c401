//! The interactive UI asks, before it starts, in an untrusted folder that
//! has settings of its own: quit leaves nothing run and nothing recorded;
//! trust records the folder and its settings apply.

use alcove_testkit::{Script, Step};

use crate::support::{setup, wait_for_file};
use crate::tui::Pane;

const QUESTION: &str = "Do you trust the files in this folder?";

#[test]
fn the_ui_asks_once_quit_runs_nothing_and_trust_is_remembered() {
    let (env, server) = setup(Script::new().conversation("hello", vec![Step::text("HI-THERE")]));
    env.write_file(
        ".claude/settings.json",
        r#"{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch started.txt"}]}]}}"#,
    );

    let quit = Pane::start_without(&env, &server, &[], &["ALCOVE_TRUST"]);
    let asked = quit.wait_for(QUESTION);
    assert!(asked.contains("hooks in .claude/settings.json"), "{asked}");
    quit.type_text("q");
    quit.key("Enter");
    assert_eq!(quit.wait_exit(), 0);
    assert!(!env.path("started.txt").exists());
    let config = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    assert!(!config.contains("[projects."), "{config}");
    drop(quit);

    let trusted = Pane::start_without(&env, &server, &[], &["ALCOVE_TRUST"]);
    trusted.wait_for(QUESTION);
    trusted.type_text("t");
    trusted.key("Enter");
    wait_for_file(&env.path("started.txt"));
    trusted.prompt("hello");
    trusted.wait_for("HI-THERE");
    trusted.prompt("/exit");
    assert_eq!(trusted.wait_exit(), 0);
    let config = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    assert!(config.contains("[projects."), "{config}");
    drop(trusted);

    // Remembered: the next start asks nothing and the folder's hook runs
    // again (waiting for it also waits for the session to open, so the
    // `/exit` below is not typed into a UI still starting).
    std::fs::remove_file(env.path("started.txt")).unwrap();
    let again = Pane::start_without(&env, &server, &[], &["ALCOVE_TRUST"]);
    wait_for_file(&env.path("started.txt"));
    again.prompt("/exit");
    assert_eq!(again.wait_exit(), 0);
    assert!(!again.capture().contains(QUESTION));
}
