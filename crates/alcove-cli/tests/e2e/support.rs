//! Helpers shared by the end-to-end tests: run the binary, read its events
//! and transcript, and check that nothing was lost.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use alcove_testkit::{FakeServer, Script, TestEnv};
use serde_json::Value;

pub(crate) fn alcove() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_alcove"))
}

/// A started fake server and a fresh home and workspace whose config makes
/// retries fast.
pub(crate) fn setup(script: Script) -> (TestEnv, FakeServer) {
    let env = TestEnv::new();
    std::fs::write(
        env.home().join("config.toml"),
        "[retry]\nbase_delay_ms = 10\nmax_delay_ms = 3000\nfirst_byte_timeout_ms = 10000\nidle_timeout_ms = 3000\n",
    )
    .unwrap();
    (env, FakeServer::start(script))
}

pub(crate) struct Outcome {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Outcome {
    /// The JSON events printed with `--json`.
    pub(crate) fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| {
                serde_json::from_str(line)
                    .unwrap_or_else(|err| panic!("bad JSON line {line:?}: {err}"))
            })
            .collect()
    }
}

pub(crate) fn exec_command(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Command {
    let mut command = env.command(alcove(), server);
    command
        .arg("exec")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `alcove exec ARGS` to its end (at most 60 s).
pub(crate) fn exec(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Outcome {
    finish(exec_command(env, server, args).spawn().unwrap())
}

/// The wire a test talks to the fake server on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wire {
    /// The default provider, Anthropic's Messages API.
    Anthropic,
    /// The built-in `openai` provider (Chat Completions) with
    /// `OPENAI_BASE_URL` on 127.0.0.1: a local server, as
    /// `docs/local-models.md` says.
    OpenAi,
}

impl Wire {
    /// The `alcove` command of the test's env on this wire, before its
    /// subcommand.
    pub(crate) fn command(self, env: &TestEnv, server: &FakeServer) -> Command {
        match self {
            Wire::Anthropic => env.command(alcove(), server),
            Wire::OpenAi => env.command_openai(alcove(), server),
        }
    }
}

/// Runs `alcove exec ARGS` on `wire` to its end (at most 60 s).
pub(crate) fn exec_on(wire: Wire, env: &TestEnv, server: &FakeServer, args: &[&str]) -> Outcome {
    let mut command = wire.command(env, server);
    command
        .arg("exec")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    finish(command.spawn().unwrap())
}

/// Runs `alcove exec ARGS` on the OpenAI Chat wire ([`Wire::OpenAi`]).
pub(crate) fn exec_openai(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Outcome {
    exec_on(Wire::OpenAi, env, server, args)
}

/// Waits for a spawned alcove (at most 60 s) and collects its output.
pub(crate) fn finish(mut child: Child) -> Outcome {
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("alcove did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// The session transcripts under the test home (top level only: child
/// transcripts live in per-session folders).
pub(crate) fn transcripts(env: &TestEnv) -> Vec<PathBuf> {
    let dir = env.home().join("sessions");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect()
}

/// The one session transcript, parsed.
pub(crate) fn transcript(env: &TestEnv) -> Vec<Value> {
    let files = transcripts(env);
    assert_eq!(files.len(), 1, "expected one transcript, found {files:?}");
    read_jsonl(&files[0])
}

pub(crate) fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("bad transcript line {line:?}: {err}"))
        })
        .collect()
}

/// Every tool_use in the `message` events of every agent has exactly one
/// tool_result, and every tool_call_started has one tool_call_finished.
pub(crate) fn assert_nothing_lost(events: &[Value]) {
    let mut uses = HashSet::new();
    let mut results = Vec::new();
    let mut started = HashSet::new();
    let mut finished = Vec::new();
    for event in events {
        let agent = event["agent"].as_str().unwrap().to_owned();
        match event["type"].as_str().unwrap() {
            "message" => {
                for block in event["message"]["content"].as_array().unwrap() {
                    match block["type"].as_str().unwrap() {
                        "tool_use" => {
                            uses.insert((agent.clone(), block["id"].as_str().unwrap().to_owned()));
                        }
                        "tool_result" => results.push((
                            agent.clone(),
                            block["tool_use_id"].as_str().unwrap().to_owned(),
                        )),
                        _ => {}
                    }
                }
            }
            "tool_call_started" => {
                started.insert((agent.clone(), event["id"].as_str().unwrap().to_owned()));
            }
            "tool_call_finished" => {
                finished.push((agent.clone(), event["id"].as_str().unwrap().to_owned()))
            }
            _ => {}
        }
    }
    let result_set: HashSet<_> = results.iter().cloned().collect();
    assert_eq!(
        result_set.len(),
        results.len(),
        "a tool_use got two results"
    );
    assert_eq!(uses, result_set, "tool_use and tool_result ids differ");
    let finished_set: HashSet<_> = finished.iter().cloned().collect();
    assert_eq!(finished_set.len(), finished.len(), "a call finished twice");
    assert_eq!(started, finished_set, "started and finished calls differ");
}

/// The events of one type.
pub(crate) fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

/// Whether a process with this pid still exists (and is not a zombie).
pub(crate) fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

/// Where a `Read` result cut to fit skips lines.
pub(crate) struct ReadCut {
    /// The line numbers the result shows, in order.
    pub(crate) numbers: Vec<usize>,
    /// The last line of the head it shows.
    pub(crate) head_last: usize,
    /// The first line of the tail it shows.
    pub(crate) tail_first: usize,
}

/// The line numbers of a `Read` result and the gap between its head and
/// its last lines (panics when there is no gap).
pub(crate) fn read_cut(result: &str) -> ReadCut {
    let numbers: Vec<usize> = result
        .lines()
        .filter_map(|line| line.trim_start().split_once('\t'))
        .filter_map(|(number, _)| number.parse().ok())
        .collect();
    let gap = numbers
        .windows(2)
        .position(|pair| pair[1] != pair[0] + 1)
        .expect("a gap between the head and the last lines");
    let (head_last, tail_first) = (numbers[gap], numbers[gap + 1]);
    ReadCut {
        numbers,
        head_last,
        tail_first,
    }
}

/// Waits until the process `pid` is gone (at most `within`, polling every
/// 50 ms); `what` says what it means if it is not, e.g. "the child's
/// command survived the interrupt".
pub(crate) fn wait_gone(pid: u32, within: Duration, what: &str) {
    let deadline = Instant::now() + within;
    while process_alive(pid) {
        assert!(
            Instant::now() < deadline,
            "{what} (pid {pid}, still alive after {within:?})"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `path` exists (at most 20 s).
pub(crate) fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `ToolSearch` step that loads the deferred tools `names`
/// (comma-separated): a script calls a deferred tool only after one.
pub(crate) fn load(names: &str) -> alcove_testkit::Step {
    alcove_testkit::Step::tool_call(
        "ToolSearch",
        serde_json::json!({"query": format!("select:{names}")}),
    )
}

/// [`load`] of every deferred built-in tool: the background-delegation,
/// batch and web tools (those the agent lacks are named in the result).
pub(crate) fn load_deferred() -> alcove_testkit::Step {
    load(
        "spawn_agent,send_input,resume_agent,wait,close_agent,spawn_batch,retry_batch,WebFetch,WebSearch",
    )
}

/// The tool results in `parent`'s last request, in order, less those of
/// its `ToolSearch` calls: each as JSON (`Null` where it is not JSON), its
/// text, and whether it is an error.
pub(crate) fn parent_results(server: &FakeServer, parent: &str) -> Vec<(Value, String, bool)> {
    let requests = server.requests_for(parent);
    results_but_loads(requests.last().unwrap())
        .into_iter()
        .map(|(_, content, is_error)| {
            (
                serde_json::from_str(&content).unwrap_or(Value::Null),
                content,
                is_error,
            )
        })
        .collect()
}

/// `request`'s tool results less those of its `ToolSearch` calls.
pub(crate) fn results_but_loads(
    request: &alcove_testkit::RecordedRequest,
) -> Vec<(String, String, bool)> {
    let loads: Vec<String> = request
        .assistant_tool_calls()
        .into_iter()
        .filter(|(_, name, _)| name == "ToolSearch")
        .map(|(id, _, _)| id)
        .collect();
    request
        .tool_results()
        .into_iter()
        .filter(|(id, _, _)| !loads.contains(id))
        .collect()
}
