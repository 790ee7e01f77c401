//! The parts of BENCHMARKS.md after the table: what each row is made of
//! (the first request's tools, the session's turns) and the peers'
//! reference figures, so the table's module stays the table.

use std::fmt::Write as _;

use super::{Results, marginal_us, mb};
use crate::first_request::Sizes;
use crate::scenarios::SessionPoint;

pub(super) fn details(md: &mut String, results: &Results) {
    if let Some(first) = &results.first_request {
        let _ = writeln!(
            md,
            "\n## The first request's tools\n\nEach tool of the main agent's first request (every tool), as \
             the OpenAI wire sends it: its JSON's bytes and their tokens (bytes / 4). Tools offered by name \
             only (docs/tools.md, \"Deferred tools\") are not in this array.\n\n| tool | bytes | tokens |\n|---|---|---|"
        );
        for (name, bytes) in &first.full.per_tool {
            let _ = writeln!(md, "| `{name}` | {bytes} | {} |", Sizes::tokens(*bytes));
        }
    }
    if let Some(session) = &results.session {
        let _ = writeln!(
            md,
            "\n## Per-turn CPU against history length\n\n\
             CPU is user + system time from `getrusage(RUSAGE_CHILDREN)` of a wrapper whose only child is \
             alcove, so it includes the shells of the Bash calls alcove waited for. The marginal cost of a \
             band of turns is the difference between sessions of the two lengths, divided by the turns added: \
             the median over the runs of each run's difference (in a run, sessions of every length run one \
             after another). Sessions run {} times each (three times the other figures' runs): a band is the \
             difference of two totals, each of which drifts by several per cent between runs.\n\n\
             | session | messages in the last request | CPU (median) | per turn in the band | peak RSS | wall per turn |\n|---|---|---|---|---|---|",
            session.runs
        );
        let mut previous: Option<&SessionPoint> = None;
        for point in &session.points {
            let band = previous
                .map(|prev| {
                    format!(
                        "{:.0} µs (turns {}–{})",
                        marginal_us(prev, point),
                        prev.turns + 1,
                        point.turns
                    )
                })
                .unwrap_or_else(|| "— (start-up and one answer)".to_owned());
            let wall = if point.turns > 1 {
                format!("{:.2} ms", point.turnaround_ms)
            } else {
                "—".to_owned()
            };
            let _ = writeln!(
                md,
                "| {} turn{} | {} | {:.1} ms | {band} | {:.1} MB | {wall} |",
                point.turns,
                if point.turns == 1 { "" } else { "s" },
                point.messages,
                point.cpu_ms,
                mb(point.rss_mib)
            );
            previous = Some(point);
        }
        let _ = writeln!(
            md,
            "\nOf the 50-turn session's CPU, {:.1} ms is the 12 Bash commands' own shells (measured by running \
             them directly with `bash -c`, same run); alcove's own share of a turn is correspondingly lower.",
            session.bash_cpu_ms
        );
    }
    if let Some(c) = &results.children {
        let _ = writeln!(
            md,
            "\n## Live children\n\nThe parent makes {} parallel `Agent` calls (`-c agents.max_parallel={}`); \
             each child makes two model requests answered after {} ms. The children's first requests arrived \
             within {:.0} ms of each other (worst run), less than the {} ms delay, so all were alive at once.",
            c.children, c.children, c.delay_ms, c.spread_ms, c.delay_ms
        );
    }
    if let Some(fan) = &results.fan_out {
        let _ = writeln!(
            md,
            "\n## Where fan-out time goes\n\nFrom the fake server's arrival times (medians): the parent's \
             delegating request → the first child's first request; the mean gap between a child's \
             consecutive requests beyond the scripted 200 ms; the last child's last answer → the \
             parent's next request. The last column is the same gap for N bare clients making their \
             requests at once, no alcove: what the machine and the fake server add at that width.\n\n\
             | N | total | over ideal | start | per child turn | end | per turn, N bare clients |\n|---|---|---|---|---|---|---|"
        );
        if let Some((solo, bare)) = results.solo_gap_ms {
            let _ = writeln!(
                md,
                "| no alcove: a bare client sends the 5 requests in turn | | | | +{bare:.1} ms | | |\n\
                 | no child: the main agent makes the 5 turns itself | | | | +{solo:.1} ms | | |"
            );
        }
        for f in fan {
            let _ = writeln!(
                md,
                "| {} | {:.0} ms | +{:.0} ms | {:.1} ms | +{:.1} ms | {:.1} ms | +{:.1} ms |",
                f.children,
                f.ms,
                f.ms - f.ideal_ms,
                f.start_ms,
                f.gap_ms,
                f.end_ms,
                f.bare_gap_ms
            );
        }
    }
    if let Some(e) = &results.economy {
        let _ = writeln!(
            md,
            "\n## Context economy\n\nThe child (an `explore` agent) read {} B of files, which reached its model as \
             {} B of tool results (line numbers added). The parent's request grew by {:.0} B across the \
             delegation: its `Agent` call and the child's report with the evidence footer.",
            e.file_bytes, e.child_result_bytes, e.parent_growth
        );
    }
    if let Some(Ok(figures)) = &results.grep {
        let _ = writeln!(
            md,
            "\n## Grep and rg found the same\n\n| pattern | mode | Grep: files, lines | rg: files, lines |\n|---|---|---|---|"
        );
        for g in figures {
            let _ = writeln!(
                md,
                "| `{}` | {} | {}, {} | {}, {} |",
                g.pattern, g.mode, g.alcove_found.0, g.alcove_found.1, g.rg_found.0, g.rg_found.1
            );
        }
    }
}

pub(super) fn references(md: &mut String, results: &Results) {
    let _ = writeln!(
        md,
        "\n## Against the reference figures\n\nThe issue's figures for the same kind of scripted task on this class \
         of machine: Codex CLI 0.24 s to first request, 143 MB peak RSS, 33 ms CPU per model turn; Claude Code \
         0.76 s, 212 MB, 50 ms; their 3-child fan-out with 1 s replies took 2.8–3.5 s against an ideal of 2 s \
         (1.40–1.75×).\n\n| figure | alcove | Codex CLI | Claude Code |\n|---|---|---|---|"
    );
    if let Some(s) = &results.startup {
        let _ = writeln!(
            md,
            "| to first request | {:.1} ms | 240 ms ({:.0}× alcove) | 760 ms ({:.0}× alcove) |",
            s.alcove_ms,
            240.0 / s.alcove_ms,
            760.0 / s.alcove_ms
        );
    }
    if let Some(session) = &results.session
        && let Some(last) = session.points.last()
    {
        let rss = mb(last.rss_mib);
        let _ = writeln!(
            md,
            "| peak RSS | {rss:.1} MB | 143 MB ({:.0}×) | 212 MB ({:.0}×) |",
            143.0 / rss,
            212.0 / rss
        );
        if let (Some(first), true) = (session.points.first(), session.points.len() > 1) {
            let per_turn = marginal_us(first, last) / 1000.0;
            let _ = writeln!(
                md,
                "| CPU per model turn | {per_turn:.2} ms | 33 ms ({:.0}×) | 50 ms ({:.0}×) |",
                33.0 / per_turn,
                50.0 / per_turn
            );
        }
    }
    if let Some(fan) = &results.fan_out
        && let Some(f) = fan.iter().find(|f| f.children == 4).or(fan.first())
    {
        let _ = writeln!(
            md,
            "| fan-out overhead over ideal | {:.3}× ({} children) | 1.40–1.75× (3 children) | 1.40–1.75× (3 children) |",
            f.ms / f.ideal_ms,
            f.children
        );
    }
}
