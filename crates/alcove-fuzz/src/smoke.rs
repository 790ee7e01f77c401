//! The CI side of fuzzing: a deterministic input generator (fixed seed,
//! fastrand) that mutates a target's [seeds](crate::seeds) the way a fuzzer
//! would, and a driver that feeds a target those inputs for a bounded number
//! of inputs and time, and names the input that panicked.
//!
//! It is no substitute for libFuzzer's coverage guidance (run `fuzz/run`
//! for that); it keeps every entry exercised on every CI run, on the stable
//! toolchain, with nothing to install.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use crate::Target;
use crate::seeds;

/// How one smoke run went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// How many inputs the entry took.
    pub inputs: usize,
    /// Whether the time budget ended the run before the input count did.
    pub out_of_time: bool,
}

/// An input that made the entry panic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crash {
    /// Its position in the generated sequence.
    pub index: usize,
    /// The input.
    pub input: Vec<u8>,
    /// The panic's message.
    pub message: String,
}

impl std::fmt::Display for Crash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "input #{} panicked: {}\ninput (as a Rust byte string, for a regression test): b\"{}\"",
            self.index,
            self.message,
            self.input.escape_ascii()
        )
    }
}

/// Feeds `target` the generated inputs of `seed`, at most `max_inputs` of
/// them and for at most `budget`, and stops at the first panic.
pub fn run(
    target: &Target,
    seed: u64,
    max_inputs: usize,
    budget: Duration,
) -> Result<Report, Crash> {
    let started = Instant::now();
    let mut generator = Generator::new(target.name, seed);
    for index in 0..max_inputs {
        if started.elapsed() >= budget {
            return Ok(Report {
                inputs: index,
                out_of_time: true,
            });
        }
        let input = generator.next_input();
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| (target.entry)(&input))) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "(a panic without a message)".to_owned());
            return Err(Crash {
                index,
                input,
                message,
            });
        }
    }
    Ok(Report {
        inputs: max_inputs,
        out_of_time: false,
    })
}

/// The input sequence of one target: its seeds as they are, then mutants
/// of them (most), random bytes and strings of dictionary tokens.
pub struct Generator {
    rng: fastrand::Rng,
    seeds: Vec<Vec<u8>>,
    dictionary: &'static [&'static str],
    emitted: usize,
}

impl Generator {
    /// The generator for the target `name`, seeded with `seed`.
    pub fn new(name: &str, seed: u64) -> Generator {
        Generator {
            rng: fastrand::Rng::with_seed(seed),
            seeds: seeds::inputs(name),
            dictionary: seeds::dictionary(name),
            emitted: 0,
        }
    }

    /// The next input.
    pub fn next_input(&mut self) -> Vec<u8> {
        self.emitted += 1;
        if let Some(seed) = self.seeds.get(self.emitted - 1) {
            return seed.clone();
        }
        match self.rng.u8(0..20) {
            0 => {
                let len = self.rng.usize(0..256);
                std::iter::repeat_with(|| self.rng.u8(..))
                    .take(len)
                    .collect()
            }
            1 => {
                let mut out = Vec::new();
                for _ in 0..self.rng.usize(1..24) {
                    out.extend_from_slice(self.token());
                }
                out
            }
            _ => {
                let mut input = self.pick_seed();
                for _ in 0..self.rng.usize(1..=6) {
                    self.mutate(&mut input);
                }
                input
            }
        }
    }

    fn pick_seed(&mut self) -> Vec<u8> {
        if self.seeds.is_empty() {
            return Vec::new();
        }
        let at = self.rng.usize(..self.seeds.len());
        self.seeds[at].clone()
    }

    fn token(&mut self) -> &'static [u8] {
        if self.dictionary.is_empty() || self.rng.u8(0..8) == 0 {
            let extremes = seeds::extremes();
            return extremes[self.rng.usize(..extremes.len())].as_bytes();
        }
        self.dictionary[self.rng.usize(..self.dictionary.len())].as_bytes()
    }

    fn mutate(&mut self, input: &mut Vec<u8>) {
        let len = input.len();
        let at = self.rng.usize(0..=len);
        match self.rng.u8(0..10) {
            // Flip a bit.
            0 if len > 0 => input[at.min(len - 1)] ^= 1 << self.rng.u8(0..8),
            // Overwrite a byte with one that matters to these grammars.
            1 if len > 0 => {
                const SPECIAL: &[u8] = b"\0\n\r \t:\"'{}[]()\\*/$`|&;#-0";
                input[at.min(len - 1)] = SPECIAL[self.rng.usize(..SPECIAL.len())];
            }
            // Delete a range.
            2 | 3 if len > 0 => {
                let end = self.rng.usize(at.min(len)..=len.min(at + 32));
                input.drain(at.min(len)..end);
            }
            // Duplicate a range.
            4 if len > 0 => {
                let start = self.rng.usize(..len);
                let end = self.rng.usize(start..=len.min(start + 64));
                let piece = input[start..end].to_vec();
                input.splice(at..at, piece);
            }
            // Splice in the tail of another seed.
            5 => {
                let other = self.pick_seed();
                let from = self.rng.usize(0..=other.len());
                input.truncate(at);
                input.extend_from_slice(&other[from..]);
            }
            // Swap a run of digits for an extreme number.
            6 => {
                let digits = input[at..]
                    .iter()
                    .position(u8::is_ascii_digit)
                    .map(|n| at + n)
                    .or_else(|| input.iter().position(u8::is_ascii_digit));
                let extremes = seeds::extremes();
                let number = extremes[self.rng.usize(..extremes.len())].as_bytes();
                match digits {
                    Some(start) => {
                        let end = input[start..]
                            .iter()
                            .position(|b| !b.is_ascii_digit())
                            .map_or(input.len(), |n| start + n);
                        input.splice(start..end, number.iter().copied());
                    }
                    None => {
                        input.splice(at..at, number.iter().copied());
                    }
                }
            }
            // Cut the end off.
            7 => input.truncate(at),
            // Insert a dictionary token.
            _ => {
                let token = self.token();
                input.splice(at..at, token.iter().copied());
            }
        }
    }
}
