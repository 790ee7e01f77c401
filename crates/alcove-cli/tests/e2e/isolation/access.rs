//! One access policy (issue 35): `sandbox.deny_read` and the sandbox's
//! writable folders bind alcove's own file tools as they bind commands, in
//! every permission mode.
//!
//! The matrix runs every file tool and Bash (reading and writing) against a
//! file inside the workspace, one outside everything the sandbox lets
//! commands write, one in a `deny_read` folder and a link inside the
//! workspace into that folder, in `default`, `acceptEdits` and
//! `bypassPermissions`, and checks each cell against [`expected`], which is
//! the policy's rules written down, not what alcove printed.

use std::path::{Path, PathBuf};

use alcove_testkit::{Block, Script, Step};
use serde_json::json;

use super::bash;
use super::sandbox::outside_dir;
use crate::support::{exec_command, finish, setup};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Read,
    Glob,
    Grep,
    Write,
    Edit,
    BashRead,
    BashWrite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Inside,
    Outside,
    Denied,
    LinkIntoDenied,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// The call ran and did what it was asked.
    Done,
    /// The call was refused and did nothing.
    Refused,
    /// The call needs the user's approval (refused headless, no one to ask).
    NeedsApproval,
    /// Neither: an error with an effect, or a denied file's text shown.
    Broken,
}

const TOOLS: [Tool; 7] = [
    Tool::Read,
    Tool::Glob,
    Tool::Grep,
    Tool::BashRead,
    Tool::Write,
    Tool::Edit,
    Tool::BashWrite,
];
const TARGETS: [Target; 4] = [
    Target::Inside,
    Target::Outside,
    Target::Denied,
    Target::LinkIntoDenied,
];
const MODES: [&str; 3] = ["default", "acceptEdits", "bypassPermissions"];

/// The policy's rules: reads everywhere but `deny_read` (named or reached
/// through a link); writes only where the sandbox lets commands write,
/// and for the file tools within the workspace, as the mode allows edits
/// (`default` asks); sandboxed commands need no approval in any mode.
fn expected(tool: Tool, target: Target, mode: &str) -> Answer {
    let readable = matches!(target, Target::Inside | Target::Outside);
    let writable = target == Target::Inside;
    match tool {
        Tool::Read | Tool::Glob | Tool::Grep | Tool::BashRead if readable => Answer::Done,
        Tool::Read | Tool::Glob | Tool::Grep | Tool::BashRead => Answer::Refused,
        Tool::Write | Tool::Edit if !writable => Answer::Refused,
        Tool::Write | Tool::Edit if mode == "default" => Answer::NeedsApproval,
        Tool::Write | Tool::Edit => Answer::Done,
        Tool::BashWrite if writable => Answer::Done,
        Tool::BashWrite => Answer::Refused,
    }
}

/// The files of one run: the workspace's, a folder outside every writable
/// one, and the denied folder.
struct Places {
    outside: tempfile::TempDir,
    secret: tempfile::TempDir,
}

impl Places {
    fn new() -> Places {
        let places = Places {
            outside: outside_dir(),
            secret: outside_dir(),
        };
        std::fs::write(
            places.outside.path().join("out.txt"),
            "OUTSIDE-TEXT untouched\n",
        )
        .unwrap();
        std::fs::write(places.secret.path().join("key"), "SECRET-TEXT untouched\n").unwrap();
        places
    }

    /// The workspace's file and its links into the denied folder.
    fn fill(&self, workspace: &Path) {
        std::fs::write(workspace.join("in.txt"), "INSIDE-TEXT untouched\n").unwrap();
        std::os::unix::fs::symlink(self.secret.path().join("key"), workspace.join("link")).unwrap();
        std::os::unix::fs::symlink(self.secret.path(), workspace.join("linkdir")).unwrap();
    }

    /// The file a call reads or edits.
    fn file(&self, target: Target) -> String {
        match target {
            Target::Inside => "in.txt".to_owned(),
            Target::Outside => path(&self.outside.path().join("out.txt")),
            Target::Denied => path(&self.secret.path().join("key")),
            Target::LinkIntoDenied => "link".to_owned(),
        }
    }

    /// The folder a search walks.
    fn dir(&self, target: Target) -> String {
        match target {
            Target::Inside => ".".to_owned(),
            Target::Outside => path(self.outside.path()),
            Target::Denied => path(self.secret.path()),
            Target::LinkIntoDenied => "linkdir".to_owned(),
        }
    }

    /// The file a call creates (or, through the link, overwrites).
    fn new_file(&self, target: Target, tool: Tool) -> String {
        let name = format!("new-{tool:?}.txt");
        match target {
            Target::Inside => name,
            Target::Outside => path(&self.outside.path().join(name)),
            Target::Denied => path(&self.secret.path().join(name)),
            Target::LinkIntoDenied => "link".to_owned(),
        }
    }

    fn call(&self, tool: Tool, target: Target) -> Block {
        match tool {
            Tool::Read => Block::tool_call("Read", json!({"file_path": self.file(target)})),
            Tool::Glob => {
                Block::tool_call("Glob", json!({"pattern": "*", "path": self.dir(target)}))
            }
            Tool::Grep => Block::tool_call(
                "Grep",
                json!({"pattern": "TEXT", "path": self.dir(target), "output_mode": "content"}),
            ),
            Tool::BashRead => bash(&format!("cat '{}'", self.file(target))),
            Tool::Write => Block::tool_call(
                "Write",
                json!({"file_path": self.new_file(target, tool), "content": "WRITTEN\n"}),
            ),
            Tool::Edit => Block::tool_call(
                "Edit",
                json!({"file_path": self.file(target), "old_string": "untouched", "new_string": "edited"}),
            ),
            Tool::BashWrite => bash(&format!("echo WRITTEN > '{}'", self.new_file(target, tool))),
        }
    }

    /// Where the call's effect would show: the file it would have written.
    fn written(&self, workspace: &Path, tool: Tool, target: Target) -> PathBuf {
        let named = match tool {
            Tool::Edit => self.file(target),
            _ => self.new_file(target, tool),
        };
        workspace.join(named)
    }
}

fn path(path: &Path) -> String {
    path.display().to_string()
}

/// What the call's result and the files say happened.
fn answer(
    places: &Places,
    workspace: &Path,
    tool: Tool,
    target: Target,
    (content, is_error): (&str, bool),
) -> Answer {
    let leaked = content.contains("SECRET-TEXT");
    let reads = matches!(tool, Tool::Read | Tool::Glob | Tool::Grep | Tool::BashRead);
    let effect = if reads {
        // A search of the folder lists or shows its file; a read shows it.
        let marker = match (tool, target) {
            (Tool::Glob, Target::Inside) => "in.txt",
            (Tool::Glob, Target::Outside) => "out.txt",
            (Tool::Glob, _) => "key",
            (_, Target::Inside) => "INSIDE-TEXT",
            (_, Target::Outside) => "OUTSIDE-TEXT",
            _ => "SECRET-TEXT",
        };
        content.contains(marker)
    } else {
        let file = places.written(workspace, tool, target);
        std::fs::read_to_string(&file)
            .is_ok_and(|text| text.contains("WRITTEN") || text.contains("edited"))
    };
    match (is_error, effect) {
        (false, true) if !leaked || target == Target::Inside => Answer::Done,
        (true, false) if content.contains("needs approval") => Answer::NeedsApproval,
        (true, false) if !leaked => Answer::Refused,
        _ => Answer::Broken,
    }
}

#[test]
fn every_file_tool_and_bash_gets_one_answer_per_place_in_every_mode() {
    let mut failures = Vec::new();
    for mode in MODES {
        let prompt = format!("access matrix in {mode}");
        let places = Places::new();
        let cells: Vec<(Tool, Target)> = TOOLS
            .iter()
            .flat_map(|tool| TARGETS.iter().map(move |target| (*tool, *target)))
            .collect();
        let calls = cells
            .iter()
            .map(|(tool, target)| places.call(*tool, *target))
            .collect();
        let (env, server) = setup(
            Script::new().conversation(&prompt, vec![Step::reply(calls), Step::text("done")]),
        );
        places.fill(env.workspace());
        let deny = format!("sandbox.deny_read=[\"{}\"]", path(places.secret.path()));
        let out = finish(
            exec_command(
                &env,
                &server,
                &["-c", &deny, "--permission-mode", mode, &prompt],
            )
            .spawn()
            .unwrap(),
        );
        assert_eq!(out.code, 0, "{mode}: {}", out.stderr);
        let results = server.requests_for(&prompt)[1].tool_results();
        assert_eq!(results.len(), cells.len());
        for ((tool, target), (_, content, is_error)) in cells.iter().zip(&results) {
            let got = answer(
                &places,
                env.workspace(),
                *tool,
                *target,
                (content, *is_error),
            );
            let want = expected(*tool, *target, mode);
            if got != want {
                failures.push(format!(
                    "{mode} {tool:?} × {target:?}: want {want:?}, got {got:?}: {content}"
                ));
            }
        }
        assert_eq!(
            std::fs::read_to_string(places.secret.path().join("key")).unwrap(),
            "SECRET-TEXT untouched\n",
            "{mode}: the denied file changed"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn read_and_grep_of_the_default_credential_folders_are_refused_in_every_mode() {
    for mode in [
        "default",
        "acceptEdits",
        "bypassPermissions",
        "dontAsk",
        "plan",
    ] {
        let prompt = format!("read the key in {mode}");
        let home = tempfile::tempdir().unwrap();
        let ssh = home.path().join(".ssh");
        std::fs::create_dir(&ssh).unwrap();
        std::fs::write(ssh.join("id_x"), "PRIVATE-KEY-TEXT\n").unwrap();
        let (env, server) = setup(Script::new().conversation(
            &prompt,
            vec![
                Step::reply(vec![
                    Block::tool_call("Read", json!({"file_path": path(&ssh.join("id_x"))})),
                    Block::tool_call(
                        "Grep",
                        json!({"pattern": "PRIVATE", "path": path(&ssh), "output_mode": "content"}),
                    ),
                ]),
                Step::text("done"),
            ],
        ));
        let out = finish(
            exec_command(&env, &server, &["--permission-mode", mode, &prompt])
                .env("HOME", home.path())
                .spawn()
                .unwrap(),
        );
        assert_eq!(out.code, 0, "{mode}: {}", out.stderr);
        let results = server.requests_for(&prompt)[1].tool_results();
        for (_, content, _) in &results {
            assert!(
                !content.contains("PRIVATE-KEY-TEXT"),
                "{mode}: the key reached the model: {content}"
            );
        }
        assert_eq!(results.len(), 2);
        for (_, content, is_error) in &results {
            assert!(
                *is_error && content.contains("sandbox.deny_read"),
                "{mode}: {content}"
            );
        }
    }
}
