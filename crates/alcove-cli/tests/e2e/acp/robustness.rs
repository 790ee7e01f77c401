//! Malformed JSON-RPC, unknown methods and sessions, and a client that
//! stops reading: clear JSON-RPC errors, never a panic or a hang. These
//! speak raw lines, below any SDK.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{alcove, setup};

fn start(env: &TestEnv, server: &FakeServer) -> Child {
    env.command(alcove(), server)
        .arg("acp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends one line and reads up to the answer with the request's id (or,
/// for a request without one, the next line).
fn ask(stdin: &mut ChildStdin, reader: &mut BufReader<ChildStdout>, line: &str) -> Value {
    writeln!(stdin, "{line}").unwrap();
    stdin.flush().unwrap();
    let id = serde_json::from_str::<Value>(line)
        .ok()
        .map(|request| request["id"].clone());
    loop {
        let mut answer = String::new();
        reader.read_line(&mut answer).unwrap();
        let message: Value =
            serde_json::from_str(&answer).unwrap_or_else(|err| panic!("{answer:?}: {err}"));
        match &id {
            Some(id) if message["id"] != *id => continue,
            _ => return message,
        }
    }
}

/// Waits at most `limit` for the process to end; its exit code.
fn ends_within(child: &mut Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn malformed_json_unknown_methods_and_unknown_sessions_get_json_rpc_errors() {
    let (env, server) = setup(Script::new());
    let mut child = start(&env, &server);
    let mut stdin = child.stdin.take().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let parse = ask(&mut stdin, &mut reader, "{this is not json");
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    let init = ask(
        &mut stdin,
        &mut reader,
        r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}"#,
    );
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let unknown = ask(
        &mut stdin,
        &mut reader,
        r#"{"jsonrpc":"2.0","id":1,"method":"no/such/method","params":{}}"#,
    );
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}});
    let lost = ask(&mut stdin, &mut reader, &prompt.to_string());
    assert_eq!(lost["error"]["code"], -32002, "{lost}");
    assert!(
        lost["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no-such-session"),
        "{lost}"
    );
    let relative = ask(
        &mut stdin,
        &mut reader,
        r#"{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}"#,
    );
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    assert!(
        relative["error"]["message"]
            .as_str()
            .unwrap()
            .contains("absolute"),
        "{relative}"
    );
    let bad = ask(
        &mut stdin,
        &mut reader,
        r#"{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":7}}"#,
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    drop(stdin);
    assert_eq!(ends_within(&mut child, Duration::from_secs(20)), Some(0));
}

#[test]
fn a_client_that_stops_reading_and_closes_its_input_does_not_hang_alcove() {
    let long = "x".repeat(400_000);
    let (env, server) =
        setup(Script::new().conversation("ACP FLOOD", vec![Step::text(&long).piece_chars(1000)]));
    let mut child = start(&env, &server);
    let mut stdin = child.stdin.take().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let cwd = env.workspace().canonicalize().unwrap();
    ask(
        &mut stdin,
        &mut reader,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
    );
    let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}});
    let new = ask(&mut stdin, &mut reader, &new.to_string());
    let session = new["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{new}"))
        .to_owned();
    // From here on nobody reads, and far more than a pipe holds is streamed.
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "ACP FLOOD me"}]}});
    writeln!(stdin, "{prompt}").unwrap();
    stdin.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.requests_for("ACP FLOOD").is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    // Its input closes while its output is still full and unread.
    drop(stdin);
    assert!(
        ends_within(&mut child, Duration::from_secs(20)).is_some(),
        "alcove acp hung"
    );
    drop(reader);
}
