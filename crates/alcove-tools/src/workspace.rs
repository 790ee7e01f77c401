//! The workspace root and path resolution.
//!
//! Tools never consult the process's working directory: the model's paths are
//! resolved here, against the root the agent was started in. Two different
//! questions are answered: [`Workspace::resolve`] says *which* path the model
//! means (lexically, so it works for files that do not exist yet), and
//! [`Workspace::contains`] says whether that path really lies inside the root
//! once symlinks are followed — the question the permission gate asks.

use std::path::{Component, Path, PathBuf};

/// How many symlinks [`Workspace::contains`] follows before giving up, like
/// the kernel's `ELOOP` limit.
const MAX_SYMLINK_HOPS: u32 = 40;

/// The folder an agent works in. Relative paths resolve against its root.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Opens a workspace at `root`, which must exist.
    pub fn new(root: &Path) -> std::io::Result<Workspace> {
        Ok(Workspace {
            root: root.canonicalize()?,
        })
    }

    /// The canonical absolute root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path the model gave against the root, normalising `.` and `..`.
    ///
    /// Relative paths are joined to the root, absolute ones are kept. The
    /// normalisation is lexical (symlinks are not followed), so `a/link/..`
    /// becomes `a`; [`Workspace::contains`] is the symlink-aware check.
    pub fn resolve(&self, path: &str) -> PathBuf {
        self.resolve_path(Path::new(path))
    }

    /// [`Workspace::resolve`] for a path that is not (or may not be) UTF-8.
    pub fn resolve_path(&self, path: &Path) -> PathBuf {
        normalize(&self.root.join(path))
    }

    /// Whether `path` (absolute) lies inside the root once `..` and symlinks are resolved.
    ///
    /// A relative `path` is taken relative to the root. For a path that does
    /// not exist yet, the longest existing ancestor is canonicalised and the
    /// rest appended; a dangling symlink on the way is followed to where it
    /// points, since writing through it would create its target.
    pub fn contains(&self, path: &Path) -> bool {
        self.real_path(path).starts_with(&self.root)
    }

    /// Where a call on `path` really lands: `..` and symlinks resolved as in
    /// [`Workspace::contains`] (a relative `path` is taken relative to the root).
    pub fn real_path(&self, path: &Path) -> PathBuf {
        real_path(&self.root.join(path), 0)
    }

    /// The path as shown to the model and the user: relative to the root when
    /// it lies (lexically) inside it, absolute otherwise.
    pub fn display(&self, path: &Path) -> String {
        let path = normalize(&self.root.join(path));
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

/// Removes `.` and resolves `..` against the preceding component, without
/// touching the file system. `..` above the root stays at the root.
fn normalize(path: &Path) -> PathBuf {
    if is_normal(path) {
        return path.to_path_buf();
    }
    rebuild(path)
}

/// [`normalize`], one component at a time.
fn rebuild(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        push_lexically(&mut out, component);
    }
    out
}

/// Whether `path` is absolute and already as [`normalize`] leaves it: no
/// `.`, `..` or empty component (a doubled or trailing `/`). Most paths a
/// call names are, and rebuilding one component by component was a tenth
/// of a `Read` call's instructions in a wide fan-out (three a call).
fn is_normal(path: &Path) -> bool {
    let bytes = path.as_os_str().as_encoded_bytes();
    match bytes.split_first() {
        Some((b'/', rest)) if !rest.is_empty() => rest
            .split(|byte| *byte == b'/')
            .all(|part| !matches!(part, b"" | b"." | b"..")),
        _ => false,
    }
}

fn push_lexically(out: &mut PathBuf, component: Component<'_>) {
    match component {
        Component::CurDir => {}
        Component::ParentDir => match out.components().next_back() {
            Some(Component::Normal(_)) => {
                out.pop();
            }
            // `..` above the root is the root.
            Some(Component::RootDir | Component::Prefix(_)) => {}
            _ => out.push(".."),
        },
        other => out.push(other.as_os_str()),
    }
}

/// The path with every existing prefix canonicalised (symlinks and `..`
/// resolved by the file system) and the non-existent rest applied lexically.
fn real_path(path: &Path, hops: u32) -> PathBuf {
    let components: Vec<Component<'_>> = path.components().collect();
    for split in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        let resolved = match prefix.canonicalize() {
            Ok(canonical) => canonical,
            Err(_) => {
                let is_symlink = prefix
                    .symlink_metadata()
                    .map(|meta| meta.file_type().is_symlink())
                    .unwrap_or(false);
                if !is_symlink || hops >= MAX_SYMLINK_HOPS {
                    continue;
                }
                // A dangling symlink: follow it by hand, then go on from its target.
                let Ok(target) = std::fs::read_link(&prefix) else {
                    continue;
                };
                let base = prefix.parent().unwrap_or(Path::new("/"));
                let mut redirected = base.join(target);
                for component in &components[split..] {
                    redirected.push(component.as_os_str());
                }
                return real_path(&redirected, hops + 1);
            }
        };
        let mut out = resolved;
        for component in &components[split..] {
            push_lexically(&mut out, *component);
        }
        return out;
    }
    normalize(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, outside, ws)
    }

    #[test]
    fn new_canonicalises_the_root() {
        let (dir, _outside, _) = setup();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let ws = Workspace::new(&dir.path().join("sub/../sub/.")).unwrap();
        assert_eq!(ws.root(), dir.path().canonicalize().unwrap().join("sub"));
        assert!(Workspace::new(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn resolve_joins_and_normalises() {
        let (_dir, _outside, ws) = setup();
        let root = ws.root().to_path_buf();
        assert_eq!(ws.resolve("a/b.txt"), root.join("a/b.txt"));
        assert_eq!(ws.resolve("./a/./b/../c"), root.join("a/c"));
        assert_eq!(ws.resolve("../x"), root.parent().unwrap().join("x"));
        assert_eq!(ws.resolve("/etc/passwd"), PathBuf::from("/etc/passwd"));
        assert_eq!(ws.resolve("/../../etc"), PathBuf::from("/etc"));
        assert_eq!(ws.resolve(""), root);
        assert_eq!(ws.resolve("."), root);
    }

    #[test]
    fn a_path_taken_as_normal_is_what_rebuilding_it_gives() {
        for path in [
            "/a/b.txt", "/a/.b", "/a/b.", "/a/...", "/ä/ b", "/a\\b", "/a//b", "/a/./b", "/a/b/",
            "/a/b/..", "/a/b/.", "/", "//", "/..", "a/b", "./a", "",
        ] {
            let path = Path::new(path);
            assert_eq!(normalize(path), rebuild(path), "{}", path.display());
            if is_normal(path) {
                assert_eq!(rebuild(path), path, "{}", path.display());
            }
        }
        assert!(is_normal(Path::new("/tmp/ws/src/mod1.rs")));
        assert!(!is_normal(Path::new("/tmp/ws/src/../mod1.rs")));
        assert!(!is_normal(Path::new("src/mod1.rs")));
    }

    #[test]
    fn contains_plain_paths() {
        let (_dir, outside, ws) = setup();
        assert!(ws.contains(ws.root()));
        assert!(ws.contains(&ws.resolve("file.txt")));
        assert!(ws.contains(&ws.root().join("a/../b")));
        assert!(!ws.contains(&ws.resolve("../x")));
        assert!(!ws.contains(&ws.root().join("../x")));
        assert!(!ws.contains(&ws.root().join("a/../../x")));
        assert!(!ws.contains(Path::new("/etc/passwd")));
        assert!(!ws.contains(outside.path()));
        // Relative paths are taken relative to the root.
        assert!(ws.contains(Path::new("src/lib.rs")));
        assert!(!ws.contains(Path::new("../lib.rs")));
    }

    #[test]
    fn contains_non_existent_nested_file() {
        let (_dir, _outside, ws) = setup();
        std::fs::create_dir(ws.root().join("a")).unwrap();
        assert!(ws.contains(&ws.root().join("a/b/c/d.txt")));
        assert!(ws.contains(&ws.root().join("x/y/../z.txt")));
        assert!(!ws.contains(&ws.root().join("x/../../z.txt")));
    }

    #[test]
    fn contains_follows_symlinks() {
        let (_dir, outside, ws) = setup();
        let root = ws.root();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::fs::create_dir(root.join("inner")).unwrap();
        std::os::unix::fs::symlink(root.join("inner"), root.join("in")).unwrap();

        assert!(!ws.contains(&root.join("out")));
        assert!(!ws.contains(&root.join("out/new/file.txt")));
        assert!(ws.contains(&root.join("in/file.txt")));
        // `..` after a symlink is resolved physically: out/.. is outside's parent.
        assert!(!ws.contains(&root.join("out/../x")));
        assert!(ws.contains(&root.join("in/../x")));

        // A dangling symlink pointing outside: writing through it escapes.
        std::os::unix::fs::symlink(outside.path().join("nope"), root.join("dangling")).unwrap();
        assert!(!ws.contains(&root.join("dangling")));
        assert!(!ws.contains(&root.join("dangling/deeper.txt")));
        std::os::unix::fs::symlink("inner/not-yet", root.join("dangling-in")).unwrap();
        assert!(ws.contains(&root.join("dangling-in")));

        // A symlink loop does not hang.
        std::os::unix::fs::symlink(root.join("loop"), root.join("loop")).unwrap();
        let _ = ws.contains(&root.join("loop/x"));
    }

    #[test]
    fn display_is_relative_inside() {
        let (_dir, _outside, ws) = setup();
        assert_eq!(ws.display(&ws.resolve("a/b.txt")), "a/b.txt");
        assert_eq!(ws.display(ws.root()), ".");
        assert_eq!(ws.display(Path::new("/etc/hosts")), "/etc/hosts");
    }
}
