//! The agents panel groups a workflow run's agents under the run and its
//! phases, and stays a handful of rows with 200 agents.

use std::time::{Duration, Instant};

use alcove_protocol::{EventKind, RunStatus, Usage};
use ratatui::backend::TestBackend;

use super::{app, event, path, render, screen, started};
use crate::tui::app::App;
use crate::tui::term::Inline;

const RUN: &str = "wf_7f3a";

fn run_started(app: &mut App, name: &str, now: Instant) {
    app.apply_event(
        &event(
            "main",
            EventKind::WorkflowStarted {
                run_id: RUN.to_owned(),
                name: name.to_owned(),
                phases: Vec::new(),
                max_concurrent: 16,
                budget_tokens: Some(500_000),
                budget_usd: None,
            },
        ),
        now,
    );
}

fn phase(app: &mut App, title: &str, now: Instant) {
    app.apply_event(
        &event(
            "main",
            EventKind::WorkflowPhase {
                run_id: RUN.to_owned(),
                title: title.to_owned(),
            },
        ),
        now,
    );
}

/// Agent `n` of the run starts in `phase`.
fn agent_started(app: &mut App, n: usize, description: &str, phase: &str, now: Instant) {
    let mut event = started("main", &format!("main/agent-{n}"), description);
    if let EventKind::AgentStarted {
        run, phase: set, ..
    } = &mut event.kind
    {
        *run = Some(RUN.to_owned());
        *set = Some(phase.to_owned());
    }
    app.apply_event(&event, now);
}

fn agent_ended(app: &mut App, n: usize, tokens: u64, now: Instant) {
    app.apply_event(
        &event(
            "main",
            EventKind::AgentEnded {
                child: path(&format!("main/agent-{n}")),
                description: String::new(),
                status: RunStatus::Completed,
                ok: true,
                turns: 2,
                usage: Usage {
                    input_tokens: tokens,
                    ..Usage::default()
                },
                error: None,
                evidence: None,
            },
        ),
        now,
    );
}

fn panel_text(app: &App, now: Instant) -> Vec<String> {
    app.panel
        .lines(80, app.theme, now)
        .iter()
        .map(|line| line.to_string())
        .collect()
}

#[test]
fn a_runs_agents_are_grouped_by_phase_with_counts_and_spend() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path(), true);
    let mut inline: Inline<TestBackend> = screen();
    let t0 = Instant::now();
    app.begin_turn("review the open pull requests", t0);
    // An agent of no run shows as today.
    app.apply_event(
        &started("main", "main/agent-1", "summarise the changelog"),
        t0,
    );
    run_started(&mut app, "review-prs", t0);
    phase(&mut app, "Find", t0);
    for n in 2..=4 {
        agent_started(&mut app, n, &format!("list PRs of repo {n}"), "Find", t0);
    }
    for n in 2..=4 {
        agent_ended(&mut app, n, 4_000, t0 + Duration::from_secs(3));
    }
    phase(&mut app, "Check", t0 + Duration::from_secs(3));
    for n in 5..=12 {
        let description = format!("check PR #{}", 100 + n);
        agent_started(
            &mut app,
            n,
            &description,
            "Check",
            t0 + Duration::from_secs(3),
        );
    }
    agent_ended(&mut app, 5, 6_500, t0 + Duration::from_secs(8));
    render(&mut inline, &mut app, t0 + Duration::from_secs(10));
    insta::assert_snapshot!(inline.backend());
}

#[test]
fn a_run_of_200_agents_stays_a_handful_of_rows_and_collapses_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path(), false);
    let t0 = Instant::now();
    app.begin_turn("audit every crate", t0);
    run_started(&mut app, "audit", t0);
    // Twelve phases of sixteen agents that all ended, then a thirteenth
    // with eight running: 200 agents.
    let mut n = 0;
    for round in 1..=13 {
        let title = format!("Round {round}");
        phase(&mut app, &title, t0);
        for _ in 0..(if round < 13 { 16 } else { 8 }) {
            n += 1;
            agent_started(&mut app, n, &format!("audit part {n}"), &title, t0);
            if round < 13 {
                agent_ended(&mut app, n, 1_000, t0);
            }
        }
    }
    assert_eq!(n, 200);
    let now = t0 + Duration::from_secs(60);
    let lines = panel_text(&app, now);
    // Title, run header, the earlier phases summed, three phases, the
    // current phase's running agents (four, then `… 4 more running`).
    assert_eq!(lines.len(), 1 + 1 + 1 + 4 + 5, "{lines:#?}");
    assert!(
        lines[1].contains("workflow audit · 192 done · 8 running"),
        "{lines:#?}"
    );
    assert!(lines[1].contains("/500.0k tok"), "{lines:#?}");
    assert!(
        lines[2].contains("9 earlier phases · 144 ended"),
        "{lines:#?}"
    );
    assert!(
        lines[3].contains("Round 10 · 16 ended · 16.0k tok"),
        "{lines:#?}"
    );
    assert!(
        lines[6].contains("Round 13 · 8 running · 0 tok"),
        "{lines:#?}"
    );
    assert!(lines[11].contains("… 4 more running"), "{lines:#?}");

    for n in 193..=200 {
        agent_ended(&mut app, n, 1_000, now);
    }
    app.apply_event(
        &event(
            "main",
            EventKind::WorkflowEnded {
                run_id: RUN.to_owned(),
                status: "completed".to_owned(),
                agents: 200,
                nulls: 3,
                summary: "200 agents started".to_owned(),
                tokens: 200_000,
                usd: Some(1.25),
                error: None,
            },
        ),
        now,
    );
    let lines = panel_text(&app, now);
    assert_eq!(lines.len(), 1 + 1 + 1 + 4, "{lines:#?}");
    assert!(
        lines[1].contains(
            "workflow audit · completed · 200 agents · 3 null · 200.0k/500.0k tok · $1.25"
        ),
        "{lines:#?}"
    );
    assert!(
        lines[6].contains("Round 13 · 8 ended · 8.0k tok"),
        "{lines:#?}"
    );
    assert_eq!(app.panel.running(), 0);
}

#[test]
fn a_long_phase_title_gives_way_and_every_line_fits_the_width() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path(), false);
    let t0 = Instant::now();
    app.begin_turn("go", t0);
    run_started(&mut app, &"a-very-long-workflow-name-".repeat(4), t0);
    let title = "Check every pull request against the contribution guide ".repeat(2);
    phase(&mut app, &title, t0);
    agent_started(&mut app, 1, &"check ".repeat(30), &title, t0);
    let lines = app.panel.lines(60, app.theme, t0);
    for line in &lines {
        assert!(line.width() <= 60, "{line} is {} wide", line.width());
    }
    assert!(
        lines[2].to_string().ends_with(" · 1 running · 0 tok"),
        "{lines:#?}"
    );
}
