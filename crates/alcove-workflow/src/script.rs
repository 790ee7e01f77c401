//! The embedded JavaScript engine (QuickJS through rquickjs) that runs a
//! workflow's script.
//!
//! It is created only when a run starts, on a thread of its own (QuickJS
//! values never cross threads), and dropped when the run ends: a session
//! that runs no workflow never builds one. Host functions return Rust
//! futures, so `await agent(…)` suspends the script while the agent runs
//! on the caller's tokio runtime; `parallel` and `pipeline` are plain
//! promises over those. The script reaches nothing but the dialect's
//! globals: no module loader, no `std`/`os` modules, no host objects.

use std::sync::Arc;

use rquickjs::prelude::Async;
use rquickjs::{AsyncContext, AsyncRuntime, Ctx, Function, Object, Promise, Value as JsValue};
use serde_json::{Value, json};

use crate::check::check_source;
use crate::meta::parse_script;
use crate::run::RunState;

const PRELUDE: &str = include_str!("prelude.js");

/// The most memory a script's engine may hold.
const MEMORY_LIMIT: usize = 512 << 20;

/// A script body as an async function of `(args, workflow)`, on the first
/// line so its line numbers are the file's.
pub(crate) fn wrap(body: &str) -> String {
    format!("(async function (args, workflow) {{{body}\n}})")
}

/// Runs the checked body on a thread of its own; its return value as JSON,
/// or the error it threw.
pub(crate) async fn run_body(
    state: Arc<RunState>,
    body: String,
    args: Option<Value>,
) -> Result<Value, String> {
    let (send, receive) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("workflow".to_owned())
        .stack_size(16 << 20)
        .spawn(move || {
            let result = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime.block_on(evaluate(state, body, args)),
                Err(err) => Err(format!("cannot start the workflow's runtime: {err}")),
            };
            let _ = send.send(result);
        });
    if let Err(err) = spawned {
        return Err(format!("cannot start the workflow's thread: {err}"));
    }
    receive
        .await
        .unwrap_or_else(|_| Err("the workflow's engine stopped without an answer".to_owned()))
}

async fn evaluate(
    state: Arc<RunState>,
    body: String,
    args: Option<Value>,
) -> Result<Value, String> {
    let runtime = AsyncRuntime::new().map_err(|err| format!("cannot start QuickJS: {err}"))?;
    runtime.set_memory_limit(MEMORY_LIMIT).await;
    runtime.set_max_stack_size(8 << 20).await;
    // The interrupt handler stops JavaScript that is running; a script that
    // only waits (on a promise nothing will settle) runs none, so the wait
    // below also ends on the cancel.
    let cancel = state.cancel.clone();
    runtime
        .set_interrupt_handler(Some(Box::new(move || cancel.is_cancelled())))
        .await;
    let cancel = state.cancel.clone();
    let context = AsyncContext::full(&runtime)
        .await
        .map_err(|err| format!("cannot start QuickJS: {err}"))?;
    let text = context
        .async_with(async |ctx| {
            let started = install(&ctx, &state)
                .and_then(|()| ctx.eval::<(), _>(PRELUDE))
                .and_then(|()| {
                    let main: Function = ctx.eval(wrap(&body))?;
                    let start: Function = ctx.globals().get("__start")?;
                    let args_json = args.as_ref().map(Value::to_string);
                    start.call::<_, Promise>((main, args_json))
                });
            match started {
                Ok(promise) => tokio::select! {
                    settled = promise.into_future::<String>() => {
                        settled.map_err(|err| describe(&ctx, err))
                    }
                    () = cancel.cancelled() => Err("the script was interrupted".to_owned()),
                },
                Err(err) => Err(describe(&ctx, err)),
            }
        })
        .await?;
    serde_json::from_str(&text).map_err(|err| format!("the script's return value: {err}"))
}

/// The host object the prelude turns into the dialect's globals.
fn install(ctx: &Ctx<'_>, state: &Arc<RunState>) -> rquickjs::Result<()> {
    let host = Object::new(ctx.clone())?;
    let config = json!({ "budget": state.budget, "maxItems": state.limits.max_items });
    host.set("config", config.to_string())?;
    let run = state.clone();
    host.set(
        "agent",
        Function::new(
            ctx.clone(),
            Async(move |request: String| {
                let run = run.clone();
                async move { rquickjs::Result::Ok(run.agent(request).await) }
            }),
        )?,
    )?;
    let run = state.clone();
    host.set(
        "phase",
        Function::new(ctx.clone(), move |title: String| run.set_phase(title))?,
    )?;
    let run = state.clone();
    host.set(
        "log",
        Function::new(ctx.clone(), move |message: String| run.log(message))?,
    )?;
    let run = state.clone();
    host.set(
        "spent",
        Function::new(ctx.clone(), move || run.spent() as f64)?,
    )?;
    let run = state.clone();
    host.set(
        "nested",
        Function::new(ctx.clone(), move |name_or_path: String| {
            let reply = match nested_body(&run, &name_or_path) {
                Ok(wrapped) => json!({ "value": wrapped }),
                Err(message) => json!({ "error": message }),
            };
            reply.to_string()
        })?,
    )?;
    ctx.globals().set("__alcove", host)?;
    Ok(())
}

/// `workflow(nameOrRef)`: the named script, checked as a top-level one is.
fn nested_body(state: &RunState, name_or_path: &str) -> Result<String, String> {
    let source = state.host.workflow_source(name_or_path)?;
    let parsed = parse_script(&source).map_err(|err| format!("workflow({name_or_path}): {err}"))?;
    check_source(&parsed.body).map_err(|err| format!("workflow({name_or_path}): {err}"))?;
    Ok(wrap(&parsed.body))
}

/// A JavaScript error as one line: its message and where it was thrown.
fn describe(ctx: &Ctx<'_>, err: rquickjs::Error) -> String {
    if !matches!(err, rquickjs::Error::Exception) {
        return err.to_string();
    }
    let thrown: JsValue = ctx.catch();
    if let Some(exception) = thrown.as_exception() {
        let message = exception.message().unwrap_or_default();
        let line = exception
            .stack()
            .and_then(|stack| stack.lines().next().map(|line| line.trim().to_owned()))
            // The script's lines are the file's (see `wrap`).
            .map(|line| line.replace("eval_script:", "line "))
            .filter(|line| !line.is_empty());
        return match line {
            Some(at) => format!("{message} ({at})"),
            None => message,
        };
    }
    if let Some(text) = thrown.as_string().and_then(|text| text.to_string().ok()) {
        return text;
    }
    if thrown.is_null() || thrown.is_undefined() {
        return "the script was interrupted".to_owned();
    }
    format!("the script threw a {}", thrown.type_name())
}
