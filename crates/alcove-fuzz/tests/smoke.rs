//! The fuzz smoke test CI runs: every fuzz target's entry fed up to ten thousand
//! generated inputs (its seeds, mutants of them, random bytes) from a fixed
//! seed, each target within a time budget, asserting that none panics. The
//! same entries are the cargo-fuzz targets in `fuzz/`, run longer by hand.
//!
//! A failure prints the input as a byte string: paste it into a regression
//! test next to the parser, fix the parser, and keep the test.

use std::time::{Duration, Instant};

use alcove_fuzz::{TARGETS, Target, smoke};

/// The generator's seed: fixed, so every run tries the same inputs.
const SEED: u64 = 0x00a1_c07e;
/// Inputs per target (all but `permission_rules`, the slowest, take them
/// in 0.3–2.5 s on a 2-core machine; it takes about 5000 in its budget).
const INPUTS: usize = 10_000;
/// Wall-clock budget per target (the whole smoke test stays within a minute
/// of CI's time on a 2-core machine even when the budget is what ends it).
const BUDGET: Duration = Duration::from_secs(8);

fn smoke(name: &str) {
    let Some(target) = TARGETS.iter().find(|t| t.name == name) else {
        panic!("no fuzz target named {name}");
    };
    let started = Instant::now();
    match smoke::run(target, SEED, INPUTS, BUDGET) {
        Ok(report) => eprintln!(
            "fuzz smoke {name}: {} inputs in {:.1?}{}",
            report.inputs,
            started.elapsed(),
            if report.out_of_time {
                " (time budget reached)"
            } else {
                ""
            }
        ),
        Err(crash) => panic!("fuzz smoke {name}: {crash}"),
    }
}

#[test]
fn sse_anthropic() {
    smoke("sse_anthropic");
}

#[test]
fn sse_openai() {
    smoke("sse_openai");
}

#[test]
fn sse_responses() {
    smoke("sse_responses");
}

#[test]
fn tool_arguments() {
    smoke("tool_arguments");
}

#[test]
fn agent_definition() {
    smoke("agent_definition");
}

#[test]
fn permission_rules() {
    smoke("permission_rules");
}

#[test]
fn shell_split() {
    smoke("shell_split");
}

#[test]
fn every_target_has_a_smoke_test_and_seeds() {
    let tested = [
        "sse_anthropic",
        "sse_openai",
        "sse_responses",
        "tool_arguments",
        "agent_definition",
        "permission_rules",
        "shell_split",
    ];
    let names: Vec<&str> = TARGETS.iter().map(|t: &Target| t.name).collect();
    assert_eq!(names, tested);
    for name in names {
        assert!(!alcove_fuzz::seeds::inputs(name).is_empty(), "{name}");
        assert!(!alcove_fuzz::seeds::dictionary(name).is_empty(), "{name}");
    }
}

#[test]
fn the_generator_is_deterministic() {
    let mut a = smoke::Generator::new("permission_rules", SEED);
    let mut b = smoke::Generator::new("permission_rules", SEED);
    for _ in 0..200 {
        assert_eq!(a.next_input(), b.next_input());
    }
}
