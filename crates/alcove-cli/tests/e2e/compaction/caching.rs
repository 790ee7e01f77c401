//! Prompt caching, prices and the window's source (issue 11): Anthropic
//! breakpoints with usage kept apart, `prompt_cache_key` on the OpenAI wire,
//! no cost without a price, and where `config show` says the window came from.

use alcove_testkit::{Script, Step, TestEnv};

use super::*;
use crate::support::{exec, of_type, setup};

#[test]
fn anthropic_requests_cache_their_prefix_and_usage_keeps_cache_apart() {
    let mut steps: Vec<Step> = (0..5).map(reading_turn).collect();
    steps.push(Step::text("done"));
    let (env, server) = setup(Script::new().conversation("cache me", steps).count_tokens());
    data_files(&env, 5, 2_000);
    project_config(
        &env,
        "[pricing.\"anthropic/fake-model\"]\ninput = 3.0\noutput = 15.0\ncache_read = 0.3\ncache_write = 3.75\n",
    );
    let out = exec(&env, &server, &["--json", "cache me"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let usages = of_type(&events, "usage");
    assert_eq!(usages.len(), 6);
    for usage in &usages[1..] {
        let read = usage["usage"]["cache_read_tokens"].as_u64().unwrap_or(0);
        let fresh = usage["usage"]["input_tokens"].as_u64().unwrap();
        assert!(read > 0, "every later turn reads the cache: {usage}");
        assert_eq!(fresh, 0, "and sends nothing uncached past the breakpoint");
    }
    // The breakpoints: the last tool, the system prompt, the newest message.
    let body = &server.requests()[2].body;
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral");
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    let last = body["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(
        last["content"].as_array().unwrap().last().unwrap()["cache_control"]["type"],
        "ephemeral"
    );
    let marks = body.to_string().matches("\"cache_control\"").count();
    assert!(marks <= 4, "{marks} breakpoints");
    // The final summary keeps the three kinds apart and prices them.
    let ended = of_type(&events, "session_ended")[0];
    let total = &ended["usage"];
    assert!(total["cache_read_tokens"].as_u64().unwrap() > total["input_tokens"].as_u64().unwrap());
    assert!(total["cache_write_tokens"].as_u64().unwrap() > 0);
    let cost = ended["cost"].as_f64().unwrap();
    let expected = (total["input_tokens"].as_f64().unwrap() * 3.0
        + total["output_tokens"].as_f64().unwrap() * 15.0
        + total["cache_read_tokens"].as_f64().unwrap() * 0.3
        + total["cache_write_tokens"].as_f64().unwrap() * 3.75)
        / 1e6;
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
}

#[test]
fn without_a_price_no_cost_is_shown() {
    let (env, server) = setup(Script::new().conversation("hello", vec![Step::text("hi")]));
    let out = exec(&env, &server, &["--json", "hello"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ended = of_type(&out.events(), "session_ended")[0].clone();
    assert!(ended.get("cost").is_none(), "{ended}");
}

#[test]
fn the_window_comes_from_config_or_the_server_and_config_show_says_where() {
    let (env, server) = setup(Script::new().llama_cpp_window(12_345));
    project_config(&env, "model_context_window = 16000\n");
    let shown = exec_config_show(&env, &server, &[]);
    assert!(
        shown.contains("16000 tokens  # config model_context_window")
            && shown.contains("compacts when a request would pass 13600 tokens"),
        "{shown}"
    );
    // A llama.cpp server says its window at /props.
    project_config(
        &env,
        &format!(
            "[providers.local]\nkind = \"openai\"\nbase_url = \"{}\"\n",
            server.openai_url()
        ),
    );
    let shown = exec_config_show(&env, &server, &["--model", "local/some-model"]);
    assert!(
        shown.contains("12345 tokens  # server (llama.cpp /props)"),
        "{shown}"
    );
    // An unknown model with nothing said gets the default, and says so.
    let shown = exec_config_show(&env, &server, &["--model", "anthropic/mystery"]);
    assert!(shown.contains("32768 tokens  # default"), "{shown}");
}

fn exec_config_show(env: &TestEnv, server: &alcove_testkit::FakeServer, args: &[&str]) -> String {
    let output = env
        .command(crate::support::alcove(), server)
        .args(args)
        .args(["config", "show"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn openai_requests_carry_the_session_as_prompt_cache_key_unless_switched_off() {
    for (config, expected) in [("", true), ("prompt_cache_key = false\n", false)] {
        let (env, server) = setup(Script::new().conversation("", vec![Step::text("hi")]));
        project_config(&env, config);
        let mut command = env.command_openai(crate::support::alcove(), &server);
        command
            .args(["exec", "--json", "hello"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let out = crate::support::finish(command.spawn().unwrap());
        assert_eq!(out.code, 0, "{}", out.stderr);
        let id = of_type(&out.events(), "session_started")[0]["session_id"].clone();
        let body = &server.requests()[0].body;
        if expected {
            assert_eq!(body["prompt_cache_key"], id);
        } else {
            assert!(body.get("prompt_cache_key").is_none(), "{body}");
        }
    }
}
