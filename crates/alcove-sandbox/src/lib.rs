//! Confinement for the commands alcove runs, with the kernel's own means.
//!
//! With the network off, a confined command is started by the session's
//! holder ([`shared_net`], [`held`]), in the session's network namespace;
//! otherwise it is started as `alcove-sandbox <policy> -- bash -c CMD`.
//! Either way the process that becomes the command applies the resource
//! [`limits`], the network namespace (the session's, or a fresh one of its
//! own, [`net`]) and a Landlock domain ([`fs_rules`]) to itself first: the
//! holder's child as [`holder`] says, the [`launcher`] (a small binary
//! installed beside alcove, or alcove itself re-executed as `alcove
//! __sandbox`) as it says. [`Confinement`] is the session's side: it resolves one agent's
//! [`SandboxScope`] and workspace into a [`LaunchPolicy`] and the argv that
//! starts it, probes off the start-up path whether the kernel can do it at
//! all ([`availability`]), and
//! explains a failure the sandbox or a limit probably caused.
//!
//! Not covered: connecting to a pathname Unix socket (Landlock ABI 9 and
//! later handle it; this crate asks for it, older kernels ignore it), and a
//! process count for root (the kernel exempts root from RLIMIT_NPROC).
#![deny(missing_docs)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

pub mod access;
pub mod availability;
mod cgroups;
mod fs_rules;
pub mod git_guard;
mod held;
mod holder;
pub mod launcher;
pub mod limits;
mod net;
pub mod policy;
pub mod shared_net;
mod spawn;

pub use access::AccessPolicy;
pub use availability::{Availability, Verdict};
pub use held::HeldChild;
pub use limits::ResourceLimits;
pub use policy::{LaunchPolicy, SandboxMode, SandboxScope};
pub use shared_net::NetworkHolder;

/// The session's settings for confining commands.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// The launcher: [`launcher::BINARY`] beside alcove, or alcove itself.
    pub launcher: PathBuf,
    /// Whether the launcher is alcove itself, which needs
    /// [`launcher::SUBCOMMAND`] first.
    launcher_is_alcove: bool,
    /// Paths commands may not read (`sandbox.deny_read`), absolute.
    pub deny_read: Vec<PathBuf>,
    /// Extra folders commands may write (`sandbox.writable_roots`), absolute.
    pub writable_roots: Vec<PathBuf>,
    /// With the network off, whether commands get a loopback of their own.
    pub allow_loopback: bool,
    /// Resource limits of each command.
    pub limits: ResourceLimits,
    /// Whether confined modes can run on this machine ([`Confinement::defer_probe`]).
    pub availability: Availability,
    /// The session's network namespace, set by the probe (`None` when it
    /// could not be made: each command then makes its own). Clones share it.
    network_holder: Arc<OnceLock<Option<NetworkHolder>>>,
}

/// The credential folders and files commands may not read by default,
/// relative to the home folder.
pub const DEFAULT_DENY_READ: [&str; 14] = [
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".docker",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".config/alcove",
];

/// How to start one confined command. Dropping it removes its private
/// temp folder.
#[derive(Debug)]
pub struct Launch {
    /// The program to run (the launcher).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables to set for the command.
    pub env: Vec<(String, PathBuf)>,
    private_tmp: Option<PathBuf>,
    /// Files git would read that were missing from the git folders when
    /// the command started ([`git_guard::plantable`]).
    plantable: Vec<PathBuf>,
    /// The session's holder, when the command joins its namespace: it can
    /// start the command itself ([`Launch::start_held`]).
    holder: Option<Arc<OnceLock<Option<NetworkHolder>>>>,
}

impl Launch {
    /// The policy the launcher is given (JSON), if this launch has one.
    fn policy(&self) -> Option<&str> {
        let skip = usize::from(
            self.args
                .first()
                .is_some_and(|arg| arg == launcher::SUBCOMMAND),
        );
        self.args.get(skip).and_then(|arg| arg.to_str())
    }

    /// Starts the command as a child of the session's holder, which
    /// applies the same policy the launcher would and saves the launcher's
    /// own start ([`held`]). `env` is the command's whole environment (the
    /// launch's own [`Launch::env`] is applied over it); `output` is the
    /// write end of the pipe its stdout and stderr both go to. `None` when
    /// this launch has no holder to go through (or its request is too
    /// large): run [`Launch::program`] instead.
    pub async fn start_held(
        &self,
        cwd: &Path,
        env: &[(OsString, OsString)],
        output: &std::os::fd::OwnedFd,
    ) -> Option<Result<HeldChild, String>> {
        let holder = self.holder.as_ref()?.get()?.as_ref()?;
        let policy = self.policy()?;
        let command = self.args.iter().position(|arg| arg == "--")? + 1;
        let argv: Vec<&std::ffi::OsStr> = self.args[command..]
            .iter()
            .map(OsString::as_os_str)
            .collect();
        let overridden =
            |name: &std::ffi::OsStr| self.env.iter().any(|(own, _)| name == own.as_str());
        let env: Vec<(&std::ffi::OsStr, &std::ffi::OsStr)> = env
            .iter()
            .filter(|(name, _)| !overridden(name))
            .map(|(name, value)| (name.as_os_str(), value.as_os_str()))
            .chain(
                self.env
                    .iter()
                    .map(|(name, value)| (std::ffi::OsStr::new(name), value.as_os_str())),
            )
            .collect();
        holder
            .spawner()
            .spawn(policy, cwd, &argv, &env, output)
            .await
    }
}

impl Launch {
    /// Removes what the command planted among the files git reads from the
    /// repository's git folder that no mount could guard (a new
    /// `.git/commondir`, [`git_guard::undo_plants`]); returns what it
    /// removed. Called when the command ends, and again on drop.
    pub fn undo_git_plants(&self) -> Vec<PathBuf> {
        git_guard::undo_plants(&self.plantable)
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        self.undo_git_plants();
        if let Some(dir) = self.private_tmp.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl Confinement {
    /// The settings with the defaults: credential folders under `home`
    /// unreadable, default limits. `alcove` is alcove's own binary: the
    /// small [`launcher::BINARY`] beside it launches when it is there (it
    /// starts in a fraction of the time), alcove itself when it is not.
    pub fn new(alcove: PathBuf, home: Option<&Path>) -> Confinement {
        let small = alcove.with_file_name(launcher::BINARY);
        let launcher_is_alcove = !small.is_file();
        Confinement {
            launcher: if launcher_is_alcove { alcove } else { small },
            launcher_is_alcove,
            deny_read: home
                .map(|home| DEFAULT_DENY_READ.iter().map(|p| home.join(p)).collect())
                .unwrap_or_default(),
            writable_roots: Vec::new(),
            allow_loopback: false,
            limits: ResourceLimits::default(),
            availability: Availability::default(),
            network_holder: Arc::default(),
        }
    }

    /// How to run `program args…` in `workspace` for an agent in `scope`;
    /// `None` when nothing needs applying (sandbox off, no limits). An error
    /// when the scope is confined but this machine cannot confine.
    pub fn launch(
        &self,
        scope: SandboxScope,
        workspace: &Path,
        program: &str,
        args: &[&str],
    ) -> Result<Option<Launch>, String> {
        if !scope.is_confined() && !self.limits.any() {
            return Ok(None);
        }
        if scope.is_confined()
            && let Err(reason) = self.availability.verdict()
        {
            return Err(format!(
                "Refused: commands run in the {} sandbox, which this machine cannot provide \
                 ({reason}). Nothing ran. The user can run alcove with --sandbox off to run \
                 commands unconfined.",
                scope.mode.as_str()
            ));
        }
        self.build_launch(scope, workspace, true, program, args)
            .map(Some)
    }

    /// The launch of `program args…`, whether or not this machine can do it;
    /// in the session's network namespace when `join` and the scope is
    /// confined without network (and the holder is up).
    fn build_launch(
        &self,
        scope: SandboxScope,
        workspace: &Path,
        join: bool,
        program: &str,
        args: &[&str],
    ) -> Result<Launch, String> {
        let mut private_tmp = None;
        let mut env = Vec::new();
        let guards = match scope.mode {
            SandboxMode::WorkspaceWrite => git_guard::git_guards(workspace),
            _ => Vec::new(),
        };
        let writable = match scope.mode {
            SandboxMode::Off => Vec::new(),
            SandboxMode::ReadOnly => {
                let dir = make_private_tmp()?;
                env.push(("TMPDIR".to_owned(), dir.clone()));
                private_tmp = Some(dir.clone());
                vec![dir]
            }
            SandboxMode::WorkspaceWrite => {
                access::workspace_write_folders(workspace, &self.writable_roots)
            }
        };
        let network_holder = (join && scope.is_confined() && !scope.network)
            .then(|| self.network_holder.get().and_then(Option::as_ref))
            .flatten()
            .map(NetworkHolder::pid);
        let plantable = git_guard::plantable(&guards);
        let policy = LaunchPolicy {
            mode: scope.mode,
            network: scope.network,
            allow_loopback: self.allow_loopback,
            writable,
            deny_read: self.deny_read.clone(),
            limits: self.limits,
            network_holder,
            guards,
        };
        let policy = serde_json::to_string(&policy).map_err(|err| err.to_string())?;
        let mut argv = self.launcher_args();
        argv.reserve(args.len() + 3);
        argv.extend([policy.into(), "--".into(), program.into()]);
        argv.extend(args.iter().map(OsString::from));
        Ok(Launch {
            program: self.launcher.clone(),
            args: argv,
            env,
            private_tmp,
            plantable,
            holder: network_holder.map(|_| self.network_holder.clone()),
        })
    }

    /// The read and write boundaries this session's settings draw, for
    /// alcove's own file tools: the same `deny_read` and writable folders
    /// its commands' Landlock domains are built from ([`access`]).
    pub fn access_policy(&self) -> AccessPolicy {
        AccessPolicy::new(&self.deny_read, &self.writable_roots)
    }

    /// Prepares finding out whether this machine can confine commands as
    /// configured: the probe runs when `availability.start()` or the first
    /// [`Confinement::launch`] asks (see [`availability`]).
    pub fn defer_probe(&mut self) {
        let probe = self.clone();
        self.availability = Availability::deferred(move || probe.probe());
    }

    /// The launcher's arguments before its own: alcove's subcommand when
    /// the launcher is alcove itself.
    fn launcher_args(&self) -> Vec<OsString> {
        if self.launcher_is_alcove {
            vec![launcher::SUBCOMMAND.into()]
        } else {
            Vec::new()
        }
    }

    /// Checks that this machine can confine commands as configured. The
    /// error says what is missing.
    ///
    /// It starts the session's network holder ([`shared_net`]) with the
    /// default scope's policy to prove: when it starts, commands
    /// can be confined and will join its namespace. Otherwise commands make
    /// their own namespaces, and the launcher is run once on `true` to find
    /// out whether they can and, if not, why.
    pub fn probe(&self) -> Verdict {
        let launch =
            self.build_launch(SandboxScope::default(), Path::new("/"), false, "true", &[])?;
        let holder = launch.policy().and_then(|check| {
            NetworkHolder::start(
                &self.launcher,
                &self.launcher_args(),
                self.allow_loopback,
                check,
            )
            .ok()
        });
        let verdict = match holder {
            Some(_) => Ok(()),
            None => run_probe(&launch),
        };
        let _ = self.network_holder.set(holder);
        verdict
    }

    /// A note for a failed command's result when the sandbox may be why.
    pub fn explain_denial(&self, scope: SandboxScope, output: &str) -> Option<String> {
        if !scope.is_confined() {
            return None;
        }
        if let Some(line) = output
            .lines()
            .find_map(|line| line.strip_prefix(launcher::FAILURE_PREFIX))
        {
            return Some(format!(
                "[sandbox] The sandbox could not be set up, so the command did not run: {line}"
            ));
        }
        let lower = output.to_ascii_lowercase();
        let fs = [
            "permission denied",
            "read-only file system",
            "operation not permitted",
        ]
        .iter()
        .any(|needle| lower.contains(needle));
        let net = !scope.network
            && [
                "network is unreachable",
                "could not resolve",
                "temporary failure in name resolution",
                "name or service not known",
                "connection refused",
                "couldn't connect",
                "failed to connect",
            ]
            .iter()
            .any(|needle| lower.contains(needle));
        if !fs && !net {
            return None;
        }
        let writes = match scope.mode {
            SandboxMode::ReadOnly => "may write nothing but its private temp folder".to_owned(),
            _ => "may write only in the workspace, its git folders, the temp folder and \
                  sandbox.writable_roots"
                .to_owned(),
        };
        let network = if scope.network {
            "has the network"
        } else {
            "has no network (sandbox.network = false)"
        };
        Some(format!(
            "[sandbox] This failure was probably caused by the sandbox, not by the command: it \
             ran in the {} sandbox, which {writes}, may not read sandbox.deny_read (credential \
             folders such as ~/.ssh), and {network}. If the command needs more, ask the user to \
             add the folder to sandbox.writable_roots, set sandbox.network = true, or run with \
             --sandbox off.",
            scope.mode.as_str()
        ))
    }
}

/// Runs the launcher once as `launch` says (on `true`): `Err` is what the
/// launcher said was missing.
fn run_probe(launch: &Launch) -> Verdict {
    let child = std::process::Command::new(&launch.program)
        .args(&launch.args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot run {}: {err}", launch.program.display()))?;
    let pid = child.id();
    let output = child
        .wait_with_output()
        .map_err(|err| format!("cannot run {}: {err}", launch.program.display()))?;
    limits::remove_cgroup(pid);
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let reason = stderr
        .lines()
        .find_map(|line| line.strip_prefix(launcher::FAILURE_PREFIX))
        .unwrap_or(stderr.trim());
    Err(reason.to_owned())
}

/// The git folders a commit in `workspace` writes: the nearest `.git` above
/// or in it, and for a worktree (a `.git` file) its own and the common one.
pub fn git_dirs(workspace: &Path) -> Vec<PathBuf> {
    let Some(dot_git) = workspace
        .ancestors()
        .map(|dir| dir.join(".git"))
        .find(|path| path.exists())
    else {
        return Vec::new();
    };
    if dot_git.is_dir() {
        return vec![dot_git];
    }
    let Ok(text) = std::fs::read_to_string(&dot_git) else {
        return Vec::new();
    };
    let Some(gitdir) = text.trim().strip_prefix("gitdir:") else {
        return Vec::new();
    };
    let base = dot_git.parent().unwrap_or(Path::new("/"));
    let gitdir = base.join(gitdir.trim());
    let mut dirs = vec![gitdir.clone()];
    if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir")) {
        dirs.push(gitdir.join(common.trim()));
    }
    dirs
}

fn make_private_tmp() -> Result<PathBuf, String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("alcove-ro-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|err| {
        format!(
            "cannot create a private temp folder {}: {err}",
            dir.display()
        )
    })?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktree_writes_its_own_and_the_common_git_folder() {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path().join("repo/.git");
        let own = common.join("worktrees/wt");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join("commondir"), "../..\n").unwrap();
        let tree = dir.path().join("wt");
        std::fs::create_dir_all(tree.join("src")).unwrap();
        std::fs::write(tree.join(".git"), format!("gitdir: {}\n", own.display())).unwrap();
        let dirs = git_dirs(&tree.join("src"));
        assert_eq!(dirs[0], own);
        assert_eq!(
            dirs[1].canonicalize().unwrap(),
            common.canonicalize().unwrap()
        );
    }

    #[test]
    fn off_without_limits_needs_no_launcher() {
        let mut confinement = Confinement::new(PathBuf::from("/alcove"), None);
        confinement.limits = ResourceLimits::NONE;
        let launch = confinement.launch(SandboxScope::OFF, Path::new("/w"), "bash", &["-c", "x"]);
        assert!(matches!(launch, Ok(None)));
        confinement.availability = Availability::known(Err("no Landlock".to_owned()));
        let refused = confinement
            .launch(SandboxScope::default(), Path::new("/w"), "bash", &[])
            .unwrap_err();
        assert!(refused.contains("no Landlock"), "{refused}");
    }

    #[test]
    fn the_small_launcher_beside_alcove_is_preferred_and_alcove_itself_is_the_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let alcove = dir.path().join("alcove");
        std::fs::write(&alcove, "").unwrap();
        let argv = |confinement: &Confinement| {
            let launch = confinement
                .launch(
                    SandboxScope::default(),
                    Path::new("/w"),
                    "bash",
                    &["-c", "x"],
                )
                .unwrap()
                .unwrap();
            (launch.program.clone(), launch.args.clone())
        };
        let (program, args) = argv(&Confinement::new(alcove.clone(), None));
        assert_eq!(program, alcove);
        assert_eq!(args[0], launcher::SUBCOMMAND);
        assert_eq!(args[2..], ["--", "bash", "-c", "x"]);

        let small = dir.path().join(launcher::BINARY);
        std::fs::write(&small, "").unwrap();
        let (program, args) = argv(&Confinement::new(alcove, None));
        assert_eq!(program, small);
        assert!(args[0].to_string_lossy().starts_with('{'), "{args:?}");
        assert_eq!(args[1..], ["--", "bash", "-c", "x"]);
    }
}
