//! Dollar budgets: `--budget usd=X` is counted at the models' known prices
//! (`[pricing."provider/model"]`) and holds like a token budget; without a
//! price for the model it is refused before any agent starts.

use std::io::Write as _;

use alcove_testkit::{Script, Step};

use super::{ended, run_workflow};
use crate::support::setup;

const LOOP: &str = "export const meta = { name: 'loop', description: 'ten in a row' }\n\
const out = []\n\
for (let n = 0; n < 10; n++) out.push(await agent(`[d-${n}] work`))\n\
return out\n";

fn ten_agents() -> Script {
    let mut script = Script::new();
    for n in 0..10 {
        script = script.conversation(
            &format!("[d-{n}]"),
            vec![Step::text(&format!("done {n}")).usage(1_000, 100)],
        );
    }
    script
}

#[test]
fn a_dollar_budget_at_the_models_price_stops_the_run_budget_exhausted() {
    let (env, server) = setup(ten_agents());
    // $3 and $15 per million: each agent's 1,000 in and 100 out cost $0.0045.
    std::fs::OpenOptions::new()
        .append(true)
        .open(env.home().join("config.toml"))
        .unwrap()
        .write_all(b"[pricing.\"anthropic/fake-model\"]\ninput = 3.0\noutput = 15.0\n")
        .unwrap();
    env.write_file("loop.js", LOOP);
    let out = run_workflow(
        &env,
        &server,
        &["loop.js", "--yes", "--json", "--budget", "usd=0.01"],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let end = ended(&out);
    assert_eq!(end["status"], "budget_exhausted", "{end}");
    // Two agents ($0.009) leave room for a third; then $0.0135 is spent.
    assert_eq!(server.request_count(), 3, "{end}");
    let usd = end["usd"].as_f64().unwrap();
    assert!((usd - 0.0135).abs() < 1e-9, "{end}");
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("$0.0135 of $0.0100"),
        "{end}"
    );
    assert!(
        out.stderr
            .contains("budget: $0.01 (at the models' known prices)"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_dollar_budget_without_a_known_price_is_refused_before_any_agent() {
    let (env, server) = setup(ten_agents());
    env.write_file("loop.js", LOOP);
    let out = run_workflow(&env, &server, &["loop.js", "--yes", "--budget", "usd=1"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("needs the price of anthropic/fake-model"),
        "{}",
        out.stderr
    );
    assert_eq!(server.request_count(), 0);
}
