//! A throwaway home and workspace for running the real `alcove` binary
//! against a [`FakeServer`], with an environment scrubbed of anything on the
//! developer's machine that could leak into a test (keys, base URLs, config
//! dirs, tracing, proxies).

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

use crate::server::FakeServer;

/// Variables removed from every command so the developer's setup cannot leak in.
const SCRUBBED: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "TRACE",
    "ALCOVE_TRACE",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// A temporary home dir and workspace dir, deleted when this is dropped.
#[derive(Debug)]
pub struct TestEnv {
    home: TempDir,
    workspace: TempDir,
}

impl Default for TestEnv {
    fn default() -> Self {
        TestEnv::new()
    }
}

impl TestEnv {
    /// Creates the two temporary directories. Panics if that fails.
    pub fn new() -> TestEnv {
        let make = |what: &str| match tempfile::Builder::new()
            .prefix(&format!("alcove-test-{what}-"))
            .tempdir()
        {
            Ok(dir) => dir,
            Err(e) => panic!("alcove-testkit: cannot create a temporary {what} dir: {e}"),
        };
        TestEnv {
            home: make("home"),
            workspace: make("workspace"),
        }
    }

    /// The temporary `ALCOVE_HOME`.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The temporary workspace, used as the current directory.
    pub fn workspace(&self) -> &Path {
        self.workspace.path()
    }

    /// The absolute path of `rel` inside the workspace.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.workspace().join(rel)
    }

    /// A command running `binary` in the workspace against `server` with the
    /// Anthropic protocol: `ALCOVE_HOME`, `ANTHROPIC_BASE_URL`,
    /// `ANTHROPIC_API_KEY=test-key`, `ALCOVE_MODEL=anthropic/fake-model`, and
    /// the developer's keys, base URLs, config dirs, tracing and proxies removed
    /// (`NO_PROXY` covers 127.0.0.1). The workspace is trusted
    /// (`ALCOVE_TRUST=1`, as `--trust`), so tests of its own settings see
    /// them apply; a test of an untrusted folder removes the variable.
    pub fn command(&self, binary: &Path, server: &FakeServer) -> Command {
        let mut cmd = Command::new(binary);
        cmd.current_dir(self.workspace())
            .env("ALCOVE_HOME", self.home())
            .env("ALCOVE_TRUST", "1")
            // Claude Code's user settings (`~/.claude`), whose permissions
            // alcove reads: the test home's, not the developer's.
            .env("CLAUDE_CONFIG_DIR", self.home().join(".claude"))
            .env("ANTHROPIC_BASE_URL", server.url())
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ALCOVE_MODEL", "anthropic/fake-model")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost");
        for var in SCRUBBED {
            cmd.env_remove(var);
        }
        cmd
    }

    /// Like [`TestEnv::command`] but for the OpenAI protocol: additionally sets
    /// `OPENAI_BASE_URL` to the server's `/v1` URL, `OPENAI_API_KEY=test-key`
    /// and `ALCOVE_MODEL=openai/fake-model`.
    pub fn command_openai(&self, binary: &Path, server: &FakeServer) -> Command {
        let mut cmd = self.command(binary, server);
        cmd.env("OPENAI_BASE_URL", server.openai_url())
            .env("OPENAI_API_KEY", "test-key")
            .env("ALCOVE_MODEL", "openai/fake-model");
        cmd
    }

    /// Writes `content` to `rel` in the workspace, creating parent dirs. Panics on failure.
    pub fn write_file(&self, rel: &str, content: &str) {
        let path = self.path(rel);
        if let Some(parent) = path.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            panic!("alcove-testkit: cannot create {}: {e}", parent.display());
        }
        if let Err(e) = std::fs::write(&path, content) {
            panic!("alcove-testkit: cannot write {}: {e}", path.display());
        }
    }

    /// Reads `rel` from the workspace. Panics with the path if it cannot be read.
    pub fn read_file(&self, rel: &str) -> String {
        let path = self.path(rel);
        match std::fs::read_to_string(&path) {
            Ok(s) => s,
            Err(e) => panic!("alcove-testkit: cannot read {}: {e}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Script;

    #[test]
    fn files_and_command() {
        let env = TestEnv::new();
        env.write_file("a/b/c.txt", "hi");
        assert_eq!(env.read_file("a/b/c.txt"), "hi");
        assert_ne!(env.home(), env.workspace());

        let server = FakeServer::start(Script::new());
        let cmd = env.command(Path::new("/bin/true"), &server);
        let envs: Vec<_> = cmd.get_envs().collect();
        let get = |k: &str| {
            envs.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()))
        };
        assert_eq!(get("ANTHROPIC_BASE_URL"), Some(Some(server.url())));
        assert_eq!(
            get("ALCOVE_MODEL"),
            Some(Some("anthropic/fake-model".into()))
        );
        assert_eq!(get("OPENAI_API_KEY"), Some(None));
        assert_eq!(get("XDG_CONFIG_HOME"), Some(None));
        assert_eq!(cmd.get_current_dir(), Some(env.workspace()));
        let ok = env
            .command(Path::new("/bin/true"), &server)
            .status()
            .map(|s| s.success());
        assert!(matches!(ok, Ok(true)));
    }
}
