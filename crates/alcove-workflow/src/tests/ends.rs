//! How a run ends against a fake host: a token or dollar budget spent, a
//! provider that halts the tree, a cancel, a script that never yields.

use super::*;

#[tokio::test]
async fn a_spent_budget_makes_agent_throw_and_the_run_end_budget_exhausted() {
    let host = FakeHost::new(|call| answer(json!(call.prompt), 100));
    let options = RunOptions {
        budget: Some(250),
        ..RunOptions::default()
    };
    let end = run_with(
        &host,
        "const seen = []\nfor (let i = 0; i < 10; i++) { seen.push([budget.total, budget.spent(), budget.remaining()]); await agent(`a${i}`) }\nreturn seen",
        options,
    )
    .await;
    assert_eq!(end.status, EndStatus::BudgetExhausted, "{end:?}");
    assert_eq!(host.prompts(), vec!["a0", "a1", "a2"]);
    assert_eq!(end.agents.refused_by_budget, 1);
    assert!(
        end.error
            .as_deref()
            .unwrap()
            .contains("budget is spent (300 of 250"),
        "{end:?}"
    );
    let shares: Vec<Option<u64>> = host
        .calls
        .lock()
        .unwrap()
        .iter()
        .map(|c| c.tokens)
        .collect();
    assert_eq!(
        shares,
        vec![Some(250), Some(150), Some(50)],
        "each agent's share is what is left"
    );
}

#[tokio::test]
async fn without_a_budget_remaining_is_infinite() {
    let host = FakeHost::echo();
    let end = run_script(
        &host,
        "return [budget.total, budget.remaining() === Infinity]",
    )
    .await;
    assert_eq!(end.result, json!([null, true]));
}

#[tokio::test]
async fn a_provider_halt_stops_the_run_and_it_ends_halted() {
    let host = FakeHost::new(|call| {
        if call.prompt == "a0" {
            AgentOutcome::Null {
                reason: NullReason::Halted,
                detail: "401 invalid_api_key".into(),
                tokens: 0,
            }
        } else {
            answer(json!("ok"), 1)
        }
    });
    let options = RunOptions {
        limits: Limits {
            concurrency: 2,
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
    assert_eq!(end.status, EndStatus::Halted, "{end:?}");
    assert_eq!(end.error.as_deref(), Some("401 invalid_api_key"));
    assert!(host.prompts().len() <= 3, "{:?}", host.prompts());
    assert_eq!(
        end.agents.nulls(),
        40 - end.agents.answered,
        "{:?}",
        end.agents
    );
}

#[tokio::test]
async fn a_cancelled_run_ends_cancelled_and_stops_a_spinning_script() {
    let host = FakeHost::echo();
    let cancel = CancellationToken::new();
    let options = RunOptions {
        cancel: cancel.clone(),
        ..RunOptions::default()
    };
    let stopper = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let end = run_with(&host, "await agent('x'); while (true) {}", options).await;
    stopper.await.unwrap();
    assert_eq!(end.status, EndStatus::Cancelled, "{end:?}");
}

#[tokio::test]
async fn a_cancelled_run_ends_while_the_script_awaits_a_promise_that_never_settles() {
    let host = FakeHost::echo();
    let cancel = CancellationToken::new();
    let options = RunOptions {
        cancel: cancel.clone(),
        ..RunOptions::default()
    };
    let stopper = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    // No JavaScript runs while the script waits, so the engine's interrupt
    // handler never fires: only the run itself can notice the cancel.
    let end = tokio::time::timeout(
        Duration::from_secs(60),
        run_with(&host, "await new Promise(() => {})", options),
    )
    .await
    .expect("a cancelled run must end");
    stopper.await.unwrap();
    assert_eq!(end.status, EndStatus::Cancelled, "{end:?}");
}

#[tokio::test]
async fn a_script_that_allocates_without_end_fails_instead_of_taking_the_machine() {
    let host = FakeHost::echo();
    let end = run_script(
        &host,
        "const kept = []\nwhile (true) kept.push('x'.repeat(1 << 20) + kept.length)",
    )
    .await;
    assert_eq!(end.status, EndStatus::Failed, "{end:?}");
    assert!(
        end.error
            .as_deref()
            .is_some_and(|e| e.contains("out of memory")),
        "{end:?}"
    );
}

#[tokio::test]
async fn a_dollar_budget_stops_agents_once_their_known_prices_spend_it() {
    let host = Arc::new(FakeHost {
        usd_each: Some(0.01),
        ..Arc::into_inner(FakeHost::echo()).unwrap()
    });
    let options = RunOptions {
        budget_usd: Some(0.025),
        ..RunOptions::default()
    };
    let end = run_with(
        &host,
        "const out = []\nfor (let i = 0; i < 10; i++) out.push(await agent(`s${i}`))\nreturn out",
        options,
    )
    .await;
    assert_eq!(end.status, EndStatus::BudgetExhausted, "{end:?}");
    assert_eq!(host.prompts().len(), 3, "{:?}", host.prompts());
    assert_eq!(end.agents.refused_by_budget, 1);
    assert!(end.error.unwrap_or_default().contains("$0.0300 of $0.0250"));
    assert!((end.usd.unwrap() - 0.03).abs() < 1e-9, "{:?}", end.usd);
}

/// The first agent finds the provider refusing the tree; the others run
/// until the run stops them.
struct HaltFirst;

#[async_trait::async_trait]
impl Host for HaltFirst {
    async fn agent(&self, call: AgentCall, cancel: CancellationToken) -> AgentOutcome {
        if call.prompt == "a0" {
            tokio::time::sleep(Duration::from_millis(10)).await;
            return AgentOutcome::Null {
                reason: NullReason::Halted,
                detail: "401 invalid_api_key".into(),
                tokens: 0,
            };
        }
        cancel.cancelled().await;
        AgentOutcome::Null {
            reason: NullReason::Cancelled,
            detail: "cancelled".into(),
            tokens: 0,
        }
    }

    fn event(&self, _event: RunEvent) {}

    fn workflow_source(&self, name: &str) -> Result<String, String> {
        Err(format!("no saved workflow `{name}`"))
    }
}

#[tokio::test]
async fn agents_stopped_by_a_provider_halt_count_as_halted_not_cancelled() {
    let workflow = Workflow::parse(&format!(
        "{META}return await parallel(Array.from({{ length: 8 }}, (_, i) => () => agent(`a${{i}}`)))"
    ))
    .unwrap();
    let options = RunOptions {
        limits: Limits {
            concurrency: 4,
            ..Limits::default()
        },
        ..RunOptions::default()
    };
    let end = run(&workflow, Arc::new(HaltFirst), options).await;
    assert_eq!(end.status, EndStatus::Halted, "{end:?}");
    assert_eq!(end.agents.null_cancelled, 0, "{:?}", end.agents);
    // The four that started are halted; calls still waiting may be dropped
    // with the stopped script before they count.
    assert!(end.agents.null_halted >= 4, "{:?}", end.agents);
}
