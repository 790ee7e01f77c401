//! `alcove mcp serve --http`: the same server over Streamable HTTP, driven
//! by the official Python SDK's `streamable_http_client` (issue 48), and
//! played by an attacker without the bearer token.

use std::io::{BufRead as _, BufReader};

use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use super::{BYPASS, test_env};
use crate::support::{alcove, transcript};

/// A running `alcove mcp serve --http 127.0.0.1:0`: its URL, its token and
/// everything it printed to stderr.
struct HttpServer {
    child: Child,
    url: String,
    token: String,
    stderr: Vec<String>,
}

impl HttpServer {
    /// Starts the server; `token` goes into `ALCOVE_MCP_TOKEN` when given,
    /// otherwise the token is read from what the server prints.
    fn start(env: &TestEnv, server: &FakeServer, token: Option<&str>, args: &[&str]) -> HttpServer {
        let mut command = env.command(alcove(), server);
        command
            .args(["mcp", "serve", "--http", "127.0.0.1:0"])
            .args(args)
            .env_remove("ALCOVE_MCP_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(token) = token {
            command.env("ALCOVE_MCP_TOKEN", token);
        }
        let mut child = command.spawn().unwrap();
        let (lines, received) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        let mut printed = Vec::new();
        let (mut url, mut generated) = (None, None);
        while url.is_none() || (token.is_none() && generated.is_none()) {
            let line = received
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|err| panic!("{err}; the server printed {printed:?}"));
            if let Some(rest) = line.split("Streamable HTTP at ").nth(1) {
                url = Some(rest.trim().to_owned());
            }
            if let Some(rest) = line.split("(set ALCOVE_MCP_TOKEN to choose one): ").nth(1) {
                generated = Some(rest.trim().to_owned());
            }
            printed.push(line);
        }
        HttpServer {
            child,
            url: url.unwrap(),
            token: token.map_or_else(|| generated.unwrap(), str::to_owned),
            stderr: printed,
        }
    }

    /// Runs the client's `scenario` against the server with `token`.
    fn client(&self, env: &TestEnv, server: &FakeServer, scenario: &[&str], token: &str) -> Value {
        let target = ["--http", &self.url, token].map(std::ffi::OsString::from);
        super::serve::run_client(env, server, scenario, &target)
    }

    /// SIGTERM, as a user's Ctrl-C would; returns the exit code.
    fn stop(mut self) -> Option<i32> {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        self.child.wait().unwrap().code()
    }
}

impl Drop for HttpServer {
    /// A failed test does not leave its server running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn tools_list_and_delegate_over_streamable_http_with_the_printed_token() {
    let env = test_env();
    let server = FakeServer::start(Script::new().conversation(
        "TASK-HTTP",
        vec![
            Step::tool_call("Bash", json!({"command": "printf over-http > http.txt"})),
            Step::text("REPORT: wrote http.txt"),
        ],
    ));
    let http = HttpServer::start(&env, &server, None, &BYPASS);
    assert!(
        http.url.starts_with("http://127.0.0.1:"),
        "{:?}",
        http.stderr
    );
    assert!(http.url.ends_with("/mcp"), "{}", http.url);
    assert_eq!(http.token.len(), 64, "a generated token: {:?}", http.stderr);
    let listed = http.client(&env, &server, &["list"], &http.token);
    assert_eq!(listed["server"], "alcove");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"delegate") && names.contains(&"list_agents"),
        "{names:?}"
    );
    let args = json!({"prompt": "TASK-HTTP write the file", "description": "over http"});
    let out = http.client(&env, &server, &["delegate", &args.to_string()], &http.token);
    let result = &out["result"];
    assert_eq!(result["is_error"], false, "{out}");
    let text = result["text"].as_str().unwrap();
    assert!(text.contains("REPORT: wrote http.txt"), "{text}");
    assert!(text.contains("[alcove evidence]"), "{text}");
    assert_eq!(result["structured"]["status"], "completed", "{out}");
    assert_eq!(
        result["structured"]["commands"][0]["result"], "exit 0",
        "{out}"
    );
    let progress: Vec<&str> = out["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        progress.iter().any(|line| line.contains("Bash")),
        "{progress:?}"
    );
    assert_eq!(
        std::fs::read_to_string(env.path("http.txt")).unwrap(),
        "over-http"
    );
    // Two clients' connections, one alcove session; a signal ends it.
    assert_eq!(http.stop(), Some(143));
    let events = transcript(&env);
    assert_eq!(
        events
            .iter()
            .filter(|event| event["type"] == "agent_started")
            .count(),
        1
    );
    assert!(events.iter().any(|event| event["type"] == "session_ended"));
}

#[test]
fn without_the_token_every_request_is_refused_401_and_no_model_is_asked() {
    let env = test_env();
    // A script the attacker's task would run, were it let in.
    let server = FakeServer::start(Script::new().conversation(
        "TASK-ATTACK",
        vec![
            Step::tool_call("Bash", json!({"command": "touch attacked.txt"})),
            Step::text("done"),
        ],
    ));
    let token = "s3cret-token-for-the-test";
    let http = HttpServer::start(&env, &server, Some(token), &BYPASS);
    assert!(
        http.stderr.iter().all(|line| !line.contains(token)),
        "a token from the environment is not printed: {:?}",
        http.stderr
    );
    let out = http.client(&env, &server, &["attack"], token);
    let statuses = out["statuses"].as_object().unwrap();
    assert_eq!(statuses.len(), 20, "{out}");
    for (attempt, answer) in statuses {
        assert_eq!(answer["status"], 401, "{attempt}: {answer}");
        assert_eq!(
            answer["www_authenticate"], "Bearer realm=\"alcove\"",
            "{attempt}: {answer}"
        );
        assert!(
            !answer["body"].as_str().unwrap().contains(token),
            "{attempt}: {answer}"
        );
    }
    assert!(
        out["sdk"].as_str().unwrap().starts_with("refused"),
        "the SDK's client with a wrong token: {out}"
    );
    assert_eq!(server.request_count(), 0, "no model request was made");
    assert!(!env.path("attacked.txt").exists());
    // The same server still serves the right token.
    let listed = http.client(&env, &server, &["list"], token);
    assert_eq!(listed["server"], "alcove", "{listed}");
    http.stop();
    assert!(
        transcript(&env)
            .iter()
            .all(|event| event["type"] != "agent_started"),
        "no agent started"
    );
}

#[test]
fn a_non_loopback_address_needs_the_flag_and_then_warns() {
    let env = test_env();
    let server = FakeServer::start(Script::new());
    let refused = env
        .command(alcove(), &server)
        .args(["mcp", "serve", "--http", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("not a loopback address") && stderr.contains("--http-allow-remote"),
        "{stderr}"
    );
    let http = HttpServer::start(&env, &server, Some("t0ken"), &["--http-allow-remote"]);
    // Started on 127.0.0.1 (the test's address) with the flag: no warning;
    // the warning is for addresses others can reach.
    assert!(
        http.stderr.iter().all(|line| !line.contains("WARNING")),
        "{:?}",
        http.stderr
    );
    http.stop();
    let mut command = env.command(alcove(), &server);
    command
        .args(["mcp", "serve", "--http", "0.0.0.0:0", "--http-allow-remote"])
        .env("ALCOVE_MCP_TOKEN", "t0ken")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    child.wait().unwrap();
    assert!(
        first.contains("WARNING") && first.contains("0.0.0.0"),
        "{first}"
    );
}
