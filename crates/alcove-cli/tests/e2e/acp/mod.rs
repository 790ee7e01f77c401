//! `alcove acp` driven by ACP clients nobody here wrote (issue 38): the
//! protocol's official TypeScript SDK (a small client script,
//! `tests/acp/client.mjs`, printing what it saw as JSON lines) and `acpx`,
//! both pinned by `tests/acp/package-lock.json` and installed by `.ci/run`
//! (`cd tests/acp && npm ci`). A missing install fails the test with the
//! command that makes it; nothing is skipped.

mod children;
mod editor;
mod robustness;
mod sessions;
mod thoughts_and_plans;
mod workflows;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use alcove_testkit::{FakeServer, TestEnv};
use serde_json::Value;

use crate::support::{alcove, finish};

/// `tests/acp` in the repository.
pub(crate) fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/acp")
}

pub(crate) fn installed(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: the ACP test clients are installed by .ci/run (cd tests/acp && npm ci)",
        path.display()
    );
    path
}

/// What the SDK client saw, line by line.
pub(crate) struct Seen {
    pub(crate) lines: Vec<Value>,
    pub(crate) stderr: String,
}

impl Seen {
    /// Lines whose `seen` is `kind`.
    pub(crate) fn of(&self, kind: &str) -> Vec<&Value> {
        self.lines
            .iter()
            .filter(|line| line["seen"] == kind)
            .collect()
    }

    /// The `session/update`s of one type (`sessionUpdate`), with their session ids.
    pub(crate) fn updates(&self, kind: &str) -> Vec<(&str, &Value)> {
        self.of("update")
            .into_iter()
            .filter(|line| line["update"]["sessionUpdate"] == kind)
            .map(|line| (line["sessionId"].as_str().unwrap(), &line["update"]))
            .collect()
    }

    /// The result of the steps named `step`, in order (errors as `{"error": …}`).
    pub(crate) fn responses(&self, step: &str) -> Vec<Value> {
        self.lines
            .iter()
            .filter(|line| line["step"] == step)
            .map(|line| {
                if line["seen"] == "error" {
                    serde_json::json!({"error": line["error"]})
                } else {
                    line["result"].clone()
                }
            })
            .collect()
    }

    /// How each prompt ended: its `stopReason`, or `error: …`.
    pub(crate) fn stop_reasons(&self) -> Vec<String> {
        self.responses("prompt")
            .into_iter()
            .map(|result| match result["stopReason"].as_str() {
                Some(reason) => reason.to_owned(),
                None => format!("error: {result}"),
            })
            .collect::<Vec<_>>()
    }

    /// The agent's streamed text on `session`.
    pub(crate) fn text_on(&self, session: &str) -> String {
        self.updates("agent_message_chunk")
            .into_iter()
            .filter(|(id, _)| *id == session)
            .map(|(_, update)| {
                update["content"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    /// Every `tool_call_update` names a call announced before it on its
    /// session (a client has nothing to show an update of an unknown call in).
    pub(crate) fn assert_every_update_names_an_announced_call(&self) {
        let mut announced = std::collections::HashSet::new();
        for line in self.of("update") {
            let update = &line["update"];
            let key = (
                line["sessionId"].as_str().unwrap_or_default().to_owned(),
                update["toolCallId"].as_str().unwrap_or_default().to_owned(),
            );
            match update["sessionUpdate"].as_str() {
                Some("tool_call") => {
                    announced.insert(key);
                }
                Some("tool_call_update") => {
                    assert!(
                        announced.contains(&key),
                        "update of an unknown call: {line}"
                    );
                }
                _ => {}
            }
        }
    }

    /// How alcove exited, as the client saw it.
    pub(crate) fn exit_code(&self) -> Option<i64> {
        self.of("exit")
            .first()
            .and_then(|line| line["code"].as_i64())
    }
}

/// Runs the SDK client with `plan` against `alcove acp` (in the env's
/// workspace, on the fake server; `extra` adds alcove options).
pub(crate) fn sdk_client(env: &TestEnv, server: &FakeServer, plan: &Value) -> Seen {
    let script = installed(clients_dir().join("client.mjs"));
    installed(clients_dir().join("node_modules/@agentclientprotocol/sdk"));
    let mut command = env.command(Path::new("node"), server);
    command
        .arg(script)
        .arg(plan.to_string())
        .env("ALCOVE_BIN", alcove())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = finish(command.spawn().unwrap());
    let lines = out
        .stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|err| panic!("bad line {line:?}: {err}"))
        })
        .collect();
    Seen {
        lines,
        stderr: out.stderr,
    }
}

/// The session id of the plan's `new` step.
pub(crate) fn new_session_id(seen: &Seen) -> String {
    seen.responses("new")[0]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {:?}\n{}", seen.lines, seen.stderr))
        .to_owned()
}
