//! Deferred tools (issue 37, point 4): the first request names the rarely
//! used tools in `ToolSearch`'s description and leaves their schemas out;
//! a `ToolSearch` load appends a schema at the end of the next request's
//! tools and the tool then runs; a load survives a summary and a resume;
//! a child's loaded set is its own; a script cannot make the fake model
//! call a tool the request did not offer (a call of a tool not loaded runs
//! with a note: `tool_surface.rs`); the lean profile defers nothing.

use alcove_testkit::{RecordedRequest, Script, Step};
use serde_json::{Value, json};

use crate::compaction::{HANDOVER, data_files, reading_turn};
use crate::support::{exec, of_type, setup};
use crate::web::Web;

fn load(names: &str) -> Step {
    Step::tool_call("ToolSearch", json!({"query": format!("select:{names}")}))
}

fn fetch(web: &Web) -> Step {
    Step::tool_call(
        "WebFetch",
        json!({"url": web.url("127.0.0.1", "/page.html"), "prompt": "the welcome"}),
    )
}

const ALLOW_LOOPBACK: [&str; 2] = ["--allow", "WebFetch(domain:127.0.0.1)"];

/// The request's tools as the Anthropic wire sends them.
fn tools(request: &RecordedRequest) -> Vec<Value> {
    request.body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn names(request: &RecordedRequest) -> Vec<String> {
    request.tool_names()
}

/// The tool named `name` in `request`'s tools, without its cache mark.
fn tool(request: &RecordedRequest, name: &str) -> Option<Value> {
    tools(request)
        .into_iter()
        .find(|tool| tool["name"] == name)
        .map(|mut tool| {
            if let Some(object) = tool.as_object_mut() {
                object.remove("cache_control");
            }
            tool
        })
}

fn session_id(events: &[Value]) -> String {
    of_type(events, "session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn the_first_request_names_deferred_tools_and_a_load_appends_the_schema_at_the_end() {
    let web = Web::start();
    let (env, server) = setup(Script::new().conversation(
        "fetch the page",
        vec![load("WebFetch"), fetch(&web), Step::text("read it")],
    ));
    let mut args = ALLOW_LOOPBACK.to_vec();
    args.push("fetch the page");
    let out = exec(&env, &server, &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("fetch the page");
    assert_eq!(requests.len(), 3);

    // The first request: no deferred schema, ToolSearch last, naming them.
    let first = names(&requests[0]);
    for deferred in ["WebFetch", "spawn_agent", "wait", "spawn_batch"] {
        assert!(!first.contains(&deferred.to_owned()), "{first:?}");
    }
    for always in ["Read", "Edit", "Bash", "TodoWrite", "Agent"] {
        assert!(first.contains(&always.to_owned()), "{first:?}");
    }
    assert_eq!(first.last().map(String::as_str), Some("ToolSearch"));
    let search = tool(&requests[0], "ToolSearch").unwrap();
    let description = search["description"].as_str().unwrap();
    for deferred in [
        "WebFetch",
        "spawn_agent",
        "send_input",
        "wait",
        "spawn_batch",
    ] {
        assert!(description.contains(deferred), "{description}");
    }
    let (_, loaded, is_error) = requests[1].tool_results().into_iter().next().unwrap();
    assert!(!is_error, "{loaded}");
    assert!(loaded.starts_with("Loaded: WebFetch\n"), "{loaded}");

    // The next request: the same tools, byte for byte, then WebFetch's
    // whole definition at the end.
    let before = tools(&requests[0]);
    let after = tools(&requests[1]);
    assert_eq!(after.len(), before.len() + 1);
    for (old, new) in before.iter().zip(&after) {
        assert_eq!(old["name"], new["name"]);
        assert_eq!(old["description"], new["description"]);
        assert_eq!(old["input_schema"], new["input_schema"]);
    }
    let fetch_tool = after.last().unwrap();
    assert_eq!(fetch_tool["name"], "WebFetch");
    assert_eq!(fetch_tool["input_schema"]["required"], json!(["url"]));

    // And the tool runs.
    let (_, page, is_error) = requests[2].tool_results().into_iter().last().unwrap();
    assert!(!is_error, "{page}");
    assert!(page.contains("# Welcome"), "{page}");
    assert!(names(&requests[2]).ends_with(&["WebFetch".to_owned()]));
    server.assert_script_finished();
}

#[test]
fn the_fake_model_cannot_call_a_deferred_tool_the_request_did_not_offer() {
    let web = Web::start();
    // A script that forgets the load fails as a real request could not.
    let (env, server) =
        setup(Script::new().conversation("forgot to load", vec![fetch(&web), Step::text("ok")]));
    let out = exec(&env, &server, &["forgot to load"]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stderr.contains("does not offer"),
        "the fake server let a script call a tool it did not offer: {}",
        out.stderr
    );
}

#[test]
fn a_load_survives_a_summary_and_a_resume() {
    let web = Web::start();
    let mut steps = vec![load("WebFetch")];
    steps.extend((0..6).map(reading_turn));
    steps.push(Step::text("surveyed"));
    // After the summary and the resume: WebFetch is still offered and runs.
    steps.push(fetch(&web));
    steps.push(Step::text("fetched"));
    let (env, server) = setup(
        Script::new()
            .conversation("survey then fetch", steps)
            .count_tokens()
            .summarizer(HANDOVER, "FACT-"),
    );
    data_files(&env, 6, 6_000);
    env.write_file(".alcove/config.toml", "model_context_window = 100000\n");
    let first = exec(&env, &server, &["--json", "survey then fetch"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let id = session_id(&first.events());

    let compacted = exec(&env, &server, &["--json", "--resume", &id, "--compact"]);
    assert_eq!(compacted.code, 0, "{}", compacted.stderr);
    let compacted = compacted.events();
    let done = of_type(&compacted, "compacted");
    assert_eq!(done.len(), 1);
    assert!(done[0]["replaced"].as_u64().unwrap() >= 2, "{:?}", done[0]);

    let before = server.request_count();
    let mut args = vec!["--json", "--resume", &id];
    args.extend(ALLOW_LOOPBACK);
    args.push("now fetch the page");
    let resumed = exec(&env, &server, &args);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let requests = server.requests();
    let next = &requests[before];
    // The ToolSearch call went with the summary; its names did not.
    assert!(
        next.first_user_message_text()
            .contains("tools you loaded with ToolSearch"),
        "{}",
        next.first_user_message_text()
    );
    assert_eq!(
        names(next).last().map(String::as_str),
        Some("WebFetch"),
        "{:?}",
        names(next)
    );
    let (_, page, is_error) = requests[before + 1]
        .tool_results()
        .into_iter()
        .last()
        .unwrap();
    assert!(!is_error, "{page}");
    assert!(page.contains("# Welcome"), "{page}");
    server.assert_script_finished();
}

#[test]
fn a_childs_loaded_set_is_its_own() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent task",
                vec![
                    load("WebFetch"),
                    Step::tool_call(
                        "Agent",
                        json!({"description": "look", "prompt": "CHILD: look around"}),
                    ),
                    Step::text("done"),
                ],
            )
            .conversation(
                "CHILD: look around",
                vec![load("WebSearch"), Step::text("Looked around.")],
            ),
    );
    let search = "web.search_url=http://127.0.0.1:9/search";
    let out = exec(&env, &server, &["-c", search, "parent task"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let child = server.requests_for("CHILD: look around");
    assert_eq!(child.len(), 2);
    // The parent's load is not the child's: it starts with nothing loaded,
    // though both web tools are its to load.
    let child_first = names(&child[0]);
    assert!(
        !child_first.contains(&"WebFetch".to_owned()),
        "{child_first:?}"
    );
    assert_eq!(child_first.last().map(String::as_str), Some("ToolSearch"));
    let description = tool(&child[0], "ToolSearch").unwrap()["description"].clone();
    assert!(
        description
            .as_str()
            .unwrap()
            .contains("WebFetch, WebSearch"),
        "{description}"
    );
    let child_next = names(&child[1]);
    assert!(
        child_next.ends_with(&["WebSearch".to_owned()]),
        "{child_next:?}"
    );
    assert!(
        !child_next.contains(&"WebFetch".to_owned()),
        "{child_next:?}"
    );
    // The child's load is not the parent's.
    let parent = server.requests_for("parent task");
    let last = names(parent.last().unwrap());
    assert!(last.ends_with(&["WebFetch".to_owned()]), "{last:?}");
    assert!(!last.contains(&"WebSearch".to_owned()), "{last:?}");
    server.assert_script_finished();
}

#[test]
fn the_lean_profile_defers_nothing_and_offers_no_tool_search() {
    let (env, server) = setup(Script::new().conversation("lean hello", vec![Step::text("hi")]));
    let out = exec(&env, &server, &["-c", "tool_profile=lean", "lean hello"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("lean hello");
    let offered = names(&requests[0]);
    assert_eq!(
        offered,
        ["Read", "Glob", "Grep", "Write", "Edit", "Bash", "Agent"],
        "{offered:?}"
    );
}
