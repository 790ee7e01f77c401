//! The live delegation panel: every child agent of the session, what it is
//! doing now, and what it has cost.
//!
//! Users of other agent CLIs cannot see what children do; here each child
//! is a row that updates in place (state, current tool, turns, tokens,
//! elapsed), children nest under their parents, and each child keeps its
//! own live transcript for the child view. Everything comes from events
//! tagged with the child's path. A workflow run's agents are grouped
//! under their run and its phases (`workflow_runs.rs`).

mod workflow_runs;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use alcove_protocol::{AgentEvent, AgentPath, EventKind, RunStatus};
use ratatui::text::{Line, Span};

use super::cells::{format_duration, format_tokens, spinner};
use super::conversation::Conversation;
use super::theme::Theme;
use super::wrap::{text_width, truncate};
use workflow_runs::Run;

/// The most rows the panel takes; more children are summed up in one row.
const MAX_ROWS: usize = 8;

/// Where a child is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChildState {
    Running,
    Ended { status: RunStatus, ok: bool },
}

/// One child agent.
#[derive(Debug)]
pub(crate) struct Child {
    pub(crate) path: AgentPath,
    pub(crate) description: String,
    pub(crate) agent_type: String,
    pub(crate) depth: u32,
    pub(crate) state: ChildState,
    /// The tool it is running now, with its key argument.
    pub(crate) current_tool: Option<String>,
    pub(crate) turns: u32,
    pub(crate) tokens: u64,
    pub(crate) started: Instant,
    pub(crate) ended: Option<Instant>,
    /// Which main turn started it; the panel shows the current turn's.
    pub(crate) epoch: u64,
    /// Its own live transcript.
    pub(crate) log: Conversation,
    /// Its plan: steps completed, steps (from its last `plan_updated`).
    pub(crate) plan: Option<(usize, usize)>,
    /// Its workflow phase.
    pub(crate) phase: Option<String>,
    /// Whether it is an agent of a workflow run or below one (the panel
    /// shows it in the run's group, not as a row of its own); known at
    /// its start, since a run starts before its agents.
    in_run: bool,
}

/// Every child of the session, in start order.
#[derive(Debug, Default)]
pub(crate) struct Panel {
    pub(crate) children: Vec<Child>,
    /// The current main turn.
    pub(crate) epoch: u64,
    /// The session's workflow runs, in start order.
    runs: Vec<Run>,
    /// The paths of the workflow runs' agents (not of their descendants).
    run_agents: HashSet<String>,
}

impl Panel {
    /// Applies an event.
    pub(crate) fn apply(&mut self, event: &AgentEvent, workspace: &Path, now: Instant) {
        match &event.kind {
            EventKind::AgentStarted {
                child,
                agent_type,
                description,
                depth,
                run,
                phase,
                ..
            } => {
                self.note_phase(run.as_deref(), phase.as_deref());
                let in_run = self.note_run_agent(child, run.as_deref());
                self.children.push(Child {
                    path: child.clone(),
                    description: description.clone(),
                    agent_type: agent_type.clone(),
                    depth: *depth,
                    state: ChildState::Running,
                    current_tool: None,
                    turns: 0,
                    tokens: 0,
                    started: now,
                    ended: None,
                    epoch: self.epoch,
                    log: Conversation::default(),
                    plan: None,
                    phase: phase.clone(),
                    in_run,
                });
                return;
            }
            EventKind::AgentEnded {
                child,
                status,
                ok,
                turns,
                usage,
                ..
            } => {
                if let Some(entry) = self.find_mut(child) {
                    entry.state = ChildState::Ended {
                        status: *status,
                        ok: *ok,
                    };
                    entry.turns = *turns;
                    entry.tokens = usage.budget_tokens();
                    entry.current_tool = None;
                    entry.ended = Some(now);
                    let cut = entry.log.cut_short();
                    entry.log.cells.extend(cut);
                }
                return;
            }
            EventKind::WorkflowStarted { .. }
            | EventKind::WorkflowPhase { .. }
            | EventKind::WorkflowEnded { .. } => {
                self.apply_run(&event.kind, now);
                return;
            }
            _ => {}
        }
        let Some(entry) = self.find_mut(&event.agent) else {
            return;
        };
        match &event.kind {
            EventKind::TurnStarted { turn } => entry.turns = *turn,
            EventKind::Usage { usage } => entry.tokens += usage.budget_tokens(),
            EventKind::ToolCallStarted { name, input, .. } => {
                let arg = super::cells::key_argument(name, input, workspace);
                entry.current_tool = Some(format!("{name} {arg}"));
            }
            EventKind::ToolCallFinished { .. } => entry.current_tool = None,
            EventKind::PlanUpdated { todos } => {
                entry.plan = Some((alcove_protocol::completed_count(todos), todos.len()));
            }
            _ => {}
        }
        let cells = entry.log.apply(&event.kind, workspace, true, now);
        entry.log.cells.extend(cells);
    }

    /// The child at `path`.
    pub(crate) fn find_mut(&mut self, path: &AgentPath) -> Option<&mut Child> {
        self.children.iter_mut().find(|child| child.path == *path)
    }

    /// How many children and workflow runs run now (a run between two
    /// phases has no child running and still shows).
    #[cfg(test)]
    pub(crate) fn running(&self) -> usize {
        let children = self
            .children
            .iter()
            .filter(|child| child.state == ChildState::Running)
            .count();
        children + self.runs.iter().filter(|run| run.is_running()).count()
    }

    /// Whether any child or workflow run runs now; stops at the first
    /// (the render loop asks on every pass).
    pub(crate) fn any_running(&self) -> bool {
        self.children
            .iter()
            .any(|child| child.state == ChildState::Running)
            || self.runs.iter().any(Run::is_running)
    }

    /// Indices of the current turn's children in tree order (each child
    /// right after its parent), or of all children. Runs on every frame,
    /// so each child is looked at a fixed number of times.
    pub(crate) fn tree_order(&self, current_turn_only: bool) -> Vec<usize> {
        let shown = |child: &Child| {
            !current_turn_only || child.epoch == self.epoch || child.state == ChildState::Running
        };
        let paths: HashSet<&str> = self.children.iter().map(|c| c.path.as_str()).collect();
        let mut roots = Vec::new();
        let mut kids: HashMap<&str, Vec<usize>> = HashMap::new();
        for (idx, child) in self.children.iter().enumerate() {
            if !shown(child) {
                continue;
            }
            let parent = parent_of(&child.path);
            if let Some(parent) = parent {
                kids.entry(parent).or_default().push(idx);
            }
            if !parent.is_some_and(|parent| paths.contains(parent)) {
                roots.push(idx);
            }
        }
        let mut order = Vec::new();
        let mut stack: Vec<usize> = roots.into_iter().rev().collect();
        while let Some(idx) = stack.pop() {
            order.push(idx);
            if let Some(kids) = kids.get(self.children[idx].path.as_str()) {
                stack.extend(kids.iter().rev());
            }
        }
        order
    }

    /// The rows of the children at `order`, with their columns aligned.
    pub(crate) fn rows(
        &self,
        order: &[usize],
        width: usize,
        theme: Theme,
        now: Instant,
    ) -> Vec<Line<'static>> {
        let columns = Columns::fit(order.iter().map(|idx| &self.children[*idx]), width);
        order
            .iter()
            .map(|idx| self.children[*idx].row_in(&columns, theme, now))
            .collect()
    }

    /// The panel: a title row, one row per child of the current turn, then
    /// each workflow run of the turn (or still running) as its group.
    pub(crate) fn lines(&self, width: usize, theme: Theme, now: Instant) -> Vec<Line<'static>> {
        let order = self.tree_order(true);
        let runs = self.shown_runs();
        if order.is_empty() && runs.is_empty() {
            return Vec::new();
        }
        let running = order
            .iter()
            .filter(|idx| self.children[**idx].state == ChildState::Running)
            .count();
        let done = order.len() - running;
        let title = format!("agents · {running} running · {done} done");
        let hint = "ctrl+t view";
        let fill = width.saturating_sub(text_width(&title) + text_width(hint) + 2);
        let mut out = vec![Line::from(vec![
            Span::styled(title, theme.strong()),
            Span::raw(" ".repeat(fill + 1)),
            Span::styled(hint, theme.dim()),
        ])];
        let alone: Vec<usize> = order
            .into_iter()
            .filter(|idx| !self.children[*idx].in_run)
            .collect();
        let columns = Columns::fit(alone.iter().map(|idx| &self.children[*idx]), width);
        for (shown, idx) in alone.iter().enumerate() {
            if shown + 1 == MAX_ROWS && alone.len() > MAX_ROWS {
                out.push(Line::styled(
                    format!("  … {} more (/agents lists them all)", alone.len() - shown),
                    theme.dim(),
                ));
                break;
            }
            out.push(self.children[*idx].row_in(&columns, theme, now));
        }
        for run in runs {
            out.extend(self.run_lines(run, width, theme, now));
        }
        out
    }
}

impl Child {
    /// How long it has run (or ran).
    pub(crate) fn elapsed(&self, now: Instant) -> std::time::Duration {
        self.ended
            .unwrap_or(now)
            .saturating_duration_since(self.started)
    }

    /// Its state as a word.
    pub(crate) fn state_word(&self) -> &'static str {
        match self.state {
            ChildState::Running => "running",
            ChildState::Ended {
                status: RunStatus::Completed,
                ok: true,
            } => "done",
            ChildState::Ended {
                status: RunStatus::Completed,
                ok: false,
            } => "no report",
            ChildState::Ended { status, .. } => status.as_str(),
        }
    }

    /// The child as a row of its own (`/agents`, the child view).
    pub(crate) fn row(&self, width: usize, theme: Theme, now: Instant) -> Line<'static> {
        self.row_in(&Columns::fit(std::iter::once(self), width), theme, now)
    }

    /// `⠋ agent-1  find the config   Grep parse   3 turns  1.2k tok  12.0s`
    fn row_in(&self, columns: &Columns, theme: Theme, now: Instant) -> Line<'static> {
        let (icon, icon_style) = match self.state {
            ChildState::Running => (spinner(self.started, now), theme.accent()),
            ChildState::Ended {
                status: RunStatus::Completed,
                ok: true,
            } => ("✓", theme.ok()),
            ChildState::Ended {
                status: RunStatus::Aborted,
                ..
            } => ("⊘", theme.warn()),
            ChildState::Ended { .. } => ("✗", theme.error()),
        };
        let name = self.name();
        let turns = if self.turns == 1 {
            "1 turn".to_owned()
        } else {
            format!("{} turns", self.turns)
        };
        let plan = format!("{:>width$}", self.plan_text(), width = columns.plan);
        let stats = format!(
            "{plan}{turns:>9} {:>6} tok {:>7}",
            format_tokens(self.tokens),
            format_duration(self.elapsed(now))
        );
        let activity = self.activity();
        let activity_style = match self.state {
            ChildState::Running => theme.text(),
            ChildState::Ended {
                status: RunStatus::Completed,
                ok: true,
            } => theme.ok(),
            _ => theme.error(),
        };
        let cell = |text: &str, width: usize| {
            let text = truncate(text, width);
            let pad = width.saturating_sub(text_width(&text));
            format!("{text}{}", " ".repeat(pad))
        };
        Line::from(vec![
            Span::styled(format!(" {icon} "), icon_style),
            Span::styled(cell(&name, columns.name), theme.strong()),
            Span::raw(" "),
            Span::styled(cell(&self.description, columns.description), theme.text()),
            Span::raw("  "),
            Span::styled(cell(&activity, columns.activity), activity_style),
            Span::raw(" "),
            Span::styled(stats, theme.dim()),
        ])
    }

    /// `plan: 3/5 ` when it keeps a plan.
    fn plan_text(&self) -> String {
        match self.plan {
            Some((done, steps)) if steps > 0 => format!("plan: {done}/{steps} "),
            _ => String::new(),
        }
    }

    /// What it does now: its current tool, `thinking`, or how it ended.
    fn activity(&self) -> String {
        match (&self.state, &self.current_tool) {
            (ChildState::Running, Some(tool)) => tool.clone(),
            (ChildState::Running, None) => "thinking".to_owned(),
            _ => self.state_word().to_owned(),
        }
    }

    /// Its name, indented under its parent.
    fn name(&self) -> String {
        let name = self.path.as_str().rsplit('/').next().unwrap_or_default();
        if self.depth > 1 {
            format!("{}└ {name}", "  ".repeat(self.depth as usize - 2))
        } else {
            name.to_owned()
        }
    }
}

/// Column widths shared by the rows of the panel, so they line up.
struct Columns {
    name: usize,
    description: usize,
    activity: usize,
    /// The `plan: 3/5 ` before the stats (0 when no row has a plan).
    plan: usize,
}

/// The width of a row's stats (`  3 turns   1.2k tok   12.0s`).
const STATS_WIDTH: usize = 9 + 1 + 6 + 4 + 1 + 7;

impl Columns {
    fn fit<'a>(children: impl Iterator<Item = &'a Child>, width: usize) -> Columns {
        let (mut name, mut description, mut activity, mut plan) = (0, 0, 0, 0);
        for child in children {
            plan = plan.max(text_width(&child.plan_text()));
            name = name.max(text_width(&child.name()));
            description = description.max(text_width(&child.description));
            activity = activity.max(text_width(&child.activity()));
        }
        let name = name.min(16);
        // icon, spaces between columns, stats
        let room = width.saturating_sub(3 + name + 1 + 2 + 1 + plan + STATS_WIDTH);
        // The description gets what the activity leaves, but at least half.
        let description = description.min(room.saturating_sub(activity.min(room * 9 / 20)));
        Columns {
            name,
            description,
            activity: room - description,
            plan,
        }
    }
}

fn parent_of(path: &AgentPath) -> Option<&str> {
    path.as_str().rsplit_once('/').map(|(parent, _)| parent)
}
