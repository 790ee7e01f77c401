//! OpenTelemetry traces (issue 40): a session's spans received by a real
//! collector no one here wrote — Arize Phoenix (`tests/otel/up.sh`, which
//! `.ci/run` starts; its URL in `ALCOVE_TEST_PHOENIX`) — and queried back
//! through its REST API: one trace, the span tree matching the agent tree,
//! token attributes matching the transcript's usage; a process-runner
//! child's spans in the same trace; a collector that is down costs one
//! warning and nothing else.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use alcove_testkit::{Script, Step};
use serde_json::{Value, json};

use crate::agents::agent;
use crate::support::{exec_command, finish, of_type, setup, transcript};

/// The collector's base URL. The tests are never skipped silently: only
/// `ALCOVE_SKIP_OTEL=1` skips them, as `ALCOVE_SKIP_SLURM` does Slurm's.
pub(crate) fn phoenix() -> Option<String> {
    if std::env::var("ALCOVE_SKIP_OTEL").is_ok_and(|value| value == "1") {
        return None;
    }
    let url = std::env::var("ALCOVE_TEST_PHOENIX").unwrap_or_else(|_| {
        panic!(
            "ALCOVE_TEST_PHOENIX is not set: start the collector with \
             `export ALCOVE_TEST_PHOENIX=$(tests/otel/up.sh)` (.ci/run does), \
             or skip these tests with ALCOVE_SKIP_OTEL=1"
        )
    });
    // Phoenix takes a while to start (it migrates its database first).
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        if get(&format!("{url}/healthz")).is_some() {
            return Some(url);
        }
        assert!(Instant::now() < deadline, "Phoenix at {url} never answered");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `curl` as the HTTP client: the tests speak to Phoenix as a user would.
fn get(url: &str) -> Option<String> {
    let out = std::process::Command::new("curl")
        .args(["-sf", "--max-time", "10", url])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A span as Phoenix returns it (`/v1/projects/{p}/spans/otlpv1`), its
/// attributes flattened.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub(crate) name: String,
    pub(crate) trace_id: String,
    pub(crate) span_id: String,
    pub(crate) parent_id: String,
    pub(crate) attributes: HashMap<String, Value>,
}

impl Span {
    pub(crate) fn int(&self, key: &str) -> i64 {
        match self.attributes.get(key) {
            Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
            Some(Value::String(s)) => s.parse().unwrap_or(0),
            _ => 0,
        }
    }

    pub(crate) fn text(&self, key: &str) -> String {
        match self.attributes.get(key) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        }
    }
}

/// The OTLP JSON value of an attribute (`{"string_value": …, "int_value":
/// null, …}`: the one field that is not null), as a plain JSON value.
fn otlp_value(value: &Value) -> Value {
    let Some(fields) = value.as_object() else {
        return value.clone();
    };
    match fields.iter().find(|(_, field)| !field.is_null()) {
        Some((key, Value::String(text))) if key.starts_with("int") => {
            json!(text.parse::<i64>().unwrap_or(0))
        }
        Some((_, field)) => field.clone(),
        None => Value::Null,
    }
}

/// Every span of `project`, waiting until at least `at_least` arrived (the
/// exporter batches; Phoenix inserts asynchronously).
pub(crate) fn spans(url: &str, project: &str, at_least: usize) -> Vec<Span> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let body = get(&format!(
            "{url}/v1/projects/{project}/spans/otlpv1?limit=1000"
        ));
        let spans: Vec<Span> = body
            .and_then(|body| serde_json::from_str::<Value>(&body).ok())
            .and_then(|value| value["data"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|span| Span {
                name: span["name"].as_str().unwrap_or_default().to_owned(),
                trace_id: span["trace_id"].as_str().unwrap_or_default().to_owned(),
                span_id: span["span_id"].as_str().unwrap_or_default().to_owned(),
                parent_id: span["parent_span_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                attributes: span["attributes"]
                    .as_array()
                    .map(|pairs| {
                        pairs
                            .iter()
                            .map(|pair| {
                                (
                                    pair["key"].as_str().unwrap_or_default().to_owned(),
                                    otlp_value(&pair["value"]),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        if spans.len() >= at_least || Instant::now() > deadline {
            return spans;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A project name of this test's own, so tests sharing one Phoenix never
/// see each other's spans.
pub(crate) fn project(test: &str) -> String {
    format!("{test}-{}", std::process::id())
}

pub(crate) fn parent_of<'a>(spans: &'a [Span], span: &Span) -> &'a Span {
    spans
        .iter()
        .find(|candidate| candidate.span_id == span.parent_id)
        .unwrap_or_else(|| {
            panic!(
                "the parent of {} ({}) is not in the trace",
                span.name, span.parent_id
            )
        })
}

#[test]
fn a_session_with_nested_children_is_one_trace_whose_spans_follow_the_agent_tree() {
    let Some(url) = phoenix() else { return };
    let project = project("nested");
    let (env, server) = setup(
        Script::new()
            .conversation(
                "trace the tree",
                vec![
                    Step::reply(vec![
                        alcove_testkit::Block::tool_call("Agent", agent("left", "LEFT child")),
                        alcove_testkit::Block::tool_call("Agent", agent("right", "RIGHT child")),
                    ]),
                    Step::text("main done"),
                ],
            )
            .conversation(
                "LEFT child",
                vec![
                    Step::tool_call("Agent", agent("deeper", "DEEP grandchild")),
                    Step::text("left done"),
                ],
            )
            .conversation(
                "RIGHT child",
                vec![
                    Step::tool_call("Read", json!({"file_path": "notes.txt"})),
                    Step::text("right done"),
                ],
            )
            .conversation("DEEP grandchild", vec![Step::text("deep done")]),
    );
    env.write_file("notes.txt", "a note\n");
    let out = finish(
        exec_command(
            &env,
            &server,
            &["-c", "agents.max_depth=2", "--json", "trace the tree"],
        )
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &url)
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            format!("openinference.project.name={project}"),
        )
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests().len();
    // 4 agents, one chat span per model request, and the tool calls: 3 Agent + 1 Read.
    let spans = spans(&url, &project, 4 + requests + 4);

    let traces: std::collections::HashSet<&str> =
        spans.iter().map(|span| span.trace_id.as_str()).collect();
    assert_eq!(traces.len(), 1, "one trace per session: {spans:#?}");

    let agents: Vec<&Span> = spans
        .iter()
        .filter(|span| span.text("gen_ai.operation.name") == "invoke_agent")
        .collect();
    let ids: Vec<String> = agents
        .iter()
        .map(|span| span.text("gen_ai.agent.id"))
        .collect();
    // Children are numbered across the session: the grandchild's number
    // comes after both children's.
    let depth = |id: &String| id.matches('/').count();
    assert_eq!(ids.len(), 4, "{ids:?}");
    assert_eq!(ids.iter().filter(|id| depth(id) == 0).count(), 1, "{ids:?}");
    assert_eq!(ids.iter().filter(|id| depth(id) == 1).count(), 2, "{ids:?}");
    let grandchild = ids
        .iter()
        .find(|id| depth(id) == 2)
        .unwrap_or_else(|| panic!("no grandchild's span: {ids:?}"))
        .clone();
    let main = agents
        .iter()
        .find(|span| span.text("gen_ai.agent.id") == "main")
        .unwrap();
    assert!(
        main.parent_id.is_empty(),
        "the main agent's span is the root: {main:?}"
    );
    // Each child hangs under the parent's `Agent` call, which hangs under the parent's agent span.
    for child in agents
        .iter()
        .filter(|span| span.text("gen_ai.agent.id") != "main")
    {
        let call = parent_of(&spans, child);
        assert_eq!(call.name, "execute_tool Agent", "{child:?} under {call:?}");
        let parent_agent = parent_of(&spans, call);
        let id = child.text("gen_ai.agent.id");
        let expected_parent = &id[..id.rfind('/').unwrap()];
        assert_eq!(
            parent_agent.text("gen_ai.agent.id"),
            expected_parent,
            "{child:?}"
        );
    }

    // One chat span per model request, and their tokens add up to what the
    // transcripts say the session and its children used.
    let chats: Vec<&Span> = spans
        .iter()
        .filter(|span| span.text("gen_ai.operation.name") == "chat")
        .collect();
    assert_eq!(chats.len(), requests, "{chats:#?}");
    let chat_output: i64 = chats
        .iter()
        .map(|span| span.int("gen_ai.usage.output_tokens"))
        .sum();
    let chat_input: i64 = chats
        .iter()
        .map(|span| span.int("gen_ai.usage.input_tokens"))
        .sum();
    let ended = of_type(&out.events(), "session_ended")[0].clone();
    // `session_ended` counts the whole tree; its per-agent breakdown has
    // the main agent's own figure.
    assert_eq!(
        ended["usage"]["output_tokens"].as_i64().unwrap(),
        chat_output,
        "the session's usage is the whole tree's"
    );
    let usage = &ended["agents"]["main"];
    let mut children = (0_i64, 0_i64);
    for end in of_type(&transcript(&env), "agent_ended") {
        let u = &end["usage"];
        let prompt = ["input_tokens", "cache_read_tokens", "cache_write_tokens"]
            .iter()
            .map(|key| u[key].as_i64().unwrap_or(0))
            .sum::<i64>();
        children.0 += prompt;
        children.1 += u["output_tokens"].as_i64().unwrap_or(0);
    }
    let main_prompt = ["input_tokens", "cache_read_tokens", "cache_write_tokens"]
        .iter()
        .map(|key| usage[key].as_i64().unwrap_or(0))
        .sum::<i64>();
    // The grandchild's usage is inside its parent's `agent_ended` in the
    // parent's own transcript, not the session's: count the main agent and
    // its two children from the session transcript, the grandchild's from
    // its span.
    let deep_chat: Vec<&&Span> = chats
        .iter()
        .filter(|chat| parent_of(&spans, chat).text("gen_ai.agent.id") == grandchild)
        .collect();
    let deep_output: i64 = deep_chat
        .iter()
        .map(|s| s.int("gen_ai.usage.output_tokens"))
        .sum();
    let deep_input: i64 = deep_chat
        .iter()
        .map(|s| s.int("gen_ai.usage.input_tokens"))
        .sum();
    assert!(
        deep_output > 0,
        "the grandchild's request has no tokens: {deep_chat:?}"
    );
    assert_eq!(
        chat_output,
        usage["output_tokens"].as_i64().unwrap() + children.1 + deep_output,
        "output tokens of the chat spans against the transcript"
    );
    assert_eq!(
        chat_input,
        main_prompt + children.0 + deep_input,
        "input tokens"
    );
    // The agent spans carry the same totals as the end records: a child's
    // its `agent_ended` (its subtree), the main agent's the session's (the
    // whole tree).
    assert_eq!(
        main.int("gen_ai.usage.output_tokens"),
        ended["usage"]["output_tokens"].as_i64().unwrap()
    );

    // Every tool call is a span, named for its tool, under its agent.
    let read = spans
        .iter()
        .find(|span| span.name == "execute_tool Read")
        .expect("the Read call's span");
    // The right child read: a child of main, not the one above the
    // grandchild (ids are numbered in start order, which a loaded machine
    // may change between the two parallel children).
    let reader = parent_of(&spans, read).text("gen_ai.agent.id");
    assert!(
        reader.starts_with("main/agent-") && reader.matches('/').count() == 1,
        "{reader}"
    );
    assert!(!grandchild.starts_with(&format!("{reader}/")), "{reader}");
    // Contents are not exported unless asked for.
    assert!(
        spans
            .iter()
            .all(|span| !span.attributes.contains_key("gen_ai.tool.call.arguments")),
        "tool arguments were exported without log_content"
    );
}

#[test]
fn a_process_runner_child_continues_its_parents_trace() {
    let Some(url) = phoenix() else { return };
    let project = project("remote");
    let (env, server) = setup(
        Script::new()
            .conversation(
                "trace a remote child",
                vec![
                    crate::support::load_deferred(),
                    Step::tool_call("spawn_agent", json!({"message": "REMOTE traced child"})),
                    Step::tool_call("wait", json!({"ids": ["agent-1"], "timeout_ms": 30_000})),
                    Step::text("done"),
                ],
            )
            .conversation(
                "REMOTE traced child",
                vec![
                    Step::tool_call("Read", json!({"file_path": "notes.txt"})),
                    Step::text("remote done"),
                ],
            ),
    );
    env.write_file("notes.txt", "a note\n");
    let command = format!("{} exec --json -", crate::support::alcove().display());
    let out = finish(
        exec_command(
            &env,
            &server,
            &[
                "-c",
                "agents.wait_min_ms=50",
                "--allow",
                "Agent(general-purpose)",
                "--json",
                "trace a remote child",
            ],
        )
        .env("ALCOVE_SUBAGENT_COMMAND", &command)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &url)
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            format!("openinference.project.name={project}"),
        )
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests().len();
    // Two sessions' agent spans, their chats, and 3 + 1 tool calls.
    let spans = spans(&url, &project, 2 + requests + 3);
    let traces: std::collections::HashSet<&str> =
        spans.iter().map(|span| span.trace_id.as_str()).collect();
    assert_eq!(
        traces.len(),
        1,
        "the remote child is in its parent's trace: {spans:#?}"
    );
    let roots: Vec<&Span> = spans
        .iter()
        .filter(|span| span.text("gen_ai.operation.name") == "invoke_agent")
        .collect();
    assert_eq!(
        roots.len(),
        2,
        "one agent span per process, never twice: {roots:#?}"
    );
    let remote = roots
        .iter()
        .find(|span| !span.parent_id.is_empty())
        .expect("the remote session's agent span has a parent");
    let call = parent_of(&spans, remote);
    assert_eq!(call.name, "execute_tool spawn_agent", "{remote:?}");
    // The remote child's own tool call is its own span, under its own agent.
    let read = spans
        .iter()
        .find(|span| span.name == "execute_tool Read")
        .expect("the remote child's Read");
    assert_eq!(parent_of(&spans, read).span_id, remote.span_id);
    let chats = spans
        .iter()
        .filter(|span| span.text("gen_ai.operation.name") == "chat")
        .count();
    assert_eq!(chats, requests, "each model request once");
}

#[test]
fn with_the_collector_down_the_session_succeeds_and_warns_once() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (env, server) = setup(Script::new().conversation(
        "collector down",
        vec![
            Step::tool_call("Read", json!({"file_path": "notes.txt"})),
            Step::text("fine"),
        ],
    ));
    env.write_file("notes.txt", "a note\n");
    std::fs::write(
        env.home().join("config.toml"),
        format!(
            "[retry]\nbase_delay_ms = 10\n\n[telemetry]\notlp_endpoint = \"http://127.0.0.1:{port}\"\n"
        ),
    )
    .unwrap();
    let out = finish(
        exec_command(&env, &server, &["--json", "collector down"])
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("fine"), "{}", out.stdout);
    let warnings: Vec<String> = out
        .stdout
        .lines()
        .chain(out.stderr.lines())
        .filter(|line| line.contains("traces could not be sent"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        warnings.len(),
        1,
        "one warning, once: {warnings:#?}\n{}",
        out.stderr
    );
    assert!(warnings[0].contains(&port.to_string()), "{warnings:?}");
}
