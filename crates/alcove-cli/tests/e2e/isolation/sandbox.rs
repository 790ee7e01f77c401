//! The command sandbox: writes, reads, network, git, depth, and `off`.

use std::net::{TcpListener, UdpSocket};
use std::time::Duration;

use alcove_testkit::{Script, Step};
use serde_json::json;

use super::{bash, init_repo};
use crate::support::{exec, exec_command, finish, setup};

/// A folder outside everything the sandbox lets commands write: not under
/// the system temp folders (writable in the sandbox), which is where the
/// target folder is when the repository itself was cloned under /tmp.
pub(super) fn outside_dir() -> tempfile::TempDir {
    let temp = std::env::temp_dir();
    let candidates = [
        Some(std::path::PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(std::path::PathBuf::from),
        Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter(|dir| {
            !dir.starts_with("/tmp") && !dir.starts_with(&temp) && !dir.starts_with("/dev/shm")
        })
        .find_map(|dir| {
            tempfile::Builder::new()
                .prefix("alcove-outside-")
                .tempdir_in(dir)
                .ok()
        })
        .expect("a writable folder outside /tmp for the sandbox tests")
}

#[test]
fn the_default_sandbox_confines_writes_reads_and_network_but_lets_git_commit() {
    let outside = outside_dir();
    let fake_home = tempfile::tempdir().unwrap();
    std::fs::create_dir(fake_home.path().join(".ssh")).unwrap();
    std::fs::write(fake_home.path().join(".ssh/id_x"), "PRIVATE-KEY-TEXT\n").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp = listener.local_addr().unwrap().port();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let outside_file = outside.path().join("escaped.txt");
    let (env, server) = setup(Script::new().conversation(
        "confined",
        vec![
            Step::reply(vec![
                bash("echo inside > inside.txt && cat inside.txt"),
                bash(&format!("echo out > {}", outside_file.display())),
                bash("git add inside.txt && git -c user.name=t -c user.email=t@t commit -qm child && echo committed"),
                bash("cat \"$HOME/.ssh/id_x\""),
                bash(&format!("echo hi > /dev/tcp/127.0.0.1/{tcp} && echo connected")),
                bash(&format!("echo ping > /dev/udp/127.0.0.1/{udp_port} && echo sent")),
            ]),
            Step::text("done"),
        ],
    ));
    init_repo(env.workspace());
    // Default permission mode and default sandbox: Bash is auto-allowed.
    let out = finish(
        exec_command(&env, &server, &["confined"])
            .env("HOME", fake_home.path())
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests()[1].tool_results();
    assert!(
        !results[0].2 && results[0].1.contains("inside"),
        "{:?}",
        results[0]
    );
    assert!(results[1].2, "{:?}", results[1]);
    assert!(results[1].1.contains("[sandbox]"), "{:?}", results[1]);
    assert!(!outside_file.exists(), "the sandbox let a write out");
    assert!(
        !results[2].2 && results[2].1.contains("committed"),
        "{:?}",
        results[2]
    );
    assert!(
        results[3].2 && results[3].1.contains("[sandbox]"),
        "{:?}",
        results[3]
    );
    assert!(!results[3].1.contains("PRIVATE-KEY-TEXT"));
    assert!(
        results[4].2 && !results[4].1.contains("connected"),
        "{:?}",
        results[4]
    );
    assert!(results[4].1.contains("[sandbox]"), "{:?}", results[4]);
    assert!(
        results[5].2 && !results[5].1.contains("sent"),
        "{:?}",
        results[5]
    );
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 16];
    assert!(udp.recv(&mut buf).is_err(), "a UDP datagram got out");
    drop(listener);
}

#[test]
fn network_on_reaches_a_local_listener_and_sandbox_off_restores_todays_behaviour() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp = listener.local_addr().unwrap().port();
    let outside = outside_dir();
    let outside_file = outside.path().join("written.txt");
    let connect = format!("echo hi > /dev/tcp/127.0.0.1/{tcp} && echo connected");
    let (env, server) = setup(
        Script::new()
            .conversation(
                "with network",
                vec![Step::reply(vec![bash(&connect)]), Step::text("done")],
            )
            .conversation(
                "unconfined",
                vec![
                    Step::reply(vec![
                        bash(&format!("echo free > {}", outside_file.display())),
                        bash(&connect),
                    ]),
                    Step::text("done"),
                ],
            ),
    );
    let out = exec(
        &env,
        &server,
        &["-c", "sandbox.network=true", "with network"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests_for("with network")[1].tool_results();
    assert!(
        !results[0].2 && results[0].1.contains("connected"),
        "{results:?}"
    );

    let out = exec(
        &env,
        &server,
        &[
            "--sandbox",
            "off",
            "--permission-mode",
            "bypassPermissions",
            "unconfined",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests_for("unconfined")[1].tool_results();
    assert!(!results[0].2, "{results:?}");
    assert_eq!(std::fs::read_to_string(&outside_file).unwrap(), "free\n");
    assert!(
        !results[1].2 && results[1].1.contains("connected"),
        "{results:?}"
    );
}

#[test]
fn a_grandchild_inherits_the_sandbox_even_under_a_definition_asking_for_off() {
    let outside = outside_dir();
    let target = outside.path().join("grandchild.txt");
    let (env, server) = setup(
        Script::new()
            .conversation(
                "grand parent",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "middle", "prompt": "MIDDLE child", "subagent_type": "loose"}),
                    ),
                    Step::text("parent done"),
                ],
            )
            .conversation(
                "MIDDLE child",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "leaf", "prompt": "LEAF child"}),
                    ),
                    Step::text("middle done"),
                ],
            )
            .conversation(
                "LEAF child",
                vec![
                    Step::reply(vec![bash(&format!("echo leaf > {}", target.display()))]),
                    Step::text("leaf done"),
                ],
            ),
    );
    env.write_file(
        ".alcove/agents/loose.md",
        "---\nname: loose\ndescription: asks for no sandbox\nsandbox: \"off\"\nnetwork: true\n---\nYou may do anything.\n",
    );
    let out = exec(
        &env,
        &server,
        &[
            "-c",
            "agents.max_depth=2",
            "--permission-mode",
            "bypassPermissions",
            "grand parent",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests_for("LEAF child")[1].tool_results();
    assert!(
        results[0].2 && results[0].1.contains("[sandbox]"),
        "{results:?}"
    );
    assert!(!target.exists(), "a grandchild wrote outside the workspace");
}

#[test]
fn a_machine_that_cannot_sandbox_says_so_at_start_and_refuses_commands() {
    let (env, server) = setup(Script::new().conversation(
        "no sandbox here",
        vec![
            Step::reply(vec![bash("echo ran > ran.txt")]),
            Step::text("done"),
        ],
    ));
    // A user namespace in which no further user namespace may be created:
    // the launcher's `unshare` fails there as on a kernel without them.
    let mut command = env.command(std::path::Path::new("unshare"), &server);
    command
        .args(["-U", "-r", "sh", "-c"])
        .arg("echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"")
        .arg(crate::support::alcove())
        .args(["exec", "no sandbox here"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = finish(command.spawn().unwrap());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("sandbox is not available on this machine"),
        "{}",
        out.stderr
    );
    let (_, content, is_error) = server.requests()[1].tool_results().remove(0);
    assert!(
        is_error && content.contains("Refused") && content.contains("--sandbox off"),
        "{content}"
    );
    assert!(!env.path("ran.txt").exists(), "a command ran unconfined");
}

#[test]
fn read_only_commands_write_nothing_but_their_private_temp_folder() {
    let (env, server) = setup(Script::new().conversation(
        "read only",
        vec![
            Step::reply(vec![
                bash("cat seen.txt"),
                bash("echo no > written.txt"),
                bash("echo scratch > \"$TMPDIR/scratch.txt\" && cat \"$TMPDIR/scratch.txt\""),
            ]),
            Step::text("done"),
        ],
    ));
    env.write_file("seen.txt", "readable\n");
    let out = exec(&env, &server, &["--sandbox", "read-only", "read only"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests()[1].tool_results();
    assert!(
        !results[0].2 && results[0].1.contains("readable"),
        "{results:?}"
    );
    assert!(
        results[1].2 && results[1].1.contains("[sandbox]"),
        "{results:?}"
    );
    assert!(results[1].1.contains("read-only"), "{results:?}");
    assert!(!env.path("written.txt").exists());
    assert!(
        !results[2].2 && results[2].1.contains("scratch"),
        "{results:?}"
    );
}

#[test]
fn allow_loopback_gives_the_sessions_commands_one_loopback_never_the_hosts() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().port();
    let own = "python3 -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); \
               s.listen(); socket.create_connection(s.getsockname()); print('own loopback')\"";
    let host_namespace = std::fs::read_link("/proc/self/ns/net").unwrap();
    let namespace = "readlink /proc/self/ns/net";
    let (env, server) = setup(Script::new().conversation(
        "loopback",
        vec![
            Step::reply(vec![bash(own)]),
            Step::reply(vec![bash(&format!(
                "echo hi > /dev/tcp/127.0.0.1/{host} && echo connected"
            ))]),
            Step::reply(vec![bash(namespace)]),
            Step::reply(vec![bash(namespace)]),
            Step::text("done"),
        ],
    ));
    let out = exec(
        &env,
        &server,
        &["-c", "sandbox.allow_loopback=true", "loopback"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    let results = requests.last().unwrap().tool_results();
    assert_eq!(results.len(), 4, "{results:?}");
    let result = |k: usize| (results[k].1.trim().to_owned(), results[k].2);
    let (loopback, failed) = result(0);
    assert!(!failed && loopback.contains("own loopback"), "{loopback}");
    let (hosts, failed) = result(1);
    assert!(failed && !hosts.contains("connected"), "{hosts}");
    // One network namespace for the session's commands, never the host's.
    let (first, second) = (result(2), result(3));
    assert!(first.0.starts_with("net:["), "{first:?}");
    assert_eq!(first, second);
    assert_ne!(first.0, host_namespace.to_string_lossy());
    drop(listener);
}

#[test]
fn a_remote_alcove_child_keeps_its_parents_sandbox_even_when_told_off() {
    let outside = outside_dir();
    let target = outside.path().join("remote.txt");
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent sandboxed",
                vec![
                    crate::support::load_deferred(),
                    Step::tool_call("spawn_agent", json!({"message": "REMOTE writer"})),
                    Step::tool_call("wait", json!({"ids": ["agent-1"], "timeout_ms": 30_000})),
                    Step::text("done"),
                ],
            )
            .conversation(
                "REMOTE writer",
                vec![
                    Step::reply(vec![bash(&format!("echo remote > {}", target.display()))]),
                    Step::text("tried"),
                ],
            ),
    );
    // The remote alcove asks for no sandbox; only the policy on its command
    // line (the environment's copy is dropped, as ssh would) carries the parent's.
    let command = format!(
        "env -u ALCOVE_PARENT_POLICY '{}' exec --json - --sandbox off --permission-mode bypassPermissions",
        crate::support::alcove().display()
    );
    let out = finish(
        exec_command(
            &env,
            &server,
            &[
                "-c",
                "agents.wait_min_ms=50",
                "--permission-mode",
                "bypassPermissions",
                "parent sandboxed",
            ],
        )
        .env("ALCOVE_SUBAGENT_COMMAND", &command)
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests_for("REMOTE writer")[1].tool_results();
    assert!(
        results[0].2 && results[0].1.contains("[sandbox]"),
        "{results:?}"
    );
    assert!(
        !target.exists(),
        "the remote child wrote outside the workspace"
    );
}

#[test]
fn the_launcher_joins_the_sessions_network_namespace_or_makes_its_own() {
    use alcove_sandbox::{LaunchPolicy, NetworkHolder, ResourceLimits, SandboxMode};
    let launcher = std::path::Path::new(env!("CARGO_BIN_EXE_alcove-sandbox"));
    let policy = |holder: Option<u32>| LaunchPolicy {
        mode: SandboxMode::WorkspaceWrite,
        network: false,
        allow_loopback: false,
        network_holder: holder,
        writable: Vec::new(),
        deny_read: Vec::new(),
        limits: ResourceLimits::default(),
        guards: Vec::new(),
    };
    // The holder proves the policy first, as the session's probe.
    let check = serde_json::to_string(&policy(None)).unwrap();
    let holder = NetworkHolder::start(launcher, &[], false, &check).unwrap();
    let namespace_of = |holder: Option<u32>| {
        let policy = policy(holder);
        let out = std::process::Command::new(launcher)
            .args([&serde_json::to_string(&policy).unwrap(), "--", "readlink"])
            .arg("/proc/self/ns/net")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let held = std::fs::read_link(format!("/proc/{}/ns/net", holder.pid())).unwrap();
    let host = std::fs::read_link("/proc/self/ns/net").unwrap();
    assert_ne!(held, host);
    assert_eq!(namespace_of(Some(holder.pid())), held.to_string_lossy());
    let own = namespace_of(None);
    assert!(own.starts_with("net:["), "{own}");
    assert_ne!(own, held.to_string_lossy());
    assert_ne!(own, host.to_string_lossy());
    // A holder that is gone is never silently replaced by the host's network.
    let pid = holder.pid();
    drop(holder);
    let policy = format!(
        "{{\"mode\":\"workspace-write\",\"network\":false,\"allow_loopback\":false,\
         \"network_holder\":{pid},\"writable\":[],\"deny_read\":[],\"limits\":{{}}}}"
    );
    let out = std::process::Command::new(launcher)
        .args([policy.as_str(), "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("network namespace"),
        "{out:?}"
    );
}

/// The calls that try to plant what git would run later (four), then commit.
fn git_plants_then_commit(hooks: &str) -> Vec<alcove_testkit::Block> {
    vec![
        bash(&format!(
            "printf '#!/bin/sh\\ntouch pwned\\n' > {hooks}/pre-commit && chmod +x {hooks}/pre-commit && echo planted"
        )),
        bash("git config core.hooksPath planted-hooks && echo configured"),
        bash("git config core.fsmonitor 'touch pwned' && echo configured"),
        // The binds are the command's own mounts; Landlock forbids undoing them.
        bash(&format!(
            "umount {hooks} || umount -l {hooks}; printf x > {hooks}/pre-commit && echo planted"
        )),
        bash(
            "echo x > tracked.txt && git add tracked.txt && git -c user.name=t -c user.email=t@t commit -qm from-the-sandbox && echo committed",
        ),
    ]
}

/// Asserts the plants were refused and the commit made, in `tree`.
fn assert_plants_refused_and_commit_made(
    results: &[(String, String, bool)],
    tree: &std::path::Path,
    hooks: &std::path::Path,
) {
    for planted in &results[..4] {
        assert!(
            planted.2 && !planted.1.contains("planted") && !planted.1.contains("configured"),
            "{planted:?}"
        );
    }
    assert!(!hooks.join("pre-commit").exists(), "a hook was planted");
    let config = super::git(tree, &["config", "--list"]);
    assert!(
        !config.contains("hookspath") && !config.contains("fsmonitor"),
        "{config}"
    );
    assert!(
        !results[4].2 && results[4].1.contains("committed"),
        "{:?}",
        results[4]
    );
    let log = super::git(tree, &["log", "--format=%s"]);
    assert!(log.starts_with("from-the-sandbox"), "{log}");
    assert!(!tree.join("pwned").exists(), "a planted hook ran");
}

#[test]
fn a_command_commits_but_never_plants_a_git_hook_or_config_in_either_start_path() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "held start",
                vec![
                    Step::reply(git_plants_then_commit(".git/hooks")),
                    Step::text("done"),
                ],
            )
            .conversation(
                "launcher start",
                vec![
                    Step::reply(
                        git_plants_then_commit(".git/hooks")
                            .into_iter()
                            .chain([bash("mv .git .git-moved && echo MOVED-IT")])
                            .collect(),
                    ),
                    Step::text("done"),
                ],
            ),
    );
    init_repo(env.workspace());
    let hooks = env.path(".git/hooks");
    // Without network a command starts from the session's holder; with it,
    // through the launcher.
    for (prompt, args) in [
        ("held start", vec![]),
        ("launcher start", vec!["-c", "sandbox.network=true"]),
    ] {
        let args: Vec<&str> = args.into_iter().chain([prompt]).collect();
        let out = exec(&env, &server, &args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let results = server.requests_for(prompt)[1].tool_results();
        assert_plants_refused_and_commit_made(&results, env.workspace(), &hooks);
        super::git(env.workspace(), &["reset", "-q", "--hard", "HEAD~1"]);
    }
    let moved = &server.requests_for("launcher start")[1].tool_results()[5];
    assert!(moved.2 && !moved.1.contains("MOVED-IT"), "{moved:?}");
    assert!(env.path(".git/config").is_file());
}

#[test]
fn a_linked_worktrees_command_cannot_plant_in_the_common_git_folder() {
    let (env, server) = setup(Script::new().conversation(
        "in a worktree",
        vec![
            Step::reply(
                git_plants_then_commit("\"$(git rev-parse --git-common-dir)/hooks\"")
                    .into_iter()
                    .chain([bash("echo 'gitdir: /tmp/elsewhere' > .git && echo repointed")])
                    .collect(),
            ),
            Step::text("done"),
        ],
    ));
    let main = env.path("main");
    std::fs::create_dir(&main).unwrap();
    init_repo(&main);
    let tree = env.path("tree");
    super::git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            tree.to_str().unwrap(),
        ],
    );
    let out = finish(
        exec_command(&env, &server, &["in a worktree"])
            .current_dir(&tree)
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests()[1].tool_results();
    assert_plants_refused_and_commit_made(&results, &tree, &main.join(".git/hooks"));
    assert!(
        results[5].2 && !results[5].1.contains("repointed"),
        "{:?}",
        results[5]
    );
}
