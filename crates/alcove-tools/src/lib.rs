//! The [`Tool`] trait, and the built-in tools every alcove agent starts with.
//!
//! A tool is a named capability the model may call. The agent loop (in
//! `alcove-core`) owns the one dispatch path — lookup, argument validation,
//! permission gate, hooks, call, result — and talks to every tool, built-in or
//! not (the `Agent` tool, MCP tools later), only through this trait.
//!
//! Built-ins use the parameter names models are trained on (Claude Code's):
//! [`Read`], [`Write`], [`Edit`], [`Glob`], [`Grep`] (ripgrep's own crates)
//! [`Bash`] (its own process group, killed on timeout or cancel; with
//! `run_in_background`, watched until [`KillShell`] or its agent's end,
//! read with [`BashOutput`]) and [`TodoWrite`] (the agent's plan).
//!
//! Tools never look at the process's working directory: every relative path
//! resolves against the [`Workspace`] root they are given.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use alcove_protocol::Effects;
pub use alcove_protocol::ToolSpec;
use alcove_protocol::{AgentPath, Schema};
use serde::de::DeserializeOwned;
#[doc(hidden)]
pub use serde_json::Value as JsonValue;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

mod background;
mod bash;
mod bash_output;
mod capture;
mod edit;
mod env_policy;
mod file_source;
mod glob;
mod grep;
pub mod image;
mod kill_shell;
mod nearest;
mod process_group;
mod read;
mod schema;
mod started_command;
mod todo_write;
mod tool;
mod untrusted;
mod workspace;
mod write;

pub use alcove_sandbox::{AccessPolicy, Confinement, ResourceLimits, SandboxMode, SandboxScope};
pub use background::{
    BackgroundInfo, BackgroundLimits, BackgroundScope, BackgroundShells, DEFAULT_MAX_RUNNING,
    DEFAULT_OUTPUT_BYTES, Emit,
};
pub use bash::Bash;
pub use bash_output::{BASH_OUTPUT, BashOutput};
pub use edit::Edit;
pub use env_policy::{
    EnvPolicy, MIN_SECRET_CHARS, is_sensitive_env, is_sensitive_env_name, secret_values,
    url_password,
};
pub use file_source::FileSource;
pub use glob::Glob;
pub use grep::Grep;
pub use image::Image;
pub use kill_shell::{KILL_SHELL, KillShell};
pub use process_group::{ProcessGroup, adopt_orphans, end_children};
pub use read::Read;
pub use todo_write::{TODO_WRITE, TodoWrite, parse_todos};
pub use tool::{Prepared, PreparedCall, ScopedCall, ScopedTool, Tool, TypedTool};
pub use untrusted::{FRAME_END, frame_untrusted};
pub use workspace::Workspace;
pub use write::Write;

/// What a call can do to the world, which is what the permission gate decides on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Only reads files or state.
    ReadOnly,
    /// Creates or changes files (Write, Edit).
    Edit,
    /// Runs arbitrary commands or has effects the harness cannot see (Bash).
    Execute,
    /// Delegates to a child agent, whose own calls are gated one by one.
    Delegate,
    /// Reaches the network from alcove itself (WebFetch): asked unless a
    /// rule allows it; in plan mode only an allow rule lets it run.
    Network,
}

/// What one validated call intends to do, for the permission layer, hooks and
/// approval prompts.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// One line saying what the call does (`src/main.rs`, `cargo test`, …).
    pub summary: String,
    /// The absolute paths the call reads or writes, resolved against the workspace.
    pub paths: Vec<PathBuf>,
    /// The shell command, for Bash-like tools.
    pub command: Option<String>,
}

impl Invocation {
    /// A call on one file: the path the model gave, resolved against the workspace.
    pub fn file(workspace: &Workspace, file_path: &str) -> Invocation {
        Invocation::of_file(workspace, workspace.resolve(file_path))
    }

    /// A call on the one file at `path`, already resolved.
    pub fn of_file(workspace: &Workspace, path: PathBuf) -> Invocation {
        Invocation {
            summary: workspace.display(&path),
            paths: vec![path],
            command: None,
        }
    }
}

/// A one-file call's validated input with its path resolved once, by
/// `inspect`: the path the gate checked is the path the call uses.
#[derive(Debug)]
pub struct FileCall<T> {
    /// The tool's input.
    pub input: T,
    /// `file_path` resolved against the workspace.
    pub path: PathBuf,
}

impl<T> FileCall<T> {
    /// `file_path` (`input`'s) resolved, and the invocation naming it.
    pub fn resolve(workspace: &Workspace, file_path: &str, input: T) -> (Invocation, FileCall<T>) {
        let path = workspace.resolve(file_path);
        (
            Invocation::of_file(workspace, path.clone()),
            FileCall { input, path },
        )
    }
}

/// The result of a call: the text the model reads, and what the call did
/// as data (the evidence footer and the UI read `effects`, never the text).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text.
    pub content: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// What the call did: files read and written, exit code, bytes.
    pub effects: Effects,
    /// Images the model is shown with the text (Read of an image, an MCP
    /// tool's image results), each within the APIs' limits (`image.rs`).
    pub images: Box<[Image]>,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: false,
            effects: Effects::default(),
            images: Box::default(),
        }
    }

    /// A failed result; the text says why, for the model to adapt.
    pub fn error(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: true,
            effects: Effects::default(),
            images: Box::default(),
        }
    }

    /// The same result with `images` to show.
    pub fn with_images(mut self, images: Vec<Image>) -> ToolOutput {
        self.images = images.into_boxed_slice();
        self
    }

    /// The same result with `effects` recorded.
    pub fn with_effects(mut self, effects: Effects) -> ToolOutput {
        self.effects = effects;
        self
    }
}

/// What a call runs with. Shared state is held by reference.
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace every relative path resolves against.
    pub workspace: Arc<Workspace>,
    /// Cancelled when the call must stop (user interrupt, parent cancelled,
    /// deadline). Long-running tools must watch it and clean up.
    pub cancel: CancellationToken,
    /// The agent making the call.
    pub agent: AgentPath,
    /// Its depth in the delegation tree (the main agent is 0).
    pub depth: u32,
    /// The model's id for this call.
    pub call_id: String,
    /// Paths the call must not reveal (those a `Read(...)` deny rule covers):
    /// searches skip them, so a search from the root cannot read around a rule.
    pub hidden: HiddenPaths,
    /// The sandbox the calling agent's commands run in.
    pub sandbox: SandboxScope,
    /// About how many bytes of result text still fit in the model's context
    /// window for this call (the reply's calls share what is left). A tool
    /// that can show less fits itself to it (Read shows fewer lines and
    /// says how to read on); dispatch cuts any longer result.
    pub result_room: usize,
    /// The session's background commands and an event emitter for the
    /// calling agent, lent only to tools that [`Tool::uses_background`].
    pub background: Option<BackgroundScope>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("agent", &self.agent)
            .field("depth", &self.depth)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

/// A test for paths a call must not reveal; empty hides nothing.
#[derive(Clone, Default)]
pub struct HiddenPaths(Option<Arc<PathTest>>);

/// A yes/no question about a path, and its file type when a walk knows it
/// (`None`: one path named by a call, judged in full).
type PathTest = dyn Fn(&Path, Option<std::fs::FileType>) -> bool + Send + Sync;

impl HiddenPaths {
    /// Hides the paths for which `hides` returns true.
    pub fn new(
        hides: impl Fn(&Path, Option<std::fs::FileType>) -> bool + Send + Sync + 'static,
    ) -> HiddenPaths {
        HiddenPaths(Some(Arc::new(hides)))
    }

    /// Whether `path`, a file a call names, must not be revealed (by its
    /// name, where it leads, or which file it is).
    pub fn hides(&self, path: &Path) -> bool {
        self.0.as_ref().is_some_and(|hides| hides(path, None))
    }

    /// Whether the walked entry `entry` must not be revealed: a link is
    /// judged by where it leads, a file with several hard links by which
    /// file it is.
    pub fn hides_entry(&self, entry: &ignore::DirEntry) -> bool {
        self.0
            .as_ref()
            .is_some_and(|hides| match entry.file_type() {
                Some(kind) => hides(entry.path(), Some(kind)),
                None => hides(entry.path(), None),
            })
    }
}

impl std::fmt::Debug for HiddenPaths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "HiddenPaths(filter)"
        } else {
            "HiddenPaths(none)"
        })
    }
}

/// Deserializes a tool's arguments, turning serde's complaint into a reason
/// the model can act on. The reason names the offending field
/// (`invalid arguments for Read: offset: invalid type: string "x", expected u64`),
/// which serde alone does not do for type errors.
pub fn parse_input<T: DeserializeOwned>(tool: &str, input: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize(input).map_err(|err| {
        let path = err.path().to_string();
        if path == "." {
            format!("invalid arguments for {tool}: {}", err.inner())
        } else {
            format!("invalid arguments for {tool}: {path}: {}", err.inner())
        }
    })
}

/// The [`ToolSpec`] of a tool whose arguments are the type `$input`; its
/// schema is the calling crate's `schemas/$input.json`.
///
/// Deriving the lean schemas at start was two fifths of the instructions
/// before alcove's first request (bench/notes.md, issue 16), so they are
/// derived when the code is tested instead: a debug build checks the file
/// against the type each time it builds the spec and stops on a stale one;
/// `ALCOVE_BLESS_SCHEMAS=1 cargo test` writes the files anew.
#[macro_export]
macro_rules! tool_spec {
    ($input:ident, $name:expr, $description:expr $(,)?) => {
        $crate::kept_spec::<$input>(
            $name,
            $description,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/schemas/",
                stringify!($input),
                ".json"
            )),
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/schemas/",
                stringify!($input),
                ".json"
            ),
        )
    };
}

/// What [`tool_spec!`] expands to: the spec with the schema text `kept`,
/// read from `path`.
#[cfg_attr(not(debug_assertions), allow(unused_variables))]
pub fn kept_spec<T: schemars::JsonSchema>(
    name: &str,
    description: &str,
    kept: &str,
    path: &str,
) -> ToolSpec {
    #[cfg(debug_assertions)]
    schema::check_kept::<T>(kept, path);
    let input_schema =
        Schema::from_json(kept).unwrap_or_else(|| Schema::from(schema::lean_schema_of::<T>()));
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema,
    }
}

/// The built-in tools, in the order they are offered to the model.
pub fn builtin_tools<Caller: ?Sized + Sync>() -> Vec<Arc<dyn Tool<Caller>>> {
    builtin_tools_with_env(EnvPolicy::default())
}

/// [`builtin_tools`] whose `Bash` follows `env` for its commands' environment.
pub fn builtin_tools_with_env<Caller: ?Sized + Sync>(env: EnvPolicy) -> Vec<Arc<dyn Tool<Caller>>> {
    builtin_tools_confined(env, None, None)
}

/// [`builtin_tools_with_env`] whose `Bash` runs every command through the
/// sandbox launcher when `confinement` is given, and whose `Read` shows a
/// text file as `file_source` holds it (an editor's buffer) when it does.
pub fn builtin_tools_confined<Caller: ?Sized + Sync>(
    env: EnvPolicy,
    confinement: Option<Arc<Confinement>>,
    file_source: Option<Arc<dyn FileSource>>,
) -> Vec<Arc<dyn Tool<Caller>>> {
    let bash = Bash::with_env_policy(env);
    let bash = match confinement {
        Some(confinement) => bash.confined(confinement),
        None => bash,
    };
    let read = match file_source {
        Some(source) => Read::reading_from(source),
        None => Read::default(),
    };
    vec![
        Arc::new(read),
        Arc::new(Glob::default()),
        Arc::new(Grep::default()),
        Arc::new(Write::default()),
        Arc::new(Edit::default()),
        Arc::new(bash),
        Arc::new(BashOutput::default()),
        Arc::new(KillShell::default()),
        Arc::new(TodoWrite::default()),
    ]
}

/// What `input` would make `tool` do, or why it is refused: the invocation
/// of [`Tool::prepare`], for callers that only look (tests, listings).
pub fn inspect(
    tool: &dyn Tool,
    input: &Value,
    workspace: &Workspace,
) -> Result<Invocation, String> {
    tool.prepare(input, workspace)
        .map(|prepared| prepared.invocation)
}
