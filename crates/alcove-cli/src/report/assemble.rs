//! Joining what the transcripts said into the [`Report`]: each child's
//! start and end (from its parent's transcript) with its own lane, its
//! evidence from the end record (`agent_ended`'s typed `evidence`; the
//! footers in its parent's tool results only for a transcript an alcove
//! without typed evidence wrote), the waits to start, prices, and the lanes
//! in tree order.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::model::{Lane, Report, Span, SpanKind};
use super::read::{LaneState, Reader};
use crate::settings::model::Price;

/// A child that began this long after its parent's call asked for it is
/// drawn as waiting to start: `agent_started` comes once the child got its
/// slot, its share of the tree budget and its worktree when it has one, so
/// the gap is that wait plus the building of the child (a shorter gap is
/// only the building).
const SLOT_WAIT_SHOWN_MS: u64 = 20;

impl Reader {
    /// Joins what the transcripts said into the report.
    pub(super) fn finish(mut self, price: Option<Price>) -> Report {
        let mut report = std::mem::take(&mut self.report);
        let mut lanes = std::mem::take(&mut self.lanes);
        // Children that left no event of their own still get a lane.
        for (path, child) in &self.children {
            lanes.entry(path.clone()).or_insert_with(|| {
                report.notes.push(format!(
                    "no transcript holds the events of {path}{}",
                    child
                        .transcript
                        .as_ref()
                        .map(|path| format!(" ({})", path.display()))
                        .unwrap_or_default()
                ));
                LaneState {
                    lane: Lane {
                        path: path.clone(),
                        ..Lane::default()
                    },
                    ..LaneState::default()
                }
            });
        }
        report.start = lanes
            .values()
            .map(|state| state.first_ts)
            .chain(self.children.values().map(|child| child.started))
            .filter(|ts| *ts > 0)
            .min()
            .unwrap_or(0);
        report.end = lanes
            .values()
            .map(|state| state.last_ts)
            .chain(
                self.children
                    .values()
                    .filter_map(|child| child.ended.as_ref().map(|end| end.ts)),
            )
            .max()
            .unwrap_or(report.start);
        // Children whose end record carried typed evidence: their parents'
        // footers are not read.
        let mut typed: HashSet<String> = HashSet::new();
        for (path, state) in &mut lanes {
            let lane = &mut state.lane;
            lane.start = state.first_ts;
            lane.end = state.last_ts;
            if path == "main" {
                lane.description = "main agent".to_owned();
                if state.runs_ended == 0 || state.runs_started > state.runs_ended {
                    lane.status = "interrupted".to_owned();
                }
                report.outcome = lane.status.clone();
                report.error = lane.error.clone();
                lane.cost = state.costs;
            } else if let Some(child) = self.children.get(path) {
                lane.parent = Some(child.parent.clone());
                lane.description = child.description.clone();
                lane.agent_type = child.agent_type.clone();
                lane.depth = child.depth;
                if let Some(transcript) = &child.transcript {
                    lane.transcript = Some(transcript.display().to_string());
                }
                if child.started > 0 && (lane.start == 0 || child.started < lane.start) {
                    lane.start = child.started;
                }
                if let (Some(requested), true) = (child.requested, child.started > 0)
                    && child.started >= requested + SLOT_WAIT_SHOWN_MS
                {
                    lane.spans.insert(
                        0,
                        Span {
                            kind: SpanKind::Queued,
                            start: requested,
                            end: child.started,
                            label: "waiting to start (a slot, the budget, a worktree)".to_owned(),
                            error: false,
                            open: false,
                            item: None,
                        },
                    );
                    lane.start = lane.start.min(requested);
                }
                match &child.ended {
                    Some(end) => {
                        if end.evidence.is_some() || end.worktree.is_some() {
                            typed.insert(path.clone());
                            lane.evidence.clone_from(&end.evidence);
                            if let Some(worktree) = &end.worktree {
                                set_worktree(lane, worktree.clone());
                            }
                        }
                        lane.status = end.status.clone();
                        lane.end = lane.end.max(end.ts);
                        if lane.tokens.is_empty() {
                            lane.tokens = end.tokens;
                        }
                        if lane.turns == 0 {
                            lane.turns = end.turns;
                        }
                    }
                    None => lane.status = "unfinished".to_owned(),
                }
            } else {
                // A transcript in the session's folder no start named.
                lane.parent = path.rsplit_once('/').map(|(parent, _)| parent.to_owned());
                lane.depth = path.matches('/').count() as u32;
                lane.status = "unfinished".to_owned();
            }
            let cut_short = matches!(lane.status.as_str(), "unfinished" | "interrupted");
            let lane_end = if cut_short {
                report.end.max(lane.end)
            } else {
                lane.end
            };
            for span in lane.spans.iter_mut().filter(|span| span.open) {
                span.end = lane_end.max(span.start);
            }
            if lane.end < lane.start {
                lane.end = lane.start;
            }
            if let Some(price) = &price {
                lane.cost = Some(price.cost(&lane.tokens.usage()));
                report.priced = true;
            } else if lane.cost.is_some() {
                report.priced = true;
            }
        }
        for footer in self.footers {
            let by_transcript = footer.transcript.as_ref().and_then(|transcript| {
                self.children
                    .iter()
                    .find(|(_, child)| {
                        child
                            .transcript
                            .as_ref()
                            .is_some_and(|path| path.display().to_string() == *transcript)
                    })
                    .map(|(path, _)| path.clone())
            });
            let by_call = || {
                self.children
                    .iter()
                    .find(|(_, child)| {
                        child.parent == footer.agent && child.call_id == footer.call_id
                    })
                    .map(|(path, _)| path.clone())
            };
            let Some(child) = by_transcript.or_else(by_call) else {
                continue;
            };
            if typed.contains(&child) {
                continue;
            }
            if let Some(state) = lanes.get_mut(&child) {
                if footer.evidence.is_some() {
                    state.lane.evidence = footer.evidence;
                }
                if let Some(worktree) = footer.worktree {
                    set_worktree(&mut state.lane, worktree);
                }
            }
        }
        let order: HashMap<String, usize> = self
            .children
            .iter()
            .map(|(path, child)| (path.clone(), child.order))
            .collect();
        report.agents = depth_first(lanes, &order);
        report.runs = std::mem::take(&mut self.runs).finish(&report.agents);
        report
    }
}

/// A worktree child's `[alcove worktree]` line and the branch it names.
fn set_worktree(lane: &mut Lane, worktree: String) {
    lane.branch = worktree
        .split_once("branch: ")
        .map(|(_, rest)| rest.split(" |").next().unwrap_or(rest).trim().to_owned());
    lane.worktree = Some(worktree);
}

/// The lanes in tree order: each parent, then its children in the order
/// they were started (`order`; a lane no start named comes last).
fn depth_first(lanes: BTreeMap<String, LaneState>, order: &HashMap<String, usize>) -> Vec<Lane> {
    let mut by_parent: BTreeMap<String, Vec<Lane>> = BTreeMap::new();
    let mut roots = Vec::new();
    let known: HashSet<String> = lanes.keys().cloned().collect();
    for (_, state) in lanes {
        match state.lane.parent.clone() {
            Some(parent) if known.contains(&parent) => {
                by_parent.entry(parent).or_default().push(state.lane);
            }
            _ => roots.push(state.lane),
        }
    }
    roots.sort_by_key(|lane| (lane.path != "main", lane.start));
    let mut ordered = Vec::new();
    let mut stack: Vec<Lane> = roots.into_iter().rev().collect();
    while let Some(lane) = stack.pop() {
        if let Some(mut children) = by_parent.remove(&lane.path) {
            children.sort_by_key(|child| {
                std::cmp::Reverse((
                    order.get(&child.path).copied().unwrap_or(usize::MAX),
                    child.start,
                    child.path.clone(),
                ))
            });
            stack.extend(children);
        }
        ordered.push(lane);
    }
    // Lanes under a parent that never appeared (a cycle cannot happen:
    // paths only grow), kept rather than lost.
    ordered.extend(by_parent.into_values().flatten());
    ordered
}
