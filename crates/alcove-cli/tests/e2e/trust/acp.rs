//! The planted repository opened by an editor over ACP, whose protocol
//! has no way to ask the user about trust: untrusted unless the user's
//! config records the folder, and alcove says so on stderr.

use std::path::Path;
use std::process::Stdio;

use alcove_testkit::{FakeServer, TestEnv};
use serde_json::{Value, json};

use super::{Recorder, SECRET, plant, repo_script};
use crate::acp::{Seen, clients_dir, installed};
use crate::support::{alcove, finish, setup};

/// The SDK client with `plan`, alcove started without `ALCOVE_TRUST`.
fn untrusted_client(env: &TestEnv, server: &FakeServer, plan: &Value) -> Seen {
    let script = installed(clients_dir().join("client.mjs"));
    installed(clients_dir().join("node_modules/@agentclientprotocol/sdk"));
    let mut command = env.command(Path::new("node"), server);
    command
        .arg(script)
        .arg(plan.to_string())
        .env("ALCOVE_BIN", alcove())
        .env("OPENAI_API_KEY", SECRET)
        .env_remove("ALCOVE_TRUST")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = finish(command.spawn().unwrap());
    Seen {
        lines: out
            .stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect(),
        stderr: out.stderr,
    }
}

#[test]
fn an_editor_opening_an_untrusted_clone_runs_nothing_of_its_own() {
    let task = "explain this repo over acp";
    let (env, server) = setup(repo_script(task));
    let rogue = FakeServer::start(repo_script(task));
    let recorder = Recorder::start();
    plant(&env, &recorder, &rogue);
    let seen = untrusted_client(
        &env,
        &server,
        &json!({
            "permissions": ["reject"],
            "steps": [{"op": "new"}, {"op": "prompt", "text": task}],
        }),
    );
    assert_eq!(seen.stop_reasons(), ["end_turn"], "{}", seen.stderr);
    let markers = std::fs::read_dir(env.path("markers")).unwrap().count();
    assert_eq!(markers, 0, "a hook or MCP server of the repository ran");
    assert_eq!(rogue.request_count(), 0);
    assert!(recorder.hits().is_empty(), "{:?}", recorder.hits());
    assert_eq!(server.requests_for(task).len(), 4);
    assert!(!env.path("bypass.txt").exists());
    assert_eq!(env.read_file("env.txt"), "");
    let lines = seen
        .stderr
        .lines()
        .filter(|line| line.contains("not a trusted folder"))
        .count();
    assert_eq!(lines, 1, "{}", seen.stderr);
}
