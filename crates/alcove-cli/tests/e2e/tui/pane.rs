//! One tmux server (on its own socket) with one 80×24 pane running the
//! real `alcove`: keys sent with `send-keys`, the screen read with
//! `capture-pane`, polled with a deadline for what a test expects.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use alcove_testkit::{FakeServer, TestEnv};

use crate::support::alcove;

/// How long any one thing may take to appear.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

/// One tmux server (on its own socket) with one 80×24 pane running alcove.
pub(crate) struct Pane {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    exit_file: PathBuf,
}

impl Pane {
    pub(crate) fn start(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Pane {
        Pane::start_without(env, server, args, &[])
    }

    /// [`Pane::start`] with the variables `removed` taken out of alcove's
    /// environment.
    pub(crate) fn start_without(
        env: &TestEnv,
        server: &FakeServer,
        args: &[&str],
        removed: &[&str],
    ) -> Pane {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("tmux.sock");
        let conf = dir.path().join("tmux.conf");
        std::fs::write(
            &conf,
            "set -g remain-on-exit on\nset -g history-limit 5000\nset -g status off\n",
        )
        .unwrap();
        let mut base = env.command(alcove(), server);
        for var in removed {
            base.env_remove(var);
        }
        let mut tmux = Command::new("tmux");
        for (key, value) in base.get_envs() {
            match value {
                Some(value) => tmux.env(key, value),
                None => tmux.env_remove(key),
            };
        }
        tmux.env("TERM", "xterm-256color").env_remove("NO_COLOR");
        // The shell records alcove's exit status in a file: tmux may mark
        // the pane dead before it has reaped the process and learnt it.
        let exit_file = dir.path().join("exit-status");
        let mut line = quote(alcove());
        for arg in args {
            line.push(' ');
            line.push_str(&quote(Path::new(arg)));
        }
        line.push_str(&format!("; echo $? > {}", quote(&exit_file)));
        let status = tmux
            .arg("-S")
            .arg(&socket)
            .arg("-f")
            .arg(&conf)
            .args(["new-session", "-d", "-s", "t", "-x", "80", "-y", "24", "-c"])
            .arg(env.workspace())
            .arg(line)
            .status()
            .expect("tmux must be installed for the UI tests (.ci/run installs it)");
        assert!(status.success(), "tmux new-session failed");
        Pane {
            _dir: dir,
            socket,
            exit_file,
        }
    }

    pub(crate) fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The screen and its scrollback.
    pub(crate) fn capture(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-t", "t", "-S", "-"])
    }

    /// The visible screen only.
    pub(crate) fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "t"])
    }

    pub(crate) fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let text = self.capture();
            if text.contains(needle) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{needle:?} never appeared; the pane shows:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn wait_for_screen(&self, needle: &str) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let text = self.screen();
            if text.contains(needle) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{needle:?} never appeared on screen; it shows:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "t", "-l", text]);
    }

    pub(crate) fn key(&self, key: &str) {
        self.tmux(&["send-keys", "-t", "t", key]);
    }

    /// Types a prompt and sends it.
    pub(crate) fn prompt(&self, text: &str) {
        self.type_text(text);
        self.wait_for_screen(text);
        self.key("Enter");
    }

    /// Waits for alcove to exit; returns its exit status.
    pub(crate) fn wait_exit(&self) -> i32 {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let status = std::fs::read_to_string(&self.exit_file).unwrap_or_default();
            if status.ends_with('\n') {
                return status.trim().parse().unwrap();
            }
            assert!(
                Instant::now() < deadline,
                "alcove did not exit; the pane shows:\n{}",
                self.capture()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// The pid a command wrote (waiting for the whole line).
pub(crate) fn read_pid(path: &Path) -> u32 {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Ok(pid) = std::fs::read_to_string(path)
            .unwrap_or_default()
            .trim()
            .parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// A config whose stalls are not retried while the test looks at them.
pub(crate) fn patient(env: &TestEnv) {
    std::fs::write(
        env.home().join("config.toml"),
        "[retry]\nbase_delay_ms = 10\nmax_delay_ms = 3000\nidle_timeout_ms = 120000\n",
    )
    .unwrap();
}
