//! A workflow against a provider that refuses the key: the tree's provider
//! gate shuts at the first refusal no retry heals, so a fan-out of 40
//! sends no more than the requests already under way and the run ends
//! `halted`, never `completed`, with its nulls counted as halted.

use alcove_testkit::{Script, Step};

use super::workflow_command_on;
use crate::support::{Wire, finish, setup};

#[test]
fn forty_parallel_agents_against_invalid_api_key_stop_within_the_concurrency_and_end_halted() {
    let (env, server) = setup(Script::new().throttle(1_000, Step::openai_invalid_api_key()));
    env.write_file(
        "forty.js",
        "export const meta = { name: 'forty', description: '40 at once' }\n\
         const r = await parallel(Array.from({ length: 40 }, (_, n) => () => agent(`[h-${n}] work`)))\n\
         return r.filter((x) => x !== null).length\n",
    );
    let out = finish(
        workflow_command_on(
            Wire::OpenAi,
            &env,
            &server,
            &["forty.js", "--yes", "--json", "--concurrency", "8"],
        )
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let requests = server.request_count();
    assert!(
        (1..=8).contains(&requests),
        "{requests} model requests for a concurrency of 8\n{}",
        out.stderr
    );
    let events = out.events();
    let end = events.last().unwrap();
    assert_eq!(end["type"], "workflow_ended", "{}", out.stdout);
    assert_eq!(end["status"], "halted", "{end}");
    assert!(
        end["error"]
            .as_str()
            .unwrap_or_default()
            .contains("API key"),
        "{end}"
    );
    // No agent reads as answered, failed or cancelled: every call the
    // script made before the halt stopped it is a null halted by the
    // provider, the agents that started among them.
    let agents = &end["agents"];
    assert_eq!(agents["answered"], 0, "{end}");
    assert_eq!(agents["null_failed"], 0, "{end}");
    assert_eq!(agents["null_cancelled"], 0, "{end}");
    let started = agents["started"].as_u64().unwrap();
    assert!((1..=8).contains(&started), "{end}");
    assert!(agents["null_halted"].as_u64().unwrap() >= started, "{end}");
}
