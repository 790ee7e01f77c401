//! One redaction for every sink (issue 44): a provider key the model reads
//! from a `.env`, hands to a child and writes in its answer reaches none of
//! `--json`'s stdout, the transcripts, the OTLP export or the report; and
//! the variables the scrub pattern names a secret never reach a command.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use alcove_testkit::{Script, Step};
use serde_json::json;

use crate::agents::agent;
use crate::support::{alcove, exec_command, finish, setup};

/// The provider's key, read from a custom `api_key_env`.
const KEY: &str = "sk-lab-3f9a1c7e5d2b8046";
/// Variables a command must not see, with values that would give them away.
const HIDDEN: [(&str, &str); 4] = [
    (
        "DATABASE_URL",
        "postgres://app:db-pass-5e1f@db.internal/app",
    ),
    ("GITHUB_PAT", "github_pat_11ABCDEFG0123456789"),
    (
        "OTEL_EXPORTER_OTLP_HEADERS",
        "authorization=Basic b3RlbC1zZWNyZXQ=",
    ),
    ("OTHER_LLM_CREDENTIAL", "other-provider-key-77aa"),
];

/// An OTLP/HTTP collector that keeps every request's body as it came.
fn collector() -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let kept = kept.clone();
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line.trim().is_empty() {
                            break;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(value) = lower.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    kept.lock().unwrap().extend_from_slice(&body);
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if writer.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, bodies)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[test]
fn a_provider_key_read_delegated_and_answered_reaches_no_sink_and_no_command() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "check the deployment settings",
                vec![
                    Step::tool_call("Read", json!({"file_path": ".env"})),
                    Step::tool_call(
                        "Agent",
                        agent("verify key", &format!("CHILD: verify that {KEY} works")),
                    ),
                    Step::tool_call("Bash", json!({"command": "env"})),
                    Step::text(&format!("The key in .env is {KEY}.")),
                ],
            )
            .conversation(
                "CHILD: verify that",
                vec![Step::text(&format!("{KEY} looks like a lab key."))],
            ),
    );
    let (collector_url, exported) = collector();
    let config = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    std::fs::write(
        env.home().join("config.toml"),
        format!(
            "model = \"lab/fake-model\"\n{config}\
             [providers.lab]\nkind = \"anthropic\"\nbase_url = \"{}\"\napi_key_env = \"LAB_CREDENTIAL\"\n\
             [providers.other]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"OTHER_LLM_CREDENTIAL\"\n\
             [telemetry]\notlp_endpoint = \"{collector_url}\"\nlog_content = true\n",
            server.url()
        ),
    )
    .unwrap();
    env.write_file(".env", &format!("LAB_CREDENTIAL={KEY}\nDEBUG=1\n"));

    let mut command = exec_command(&env, &server, &["--json", "check the deployment settings"]);
    command
        .env_remove("ALCOVE_MODEL")
        .env("LAB_CREDENTIAL", KEY);
    for (name, value) in HIDDEN {
        command.env(name, value);
    }
    let out = finish(command.spawn().unwrap());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("\"model\":\"lab/fake-model\""),
        "the custom provider was not used"
    );

    // The model got what it asked for: the key is in what it read.
    let requests = server.requests_for("check the deployment settings");
    let results: Vec<String> = requests
        .last()
        .unwrap()
        .tool_results()
        .into_iter()
        .map(|(_, content, _)| content)
        .collect();
    assert!(results[0].contains(KEY), "{results:?}");
    // Every leak found, so a failure names them all.
    let mut leaks = Vec::new();
    // A command saw none of the secrets, by name or value.
    let env_output = &results[2];
    assert!(env_output.contains("PATH="), "{env_output}");
    for (name, value) in HIDDEN.iter().chain(&[("LAB_CREDENTIAL", KEY)]) {
        if env_output.contains(name) || env_output.contains(value) {
            leaks.push(format!("{name} reached a command"));
        }
    }

    // --json stdout.
    if out.stdout.contains(KEY) {
        leaks.push("the key is in --json output".to_owned());
    }
    if !out.stdout.contains("[REDACTED]") {
        leaks.push("--json output redacts nothing".to_owned());
    }
    // Every transcript, the session's and the child's.
    let sessions = env.home().join("sessions");
    let mut transcripts = Vec::new();
    for entry in walk(&sessions) {
        if entry.extension().is_some_and(|ext| ext == "jsonl") {
            transcripts.push(entry);
        }
    }
    assert!(transcripts.len() >= 2, "{transcripts:?}");
    for path in &transcripts {
        let text = std::fs::read_to_string(path).unwrap();
        if text.contains(KEY) {
            leaks.push(format!("the key is in {}", path.display()));
        }
    }
    // The OTLP export (with log_content on, so contents are exported).
    let exported = exported.lock().unwrap().clone();
    assert!(
        contains(&exported, "DEBUG=1"),
        "the collector got no content ({} bytes)",
        exported.len()
    );
    if contains(&exported, KEY) {
        leaks.push("the key is in the OTLP export".to_owned());
    }
    // The report.
    let id = transcripts
        .iter()
        .find(|path| path.parent() == Some(sessions.as_path()))
        .and_then(|path| path.file_stem())
        .and_then(|stem| stem.to_str())
        .unwrap()
        .to_owned();
    let page = env.home().join("report.html");
    let report = env
        .command(alcove(), &server)
        .args(["report", &id[..8], "--out"])
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(
        report.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("check the deployment settings"),
        "the report shows no content"
    );
    if html.contains(KEY) {
        leaks.push("the key is in the report".to_owned());
    }
    assert!(leaks.is_empty(), "{leaks:#?}");
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
