//! The dialect's behaviour against a fake host: what a script sees, what
//! runs at once, what the caps and a resume allow; how a run ends (budgets,
//! a provider's halt, a cancel) is in `tests/ends.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::{
    AgentCall, AgentOutcome, EndStatus, Host, Limits, NullReason, RunDir, RunEnd, RunEvent,
    RunOptions, Workflow, read_answers, run,
};

/// How a run ends.
mod ends;

type Answer = dyn Fn(&AgentCall) -> AgentOutcome + Send + Sync;

struct FakeHost {
    answer: Box<Answer>,
    calls: Mutex<Vec<AgentCall>>,
    events: Mutex<Vec<RunEvent>>,
    running: AtomicUsize,
    most_at_once: AtomicUsize,
    nested: Option<String>,
    /// Dollars each agent costs, when the host knows prices.
    usd_each: Option<f64>,
    /// Agents hold until this many have run at once (or [`GATHER_WAIT`]
    /// passed), so a test of overlap does not depend on how fast a loaded
    /// machine starts them.
    gather: usize,
}

/// The longest an agent holds for [`FakeHost::gather`].
const GATHER_WAIT: Duration = Duration::from_secs(10);

impl FakeHost {
    fn new(answer: impl Fn(&AgentCall) -> AgentOutcome + Send + Sync + 'static) -> Arc<FakeHost> {
        Arc::new(FakeHost {
            answer: Box::new(answer),
            calls: Mutex::new(Vec::new()),
            events: Mutex::new(Vec::new()),
            running: AtomicUsize::new(0),
            most_at_once: AtomicUsize::new(0),
            nested: None,
            usd_each: None,
            gather: 0,
        })
    }

    /// [`FakeHost::echo`] whose agents hold until `gather` run at once.
    fn echo_gathering(gather: usize) -> Arc<FakeHost> {
        Arc::new(FakeHost {
            gather,
            ..Arc::into_inner(FakeHost::echo()).unwrap()
        })
    }

    fn echo() -> Arc<FakeHost> {
        FakeHost::new(|call| answer(json!(format!("re: {}", call.prompt)), 10))
    }

    fn prompts(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|c| c.prompt.clone())
            .collect()
    }
}

fn answer(value: Value, tokens: u64) -> AgentOutcome {
    AgentOutcome::Answer { value, tokens }
}

#[async_trait::async_trait]
impl Host for FakeHost {
    async fn agent(&self, call: AgentCall, cancel: CancellationToken) -> AgentOutcome {
        self.calls.lock().unwrap().push(call.clone());
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
        let held = tokio::time::Instant::now();
        while self.most_at_once.load(Ordering::SeqCst) < self.gather
            && held.elapsed() < GATHER_WAIT
            && !cancel.is_cancelled()
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let outcome = tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(20)) => (self.answer)(&call),
            () = cancel.cancelled() => AgentOutcome::Null {
                reason: NullReason::Cancelled,
                detail: "cancelled".into(),
                tokens: 0,
            },
        };
        self.running.fetch_sub(1, Ordering::SeqCst);
        outcome
    }

    fn event(&self, event: RunEvent) {
        self.events.lock().unwrap().push(event);
    }

    fn spent_usd(&self) -> Option<f64> {
        let agents = self.calls.lock().unwrap().len();
        self.usd_each.map(|each| each * agents as f64)
    }

    fn workflow_source(&self, name: &str) -> Result<String, String> {
        match (&self.nested, name) {
            (Some(source), "child") => Ok(source.clone()),
            _ => Err(format!("no saved workflow `{name}`")),
        }
    }
}

const META: &str = "export const meta = { name: 't', description: 'test' }\n";

async fn run_with(host: &Arc<FakeHost>, body: &str, options: RunOptions) -> RunEnd {
    let workflow = Workflow::parse(&format!("{META}{body}")).unwrap();
    run(&workflow, host.clone(), options).await
}

async fn run_script(host: &Arc<FakeHost>, body: &str) -> RunEnd {
    run_with(host, body, RunOptions::default()).await
}

#[tokio::test]
async fn pipeline_and_parallel_return_the_scripts_value_and_run_at_once() {
    let host = FakeHost::echo_gathering(3);
    let end = run_script(
        &host,
        "phase('Fan')\nconst firsts = await pipeline(['a', 'b', 'c'], (x) => agent(x), (prev, item, i) => `${prev}|${item}|${i}`)\nconst all = await parallel([0, 1, 2, 3].map((n) => () => agent(`p${n}`, { label: `n${n}` })))\nreturn { firsts, all, args: typeof args }",
    )
    .await;
    assert_eq!(end.status, EndStatus::Completed, "{end:?}");
    assert_eq!(
        end.result,
        json!({
            "firsts": ["re: a|a|0", "re: b|b|1", "re: c|c|2"],
            "all": ["re: p0", "re: p1", "re: p2", "re: p3"],
            "args": "undefined",
        })
    );
    assert!(
        host.most_at_once.load(Ordering::SeqCst) >= 3,
        "parallel agents overlap"
    );
    assert_eq!(end.agents.started, 7);
    assert_eq!(end.agents.answered, 7);
    assert_eq!(end.tokens, 70);
    let calls = host.calls.lock().unwrap();
    assert!(
        calls
            .iter()
            .all(|call| call.phase.as_deref() == Some("Fan"))
    );
}

#[tokio::test]
async fn a_thrown_thunk_or_stage_is_null_and_the_run_goes_on() {
    let host = FakeHost::echo();
    let end = run_script(
        &host,
        "const p = await parallel([() => agent('x'), () => { throw new Error('boom') }, async () => 3])\nconst q = await pipeline([1, 2], (n) => { if (n === 2) throw new Error('no'); return n }, (n) => n * 10)\nreturn [p, q]",
    )
    .await;
    assert_eq!(end.status, EndStatus::Completed, "{end:?}");
    assert_eq!(end.result, json!([["re: x", null, 3], [10, null]]));
    let events = host.events.lock().unwrap();
    assert!(
        events.contains(&RunEvent::Log("parallel item 1 threw: boom".into())),
        "{events:?}"
    );
}

#[tokio::test]
async fn the_concurrency_cap_holds() {
    let host = FakeHost::echo_gathering(4);
    let options = RunOptions {
        limits: Limits {
            concurrency: 4,
            ..Limits::default()
        },
        ..RunOptions::default()
    };
    let end = run_with(
        &host,
        "const r = await parallel(Array.from({ length: 40 }, (_, i) => () => agent(`a${i}`)))\nreturn r.filter(Boolean).length",
        options,
    )
    .await;
    assert_eq!(end.result, json!(40), "{end:?}");
    assert_eq!(host.most_at_once.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn the_agent_cap_and_the_item_cap_throw() {
    let host = FakeHost::echo();
    let options = RunOptions {
        limits: Limits {
            max_agents: 2,
            max_items: 3,
            ..Limits::default()
        },
        ..RunOptions::default()
    };
    let end = run_with(
        &host,
        "let items = 'ok'\ntry { await parallel([1, 2, 3, 4]) } catch (e) { items = e.message }\nawait agent('1'); await agent('2')\nawait agent('3')\nreturn 'unreached'",
        options,
    )
    .await;
    assert_eq!(end.status, EndStatus::Failed, "{end:?}");
    assert!(
        end.error
            .as_deref()
            .unwrap()
            .contains("made its 2 agent() calls"),
        "{end:?}"
    );
    assert_eq!(host.prompts(), vec!["1", "2"]);
    let host = FakeHost::echo();
    let end = run_with(
        &host,
        "try { await pipeline([1, 2, 3, 4], (x) => x) } catch (e) { return e.message }",
        RunOptions {
            limits: Limits {
                max_items: 3,
                ..Limits::default()
            },
            ..RunOptions::default()
        },
    )
    .await;
    assert_eq!(
        end.result,
        json!("pipeline(): 4 items, more than the 3 one call takes; split the list")
    );
}

#[tokio::test]
async fn nondeterminism_hidden_from_the_static_check_throws_at_run_time() {
    let host = FakeHost::echo();
    for (body, words) in [
        (
            "return Math['ran' + 'dom']()",
            "Math.random() is not allowed",
        ),
        (
            "const D = Date; return new D()",
            "new Date() without an argument",
        ),
        (
            "const D = Date; return D['no' + 'w']()",
            "Date.now() is not allowed",
        ),
    ] {
        let end = run_script(&host, body).await;
        assert_eq!(end.status, EndStatus::Failed, "{body}");
        assert!(
            end.error.as_deref().unwrap().contains(words),
            "{body}: {end:?}"
        );
    }
    let end = run_script(&host, "return new Date(0).toISOString()").await;
    assert_eq!(end.result, json!("1970-01-01T00:00:00.000Z"));
    assert!(host.prompts().is_empty());
}

#[tokio::test]
async fn the_script_reaches_no_host_api() {
    let host = FakeHost::echo();
    let end = run_script(
        &host,
        "return [typeof require, typeof process, typeof std, typeof os, typeof __alcove, typeof eval, typeof fetch, typeof console]",
    )
    .await;
    assert_eq!(end.result, Value::from(vec!["undefined"; 8]), "{end:?}");
}

#[tokio::test]
async fn args_reach_the_script_verbatim() {
    let host = FakeHost::echo();
    let options = RunOptions {
        args: Some(json!({ "files": ["a", "b"], "n": null })),
        ..RunOptions::default()
    };
    let end = run_with(&host, "return [args.files.length, args.n]", options).await;
    assert_eq!(end.result, json!([2, null]));
}

#[tokio::test]
async fn a_null_agent_is_counted_with_its_reason() {
    let host = FakeHost::new(|call| {
        if call.prompt == "bad" {
            AgentOutcome::Null {
                reason: NullReason::Failed,
                detail: "model error".into(),
                tokens: 5,
            }
        } else {
            answer(json!("ok"), 5)
        }
    });
    let end = run_script(
        &host,
        "return await parallel([() => agent('good'), () => agent('bad')])",
    )
    .await;
    assert_eq!(end.status, EndStatus::Completed);
    assert_eq!(end.result, json!(["ok", null]));
    assert_eq!(end.agents.null_failed, 1);
    assert!(
        end.agents.describe().contains("1 null (1 failed)"),
        "{}",
        end.agents.describe()
    );
}

#[tokio::test]
async fn workflow_runs_a_saved_one_inline_one_level_deep() {
    let child = "export const meta = { name: 'child', description: 'c' }\nconst a = await agent(`child ${args.x}`)\nlet nested = 'ok'\ntry { await workflow('child') } catch (e) { nested = e.message }\nreturn [a, nested, typeof globalThis.workflow]";
    let host = Arc::new(FakeHost {
        nested: Some(child.to_owned()),
        ..Arc::into_inner(FakeHost::echo()).unwrap()
    });
    let end = run_script(
        &host,
        "const r = await workflow('child', { x: 1 })\nlet missing\ntry { await workflow('nope') } catch (e) { missing = e.message }\nreturn [r, missing]",
    )
    .await;
    assert_eq!(
        end.result,
        json!([
            [
                "re: child 1",
                "workflow() nests one level only: a nested workflow cannot start another",
                "undefined"
            ],
            "no saved workflow `nope`"
        ]),
        "{end:?}"
    );
}

#[tokio::test]
async fn bad_options_throw_in_the_script() {
    let host = FakeHost::echo();
    let end = run_script(
        &host,
        "const out = []\nfor (const opts of [{ isolation: 'vm' }, { schema: 'x' }]) { try { await agent('p', opts) } catch (e) { out.push(e.message) } }\ntry { await agent(3) } catch (e) { out.push(e.message) }\nreturn out",
    )
    .await;
    assert_eq!(
        end.result,
        json!([
            "agent(): isolation `vm` is not known; use 'worktree' or leave it out",
            "agent(): opts.schema must be a JSON Schema object",
            "agent(prompt, opts): prompt must be a string"
        ])
    );
    assert!(host.prompts().is_empty());
}

#[tokio::test]
async fn a_resume_replays_finished_agents_and_runs_only_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let body =
        "return await parallel(['a', 'b', 'c', 'd'].map((x) => () => agent(x, { label: x })))";
    let first = FakeHost::new(|call| {
        if call.prompt == "c" {
            AgentOutcome::Null {
                reason: NullReason::Failed,
                detail: "died".into(),
                tokens: 1,
            }
        } else {
            answer(json!(format!("1:{}", call.prompt)), 1)
        }
    });
    let options = RunOptions {
        dir: Some(RunDir::open(dir.path()).unwrap()),
        ..RunOptions::default()
    };
    let end = run_with(&first, body, options).await;
    assert_eq!(end.result, json!(["1:a", "1:b", null, "1:d"]));
    let second = FakeHost::new(|call| answer(json!(format!("2:{}", call.prompt)), 1));
    let options = RunOptions {
        dir: Some(RunDir::open(dir.path()).unwrap()),
        replay: read_answers(dir.path()).unwrap(),
        ..RunOptions::default()
    };
    let end = run_with(&second, body, options).await;
    assert_eq!(end.result, json!(["1:a", "1:b", "2:c", "1:d"]), "{end:?}");
    assert_eq!(second.prompts(), vec!["c"]);
    assert_eq!(end.agents.replayed, 3);
    assert_eq!(end.agents.started, 1);
    // The resumed run journaled its replayed answers again: a third run
    // replays all four.
    assert_eq!(
        read_answers(dir.path())
            .unwrap()
            .values()
            .map(|q| q.len())
            .sum::<usize>(),
        3 + 4
    );
}

#[test]
fn a_script_using_math_random_is_refused_before_it_runs() {
    let err =
        Workflow::parse(&format!("{META}const x = Math.random()\nawait agent('a')")).unwrap_err();
    assert!(err.contains("line 2: Math.random()"), "{err}");
}

#[tokio::test]
async fn a_thrown_error_names_the_files_line() {
    let host = FakeHost::echo();
    let end = run_script(&host, "const a = 1\nthrow new Error('nope')").await;
    assert_eq!(end.status, EndStatus::Failed);
    // META is line 1, so the throw is on line 3 of the file.
    assert!(
        end.error
            .as_deref()
            .unwrap()
            .contains("nope (at <anonymous> (line 3:"),
        "{end:?}"
    );
}
