//! A git worktree per writing child: parallel writers, merge and conflicts,
//! nothing left when nothing changed, the parent's uncommitted state, and
//! cleanup after a kill.

use std::time::{Duration, Instant};

use alcove_testkit::{Block, Script, Step};
use serde_json::json;

use super::{git, init_repo};
use crate::support::{alcove, exec, exec_command, setup};

fn alcove_branches(dir: &std::path::Path) -> Vec<String> {
    git(
        dir,
        &["branch", "--list", "alcove/*", "--format=%(refname:short)"],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

fn worktree_call(prompt: &str) -> Block {
    Block::tool_call(
        "Agent",
        json!({"description": prompt, "prompt": prompt, "isolation": "worktree"}),
    )
}

#[test]
fn parallel_children_write_the_same_file_in_their_own_worktrees_and_merging_both_reports_the_conflict()
 {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "two writers",
                vec![
                    Step::reply(vec![worktree_call("WRITER one"), worktree_call("WRITER two")]),
                    Step::text("both done"),
                ],
            )
            .conversation(
                "WRITER one",
                vec![
                    Step::tool_call("Read", json!({"file_path": "shared.txt"})),
                    Step::tool_call(
                        "Edit",
                        json!({"file_path": "shared.txt", "old_string": "base", "new_string": "one"}),
                    ),
                    Step::text("one done"),
                ],
            )
            .conversation(
                "WRITER two",
                vec![
                    Step::tool_call("Read", json!({"file_path": "shared.txt"})),
                    Step::tool_call(
                        "Edit",
                        json!({"file_path": "shared.txt", "old_string": "base", "new_string": "two"}),
                    ),
                    Step::text("two done"),
                ],
            ),
    );
    env.write_file("shared.txt", "base\n");
    init_repo(env.workspace());
    let out = exec(
        &env,
        &server,
        &["--permission-mode", "acceptEdits", "two writers"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The main tree is untouched until a merge.
    assert_eq!(env.read_file("shared.txt"), "base\n");
    let branches = alcove_branches(env.workspace());
    assert_eq!(branches.len(), 2, "{branches:?}");
    let results = crate::support::results_but_loads(&server.requests_for("two writers")[1]);
    for (_, content, is_error) in &results {
        assert!(!is_error, "{content}");
        assert!(
            content.contains("[alcove worktree] branch: alcove/"),
            "{content}"
        );
        assert!(content.contains("shared.txt (+1 −1)"), "{content}");
    }
    let mut contents: Vec<String> = branches
        .iter()
        .map(|branch| git(env.workspace(), &["show", &format!("{branch}:shared.txt")]))
        .collect();
    contents.sort();
    assert_eq!(contents, ["one\n", "two\n"]);
    // The first merge applies; the second conflicts and names the file.
    let merge = |branch: &str| {
        env.command(alcove(), &server)
            .args(["merge", branch])
            .output()
            .unwrap()
    };
    let first = merge(&branches[0]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let second = merge(&branches[1]);
    assert_eq!(second.status.code(), Some(1));
    let said = String::from_utf8_lossy(&second.stdout);
    assert!(
        said.contains("conflicts") && said.contains("shared.txt"),
        "{said}"
    );
    assert!(env.read_file("shared.txt").contains("<<<<<<<"));
}

#[test]
fn a_child_sees_the_parents_uncommitted_files_and_leaves_nothing_when_it_changes_nothing() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "look only",
                vec![
                    Step::reply(vec![worktree_call("READER child")]),
                    Step::text("done"),
                ],
            )
            .conversation(
                "READER child",
                vec![
                    Step::reply(vec![
                        Block::tool_call("Read", json!({"file_path": "notes.txt"})),
                        Block::tool_call("Read", json!({"file_path": "tracked.txt"})),
                    ]),
                    Step::text("read them"),
                ],
            ),
    );
    env.write_file("tracked.txt", "committed\n");
    init_repo(env.workspace());
    env.write_file("tracked.txt", "changed but not committed\n");
    env.write_file("notes.txt", "untracked notes\n");
    let out = exec(&env, &server, &["look only"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = crate::support::results_but_loads(&server.requests_for("READER child")[1]);
    assert!(results[0].1.contains("untracked notes"), "{results:?}");
    assert!(
        results[1].1.contains("changed but not committed"),
        "{results:?}"
    );
    let report = &crate::support::results_but_loads(&server.requests_for("look only")[1])[0].1;
    assert!(
        report.contains("no changes: the worktree and its branch were removed"),
        "{report}"
    );
    assert!(alcove_branches(env.workspace()).is_empty());
    let trees = git(env.workspace(), &["worktree", "list"]);
    assert_eq!(trees.lines().count(), 1, "{trees}");
    // The user's index is untouched: the change is still unstaged.
    let status = git(env.workspace(), &["status", "--porcelain"]);
    assert!(
        status.contains(" M tracked.txt") && status.contains("?? notes.txt"),
        "{status}"
    );
}

#[test]
fn outside_a_git_repository_worktree_isolation_is_a_clear_error() {
    let (env, server) = setup(Script::new().conversation(
        "no repo",
        vec![
            Step::reply(vec![worktree_call("ANY child")]),
            Step::text("done"),
        ],
    ));
    let out = exec(&env, &server, &["no repo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, content, is_error) =
        crate::support::results_but_loads(&server.requests_for("no repo")[1]).remove(0);
    assert!(
        is_error && content.contains("needs a git repository"),
        "{content}"
    );
}

#[test]
fn a_worktree_left_by_a_killed_session_is_found_and_cleaned() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "crash me",
                vec![
                    Step::reply(vec![worktree_call("SLOW child")]),
                    Step::text("done"),
                ],
            )
            .conversation(
                "SLOW child",
                vec![
                    Step::tool_call(
                        "Bash",
                        json!({"command": "echo started > marker.txt; sleep 20"}),
                    ),
                    Step::text("slept"),
                ],
            ),
    );
    env.write_file("a.txt", "a\n");
    init_repo(env.workspace());
    let mut child = exec_command(&env, &server, &["crash me"]).spawn().unwrap();
    let worktrees = env.path(".git/alcove/worktrees");
    let deadline = Instant::now() + Duration::from_secs(30);
    let marker = loop {
        let found = std::fs::read_dir(&worktrees)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path().join("marker.txt"))
            .find(|marker| marker.exists());
        if let Some(marker) = found {
            break marker;
        }
        assert!(
            Instant::now() < deadline,
            "the child's worktree never appeared"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    child.kill().unwrap(); // SIGKILL: nothing gets to clean up.
    child.wait().unwrap();
    assert!(marker.exists());
    // The next session says so at start.
    let next = exec(&env, &server, &["crash me"]);
    assert!(
        next.stderr.contains("alcove worktrees --clean"),
        "{}",
        next.stderr
    );
    let listed = env
        .command(alcove(), &server)
        .arg("worktrees")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&listed.stdout);
    assert!(said.contains("worktree left at"), "{said}");
    let cleaned = env
        .command(alcove(), &server)
        .args(["worktrees", "--clean"])
        .output()
        .unwrap();
    assert!(
        cleaned.status.success(),
        "{}",
        String::from_utf8_lossy(&cleaned.stderr)
    );
    assert!(!marker.exists());
    assert!(alcove_branches(env.workspace()).is_empty());
    let trees = git(env.workspace(), &["worktree", "list"]);
    assert_eq!(trees.lines().count(), 1, "{trees}");
}

#[test]
fn a_spawned_child_commits_each_submission_on_its_branch_and_close_removes_its_worktree() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "spawn a writer",
                vec![
                    crate::support::load_deferred(),
                    Step::tool_call(
                        "spawn_agent",
                        json!({"message": "SPAWNED writer", "isolation": "worktree"}),
                    ),
                    Step::tool_call("wait", json!({"ids": ["agent-1"], "timeout_ms": 10_000})),
                    Step::tool_call("close_agent", json!({"id": "agent-1"})),
                    Step::text("done"),
                ],
            )
            .conversation(
                "SPAWNED writer",
                vec![
                    Step::tool_call(
                        "Write",
                        json!({"file_path": "made.txt", "content": "made\n"}),
                    ),
                    Step::text("wrote it"),
                ],
            ),
    );
    env.write_file("a.txt", "a\n");
    init_repo(env.workspace());
    let out = exec(
        &env,
        &server,
        &[
            "-c",
            "agents.wait_min_ms=50",
            "--permission-mode",
            "acceptEdits",
            "spawn a writer",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!env.path("made.txt").exists(), "the main tree changed");
    let waited = server.requests_for("spawn a writer")[3]
        .tool_results()
        .pop()
        .unwrap()
        .1;
    assert!(waited.contains("made.txt (+1 −0)"), "{waited}");
    let branches = alcove_branches(env.workspace());
    assert_eq!(branches.len(), 1, "{branches:?}");
    let made = git(
        env.workspace(),
        &["show", &format!("{}:made.txt", branches[0])],
    );
    assert_eq!(made, "made\n");
    let trees = git(env.workspace(), &["worktree", "list"]);
    assert_eq!(
        trees.lines().count(),
        1,
        "closing left the worktree: {trees}"
    );
}
