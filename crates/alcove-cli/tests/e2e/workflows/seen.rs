//! A run seen as it runs: `alcove report` draws a workflow run as a group
//! with a group per phase holding its agents' lanes, and the OTel exporter
//! sends a span per run and per phase with the agents' spans beneath.

use std::collections::{BTreeMap, HashMap};

use alcove_testkit::{Script, Step, TestEnv};

use super::{ended, workflow_command};
use crate::report::{chromium, expected_agents, report, run_chromium};
use crate::support::{finish, setup, transcript};
use crate::telemetry::{Span, parent_of, phoenix, project, spans};

/// One agent before any `phase()`, then two phases: two agents, then three.
const SCRIPT: &str = "export const meta = { name: 'seen', description: 'survey then check', phases: [{ title: 'Survey' }, { title: 'Check' }] }\n\
     const first = await agent('[warmup] say hi')\n\
     phase('Survey')\n\
     const found = await parallel(['alpha', 'beta'].map((x) => () => agent(`[survey-${x}] look`)))\n\
     phase('Check')\n\
     const checks = await parallel([1, 2, 3].map((n) => () => agent(`[check-${n}] verify`)))\n\
     return { first, found, checks }\n";

fn two_phase_script() -> Script {
    let mut script = Script::new().conversation("[warmup]", vec![Step::text("hi").usage(11, 3)]);
    for item in ["alpha", "beta"] {
        script = script.conversation(
            &format!("[survey-{item}]"),
            vec![Step::text(&format!("{item} surveyed")).usage(20, 5)],
        );
    }
    for n in 1..=3 {
        script = script.conversation(
            &format!("[check-{n}]"),
            vec![
                Step::tool_call("Glob", serde_json::json!({"pattern": "*.md"})).usage(30, 4),
                Step::text(&format!("check {n} ok")).usage(31, 6),
            ],
        );
    }
    script
}

/// Each agent's phase as its `agent_started` record named it, by path,
/// and the run's id, from the session's transcript.
fn phases_of(env: &TestEnv) -> (String, BTreeMap<String, Option<String>>) {
    let events = transcript(env);
    let run = events
        .iter()
        .find(|event| event["type"] == "workflow_started")
        .expect("the run was recorded")["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let phases = events
        .iter()
        .filter(|event| event["type"] == "agent_started")
        .map(|event| {
            (
                event["child"].as_str().unwrap().to_owned(),
                event["phase"].as_str().map(str::to_owned),
            )
        })
        .collect();
    (run, phases)
}

/// The attributes of an element's opening tag.
fn attributes(tag: &str) -> HashMap<String, String> {
    tag.split("\" ")
        .filter_map(|part| part.trim().split_once("=\""))
        .map(|(name, value)| (name.to_owned(), value.trim_end_matches('"').to_owned()))
        .collect()
}

#[test]
fn a_report_shows_a_workflow_run_as_groups_of_lanes_by_phase() {
    let Some(chromium) = chromium() else { return };
    let (env, server) = setup(two_phase_script());
    env.write_file("seen.js", SCRIPT);
    let out = finish(
        workflow_command(&env, &server, &["seen.js", "--yes", "--json"])
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let end = ended(&out);
    assert_eq!(end["status"], "completed");
    let (run_id, phase_of) = phases_of(&env);
    assert_eq!(phase_of.len(), 6, "{phase_of:?}");
    let agents = expected_agents(&env);

    let page = report(&env, &server);
    let dom = run_chromium(&chromium, &page, "", &["--dump-dom"]);
    // The run's header: name, id, status, agents and nulls.
    let run_at = dom
        .find("<div class=\"wf-run\"")
        .unwrap_or_else(|| panic!("no workflow run group: {dom}"));
    let run = &dom[run_at..];
    let run_tag = attributes(&run[..run.find('>').unwrap()]);
    assert_eq!(run_tag["data-run"], run_id);
    assert_eq!(run_tag["data-status"], "completed");
    let head = &run[..run.find("wf-phase").unwrap()];
    for shown in ["workflow seen", run_id.as_str(), "6 agents", "0 null"] {
        assert!(head.contains(shown), "{shown}: {head}");
    }
    // One group per phase, in the order they appeared, each holding the
    // lanes of the agents whose start named it, with their counts and
    // tokens.
    let timeline_end = run.find("</section>").unwrap();
    let groups: Vec<(HashMap<String, String>, Vec<String>)> = run[..timeline_end]
        .split("<div class=\"wf-phase\" ")
        .skip(1)
        .map(|piece| {
            let tag = attributes(&piece[..piece.find('>').unwrap()]);
            let lanes = piece
                .split("data-agent=\"")
                .skip(1)
                .map(|rest| rest[..rest.find('"').unwrap()].to_owned())
                .collect();
            (tag, lanes)
        })
        .collect();
    let titles: Vec<&str> = groups
        .iter()
        .map(|(tag, _)| tag["data-phase"].as_str())
        .collect();
    assert_eq!(titles, ["(no phase)", "Survey", "Check"]);
    for (tag, lanes) in &groups {
        let title = &tag["data-phase"];
        let mut expected: Vec<&String> = phase_of
            .iter()
            .filter(|(_, phase)| phase.as_deref().unwrap_or("(no phase)") == title)
            .map(|(path, _)| path)
            .collect();
        let mut shown: Vec<&String> = lanes.iter().collect();
        expected.sort();
        shown.sort();
        assert_eq!(shown, expected, "{title}");
        assert_eq!(tag["data-count"], expected.len().to_string(), "{title}");
        assert_eq!(tag["data-not-completed"], "0", "{title}");
        let tokens: u64 = expected
            .iter()
            .map(|path| agents[path.as_str()].1.iter().sum::<u64>())
            .sum();
        assert!(tokens > 0);
        assert_eq!(tag["data-phase-tokens"], tokens.to_string(), "{title}");
    }
    let sizes: Vec<usize> = groups.iter().map(|(_, lanes)| lanes.len()).collect();
    assert_eq!(sizes, [1, 2, 3]);
    // Every agent still has its one lane.
    assert_eq!(dom.matches("<div class=\"lane").count(), 7);
}

#[test]
fn otel_has_a_span_per_workflow_run_and_phase_with_the_agents_beneath() {
    let Some(url) = phoenix() else { return };
    let project = project("workflow");
    let (env, server) = setup(two_phase_script());
    env.write_file("seen.js", SCRIPT);
    let out = finish(
        workflow_command(&env, &server, &["seen.js", "--yes", "--json"])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &url)
            .env(
                "OTEL_RESOURCE_ATTRIBUTES",
                format!("openinference.project.name={project}"),
            )
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let end = ended(&out);
    let (run_id, phase_of) = phases_of(&env);
    let requests = server.requests().len();
    // 7 agents, a chat per request, 3 Glob calls, the run and 2 phases.
    let spans = spans(&url, &project, 7 + requests + 3 + 3);
    let by_operation = |name: &str| -> Vec<&Span> {
        spans
            .iter()
            .filter(|span| span.text("gen_ai.operation.name") == name)
            .collect()
    };
    let runs = by_operation("invoke_workflow");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    let run = runs[0];
    assert_eq!(run.name, "invoke_workflow seen");
    assert_eq!(run.text("alcove.workflow.run_id"), run_id);
    assert_eq!(run.text("alcove.workflow.status"), "completed");
    assert_eq!(run.int("alcove.workflow.agents"), 6);
    assert_eq!(run.int("alcove.workflow.nulls"), 0);
    assert_eq!(
        run.int("alcove.workflow.tokens"),
        end["tokens"].as_i64().unwrap()
    );
    // Under the span of the agent that started it.
    assert_eq!(parent_of(&spans, run).text("gen_ai.agent.id"), "main");
    // A span per phase, under the run's.
    let phases: Vec<&Span> = spans
        .iter()
        .filter(|span| span.name.starts_with("workflow_phase "))
        .collect();
    let mut titles: Vec<String> = phases
        .iter()
        .map(|span| span.text("alcove.workflow.phase"))
        .collect();
    titles.sort();
    assert_eq!(titles, ["Check", "Survey"], "{phases:#?}");
    for phase in &phases {
        assert_eq!(phase.parent_id, run.span_id, "{phase:?}");
    }
    // Each agent under its phase's span, or the run's with no phase.
    let agents: Vec<&Span> = by_operation("invoke_agent")
        .into_iter()
        .filter(|span| span.text("gen_ai.agent.id") != "main")
        .collect();
    assert_eq!(agents.len(), 6, "{agents:#?}");
    for agent in agents {
        let id = agent.text("gen_ai.agent.id");
        let parent = parent_of(&spans, agent);
        match &phase_of[&id] {
            Some(title) => assert_eq!(
                (parent.name.as_str(), parent.text("alcove.workflow.phase")),
                (format!("workflow_phase {title}").as_str(), title.clone()),
                "{id}"
            ),
            None => assert_eq!(parent.span_id, run.span_id, "{id}"),
        }
    }
    let counted: Vec<(String, i64)> = phases
        .iter()
        .map(|span| {
            (
                span.text("alcove.workflow.phase"),
                span.int("alcove.workflow.phase.agents"),
            )
        })
        .collect();
    assert!(counted.contains(&("Survey".to_owned(), 2)), "{counted:?}");
    assert!(counted.contains(&("Check".to_owned(), 3)), "{counted:?}");
}
