//! Images (issue 36, point 3): Read of a PNG reaches the request as an
//! image on both wires, an image over the APIs' limit is made to fit
//! (the strict fake server refuses one over 5 MB of base64, as Anthropic
//! does), and a model configured without vision gets a note instead.

use alcove_testkit::{Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{exec_command, finish, setup};

pub(crate) fn png(width: u32, height: u32, noisy: bool) -> Vec<u8> {
    let mut seed = 11u32;
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        if noisy {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            image::Rgb([(seed >> 24) as u8, (seed >> 16) as u8, (seed >> 8) as u8])
        } else {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 200])
        }
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn configure(env: &TestEnv, toml: &str) {
    let path = env.home().join("config.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(toml);
    std::fs::write(path, text).unwrap();
}

/// Runs a Read of `file` on the given wire and returns the second request's body.
fn read_image(env: &TestEnv, openai: bool, prompt: &str) -> (i32, String, Value) {
    let server = alcove_testkit::FakeServer::start(Script::new().conversation(
        prompt,
        vec![
            Step::tool_call("Read", json!({"file_path": "shot.png"})),
            Step::text("I see it."),
        ],
    ));
    let mut command = exec_command(env, &server, &[prompt]);
    if openai {
        command
            .env("OPENAI_BASE_URL", server.openai_url())
            .env("OPENAI_API_KEY", "test-key")
            .env("ALCOVE_MODEL", "openai/fake-model");
    }
    let out = finish(command.spawn().unwrap());
    let body = server
        .requests_for(prompt)
        .get(1)
        .map(|request| request.body.clone())
        .unwrap_or(Value::Null);
    (out.code, out.stderr, body)
}

#[test]
fn read_of_a_png_reaches_the_anthropic_request_inside_the_tool_result() {
    let (env, _server) = setup(Script::new());
    let bytes = png(64, 48, false);
    std::fs::write(env.path("shot.png"), &bytes).unwrap();
    let (code, stderr, body) = read_image(&env, false, "look at the shot");
    assert_eq!(code, 0, "{stderr}");
    let result = &body["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("PNG, 64x48"), "{text}");
    let image = &result["content"][1];
    assert_eq!(image["type"], "image");
    assert_eq!(image["source"]["media_type"], "image/png");
    let data = image["source"]["data"].as_str().unwrap();
    // The file as it was: small enough to go unchanged.
    assert_eq!(data.len(), bytes.len().div_ceil(3) * 4);
    assert!(data.starts_with("iVBORw0KGgo"), "{}", &data[..20]);
}

#[test]
fn read_of_a_png_reaches_the_chat_completions_request_after_the_tool_message() {
    let (env, _server) = setup(Script::new());
    std::fs::write(env.path("shot.png"), png(64, 48, false)).unwrap();
    configure(&env, "[model_options.openai]\nvision = true\n");
    let (code, stderr, body) = read_image(&env, true, "look at the shot");
    assert_eq!(code, 0, "{stderr}");
    let messages = body["messages"].as_array().unwrap();
    let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
    assert!(
        messages[tool]["content"]
            .as_str()
            .unwrap()
            .contains("PNG, 64x48")
    );
    let after = &messages[tool + 1];
    assert_eq!(after["role"], "user");
    let parts = after["content"].as_array().unwrap();
    let url = parts
        .iter()
        .find(|part| part["type"] == "image_url")
        .and_then(|part| part["image_url"]["url"].as_str())
        .unwrap();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{}",
        &url[..40]
    );
}

#[test]
fn an_image_over_the_limit_is_made_to_fit_and_accepted() {
    let (env, _server) = setup(Script::new());
    let bytes = png(1400, 1400, true);
    assert!(
        bytes.len().div_ceil(3) * 4 > 5 * 1024 * 1024,
        "{}",
        bytes.len()
    );
    std::fs::write(env.path("shot.png"), &bytes).unwrap();
    let (code, stderr, body) = read_image(&env, false, "look at the big shot");
    // The strict server refuses an image over 5 MB: this one got through.
    assert_eq!(code, 0, "{stderr}");
    let result = &body["messages"][2]["content"][0];
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("PNG, 1400x1400"), "{text}");
    assert!(text.contains("sent resized to"), "{text}");
    let data = result["content"][1]["source"]["data"].as_str().unwrap();
    assert!(data.len() <= 5 * 1024 * 1024);
    assert_eq!(result["content"][1]["source"]["media_type"], "image/jpeg");
}

#[test]
fn a_model_without_vision_gets_a_note_instead_of_the_image() {
    let (env, _server) = setup(Script::new());
    std::fs::write(env.path("shot.png"), png(64, 48, false)).unwrap();
    configure(&env, "[model_options.anthropic]\nvision = false\n");
    let (code, stderr, body) = read_image(&env, false, "look at the shot");
    assert_eq!(code, 0, "{stderr}");
    let parts = body["messages"][2]["content"][0]["content"]
        .as_array()
        .unwrap();
    assert!(parts.iter().all(|part| part["type"] == "text"), "{parts:?}");
    assert!(
        parts[1]["text"]
            .as_str()
            .unwrap()
            .contains("configured without vision"),
        "{parts:?}"
    );
}

#[test]
fn an_at_image_in_the_prompt_is_attached_to_the_message() {
    let (env, server) =
        setup(Script::new().conversation("what is in", vec![Step::text("A gradient.")]));
    std::fs::write(env.path("shot.png"), png(32, 16, false)).unwrap();
    let out = finish(
        exec_command(&env, &server, &["what is in @shot.png?"])
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("Attached shot.png (PNG, 32x16"),
        "{}",
        out.stderr
    );
    let body = &server.requests_for("what is in")[0].body;
    let content = &body["messages"][0]["content"];
    assert_eq!(content[0]["text"], "what is in @shot.png?");
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["source"]["media_type"], "image/png");
}
