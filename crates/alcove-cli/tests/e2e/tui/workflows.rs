//! A workflow run in the UI (issue 47): while it runs, the agents panel
//! shows the run and its phases, each with its counts and spend.

use alcove_testkit::{Script, Step, from_last_result};
use serde_json::json;

use super::{Pane, patient};
use crate::support::{assert_nothing_lost, load, read_jsonl, setup, transcripts};

/// `Find` has one quick agent; `Build`'s agent waits for a file.
const SCRIPT: &str = "export const meta = { name: 'find-then-build', description: 'one agent per phase', phases: [{ title: 'Find' }, { title: 'Build' }] }\n\
phase('Find')\n\
const found = await agent('[wf-find] find it', { label: 'find it' })\n\
phase('Build')\n\
const built = await agent('[wf-build] build it', { label: 'build it' })\n\
return { found, built }\n";

#[test]
fn the_agents_panel_shows_a_live_runs_phases_with_their_counts() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "run find then build",
                vec![
                    load("Workflow,wait"),
                    Step::tool_call("Workflow", json!({"script": SCRIPT})),
                    Step::tool_call(
                        "wait",
                        json!({"ids": [from_last_result("run_id")], "timeout_ms": 120_000}),
                    ),
                    Step::text("RUN-ANSWERED"),
                ],
            )
            .conversation("[wf-find]", vec![Step::text("found")])
            .conversation(
                "[wf-build]",
                vec![
                    Step::tool_call(
                        "Bash",
                        json!({"command": "touch building; while [ ! -f release ]; do sleep 0.1; done"}),
                    ),
                    Step::text("built"),
                ],
            ),
    );
    patient(&env);
    let pane = Pane::start(&env, &server, &["--permission-mode", "bypassPermissions"]);
    pane.wait_for_screen("Ask anything");
    pane.prompt("run find then build");
    // While `Build`'s agent waits: the run's header, the ended phase as one
    // line, the current phase with its running agent listed under it.
    let screen = pane.wait_for_screen("Build · 1 running");
    assert!(
        screen.contains("workflow find-then-build · 1 done · 1 running"),
        "{screen}"
    );
    assert!(screen.contains("✓ Find · 1 ended"), "{screen}");
    assert!(screen.contains("build it"), "{screen}");
    std::fs::write(env.path("release"), "").unwrap();
    let text = pane.wait_for("RUN-ANSWERED");
    assert!(
        text.contains("workflow find-then-build · completed · 2 agents"),
        "{text}"
    );
    pane.prompt("/exit");
    assert_eq!(pane.wait_exit(), 0);
    assert_nothing_lost(&read_jsonl(&transcripts(&env)[0]));
}
