//! Issue 44: nothing a command starts outlives the session. A `setsid`
//! child or a double-forked one leaves the command's process group, which
//! is what alcove kills when a command ends; alcove adopts such orphans (it
//! is its descendants' subreaper) and ends them when it exits, whether the
//! command ran in the foreground, in the background or was interrupted,
//! confined or not. They are found afterwards by a unique argument.

use std::time::{Duration, Instant};

use alcove_testkit::{Block, Script, Step};
use serde_json::json;

use super::bash;
use crate::support::{exec_command, finish, setup, wait_for_file};

/// A `sleep` argument no other process has: ~3 days and a fraction
/// naming this test process and `n`.
fn marker(n: u32) -> String {
    format!("259{n}00.{}", std::process::id())
}

/// Commands that leave `sleep <marker>` running outside their group: one
/// `setsid`, one double fork.
fn escape(first: u32) -> String {
    format!(
        "setsid sleep {} >/dev/null 2>&1 </dev/null & \
         (setsid sh -c 'sleep {} >/dev/null 2>&1 </dev/null &' &) ; sleep 0.2; echo ESCAPED",
        marker(first),
        marker(first + 1)
    )
}

/// The pids of processes whose argv holds `marker`.
fn running_with(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let argv = std::fs::read(entry.path().join("cmdline")).ok()?;
            let state = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let zombie = state.rsplit(')').next()?.trim_start().starts_with('Z');
            (!zombie
                && String::from_utf8_lossy(&argv)
                    .split('\0')
                    .any(|arg| arg == marker))
            .then_some(pid)
        })
        .collect()
}

/// Waits a little for the markers' processes to be gone (a kill is not a
/// reap), then says which remain.
fn left_running(markers: &[String]) -> Vec<(String, Vec<u32>)> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<(String, Vec<u32>)> = markers
            .iter()
            .map(|marker| (marker.clone(), running_with(marker)))
            .filter(|(_, pids)| !pids.is_empty())
            .collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill_all(left: &[(String, Vec<u32>)]) {
    for pid in left.iter().flat_map(|(_, pids)| pids) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

#[test]
fn setsid_and_double_forked_children_of_foreground_and_background_commands_end_with_the_session() {
    for (n, args) in [
        (10, vec![]),
        (
            20,
            vec!["--sandbox", "off", "--permission-mode", "bypassPermissions"],
        ),
    ] {
        let prompt = format!("escape {n}");
        let (env, server) = setup(Script::new().conversation(
            &prompt,
            vec![
                Step::reply(vec![bash(&escape(n))]),
                Step::reply(vec![Block::tool_call(
                    "Bash",
                    json!({"command": escape(n + 2), "run_in_background": true}),
                )]),
                Step::reply(vec![bash("sleep 1; echo waited")]),
                Step::text("done"),
            ],
        ));
        let mut all = args.clone();
        all.push(&prompt);
        let out = finish(exec_command(&env, &server, &all).spawn().unwrap());
        assert_eq!(out.code, 0, "{}", out.stderr);
        let results = server.requests_for(&prompt)[1].tool_results();
        assert!(results[0].1.contains("ESCAPED"), "{:?}", results[0]);
        let markers: Vec<String> = (n..n + 4).map(marker).collect();
        let left = left_running(&markers);
        kill_all(&left);
        assert!(
            left.is_empty(),
            "{args:?}: left running after alcove: {left:?}"
        );
    }
}

#[test]
fn an_interrupted_commands_setsid_child_ends_with_the_session() {
    let (env, server) = setup(Script::new().conversation(
        "interrupted escape",
        vec![Step::tool_call(
            "Bash",
            json!({"command": format!("{}; touch started; sleep 60", escape(30))}),
        )],
    ));
    let child = exec_command(&env, &server, &["interrupted escape"])
        .spawn()
        .unwrap();
    wait_for_file(&env.path("started"));
    let markers: Vec<String> = (30..32).map(marker).collect();
    assert!(
        markers
            .iter()
            .all(|marker| !running_with(marker).is_empty()),
        "the escapes did not start"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = finish(child);
    assert_eq!(out.code, 130, "{}", out.stderr);
    let left = left_running(&markers);
    kill_all(&left);
    assert!(left.is_empty(), "left running after alcove: {left:?}");
}
