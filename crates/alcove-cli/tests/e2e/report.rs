//! `alcove report` (issue 40.1): a session's tree rendered to one HTML file
//! by the real binary, opened in headless Chromium and checked through the
//! page's DOM (`--dump-dom`) and a screenshot.
//!
//! The click check is the page's own: opened with `#selftest`, its script
//! clicks every lane (`element.click()`, the same handler a mouse click
//! runs) and writes what the conversation pane then showed into
//! `<pre id="selftest">`, which the dumped DOM holds. What the tests expect
//! there is computed from the transcripts and the script, not from the page.
//!
//! Chromium (Debian's `chromium`, installed by `.ci/run`) is required: these
//! tests fail without it unless `ALCOVE_SKIP_CHROMIUM=1` says to skip them.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use alcove_testkit::{Block, FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::agents::agent;
use crate::support::{alcove, exec, exec_command, read_jsonl, setup, transcripts, wait_for_file};

const PRICE: &str = "[pricing.\"anthropic/fake-model\"]\ninput = 3.0\noutput = 15.0\n";

/// Chromium, or `None` when the tests may be skipped (`ALCOVE_SKIP_CHROMIUM=1`).
pub(crate) fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|path| path.is_file())
        })
    });
    if found.is_none() && std::env::var("ALCOVE_SKIP_CHROMIUM").as_deref() != Ok("1") {
        panic!("chromium is not installed (.ci/run installs it; ALCOVE_SKIP_CHROMIUM=1 skips)");
    }
    found
}

/// Runs headless Chromium on `page` (with `#fragment`) with `args`, and
/// returns its stdout.
pub(crate) fn run_chromium(chromium: &Path, page: &Path, fragment: &str, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--hide-scrollbars",
            "--window-size=1280,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}{fragment}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        text
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

/// `alcove report <session> --out <file>` in `env`; returns the page's path.
pub(crate) fn report(env: &TestEnv, server: &FakeServer) -> PathBuf {
    let files = transcripts(env);
    assert_eq!(files.len(), 1, "{files:?}");
    let id = files[0].file_stem().unwrap().to_str().unwrap().to_owned();
    let page = env.home().join("report.html");
    let out = env
        .command(alcove(), server)
        .args(["report", &id[..8], "--out"])
        .arg(&page)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        page.display().to_string()
    );
    page
}

/// The attributes of every `.lane` element of a dumped DOM, by agent.
fn lanes(dom: &str) -> BTreeMap<String, HashMap<String, String>> {
    let mut lanes = BTreeMap::new();
    for piece in dom.split("<div class=\"lane").skip(1) {
        let tag = &piece[..piece.find('>').unwrap()];
        let mut attributes = HashMap::new();
        for part in tag.split("\" ") {
            if let Some((name, value)) = part.trim().split_once("=\"") {
                attributes.insert(name.to_owned(), value.trim_end_matches('"').to_owned());
            }
        }
        // The lane's inner markup, up to the next lane.
        attributes.insert("html".to_owned(), piece.to_owned());
        lanes.insert(attributes["data-agent"].clone(), attributes);
    }
    lanes
}

/// What the page's self-test saw for each clicked lane, by agent.
fn clicks(dom: &str) -> BTreeMap<String, Value> {
    let start = dom
        .rfind("<pre id=\"selftest\">")
        .expect("the self-test ran")
        + 19;
    let end = start + dom[start..].find("</pre>").unwrap();
    let text = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    let results: Vec<Value> = serde_json::from_str(&text).unwrap();
    results
        .into_iter()
        .map(|result| (result["agent"].as_str().unwrap().to_owned(), result))
        .collect()
}

/// Each agent's status and tokens, read from the transcripts themselves:
/// `main` from its `session_ended`, children from their parent's
/// `agent_ended`, tokens summed over each transcript's `usage` events.
pub(crate) fn expected_agents(env: &TestEnv) -> BTreeMap<String, (String, [u64; 4])> {
    let main = &transcripts(env)[0];
    let folder = main.with_extension("");
    let mut files = vec![main.clone()];
    files.extend(
        std::fs::read_dir(&folder)
            .unwrap()
            .map(|entry| entry.unwrap().path()),
    );
    let mut agents = BTreeMap::new();
    for file in files {
        let events = read_jsonl(&file);
        let mut tokens = [0u64; 4];
        let mut agent = String::new();
        for event in &events {
            agent = event["agent"].as_str().unwrap().to_owned();
            if event["type"] == "usage" {
                let usage = &event["usage"];
                for (slot, key) in [
                    "input_tokens",
                    "cache_read_tokens",
                    "cache_write_tokens",
                    "output_tokens",
                ]
                .iter()
                .enumerate()
                {
                    tokens[slot] += usage[key].as_u64().unwrap_or(0);
                }
            }
        }
        let entry = agents.entry(agent).or_insert((String::new(), [0; 4]));
        entry.1 = tokens;
        for event in &events {
            match event["type"].as_str().unwrap() {
                "session_ended" => {
                    agents.entry("main".to_owned()).or_default().0 =
                        event["status"].as_str().unwrap().to_owned();
                }
                "agent_ended" => {
                    agents
                        .entry(event["child"].as_str().unwrap().to_owned())
                        .or_default()
                        .0 = event["status"].as_str().unwrap().to_owned();
                }
                _ => {}
            }
        }
    }
    agents
}

/// A tree: three parallel `Agent` children with two slots (one waits for
/// a slot; one is cut short by its token budget), then a child in its own
/// worktree that runs a nested child (which edits a file), a spawned child
/// collected with `wait`, and a failing command whose output and the final
/// answer look like markup.
fn tree_script() -> Script {
    Script::new()
        .conversation(
            "REPORT TOP",
            vec![
                    crate::support::load_deferred(),
                Step::reply(vec![
                    Block::tool_call("Agent", agent("hungry", "HUNGRY child")),
                    Block::tool_call("Agent", agent("fast <b>one</b>", "FAST child")),
                    Block::tool_call("Agent", agent("third", "THIRD child")),
                ]),
                Step::tool_call(
                    "Agent",
                    json!({"description": "middle", "prompt": "MIDDLE child", "isolation": "worktree"}),
                ),
                Step::tool_call("spawn_agent", json!({"message": "SPAWNED child"})),
                Step::tool_call("wait", json!({"ids": ["agent-6"], "timeout_ms": 30_000})),
                Step::tool_call(
                    "Bash",
                    json!({"command": "echo '<img src=x onerror=alert(1)>'; exit 3"}),
                ),
                Step::text("all done <script>document.title='owned'</script>"),
            ],
        )
        .conversation(
            "HUNGRY child",
            vec![
                Step::reply(vec![
                    Block::text("Partial findings."),
                    Block::tool_call("Glob", json!({"pattern": "*"})),
                ])
                .usage(400, 100)
                .delay(300),
                Step::text("never requested"),
            ],
        )
        .conversation("FAST child", vec![Step::text("fast result").delay(300)])
        .conversation("THIRD child", vec![Step::text("third result").delay(300)])
        .conversation(
            "MIDDLE child",
            vec![
                Step::tool_call("Agent", agent("bottom", "BOTTOM child")),
                Step::text("middle done"),
            ],
        )
        .conversation(
            "BOTTOM child",
            vec![
                // An Edit needs a Read of the file first (issue 39).
                Step::tool_call("Read", json!({"file_path": "notes.txt"})),
                Step::tool_call(
                    "Edit",
                    json!({"file_path": "notes.txt", "old_string": "old line", "new_string": "new line"}),
                ),
                Step::text("bottom done"),
            ],
        )
        .conversation("SPAWNED child", vec![Step::text("spawned result")])
}

#[test]
fn a_tree_report_shows_every_lane_its_figures_and_each_conversation_on_click() {
    let Some(chromium) = chromium() else { return };
    let (env, server) = setup(tree_script());
    let config = env.home().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(PRICE);
    std::fs::write(&config, text).unwrap();
    env.write_file("notes.txt", "old line\n");
    crate::isolation::init_repo(env.workspace());
    let out = exec(
        &env,
        &server,
        &[
            "-c",
            "agents.max_depth=2",
            "-c",
            "agents.max_tokens=300",
            "-c",
            "agents.max_parallel=2",
            "--permission-mode",
            "bypassPermissions",
            "REPORT TOP",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let expected = expected_agents(&env);
    assert_eq!(expected.len(), 7, "{expected:?}");
    // Children are numbered as they get their slot: find each by its label.
    let mut path = HashMap::new();
    for file in std::iter::once(transcripts(&env)[0].clone()).chain(
        std::fs::read_dir(transcripts(&env)[0].with_extension(""))
            .unwrap()
            .map(|entry| entry.unwrap().path()),
    ) {
        for event in read_jsonl(&file) {
            if event["type"] == "agent_started" {
                path.insert(
                    event["description"].as_str().unwrap().to_owned(),
                    event["child"].as_str().unwrap().to_owned(),
                );
            }
        }
    }
    let path = |description: &str| path[description].clone();
    assert_eq!(expected[&path("hungry")].0, "budget", "{expected:?}");

    let page = report(&env, &server);
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: no URL to fetch, markup only of its own.
    assert!(!html.contains("http://") && !html.contains("https://"));
    assert_eq!(html.matches("<script").count(), 2);
    assert!(!html.contains("<img") && !html.contains("<b>"));

    let dom = run_chromium(&chromium, &page, "#selftest", &["--dump-dom"]);
    let lanes = lanes(&dom);
    assert_eq!(
        lanes.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (agent, (status, tokens)) in &expected {
        let lane = &lanes[agent];
        assert_eq!(&lane["data-status"], status, "{agent}");
        let shown: Vec<u64> = lane["data-tokens"]
            .split(' ')
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(shown, tokens, "{agent}");
        // The label shows them too.
        let label = format!("{} in · ", tokens[0]);
        assert!(lane["html"].contains(&label), "{agent}: {}", lane["html"]);
    }
    // A lane cut short is never shown as completed.
    assert!(lanes[&path("hungry")]["html"].contains("s-budget"));
    // Children sit under their parent: the nested child's lane follows its
    // parent's, and is indented deeper.
    let order: Vec<&str> = dom
        .split("data-agent=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect();
    let middle = order.iter().position(|a| *a == path("middle")).unwrap();
    assert_eq!(order[middle + 1], path("bottom"), "{order:?}");
    assert!(path("bottom").starts_with(&format!("{}/", path("middle"))));
    // With two slots for three children, one waited for a slot as long as
    // a child's reply takes (300 ms); a start's own work is far shorter.
    let waited = ["hungry", "fast <b>one</b>", "third"]
        .iter()
        .filter(|label| {
            let html = &lanes[&path(label)]["html"];
            html.split("k-queued").nth(1).is_some_and(|rest| {
                let ms = rest.split("data-ms=\"").nth(1).unwrap();
                ms[..ms.find('"').unwrap()].parse::<u64>().unwrap() >= 250
            })
        })
        .count();
    assert_eq!(waited, 1);
    // Every model request of every transcript is a bar.
    let requests: usize = expected
        .keys()
        .map(|agent| lanes[agent]["html"].matches("bar k-request").count())
        .sum();
    assert_eq!(requests, server.requests().len());
    // Markup in transcript text stayed text.
    assert!(
        !dom.contains("<img") && !dom.contains("<b>one"),
        "markup got in"
    );
    assert!(dom.contains("fast &lt;b&gt;one&lt;/b&gt;"));
    assert!(!dom.contains("<title>owned"));

    let clicks = clicks(&dom);
    assert_eq!(clicks.len(), expected.len());
    for (agent, seen) in &clicks {
        assert_eq!(seen["shown"], agent.as_str(), "a click on {agent}");
        assert!(seen["items"].as_u64().unwrap() >= 2, "{agent}: {seen}");
    }
    let text = |agent: &str| clicks[agent]["text"].as_str().unwrap().to_owned();
    // Each conversation holds what that agent's transcript holds.
    for (agent, prompt, answer) in [
        ("main".to_owned(), "REPORT TOP", "all done <script>"),
        (path("hungry"), "HUNGRY child", "Partial findings."),
        (path("fast <b>one</b>"), "FAST child", "fast result"),
        (path("third"), "THIRD child", "third result"),
        (path("middle"), "MIDDLE child", "middle done"),
        (path("bottom"), "BOTTOM child", "bottom done"),
        (path("SPAWNED child"), "SPAWNED child", "spawned result"),
    ] {
        let shown = text(&agent);
        assert!(
            shown.contains(prompt) && shown.contains(answer),
            "{agent}: {shown}"
        );
    }
    let main = text("main");
    assert!(main.contains("<img src=x onerror=alert(1)>"), "{main}");
    assert!(main.contains("Exit code: 3"));
    // The edit is shown as a diff; the evidence footer is the parent's.
    let bottom = text(&path("bottom"));
    assert!(
        bottom.contains("-old line") && bottom.contains("+new line"),
        "{bottom}"
    );
    assert!(bottom.contains("status: completed | turns: 3"), "{bottom}");
    // The worktree child's branch, as its parent's result named it.
    let branch = read_jsonl(&transcripts(&env)[0])
        .iter()
        .filter(|event| event["type"] == "tool_call_finished")
        .filter_map(|event| {
            let content = event["content"].as_str()?;
            let rest = content.split("[alcove worktree] branch: ").nth(1)?;
            Some(rest[..rest.find(' ').unwrap()].to_owned())
        })
        .next()
        .expect("the middle child's changes were committed on a branch");
    let middle = text(&path("middle"));
    assert!(
        middle.contains(&format!("branch{branch}")),
        "{branch}: {middle}"
    );
    let hungry = text(&path("hungry"));
    assert!(
        hungry.contains("status: incomplete: budget (tokens over 300)"),
        "{hungry}"
    );
    // Costs at the configured price ($3 in, $15 out per million).
    for (agent, (_, tokens)) in &expected {
        let cost = (tokens[0] as f64 * 3.0 + tokens[3] as f64 * 15.0) / 1e6;
        let cost = format!("${cost:.4}");
        assert!(text(agent).contains(&cost), "{agent}: {cost}");
    }

    // A screenshot that is not blank: many colours, a good share inked.
    let shot = env.home().join("shot.png");
    run_chromium(
        &chromium,
        &page,
        "",
        &[&format!("--screenshot={}", shot.display())],
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    let channels = frame.color_type.samples();
    let pixels = &pixels[..frame.buffer_size()];
    let mut colours = std::collections::HashSet::new();
    let mut inked = 0;
    for pixel in pixels.chunks(channels) {
        colours.insert(pixel[..3].to_vec());
        if pixel[..3].iter().any(|channel| *channel < 200) {
            inked += 1;
        }
    }
    let total = pixels.len() / channels;
    assert!(colours.len() > 50, "{} colours", colours.len());
    assert!(inked * 50 > total, "{inked} of {total} pixels inked");
}

#[test]
fn a_report_of_a_session_killed_mid_run_shows_what_was_cut_short() {
    let Some(chromium) = chromium() else { return };
    let (env, server) = setup(
        Script::new()
            .conversation(
                "DOOMED TOP",
                vec![
                    Step::tool_call("Agent", agent("stuck", "STUCK child")),
                    Step::text("never reached"),
                ],
            )
            .conversation("STUCK child", vec![Step::hang()]),
    );
    let mut child = exec_command(&env, &server, &["DOOMED TOP"])
        .spawn()
        .unwrap();
    let main = loop {
        if let Some(main) = transcripts(&env).into_iter().next() {
            break main;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stuck = main.with_extension("").join("main--agent-1.jsonl");
    wait_for_file(&stuck);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&stuck)
        .unwrap()
        .contains("\"model_request\"")
    {
        assert!(Instant::now() < deadline, "the child never asked the model");
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.wait().unwrap();
    // A line torn by the kill.
    let mut torn = std::fs::OpenOptions::new()
        .append(true)
        .open(&main)
        .unwrap();
    std::io::Write::write_all(&mut torn, b"{\"agent\":\"main\",\"type\":\"mess").unwrap();
    drop(torn);

    let page = report(&env, &server);
    let dom = run_chromium(&chromium, &page, "#selftest", &["--dump-dom"]);
    let lanes = lanes(&dom);
    assert_eq!(lanes.len(), 2, "{:?}", lanes.keys());
    assert_eq!(lanes["main"]["data-status"], "interrupted");
    assert_eq!(lanes["main/agent-1"]["data-status"], "unfinished");
    // The calls that never finished are drawn open.
    assert!(
        lanes["main"]["html"].contains("k-wait open"),
        "{}",
        lanes["main"]["html"]
    );
    assert!(lanes["main/agent-1"]["html"].contains("k-request open"));
    assert!(dom.contains("1 transcript line(s) could not be read"));
    let clicks = clicks(&dom);
    let stuck = clicks["main/agent-1"]["text"].as_str().unwrap();
    assert!(stuck.contains("STUCK child"), "{stuck}");
    let top = clicks["main"]["text"].as_str().unwrap();
    assert!(
        top.contains("DOOMED TOP") && top.contains("→ Agent"),
        "{top}"
    );
}

#[test]
fn a_report_of_no_session_or_an_unknown_one_is_a_usage_error() {
    let (env, server) = setup(Script::new());
    for args in [
        &["report"][..],
        &["report", "--last"],
        &["report", "no-such-id"],
    ] {
        let out = env.command(alcove(), &server).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("no session"), "{args:?}: {stderr}");
    }
    assert!(
        std::fs::read_dir(env.workspace()).unwrap().next().is_none(),
        "no page written"
    );
}
