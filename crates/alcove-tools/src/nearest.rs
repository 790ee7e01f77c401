//! "File does not exist" that says where to look next.
//!
//! A small model that asks for `src/config.py` when the file is
//! `config.py` at the root, and is told only that the path does not exist,
//! guesses the content instead of looking (issue 39). So the error names
//! the workspace's files with the same name — or, failing that, the same
//! stem — found by a short walk that skips what Glob skips (ignored and
//! hidden files, paths a Read deny rule covers).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::{HiddenPaths, ToolContext};

/// Entries the walk looks at, at most: the error must come quickly.
const MAX_ENTRIES: usize = 20_000;
/// Paths named, at most.
const MAX_NAMED: usize = 5;

/// The error for `path`, which does not exist: it names the workspace's
/// files of the same name (or stem) when there are any, else says how to
/// look for one.
pub(crate) async fn missing_file(context: &ToolContext, path: &Path) -> String {
    let shown = context.workspace.display(path);
    let root = context.workspace.root().to_path_buf();
    let hidden = context.hidden.clone();
    let wanted = path.to_path_buf();
    let found = tokio::task::spawn_blocking(move || nearest(&root, &wanted, &hidden))
        .await
        .unwrap_or_default();
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| shown.clone());
    if found.is_empty() {
        let stem = Path::new(&name)
            .file_stem()
            .map_or(name.clone(), |stem| stem.to_string_lossy().into_owned());
        return format!(
            "File does not exist: {shown}. No file named {name} is in the workspace; look for it with Glob (e.g. \"**/*{stem}*\")."
        );
    }
    let named: Vec<String> = found
        .iter()
        .map(|found| context.workspace.display(found))
        .collect();
    format!(
        "File does not exist: {shown}. Did you mean {}? Call again with one of these paths.",
        named.join(", ")
    )
}

/// Files under `root` named like `wanted` (the same name first, then the
/// same stem), nearest to it first.
fn nearest(root: &Path, wanted: &Path, hidden: &HiddenPaths) -> Vec<PathBuf> {
    let Some(name) = wanted.file_name() else {
        return Vec::new();
    };
    let stem = Path::new(name).file_stem().unwrap_or(name);
    let hidden = hidden.clone();
    let walker = ignore::WalkBuilder::new(root)
        .require_git(false)
        .filter_entry(move |entry| !hidden.hides_entry(entry))
        .build();
    let mut same_name = Vec::new();
    let mut same_stem = Vec::new();
    for entry in walker.take(MAX_ENTRIES).flatten() {
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        let path = entry.path();
        if eq_ignore_case(path.file_name(), name) {
            same_name.push(path.to_path_buf());
        } else if eq_ignore_case(path.file_stem(), stem) {
            same_stem.push(path.to_path_buf());
        }
    }
    let mut found = if same_name.is_empty() {
        same_stem
    } else {
        same_name
    };
    // Nearest first: the most trailing components shared with the path
    // asked for, then the shortest.
    found.sort_by_key(|path| {
        let shared = path
            .components()
            .rev()
            .zip(wanted.components().rev())
            .take_while(|(a, b)| a == b)
            .count();
        (
            std::cmp::Reverse(shared),
            path.components().count(),
            path.clone(),
        )
    });
    found.truncate(MAX_NAMED);
    found
}

fn eq_ignore_case(name: Option<&OsStr>, wanted: &OsStr) -> bool {
    name.is_some_and(|name| name.eq_ignore_ascii_case(wanted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_name_anywhere_comes_before_the_same_stem() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            "config.py",
            "tests/config.py",
            "app/config.yaml",
            "app/main.py",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let found = nearest(root, &root.join("src/config.py"), &HiddenPaths::default());
        assert_eq!(
            found,
            vec![root.join("config.py"), root.join("tests/config.py")]
        );
        let found = nearest(root, &root.join("config.yml"), &HiddenPaths::default());
        assert_eq!(
            found,
            vec![
                root.join("config.py"),
                root.join("app/config.yaml"),
                root.join("tests/config.py")
            ]
        );
        assert!(nearest(root, &root.join("nothing.rs"), &HiddenPaths::default()).is_empty());
    }
}
