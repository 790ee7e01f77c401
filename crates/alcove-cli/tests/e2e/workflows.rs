//! Workflow scripts (issue 47): `alcove workflow run` against the fake
//! server — every `agent()` a real child, the plan and checks before any
//! agent starts, budgets, resume after `kill -9`, scale.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{Outcome, Wire, finish, of_type, read_jsonl, setup, transcript};

/// Dollar budgets.
mod dollars;
/// A provider that refuses the key halts a wide run.
mod halted;
/// The model's `Workflow` tool.
mod model_tool;
/// Agents on the process and Slurm runners.
pub(crate) mod runners;
/// Saved workflows: `/<name>`, and folder trust.
mod saved;
/// A run in `alcove report` and in OTel traces.
mod seen;

fn workflow_command(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Command {
    workflow_command_on(Wire::Anthropic, env, server, args)
}

/// [`workflow_command`] on `wire`.
fn workflow_command_on(wire: Wire, env: &TestEnv, server: &FakeServer, args: &[&str]) -> Command {
    let mut command = wire.command(env, server);
    command
        .args(["workflow", "run"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn run_workflow(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Outcome {
    finish(workflow_command(env, server, args).spawn().unwrap())
}

/// The `workflow_ended` event of a `--json` run.
fn ended(out: &Outcome) -> Value {
    let events = out.events();
    assert_eq!(events[0]["type"], "workflow_started", "{}", out.stdout);
    assert!(events[0]["run_id"].as_str().unwrap().starts_with("wf_"));
    let last = events.last().unwrap().clone();
    assert_eq!(
        last["type"], "workflow_ended",
        "{}\n{}",
        out.stdout, out.stderr
    );
    last
}

/// The span from an agent's first request to its last, found by its needle.
fn span(server: &FakeServer, needle: &str) -> (Instant, Instant) {
    let times: Vec<Instant> = server
        .requests()
        .iter()
        .filter(|request| request.first_user_message_text().contains(needle))
        .map(|request| request.received_at)
        .collect();
    assert!(!times.is_empty(), "no request for {needle}");
    (times[0], *times.last().unwrap())
}

#[test]
fn pipeline_and_parallel_return_the_value_and_parallel_agents_run_at_once() {
    let mut script = Script::new();
    for item in ["alpha", "beta"] {
        script = script.conversation(
            &format!("[find-{item}]"),
            vec![Step::text(&format!("  {item} has 2 issues  "))],
        );
    }
    for n in 1..=3 {
        script = script.conversation(
            &format!("[check-{n}]"),
            vec![
                Step::tool_call("Glob", json!({"pattern": "*.md"})).delay(150),
                Step::text(&format!("check {n} ok")).delay(150),
            ],
        );
    }
    let (env, server) = setup(script);
    env.write_file(
        "fan.js",
        "export const meta = { name: 'fan', description: 'find then check', phases: [{ title: 'Find' }, { title: 'Check' }] }\n\
         phase('Find')\n\
         const found = await pipeline(['alpha', 'beta'], (x) => agent(`[find-${x}] list the issues`, { label: x }), (text) => text.trim())\n\
         phase('Check')\n\
         const checks = await parallel([1, 2, 3].map((n) => () => agent(`[check-${n}] verify`)))\n\
         return { found, checks }\n",
    );
    let out = run_workflow(&env, &server, &["fan.js", "--yes", "--json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    server.assert_script_finished();
    let end = ended(&out);
    assert_eq!(end["status"], "completed");
    assert_eq!(
        end["result"],
        json!({
            "found": ["alpha has 2 issues", "beta has 2 issues"],
            "checks": ["check 1 ok", "check 2 ok", "check 3 ok"],
        })
    );
    assert_eq!(end["agents"]["answered"], 5);
    // The plan came first, on stderr.
    assert!(
        out.stderr.contains("workflow fan — find then check"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("phases: Find → Check"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("agent() call sites: 2"),
        "{}",
        out.stderr
    );
    // The three checks overlapped: some check's first request came before
    // another's last, seen in the server's log.
    let spans: Vec<(Instant, Instant)> = (1..=3)
        .map(|n| span(&server, &format!("[check-{n}]")))
        .collect();
    let overlapping = spans.iter().enumerate().any(|(i, a)| {
        spans
            .iter()
            .enumerate()
            .any(|(j, b)| i != j && a.0 <= b.0 && b.0 < a.1)
    });
    assert!(
        overlapping,
        "the parallel agents never overlapped: {spans:?}"
    );
    // Every agent is a child with its own transcript and the framing.
    let first = &server.requests_for("[find-alpha]")[0];
    assert!(
        first
            .first_user_message_text()
            .contains("one agent of a workflow")
    );
    // Only an agent asked for a schema gets StructuredOutput.
    let tools = first.body["tools"].as_array().unwrap();
    assert!(tools.iter().any(|tool| tool["name"] == "Glob"));
    assert!(!tools.iter().any(|tool| tool["name"] == "StructuredOutput"));
    // The session's transcript records the run as records: its start,
    // its phases, each agent's run and phase, its end.
    let events = transcript(&env);
    let run_id = end["run_id"].as_str().unwrap();
    let started = of_type(&events, "workflow_started");
    assert_eq!(started.len(), 1, "{events:?}");
    assert_eq!(started[0]["run_id"], run_id);
    assert_eq!(started[0]["phases"], json!(["Find", "Check"]));
    let phases: Vec<&Value> = of_type(&events, "workflow_phase")
        .iter()
        .map(|event| &event["title"])
        .collect();
    assert_eq!(phases, [&json!("Find"), &json!("Check")]);
    let agents = of_type(&events, "agent_started");
    assert_eq!(agents.len(), 5);
    assert!(agents.iter().all(|agent| agent["run"] == run_id));
    let in_phase = |title: &str| {
        agents
            .iter()
            .filter(|agent| agent["phase"] == title)
            .count()
    };
    assert_eq!((in_phase("Find"), in_phase("Check")), (2, 3));
    let ended_runs = of_type(&events, "workflow_ended");
    assert_eq!(ended_runs.len(), 1);
    assert_eq!(ended_runs[0]["status"], "completed");
    assert_eq!(ended_runs[0]["agents"], 5);
}

#[test]
fn math_random_is_refused_before_any_agent_starts() {
    let (env, server) = setup(Script::new().conversation("[a]", vec![Step::text("never")]));
    env.write_file(
        "random.js",
        "export const meta = { name: 'r', description: 'random' }\nawait agent('[a] first')\nconst pick = Math.random()\nreturn pick\n",
    );
    let out = run_workflow(&env, &server, &["random.js", "--yes", "--json"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("line 3: Math.random()"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert_eq!(server.request_count(), 0, "an agent started");
}

#[test]
fn without_a_terminal_or_yes_the_plan_is_refused_and_nothing_runs() {
    let (env, server) = setup(Script::new().conversation("[a]", vec![Step::text("never")]));
    env.write_file(
        "one.js",
        "export const meta = { name: 'one', description: 'one agent' }\nreturn await agent('[a] go')\n",
    );
    let out = run_workflow(&env, &server, &["one.js"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("workflow one — one agent"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("pass --yes"), "{}", out.stderr);
    assert_eq!(server.request_count(), 0);
}

#[test]
fn a_budget_stops_the_run_budget_exhausted_with_fewer_agents_run() {
    let mut script = Script::new();
    for n in 0..10 {
        script = script.conversation(
            &format!("[b-{n}]"),
            vec![Step::text(&format!("done {n}")).usage(1_000, 100)],
        );
    }
    let (env, server) = setup(script);
    env.write_file(
        "loop.js",
        "export const meta = { name: 'loop', description: 'ten in a row' }\nconst out = []\nfor (let n = 0; n < 10; n++) out.push(await agent(`[b-${n}] work`))\nreturn out\n",
    );
    let out = run_workflow(
        &env,
        &server,
        &["loop.js", "--yes", "--json", "--budget", "tokens=2500"],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let end = ended(&out);
    assert_eq!(end["status"], "budget_exhausted", "{end}");
    let requests = server.request_count();
    assert!((1..10).contains(&requests), "{requests} agents ran");
    assert!(out.stderr.contains("budget: 2500 tokens"), "{}", out.stderr);
}

#[test]
fn two_hundred_agents_at_sixteen_at_once_complete() {
    let mut script = Script::new();
    for n in 0..200 {
        script = script.conversation(&format!("[m-{n:03}]"), vec![Step::text(&format!("{n}"))]);
    }
    let (env, server) = setup(script);
    env.write_file(
        "many.js",
        "export const meta = { name: 'many', description: '200 agents' }\nconst r = await parallel(Array.from({ length: 200 }, (_, n) => () => agent(`[m-${String(n).padStart(3, '0')}] count`)))\nreturn r.filter((x) => x !== null).map(Number).reduce((a, b) => a + b, 0)\n",
    );
    let out = run_workflow(
        &env,
        &server,
        &["many.js", "--yes", "--json", "--concurrency", "16"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let end = ended(&out);
    assert_eq!(end["result"], json!(199 * 200 / 2));
    assert_eq!(end["agents"]["answered"], 200);
    assert_eq!(server.request_count(), 200);
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn after_kill_9_a_resume_runs_only_the_unfinished_agents() {
    let mut first = Script::new();
    for n in 0..3 {
        first = first.conversation(
            &format!("[r-{n}]"),
            vec![Step::text(&format!("answer {n}"))],
        );
    }
    first = first.conversation("[r-3]", vec![Step::hang()]);
    let (env, server) = setup(first);
    env.write_file(
        "steps.js",
        "export const meta = { name: 'steps', description: 'six in a row' }\nconst out = []\nfor (let n = 0; n < 6; n++) out.push(await agent(`[r-${n}] step`))\nreturn out\n",
    );
    let mut child = workflow_command(
        &env,
        &server,
        &["steps.js", "--yes", "--json", "--args", "{\"k\": 1}"],
    )
    .spawn()
    .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let started: Value = serde_json::from_str(&line).unwrap();
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    let journal = Path::new(started["dir"].as_str().unwrap()).join("journal.jsonl");
    wait_until("three journaled agents and the fourth asked", || {
        journal.exists()
            && read_jsonl(&journal).len() == 3
            && !server.requests_for("[r-3]").is_empty()
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.wait().unwrap();

    let mut second = Script::new();
    for n in 3..6 {
        second = second.conversation(&format!("[r-{n}]"), vec![Step::text(&format!("again {n}"))]);
    }
    let server = FakeServer::start(second);
    let out = run_workflow(&env, &server, &["--resume", &run_id, "--yes", "--json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    server.assert_script_finished();
    assert_eq!(server.request_count(), 3, "only the unfinished agents ran");
    let end = ended(&out);
    assert_eq!(
        end["result"],
        json!([
            "answer 0", "answer 1", "answer 2", "again 3", "again 4", "again 5"
        ])
    );
    assert_eq!(end["agents"]["replayed"], 3);
    // The resumed run kept the first run's args.
    let run: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(started["dir"].as_str().unwrap()).join("run.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(run["args"], json!({"k": 1}));
    assert_eq!(run["status"], "completed");
}

#[test]
fn a_schema_submission_that_breaks_it_is_answered_and_the_agent_tries_again() {
    let script = Script::new()
        .conversation(
            "[s-1]",
            vec![
                Step::tool_call("StructuredOutput", json!({"score": "high"})),
                Step::tool_call("StructuredOutput", json!({"score": 7, "why": "clear"})),
                Step::text("submitted"),
            ],
        )
        .conversation(
            "[s-2]",
            vec![
                Step::tool_call("StructuredOutput", json!({})),
                Step::tool_call("StructuredOutput", json!({})),
                Step::tool_call("StructuredOutput", json!({})),
                Step::tool_call("StructuredOutput", json!({})),
                Step::tool_call("StructuredOutput", json!({})),
                Step::text("gave up"),
            ],
        );
    let (env, server) = setup(script);
    env.write_file(
        "rate.js",
        "export const meta = { name: 'rate', description: 'structured answers' }\n\
         const SCORE = { type: 'object', required: ['score'], properties: { score: { type: 'integer' }, why: { type: 'string' } } }\n\
         const good = await agent('[s-1] rate it', { schema: SCORE })\n\
         let bad = 'no error'\n\
         try { await agent('[s-2] rate it', { schema: SCORE }) } catch (e) { bad = e.message }\n\
         let impossible = 'no error'\n\
         try { await agent('[s-3] never', { schema: { type: 'object', required: ['a'], additionalProperties: false } }) } catch (e) { impossible = e.message }\n\
         return { good, bad, impossible }\n",
    );
    let out = run_workflow(&env, &server, &["rate.js", "--yes", "--json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    server.assert_script_finished();
    let end = ended(&out);
    assert_eq!(
        end["result"]["good"],
        json!({"score": 7, "why": "clear"}),
        "{end}"
    );
    let bad = end["result"]["bad"].as_str().unwrap();
    assert!(bad.contains("5 submissions broke the schema"), "{bad}");
    assert!(bad.contains("\"score\" is a required property"), "{bad}");
    let impossible = end["result"]["impossible"].as_str().unwrap();
    assert!(impossible.contains("`a` is required"), "{impossible}");
    assert!(
        server.requests_for("[s-3]").is_empty(),
        "an impossible schema started an agent"
    );
    // The child was offered the tool with the script's schema, and its
    // first submission was answered with what was wrong.
    let requests = server.requests_for("[s-1]");
    let retry = requests[1].body.to_string();
    assert!(retry.contains("does not meet the schema"), "{retry}");
    assert!(retry.contains("1 of 5 attempts used"), "{retry}");
    assert!(
        requests[0].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["name"] == "StructuredOutput"
                && tool["input_schema"]["required"] == json!(["score"]))
    );
}

#[test]
fn a_budget_lets_parallel_agents_run_side_by_side() {
    let mut script = Script::new();
    for n in 0..4 {
        script = script.conversation(
            &format!("[p-{n}]"),
            vec![
                Step::text(&format!("side {n}"))
                    .usage(1_000, 100)
                    .delay(100),
            ],
        );
    }
    let (env, server) = setup(script);
    env.write_file(
        "side.js",
        "export const meta = { name: 'side', description: 'four at once' }\nreturn await parallel([0, 1, 2, 3].map((n) => () => agent(`[p-${n}] work`)))\n",
    );
    let out = run_workflow(
        &env,
        &server,
        &["side.js", "--yes", "--json", "--budget", "tokens=100000"],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    server.assert_script_finished();
    let end = ended(&out);
    assert_eq!(end["status"], "completed", "{end}");
    assert_eq!(
        end["result"],
        json!(["side 0", "side 1", "side 2", "side 3"])
    );
    assert_eq!(end["tokens"], 4 * 1_100);
}

#[test]
fn a_nested_script_path_outside_the_workspace_is_refused() {
    let (env, server) = setup(Script::new());
    let outside = env.home().join("outside.js");
    std::fs::write(
        &outside,
        "export const meta = { name: 'outside', description: 'not the project' }\nreturn 'read'\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, env.path("inside.js")).unwrap();
    env.write_file(
        "nest.js",
        &format!(
            "export const meta = {{ name: 'nest', description: 'nests' }}\n\
             const tried = []\n\
             for (const scriptPath of [{:?}, 'inside.js']) {{\n\
               try {{ tried.push(await workflow({{ scriptPath }})) }} catch (e) {{ tried.push(e.message) }}\n\
             }}\n\
             return tried\n",
            outside.display().to_string()
        ),
    );
    let out = run_workflow(&env, &server, &["nest.js", "--yes", "--json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let end = ended(&out);
    let tried = end["result"].as_array().unwrap();
    assert_eq!(tried.len(), 2, "{end}");
    for (message, what) in tried.iter().zip(["an absolute path", "a link"]) {
        let message = message.as_str().unwrap_or_default();
        assert!(
            message.contains("outside the workspace"),
            "{what}: {message}"
        );
    }
    assert_eq!(server.request_count(), 0);
}
