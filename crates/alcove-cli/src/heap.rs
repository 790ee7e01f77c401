//! How the C allocator keeps the memory alcove frees: kept, up to a bound.
//!
//! glibc's malloc gives the top of a heap back to the kernel once more than
//! `M_TRIM_THRESHOLD` of it is free, and serves a large block with a fresh
//! `mmap`. Left to its defaults, it does both with the one allocation every
//! turn makes anew: the request body, which grows with the history. Each
//! turn then faulted the body's pages in again, about seven page faults a
//! turn in the 50-turn session (bench/notes.md, point 33). Raising both
//! bounds keeps those pages. A freed block is reused before its heap grows,
//! so one heap's peak does not move; but each thread that allocates gets a
//! heap of its own, and each may now keep up to [`TRIM_THRESHOLD`] free at
//! its top. The measured peaks did not rise (BENCHMARKS.md before and
//! after: the 50-turn session 8.9 → 8.5 MB, 16 children at once 10.2 →
//! 10.1 MB, a 1,000-task batch 17.2 → 16.1 MB). Setting the bounds also
//! ends glibc's own adjusting of them.

/// Blocks up to this size come from the heap, not from a mapping of their own.
const MMAP_THRESHOLD: i32 = 8 << 20;
/// Free memory at the top of a heap kept before it is given back.
const TRIM_THRESHOLD: i32 = 16 << 20;

/// Sets the allocator's bounds. Call it first thing in `main`, before any
/// thread starts: mallopt changes state every thread's allocations read.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn keep_freed_memory() {
    use nix::libc::{M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, mallopt};
    // SAFETY: mallopt only sets two of malloc's parameters; it is called
    // before any other thread exists, and a refusal (0) leaves the defaults.
    unsafe {
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}

/// Other C libraries keep their own defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn keep_freed_memory() {}
