//! What an editor chooses, holds and is told beyond the updates of a
//! turn: the model as a session config option, its unsaved buffers read
//! through `fs/read_text_file` (behind the gate), and usage
//! (`usage_update`, the prompt's `usage`), and images in a prompt.

use alcove_testkit::{Script, Step, TestEnv};
use serde_json::{Value, json};

use super::{new_session_id, sdk_client};
use crate::agents::agent;
use crate::support::{of_type, setup, transcript};

/// Puts `toml` (top-level keys, then tables) before the test home's config.
fn configure(env: &TestEnv, toml: &str) {
    let path = env.home().join("config.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(path, format!("{toml}\n{text}")).unwrap();
}

#[test]
fn the_mode_and_the_model_are_config_options_and_the_next_prompt_and_its_children_run_on_the_model_chosen()
 {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "ACP MODEL",
                vec![
                    Step::text("on the first model"),
                    Step::tool_call("Agent", agent("helper", "KID MODEL: say hi")),
                    Step::text("on the second model"),
                ],
            )
            .conversation("KID MODEL", vec![Step::text("hi")]),
    );
    configure(&env, "[model_aliases]\nquick = \"anthropic/fake-quick\"\n");
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "args": ["--permission-mode", "bypassPermissions"],
            "steps": [
                {"op": "new"},
                {"op": "prompt", "text": "ACP MODEL one"},
                {"op": "config", "configId": "model", "value": "nonsense"},
                {"op": "config", "configId": "model", "value": "anthropic/fake-quick"},
                {"op": "prompt", "text": "and two"},
                {"op": "config", "configId": "mode", "value": "acceptEdits"},
            ],
        }),
    );
    new_session_id(&seen);
    assert_eq!(
        seen.stop_reasons(),
        ["end_turn", "end_turn"],
        "{}",
        seen.stderr
    );

    // The session offers its model, the provider's families and config's alias.
    let option = |options: &Value, id: &str| -> Value {
        options
            .as_array()
            .unwrap()
            .iter()
            .find(|option| option["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no option {id} in {options}"))
    };
    let options = &seen.responses("new")[0]["configOptions"];
    let offered = &option(options, "model");
    assert_eq!(offered["id"], "model");
    assert_eq!(offered["category"], "model");
    assert_eq!(offered["type"], "select");
    assert_eq!(offered["currentValue"], "anthropic/fake-model");
    let choices: Vec<(&str, &str)> = offered["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|choice| {
            (
                choice["value"].as_str().unwrap(),
                choice["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(choices[0], ("anthropic/fake-model", "anthropic/fake-model"));
    assert!(
        choices.contains(&("anthropic/fake-quick", "quick (anthropic/fake-quick)")),
        "{choices:?}"
    );
    assert!(
        choices.contains(&(
            "anthropic/claude-opus-4-5",
            "opus (anthropic/claude-opus-4-5)"
        )),
        "{choices:?}"
    );

    // A value that names no model is refused, saying what may be chosen;
    // the one chosen is current in the answer.
    let answers = seen.responses("config");
    assert_eq!(answers[0]["error"]["code"], -32602, "{answers:?}");
    let refused = answers[0]["error"]["message"].as_str().unwrap();
    assert!(
        refused.contains("nonsense") && refused.contains("quick"),
        "{refused}"
    );
    assert_eq!(
        option(&answers[1]["configOptions"], "model")["currentValue"],
        "anthropic/fake-quick"
    );

    // The permission mode is an option too (a client reading config
    // options reads no `modes`), the same choice as `session/set_mode`.
    let mode = option(options, "mode");
    assert_eq!(mode["category"], "mode");
    assert_eq!(mode["currentValue"], "bypassPermissions");
    assert_eq!(mode["options"].as_array().unwrap().len(), 5, "{mode}");
    assert_eq!(
        option(&answers[2]["configOptions"], "mode")["currentValue"],
        "acceptEdits"
    );
    let announced = seen.updates("current_mode_update");
    assert_eq!(announced.len(), 1);
    assert_eq!(announced[0].1["currentModeId"], "acceptEdits");

    // The first prompt ran on the session's model; the second, and the
    // child it started, on the one chosen, in the same conversation (its
    // requests open with the first prompt).
    let models = |needle: &str| -> Vec<String> {
        server
            .requests_for(needle)
            .iter()
            .map(|request| request.body["model"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        models("ACP MODEL"),
        ["fake-model", "fake-quick", "fake-quick"]
    );
    assert_eq!(models("KID MODEL"), ["fake-quick"]);
    server.assert_script_finished();
}

#[test]
fn read_sees_the_editors_unsaved_buffer_behind_the_gate_and_the_disk_where_it_holds_none() {
    let (env, server) = setup(Script::new().conversation(
        "ACP BUFFERS",
        vec![
            Step::tool_call("Read", json!({"file_path": "notes.txt"})),
            Step::tool_call("Read", json!({"file_path": "secret.txt"})),
            Step::tool_call("Read", json!({"file_path": "plain.txt"})),
            Step::text("read them"),
        ],
    ));
    env.write_file("notes.txt", "saved line\n");
    env.write_file("secret.txt", "disk secret\n");
    env.write_file("plain.txt", "plain on disk\n");
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "args": ["--deny", "Read(secret.txt)"],
            "buffers": {
                "notes.txt": "unsaved one\nunsaved two\n",
                "secret.txt": "SECRET IN THE BUFFER\n",
            },
            "steps": [{"op": "new"}, {"op": "prompt", "text": "ACP BUFFERS read"}],
        }),
    );
    let session = new_session_id(&seen);
    assert_eq!(seen.stop_reasons(), ["end_turn"], "{}", seen.stderr);
    let results = server
        .requests_for("ACP BUFFERS")
        .pop()
        .unwrap()
        .tool_results();
    assert_eq!(results.len(), 3, "{results:?}");

    // The buffer, numbered as Read numbers the disk, with a word that the
    // disk holds something else.
    let (_, notes, failed) = &results[0];
    assert!(!failed, "{notes}");
    assert!(
        notes.contains("     1\tunsaved one\n     2\tunsaved two"),
        "{notes}"
    );
    assert!(!notes.contains("\tsaved line"), "{notes}");
    assert!(notes.contains("editor's unsaved buffer"), "{notes}");

    // A deny rule keeps the file from the editor as from the disk.
    let (_, secret, failed) = &results[1];
    assert!(failed, "{secret}");
    assert!(!secret.contains("SECRET") && !secret.contains("disk secret"));

    // A file the editor does not hold is read from the disk.
    let (_, plain, failed) = &results[2];
    assert!(!failed, "{plain}");
    assert!(plain.contains("plain on disk"), "{plain}");
    assert!(!plain.contains("editor"), "{plain}");

    // The editor was asked for the two files the gate let through, on the session.
    let asked: Vec<(String, String)> = seen
        .of("read")
        .into_iter()
        .map(|line| {
            (
                line["params"]["sessionId"].as_str().unwrap().to_owned(),
                line["params"]["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let path = |name: &str| env.path(name).display().to_string();
    assert_eq!(
        asked,
        [
            (session.clone(), path("notes.txt")),
            (session, path("plain.txt"))
        ]
    );
    // Nothing was written to the disk.
    assert_eq!(env.read_file("notes.txt"), "saved line\n");
}

#[test]
fn usage_updates_carry_the_context_and_cost_and_the_prompt_answers_with_its_tokens() {
    let (env, server) = setup(Script::new().conversation(
        "ACP USAGE",
        vec![
            Step::tool_call("Read", json!({"file_path": "notes.txt"})),
            Step::text("counted"),
        ],
    ));
    env.write_file("notes.txt", "hello\n");
    configure(
        &env,
        "model_context_window = 50000\n[pricing.\"anthropic/fake-model\"]\ninput = 3.0\noutput = 15.0\n",
    );
    let seen = sdk_client(
        &env,
        &server,
        &json!({"steps": [{"op": "new"}, {"op": "prompt", "text": "ACP USAGE count"}]}),
    );
    let session = new_session_id(&seen);
    assert_eq!(seen.stop_reasons(), ["end_turn"], "{}", seen.stderr);
    let lines = transcript(&env);

    // One usage_update before each model request: the context estimate
    // the transcript records, against the window.
    let context: Vec<(u64, u64)> = of_type(&lines, "context")
        .iter()
        .map(|event| {
            (
                event["used"].as_u64().unwrap(),
                event["window"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(context.len(), 2, "{lines:?}");
    let updates: Vec<&Value> = seen
        .updates("usage_update")
        .into_iter()
        .filter(|(id, _)| *id == session)
        .map(|(_, update)| update)
        .collect();
    // (each also comes again with the cost once its request is answered)
    let mut figures: Vec<(u64, u64)> = updates
        .iter()
        .map(|update| {
            (
                update["used"].as_u64().unwrap(),
                update["size"].as_u64().unwrap(),
            )
        })
        .collect();
    figures.dedup();
    assert_eq!(figures, context);
    assert!(
        context
            .iter()
            .all(|(used, window)| *used > 0 && *window == 50_000)
    );

    // The tokens the transcript counted, priced as config says.
    let usages: Vec<&Value> = of_type(&lines, "usage")
        .into_iter()
        .map(|event| &event["usage"])
        .collect();
    assert_eq!(usages.len(), 2);
    let sum = |key: &str| -> u64 {
        usages
            .iter()
            .map(|usage| usage[key].as_u64().unwrap_or(0))
            .sum()
    };
    let (input, output) = (sum("input_tokens"), sum("output_tokens"));
    assert!(input > 0 && output > 0);
    let cost = (input as f64 * 3.0 + output as f64 * 15.0) / 1_000_000.0;
    let last = updates.last().unwrap();
    assert_eq!(last["cost"]["currency"], "USD", "{last}");
    assert!(
        (last["cost"]["amount"].as_f64().unwrap() - cost).abs() < 1e-12,
        "{last} vs {cost}"
    );

    // The prompt answers with the turn's tokens (the unstable `usage`).
    let usage = &seen.responses("prompt")[0]["usage"];
    assert_eq!(usage["inputTokens"], input, "{usage}");
    assert_eq!(usage["outputTokens"], output, "{usage}");
    assert_eq!(usage["totalTokens"], input + output, "{usage}");
}

#[test]
fn an_image_in_a_prompt_reaches_the_model_as_an_image_made_to_fit() {
    use base64::Engine as _;
    let (env, server) =
        setup(Script::new().conversation("ACP LOOK", vec![Step::text("a gradient")]));
    // Wider than the APIs' 2,000-pixel edge: it arrives scaled down.
    let shot = crate::images::png(2400, 300, false);
    let data = base64::engine::general_purpose::STANDARD.encode(&shot);
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "steps": [
                {"op": "new"},
                {"op": "prompt", "text": "ACP LOOK at this", "images": [
                    {"mimeType": "image/png", "data": data},
                    {"mimeType": "image/png", "data": "not base64 at all"},
                ]},
            ],
        }),
    );
    assert_eq!(seen.stop_reasons(), ["end_turn"], "{}", seen.stderr);
    let init = &seen.responses("initialize")[0];
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["image"], true,
        "{init}"
    );

    let requests = server.requests();
    let content = &requests[0].body["messages"][0]["content"];
    let parts = content.as_array().unwrap();
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|part| part["text"].as_str())
        .collect();
    assert!(texts[0].starts_with("ACP LOOK at this"), "{content}");
    assert!(
        texts[0].contains("[an attached image was left out: the image is not valid base64"),
        "{content}"
    );
    let images: Vec<&Value> = parts
        .iter()
        .filter(|part| part["type"] == "image")
        .collect();
    assert_eq!(images.len(), 1, "{content}");
    let sent = base64::engine::general_purpose::STANDARD
        .decode(images[0]["source"]["data"].as_str().unwrap())
        .unwrap();
    let decoded = image::load_from_memory(&sent).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (2000, 250));
}
