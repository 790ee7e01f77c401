//! A workflow run in the agents panel: one header for the run and one line
//! per phase, so a run of hundreds of agents stays a handful of rows.
//!
//! A run is known from its `workflow_started` (its agents' `agent_started`
//! name it in `run`, with their phase); `workflow_phase` adds a phase and
//! `workflow_ended` gives the run's end, its token and dollar spend. The
//! limits, chosen so a 200-agent run fits a 24-row terminal beside the
//! conversation:
//!
//! - the header: status, agents done and running, tokens (of the budget
//!   when the run has one; dollars once the end prices them), elapsed;
//! - phases in the order they appeared, one line each (running and ended
//!   agents, tokens spent in it); at most [`PHASE_LINES`] of them: the
//!   earlier phases whose agents all ended are summed in one line;
//! - only the running agents of the current phase (the newest phase with
//!   an agent running) are listed, at most [`AGENT_ROWS`], then
//!   `… N more running`. Agents of other phases are counted, not listed.
//!
//! A descendant of a run's agent belongs to the run and is not listed
//! either; `/agents` and the child view (ctrl+t) still list every agent.

use std::time::Instant;

use alcove_protocol::{AgentPath, EventKind};
use ratatui::text::{Line, Span};

use super::{Child, ChildState, Columns, Panel};
use crate::tui::cells::{format_duration, format_tokens, spinner};
use crate::tui::theme::Theme;
use crate::tui::wrap::{text_width, truncate};

/// The most phase lines a run shows (older ended phases are summed in one).
const PHASE_LINES: usize = 4;
/// The most agents of the current phase listed one per row.
const AGENT_ROWS: usize = 5;
/// How far a run's agent rows are indented under its phase.
const INDENT: &str = "    ";

/// One workflow run of the session.
#[derive(Debug)]
pub(crate) struct Run {
    id: String,
    name: String,
    budget_tokens: Option<u64>,
    started: Instant,
    /// Which main turn started it.
    epoch: u64,
    /// Its phases in the order they appeared (`phase()` or an agent's).
    phases: Vec<String>,
    /// Its agents, as indices into the panel's children, in start order.
    agents: Vec<usize>,
    end: Option<End>,
}

/// How a run ended (its `workflow_ended`).
#[derive(Debug)]
struct End {
    status: String,
    agents: u32,
    nulls: u32,
    tokens: u64,
    usd: Option<f64>,
    at: Instant,
}

impl Run {
    pub(crate) fn is_running(&self) -> bool {
        self.end.is_none()
    }

    fn note(&mut self, phase: &str) {
        if !self.phases.iter().any(|known| known == phase) {
            self.phases.push(phase.to_owned());
        }
    }
}

/// Agents of one phase (or of none), as counted for its line.
#[derive(Default)]
struct Tally<'a> {
    running: Vec<&'a Child>,
    ended: usize,
    tokens: u64,
}

impl Tally<'_> {
    /// `⠋ Check · 7 running · 1 ended · 6.5k tok`, at most `width` wide.
    fn line(
        &self,
        title: &str,
        width: usize,
        theme: Theme,
        now: Instant,
        started: Instant,
    ) -> Line<'static> {
        let (icon, style) = match (self.running.is_empty(), self.ended) {
            (false, _) => (spinner(started, now).to_owned(), theme.accent()),
            (true, 0) => ("○".to_owned(), theme.dim()),
            (true, _) => ("✓".to_owned(), theme.ok()),
        };
        let mut counts = Vec::new();
        if !self.running.is_empty() {
            counts.push(format!("{} running", self.running.len()));
        }
        if self.ended > 0 {
            counts.push(format!("{} ended", self.ended));
        }
        if counts.is_empty() {
            counts.push("no agents yet".to_owned());
        } else {
            counts.push(format!("{} tok", format_tokens(self.tokens)));
        }
        let counts = format!(" · {}", counts.join(" · "));
        // The counts stay whole; a long title gives way.
        let room = width.saturating_sub(5 + text_width(&counts));
        Line::from(vec![
            Span::styled(format!("   {icon} "), style),
            Span::styled(truncate(title, room), theme.strong()),
            Span::styled(truncate(&counts, width.saturating_sub(5)), theme.dim()),
        ])
    }
}

impl Panel {
    /// A run's start, phase or end.
    pub(super) fn apply_run(&mut self, kind: &EventKind, now: Instant) {
        match kind {
            EventKind::WorkflowStarted {
                run_id,
                name,
                budget_tokens,
                ..
            } => self.runs.push(Run {
                id: run_id.clone(),
                name: name.clone(),
                budget_tokens: *budget_tokens,
                started: now,
                epoch: self.epoch,
                phases: Vec::new(),
                agents: Vec::new(),
                end: None,
            }),
            EventKind::WorkflowPhase { run_id, title } => {
                self.note_phase(Some(run_id), Some(title));
            }
            EventKind::WorkflowEnded {
                run_id,
                status,
                agents,
                nulls,
                tokens,
                usd,
                ..
            } => {
                if let Some(run) = self.runs.iter_mut().find(|run| run.id == *run_id) {
                    run.end = Some(End {
                        status: status.clone(),
                        agents: *agents,
                        nulls: *nulls,
                        tokens: *tokens,
                        usd: *usd,
                        at: now,
                    });
                }
            }
            _ => {}
        }
    }

    /// A phase of a run appeared (a `phase()`, or an agent's own phase).
    pub(super) fn note_phase(&mut self, run: Option<&str>, phase: Option<&str>) {
        let (Some(run), Some(phase)) = (run, phase) else {
            return;
        };
        if let Some(run) = self.runs.iter_mut().find(|known| known.id == run) {
            run.note(phase);
        }
    }

    /// The runs the panel shows: the current turn's, and any still running.
    pub(super) fn shown_runs(&self) -> Vec<&Run> {
        self.runs
            .iter()
            .filter(|run| run.epoch == self.epoch || run.is_running())
            .collect()
    }

    /// Notes a starting child (the next of the panel's children) as an
    /// agent of the run it names, if that run is known; returns whether it
    /// is a run's agent or below one.
    pub(super) fn note_run_agent(&mut self, path: &AgentPath, run: Option<&str>) -> bool {
        let index = self.children.len();
        if let Some(run) = run.and_then(|id| self.runs.iter_mut().find(|run| run.id == id)) {
            run.agents.push(index);
            self.run_agents.insert(path.as_str().to_owned());
        }
        // Whether `path` is one of the runs' agents or below one.
        let mut at = path.as_str();
        loop {
            if self.run_agents.contains(at) {
                return true;
            }
            match at.rsplit_once('/') {
                Some((parent, _)) => at = parent,
                None => return false,
            }
        }
    }

    /// A run's header, its phase lines and its current phase's running agents.
    pub(super) fn run_lines(
        &self,
        run: &Run,
        width: usize,
        theme: Theme,
        now: Instant,
    ) -> Vec<Line<'static>> {
        let agents: Vec<&Child> = run
            .agents
            .iter()
            .map(|index| &self.children[*index])
            .collect();
        // Agents before the first phase() form a group of no phase.
        let mut groups: Vec<(Option<&str>, Tally)> = Vec::new();
        if agents.iter().any(|child| child.phase.is_none()) {
            groups.push((None, Tally::default()));
        }
        groups.extend(
            run.phases
                .iter()
                .map(|phase| (Some(phase.as_str()), Tally::default())),
        );
        for child in &agents {
            let Some((_, tally)) = groups
                .iter_mut()
                .find(|(phase, _)| *phase == child.phase.as_deref())
            else {
                continue;
            };
            tally.tokens += child.tokens;
            match child.state {
                ChildState::Running => tally.running.push(child),
                ChildState::Ended { .. } => tally.ended += 1,
            }
        }
        let mut out = vec![header(run, &agents, width, theme, now)];
        let named = run.phases.len();
        let current = groups
            .iter()
            .rposition(|(_, tally)| !tally.running.is_empty());
        // Which phase lines show: those with agents running, then the
        // newest, up to PHASE_LINES; the rest are summed in one line.
        let mut shown: Vec<bool> = groups
            .iter()
            .map(|(_, tally)| !tally.running.is_empty())
            .collect();
        for at in (0..groups.len()).rev() {
            if shown.iter().filter(|shown| **shown).count() >= PHASE_LINES {
                break;
            }
            shown[at] = true;
        }
        let hidden: Vec<&Tally> = groups
            .iter()
            .zip(&shown)
            .filter(|(_, shown)| !**shown)
            .map(|((_, tally), _)| tally)
            .collect();
        if !hidden.is_empty() {
            let sum = Tally {
                running: Vec::new(),
                ended: hidden.iter().map(|tally| tally.ended).sum(),
                tokens: hidden.iter().map(|tally| tally.tokens).sum(),
            };
            let title = format!("{} earlier phases", hidden.len());
            out.push(sum.line(&title, width, theme, now, run.started));
        }
        for (at, (phase, tally)) in groups.iter().enumerate() {
            if !shown[at] {
                continue;
            }
            // A run with no phases at all needs no phase line.
            if named > 0 {
                let title = phase.unwrap_or("(no phase)");
                out.push(tally.line(title, width, theme, now, run.started));
            }
            if Some(at) == current {
                out.extend(agent_rows(&tally.running, width, theme, now));
            }
        }
        out
    }
}

/// `⠋ workflow review · 12 done · 4 running · 80.1k/500k tok · 1m02s`, or
/// once ended `✓ workflow review · completed · 40 agents · 2 null · …`.
fn header(run: &Run, agents: &[&Child], width: usize, theme: Theme, now: Instant) -> Line<'static> {
    let running = agents
        .iter()
        .filter(|child| child.state == ChildState::Running)
        .count();
    let live_tokens: u64 = agents.iter().map(|child| child.tokens).sum();
    let (icon, style, mut parts, tokens, elapsed) = match &run.end {
        None => (
            spinner(run.started, now).to_owned(),
            theme.accent(),
            vec![
                format!("{} done", agents.len() - running),
                format!("{running} running"),
            ],
            live_tokens,
            now.saturating_duration_since(run.started),
        ),
        Some(end) => {
            let (icon, style) = match end.status.as_str() {
                "completed" => ("✓", theme.ok()),
                "cancelled" | "budget_exhausted" => ("⊘", theme.warn()),
                _ => ("✗", theme.error()),
            };
            let mut parts = vec![end.status.clone(), plural(end.agents, "agent")];
            if end.nulls > 0 {
                parts.push(format!("{} null", end.nulls));
            }
            (
                icon.to_owned(),
                style,
                parts,
                end.tokens,
                end.at.saturating_duration_since(run.started),
            )
        }
    };
    parts.push(match run.budget_tokens {
        Some(budget) => format!("{}/{} tok", format_tokens(tokens), format_tokens(budget)),
        None => format!("{} tok", format_tokens(tokens)),
    });
    if let Some(usd) = run.end.as_ref().and_then(|end| end.usd) {
        parts.push(format!("${usd:.2}"));
    }
    parts.push(format_duration(elapsed));
    let text = truncate(
        &format!("workflow {} · {}", run.name, parts.join(" · ")),
        width.saturating_sub(3),
    );
    Line::from(vec![
        Span::styled(format!(" {icon} "), style),
        Span::styled(text, theme.strong()),
    ])
}

/// The running agents of the current phase, indented under its line.
fn agent_rows(running: &[&Child], width: usize, theme: Theme, now: Instant) -> Vec<Line<'static>> {
    let room = width.saturating_sub(INDENT.len());
    let listed = if running.len() > AGENT_ROWS {
        &running[..AGENT_ROWS - 1]
    } else {
        running
    };
    let columns = Columns::fit(listed.iter().copied(), room);
    let mut out: Vec<Line<'static>> = listed
        .iter()
        .map(|child| {
            let mut row = child.row_in(&columns, theme, now);
            row.spans.insert(0, Span::raw(INDENT));
            row
        })
        .collect();
    if running.len() > listed.len() {
        out.push(Line::styled(
            format!("{INDENT}  … {} more running", running.len() - listed.len()),
            theme.dim(),
        ));
    }
    out
}

fn plural(count: u32, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}
