//! The session's sandbox holder: the process confined commands start from,
//! each in a user namespace of its own, and (as root) in the pids cgroup the
//! holder waits in; a command cannot take it down, and its death never
//! means a command runs unconfined.

use std::time::Duration;

use alcove_testkit::{Block, Script, Step};
use serde_json::json;

use super::bash;
use crate::support::{exec, exec_command, finish, setup};

#[test]
fn the_sessions_holder_starts_confined_commands_each_in_a_user_namespace_of_its_own() {
    let (env, server) = setup(Script::new().conversation(
        "held",
        vec![
            Step::reply(vec![bash("tr '\\0' ' ' < /proc/$PPID/cmdline")]),
            Step::reply(vec![bash(
                "[ \"$(readlink /proc/self/ns/user)\" != \"$(readlink /proc/$PPID/ns/user)\" ] \
                 && echo own-userns; echo \"key=${ANTHROPIC_API_KEY:-removed} cwd=$(pwd)\"",
            )]),
            Step::reply(vec![bash("echo partial; exit 3")]),
            Step::reply(vec![Block::tool_call(
                "Bash",
                json!({"command": "sleep 30", "timeout": 500}),
            )]),
            Step::text("done"),
        ],
    ));
    let started = std::time::Instant::now();
    let out = exec(&env, &server, &["held"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    let results = requests.last().unwrap().tool_results();
    assert_eq!(results.len(), 4, "{results:?}");
    // The command's parent is the holder, not a launcher or alcove.
    assert!(
        !results[0].2 && results[0].1.contains("--hold-network"),
        "{results:?}"
    );
    let workspace = env.workspace().canonicalize().unwrap();
    assert!(
        !results[1].2
            && results[1].1.contains("own-userns")
            && results[1].1.contains("key=removed")
            && results[1]
                .1
                .contains(&format!("cwd={}", workspace.display())),
        "{results:?}"
    );
    assert!(
        results[2].2 && results[2].1.contains("partial") && results[2].1.contains("Exit code: 3"),
        "{results:?}"
    );
    // A timeout kills the held command's group and says so.
    assert!(
        results[3].2 && results[3].1.contains("timed out"),
        "{results:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(25));
}

#[test]
fn as_root_a_command_starts_in_the_pids_cgroup_its_holder_waits_in() {
    let pids = std::path::Path::new("/sys/fs/cgroup/pids/cgroup.procs");
    if !(nix::unistd::geteuid().is_root() && pids.exists()) {
        eprintln!("skipped: needs root and a v1 pids hierarchy");
        return;
    }
    let (env, server) = setup(Script::new().conversation(
        "resident",
        vec![
            Step::reply(vec![bash("grep :pids: /proc/self/cgroup")]),
            // By the next command the holder waits in the cgroup it gets.
            Step::reply(vec![bash(
                "grep :pids: /proc/self/cgroup; grep :pids: /proc/$PPID/cgroup",
            )]),
            Step::text("done"),
        ],
    ));
    let out = exec(&env, &server, &["resident"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests().last().unwrap().tool_results();
    let (first, second) = (&results[0], &results[1]);
    assert!(!first.2 && first.1.contains(":pids:/alcove-"), "{first:?}");
    let lines: Vec<&str> = second
        .1
        .lines()
        .filter(|line| line.contains(":pids:"))
        .collect();
    assert_eq!(lines.len(), 2, "{second:?}");
    assert!(lines[0].contains(":pids:/alcove-"), "{second:?}");
    assert_eq!(
        lines[0], lines[1],
        "the command and its holder share the cgroup"
    );
}

#[test]
fn a_command_cannot_kill_its_holder_and_a_dead_holder_never_means_unconfined() {
    let (env, server) = setup(Script::new().conversation(
        "holder dies",
        vec![
            // The command's parent is the holder, out of its reach.
            Step::reply(vec![bash(
                "kill -9 $PPID; echo $PPID > holder.pid; \
                 while [ ! -f go ]; do sleep 0.02; done; echo released",
            )]),
            Step::reply(vec![bash("echo ran > ran.txt")]),
            Step::text("done"),
        ],
    ));
    let alcove = exec_command(&env, &server, &["holder dies"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = env.workspace().join("holder.pid");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !pid_file.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let holder: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The command runs as soon as it is exec'd, before the holder has sent
    // alcove its "spawned" reply; killing the holder in between would be a
    // holder that died while starting the command. The holder sleeps only
    // in its poll, so once it sleeps the reply is on its way.
    let status = format!("/proc/{holder}/status");
    let sleeping = || {
        std::fs::read_to_string(&status)
            .unwrap_or_else(|err| panic!("the holder {holder} is gone too soon: {err}"))
            .lines()
            .any(|line| line.starts_with("State:") && line.contains("(sleeping)"))
    };
    while !sleeping() {
        assert!(
            std::time::Instant::now() < deadline,
            "the holder {holder} never went back to its poll"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(holder),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    std::fs::write(env.workspace().join("go"), "").unwrap();
    let out = alcove.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let requests = server.requests();
    let results = requests.last().unwrap().tool_results();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].1.contains("Operation not permitted"),
        "{results:?}"
    );
    assert!(
        results[1].2 && results[1].1.contains("holder"),
        "{results:?}"
    );
    assert!(!env.workspace().join("ran.txt").exists());
}

#[test]
fn a_file_made_after_the_holder_started_is_readable_as_the_policy_says() {
    // A denied path's folders are granted entry by entry, so a file that
    // appears beside it later is covered only by a domain built after it
    // appeared: each command's own. The holder enters none, so no domain
    // from the session's start stands in the way.
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("secret")).unwrap();
    std::fs::write(outside.path().join("secret/key"), "hidden").unwrap();
    let fresh = outside.path().join("fresh.txt");
    let (env, server) = setup(Script::new().conversation(
        "made later",
        vec![
            // The first command runs in the holder, then waits (at most
            // 30 s) until the test has made the file.
            Step::reply(vec![bash(
                "touch started; for i in $(seq 1500); do [ -f go ] && break; sleep 0.02; done",
            )]),
            Step::reply(vec![bash(&format!(
                "cat {}; tr '\\0' ' ' < /proc/$PPID/cmdline; echo; cat {}",
                outside.path().join("secret/key").display(),
                fresh.display()
            ))]),
            Step::text("done"),
        ],
    ));
    let deny = format!(
        "sandbox.deny_read=[\"{}\"]",
        outside.path().join("secret").display()
    );
    let child = exec_command(&env, &server, &["-c", &deny, "made later"])
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !env.path("started").exists() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::fs::write(&fresh, "written after the start").unwrap();
    std::fs::write(env.path("go"), "").unwrap();
    let out = finish(child);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests().last().unwrap().tool_results();
    let (_, second, failed) = &results[1];
    assert!(
        !failed
            && second.contains("--hold-network")
            && second.contains("written after the start")
            && !second.contains("hidden"),
        "{results:?}"
    );
}
