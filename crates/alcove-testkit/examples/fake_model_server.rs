//! The fake model server on its own, for trying an agent by hand against a
//! script (docs/mcp-server.md "Tried with": Claude Code and Codex calling
//! `alcove mcp serve`'s `delegate`, alcove's child answered by the same
//! server). Not used by the tests, which start [`FakeServer`] in-process.
//!
//! ```text
//! cargo run -p alcove-testkit --example fake_model_server -- SCRIPT.json [PORT]
//! ```
//!
//! SCRIPT.json: `{"lenient": true, "models": ["fake-model"], "conversations":
//! [{"first_user_contains": "...", "steps": [{"text": "..."},
//! {"tool_call": {"name": "...", "input": {...}}}]}]}`. It prints the
//! Anthropic and OpenAI base URLs, serves until stdin closes (or it is
//! killed), then prints every request's first user message and what was
//! left of each conversation (with `FAKE_MODEL_DUMP=DIR`, each request's
//! body is written to `DIR/request-N.json` too).

use std::io::Read as _;

use alcove_testkit::{FakeServer, Script, Step};
use serde_json::Value;

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: fake_model_server SCRIPT.json [PORT]")?;
    let port = match args.next() {
        Some(port) => port.parse::<u16>().map_err(|err| format!("PORT: {err}"))?,
        None => 0,
    };
    let text = std::fs::read_to_string(&path).map_err(|err| format!("{path}: {err}"))?;
    let spec: Value = serde_json::from_str(&text).map_err(|err| format!("{path}: {err}"))?;
    let server = FakeServer::start_on(port, script(&spec)?);
    println!("anthropic base url: {}", server.url());
    println!("openai base url:    {}", server.openai_url());
    // Serve until stdin closes.
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    let dump = std::env::var_os("FAKE_MODEL_DUMP").map(std::path::PathBuf::from);
    for (index, request) in server.all_requests().iter().enumerate() {
        if let Some(dir) = &dump {
            let body = serde_json::to_string_pretty(&request.body).unwrap_or_default();
            let _ = std::fs::write(dir.join(format!("request-{index}.json")), body);
        }
        println!(
            "request: {} {} (model {}; tools: {})",
            request.method,
            request.path,
            request.model(),
            request.tool_names().join(", ")
        );
        println!(
            "  first user message: {}",
            request.first_user_message_text()
        );
        for (id, result, is_error) in request.tool_results() {
            println!("  tool result {id} (error: {is_error}): {result}");
        }
    }
    for (conversation, left) in server.unused_steps() {
        println!("unused: {left} step(s) of {conversation:?}");
    }
    Ok(())
}

fn script(spec: &Value) -> Result<Script, String> {
    let mut script = Script::new();
    if spec["lenient"].as_bool().unwrap_or(false) {
        script = script.lenient();
    }
    if let Some(models) = spec["models"].as_array() {
        let names: Vec<&str> = models.iter().filter_map(Value::as_str).collect();
        script = script.models(&names);
    }
    for conversation in spec["conversations"].as_array().into_iter().flatten() {
        let needle = conversation["first_user_contains"]
            .as_str()
            .ok_or("each conversation needs first_user_contains")?;
        let mut steps = Vec::new();
        for step in conversation["steps"].as_array().into_iter().flatten() {
            steps.push(match (step.get("text"), step.get("tool_call")) {
                (Some(text), _) => Step::text(text.as_str().unwrap_or_default()),
                (None, Some(call)) => Step::tool_call(
                    call["name"].as_str().ok_or("a tool_call needs a name")?,
                    call["input"].clone(),
                ),
                _ => return Err(format!("a step is text or tool_call: {step}")),
            });
        }
        script = script.conversation(needle, steps);
    }
    Ok(script)
}
