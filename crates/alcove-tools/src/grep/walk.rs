//! Walking the searched tree and searching each file on the way.
//!
//! Most searches an agent makes are of a project's own few hundred files or
//! fewer. The parallel walker starts its threads anew for every search (two
//! thread starts and ends a call on two cores, more than the walk of a
//! small tree), so a search first walks on the calling thread, up to
//! [`SMALL_TREE`]'s entries or time, whichever comes first; a tree found
//! to be larger (or files found to be large) is walked again from the
//! start in parallel, and what the first walk found is dropped, so a large
//! search loses at most that much. Both walks see the
//! same entries (one builder makes both), and the hits are sorted
//! afterwards, so which one answered does not show in the output, except
//! in a search that stops early at [`MAX_COLLECTED_BYTES`]: which files
//! made it in then depends on the walk's order, as it always did with
//! threads.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::{DirEntry, WalkBuilder, WalkState};
use tokio_util::sync::CancellationToken;

use super::{HitSink, MAX_COLLECTED_BYTES, OutputMode, Plan};
use crate::{HiddenPaths, Workspace};

/// How far a walk on the calling thread goes before it gives up.
#[derive(Clone, Copy)]
struct Budget {
    /// Entries (files and folders) walked.
    entries: usize,
    /// Time since the walk began: fewer entries can still be large files.
    time: Duration,
}

/// What a search walks on its own thread before it takes the tree for a
/// large one and walks it in parallel instead.
const SMALL_TREE: Budget = Budget {
    entries: 256,
    time: Duration::from_millis(2),
};

/// What one file contributed.
pub(super) struct FileHits {
    path: PathBuf,
    /// Formatted output lines (content mode only).
    pub(super) lines: Vec<String>,
    /// Matching lines (count mode only).
    pub(super) count: usize,
    modified: SystemTime,
}

pub(super) struct Found {
    pub(super) files: Vec<FileHits>,
    /// Whether the search stopped before the end because too much was collected.
    pub(super) stopped_early: bool,
}

/// The walker's threads: the machine's CPUs (at most 12, as ripgrep
/// chooses), found once. Left to the walker, every search asks again, and
/// asking reads three cgroup files.
fn walker_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .min(12)
    })
}

/// What every file's search shares: the plan, where hits are shown from,
/// when to stop.
struct Visit<'a> {
    plan: &'a Plan,
    workspace: &'a Workspace,
    cancel: &'a CancellationToken,
    collected: AtomicUsize,
    stopped_early: AtomicBool,
}

impl<'a> Visit<'a> {
    /// A visit of no file yet.
    fn new(plan: &'a Plan, workspace: &'a Workspace, cancel: &'a CancellationToken) -> Self {
        Visit {
            plan,
            workspace,
            cancel,
            collected: AtomicUsize::new(0),
            stopped_early: AtomicBool::new(false),
        }
    }

    /// Searches one walked entry; `deliver` takes its hits and says whether
    /// to go on.
    fn entry(
        &self,
        entry: Result<DirEntry, ignore::Error>,
        searcher: &mut Option<Searcher>,
        deliver: &mut dyn FnMut(FileHits) -> bool,
    ) -> WalkState {
        if self.cancel.is_cancelled() || self.stopped_early.load(Ordering::Relaxed) {
            return WalkState::Quit;
        }
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        let path = entry.path();
        let is_file = match entry.file_type() {
            Some(kind) => kind.is_file() || (kind.is_symlink() && path.is_file()),
            None => path.is_file(),
        };
        if !is_file {
            return WalkState::Continue;
        }
        let plan = self.plan;
        let shown = self.workspace.display(path);
        let mut sink = HitSink::new(plan, &shown);
        // Made at the first file: each holds a 64 KiB buffer to zero, and
        // in a small tree some walker threads never get a file.
        let searcher = searcher.get_or_insert_with(|| {
            SearcherBuilder::new()
                .line_number(true)
                .multi_line(plan.multiline)
                .before_context(plan.before)
                .after_context(plan.after)
                .binary_detection(BinaryDetection::quit(0))
                .build()
        });
        let searched = searcher.search_path(&plan.matcher, path, &mut sink);
        if searched.is_err() || sink.binary || !sink.matched {
            return WalkState::Continue;
        }
        let size = sink.bytes + shown.len();
        if self.collected.fetch_add(size, Ordering::Relaxed) + size > MAX_COLLECTED_BYTES {
            self.stopped_early.store(true, Ordering::Relaxed);
        }
        let modified = entry.metadata().ok().and_then(|meta| meta.modified().ok());
        let hits = FileHits {
            path: path.to_path_buf(),
            lines: sink.lines,
            count: sink.count,
            modified: modified.unwrap_or(SystemTime::UNIX_EPOCH),
        };
        if deliver(hits) {
            WalkState::Continue
        } else {
            WalkState::Quit
        }
    }

    /// The hits and whether the search stopped early. With one thread, the
    /// walk is on this one, and with a `budget` it gives up (`None`) once
    /// the budget is spent.
    fn walk(
        self,
        walker: &WalkBuilder,
        threads: usize,
        budget: Option<Budget>,
    ) -> Option<(Vec<FileHits>, bool)> {
        let mut files = Vec::new();
        if threads == 1 {
            let mut searcher = None;
            let started = Instant::now();
            for (seen, entry) in walker.build().enumerate() {
                if budget.is_some_and(|budget| {
                    seen >= budget.entries || started.elapsed() >= budget.time
                }) {
                    return None;
                }
                let mut keep = |hits| {
                    files.push(hits);
                    true
                };
                if let WalkState::Quit = self.entry(entry, &mut searcher, &mut keep) {
                    break;
                }
            }
        } else {
            let mut walker = walker.clone();
            walker.threads(threads);
            let (tx, rx) = std::sync::mpsc::channel::<FileHits>();
            let visit = &self;
            walker.build_parallel().run(|| {
                let tx = tx.clone();
                let mut searcher = None;
                Box::new(move |entry| {
                    visit.entry(entry, &mut searcher, &mut |hits| tx.send(hits).is_ok())
                })
            });
            drop(tx);
            files = rx.into_iter().collect();
        }
        Some((files, self.stopped_early.load(Ordering::Relaxed)))
    }
}

/// Searches every file under `plan.path`.
pub(super) fn search(
    plan: &Plan,
    workspace: &Arc<Workspace>,
    cancel: &CancellationToken,
    hidden: &HiddenPaths,
) -> Found {
    let walker = builder(plan, hidden);
    let visit =
        |threads, budget| Visit::new(plan, workspace, cancel).walk(&walker, threads, budget);
    // With one CPU, the walk on this thread is the only one and goes on.
    let threads = walker_threads();
    let (mut files, stopped_early) = match visit(1, (threads > 1).then_some(SMALL_TREE)) {
        Some(found) => found,
        None => visit(threads, None).unwrap_or_default(),
    };
    if plan.mode == OutputMode::FilesWithMatches {
        // Newest first, as Claude Code does; the path breaks ties.
        files.sort_by(|a, b| {
            b.modified
                .cmp(&a.modified)
                .then_with(|| a.path.cmp(&b.path))
        });
    } else {
        files.sort_by(|a, b| a.path.cmp(&b.path));
    }
    Found {
        files,
        stopped_early,
    }
}

/// The walk of `plan.path`: ignore files, hidden paths, globs and types.
fn builder(plan: &Plan, hidden: &HiddenPaths) -> WalkBuilder {
    let mut walker = WalkBuilder::new(&plan.path);
    // Honour .gitignore even when the workspace is not a git repository.
    walker.require_git(false);
    // Folders and files a Read deny rule covers are not searched (nor entered).
    let hidden = hidden.clone();
    walker.filter_entry(move |entry| !hidden.hides_entry(entry));
    if let Some(overrides) = &plan.overrides {
        walker.overrides(overrides.clone());
    }
    if let Some(types) = &plan.types {
        walker.types(types.clone());
    }
    walker
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree of `files` one-line files under `dir`, every tenth holding "needle".
    fn tree(dir: &std::path::Path, files: usize) {
        for n in 0..files {
            let text = if n % 10 == 0 { "needle\n" } else { "hay\n" };
            let folder = dir.join(format!("d{}", n / 50));
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join(format!("f{n}.txt")), text).unwrap();
        }
    }

    fn walk_alone(dir: &std::path::Path, budget: Budget) -> Option<usize> {
        let workspace = Workspace::new(dir).unwrap();
        let input = serde_json::from_value(serde_json::json!({"pattern": "needle"})).unwrap();
        let plan = super::super::plan(&input, &workspace).unwrap();
        let cancel = CancellationToken::new();
        let walker = builder(&plan, &HiddenPaths::default());
        Visit::new(&plan, &workspace, &cancel)
            .walk(&walker, 1, Some(budget))
            .map(|(files, _)| files.len())
    }

    #[test]
    fn a_walk_on_the_calling_thread_gives_up_past_its_entries_or_its_time() {
        // Time is not what these trees test (a debug build is slow).
        let entries = Budget {
            time: Duration::from_secs(3600),
            ..SMALL_TREE
        };
        let small = tempfile::tempdir().unwrap();
        tree(small.path(), 40);
        assert_eq!(walk_alone(small.path(), entries), Some(4));
        let large = tempfile::tempdir().unwrap();
        tree(large.path(), SMALL_TREE.entries + 50);
        assert_eq!(walk_alone(large.path(), entries), None);
        // No time at all: even the small tree is given up.
        let no_time = Budget {
            time: Duration::ZERO,
            ..SMALL_TREE
        };
        assert_eq!(walk_alone(small.path(), no_time), None);
    }
}
