//! Helpers shared by the tool tests: a workspace in a temp dir and a context.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use alcove_protocol::AgentPath;
use alcove_tools::{Tool, ToolContext, ToolOutput, Workspace};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub(crate) struct Env {
    _dir: tempfile::TempDir,
    pub(crate) context: ToolContext,
}

impl Env {
    pub(crate) fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Arc::new(Workspace::new(dir.path()).unwrap());
        let context = ToolContext {
            workspace,
            cancel: CancellationToken::new(),
            agent: AgentPath::main(),
            depth: 0,
            call_id: "call-1".to_owned(),
            hidden: Default::default(),
            sandbox: Default::default(),
            result_room: usize::MAX,
            background: None,
        };
        Env { _dir: dir, context }
    }

    pub(crate) fn root(&self) -> &Path {
        self.context.workspace.root()
    }

    /// Writes a file below the root, creating folders.
    pub(crate) fn file(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Sets a file's mtime to `secs` seconds after the epoch plus a base.
    pub(crate) fn touch(&self, rel: &str, secs: u64) {
        let file = std::fs::File::options()
            .write(true)
            .open(self.root().join(rel))
            .unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000 + secs))
            .unwrap();
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root().join(rel)).unwrap()
    }

    /// Calls as dispatch does: the arguments are prepared once, and the
    /// prepared call (its input checked, its paths resolved) runs.
    pub(crate) async fn call(&self, tool: &dyn Tool, input: Value) -> ToolOutput {
        match tool.prepare(&input, &self.context.workspace) {
            Ok(prepared) => prepared.run(&self.context, &()).await,
            Err(reason) => ToolOutput::error(reason),
        }
    }

    /// Calls and expects success, returning the text.
    pub(crate) async fn ok(&self, tool: &dyn Tool, input: Value) -> String {
        let out = self.call(tool, input.clone()).await;
        assert!(!out.is_error, "{input} failed: {}", out.content);
        out.content
    }

    /// Calls and expects failure, returning the reason.
    pub(crate) async fn err(&self, tool: &dyn Tool, input: Value) -> String {
        let out = self.call(tool, input.clone()).await;
        assert!(out.is_error, "{input} should have failed: {}", out.content);
        out.content
    }
}
