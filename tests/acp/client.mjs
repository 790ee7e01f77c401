// A small ACP client on the protocol's official TypeScript SDK, driven by
// alcove's end-to-end tests (crates/alcove-cli/tests/e2e/acp/).
//
//   node client.mjs '<plan JSON>'
//
// It starts `$ALCOVE_BIN acp` (stderr passed through), initializes, runs the
// plan's steps and prints what it saw as JSON lines on stdout, one object
// each: {"seen":"update", sessionId, update}, {"seen":"permission", params,
// answer}, {"seen":"response", step, result} / {"seen":"error", step, error},
// and last {"seen":"exit", code, signal}. The Rust test asserts on them.
//
// Plan: { args: [alcove options], subagents: bool, permissionsTogether?: N,
//         buffers?: {"<path relative to the cwd>": "<unsaved text>", …},
//         permissions: ["allow-always"|"allow-once"|"reject"|"disconnect", …],
//         steps: [{op: "new"} | {op: "load", id} | {op: "list"} | {op: "mode", mode}
//                 | {op: "config", configId, value}
//                 | {op: "prompt", text, images?: [{mimeType, data}], cancelWhen?: {sessionIncludes?, toolTitle}}] }
// With `buffers`, the client offers `fs.readTextFile` and plays an editor
// holding those unsaved buffers: each fs/read_text_file is printed,
// {"seen":"read", params}, and answered with the buffer, or with an error
// for a file it does not hold.
// `cancelWhen` sends session/cancel (to the session whose id contains
// `sessionIncludes`, else the prompt's own) once a tool call whose title
// contains `toolTitle` is seen in it.

import { spawn } from "node:child_process";
import { PassThrough, Readable, Writable } from "node:stream";
import { relative } from "node:path";
import { client, ndJsonStream, methods, RequestError } from "@agentclientprotocol/sdk/unstable";

const plan = JSON.parse(process.argv[2] ?? "{}");
const out = (line) => process.stdout.write(JSON.stringify(line) + "\n");

const agent = spawn(process.env.ALCOVE_BIN, ["acp", ...(plan.args ?? [])], {
  stdio: ["pipe", "pipe", "inherit"],
});
const exited = new Promise((resolve) =>
  agent.on("exit", (code, signal) => resolve({ code, signal })),
);

let disconnect;
const disconnected = new Promise((resolve) => (disconnect = resolve));
const answers = [...(plan.permissions ?? [])];
const watchers = [];
const held = [];

const app = client({ name: "alcove-e2e" })
  .onNotification(methods.client.session.update, ({ params }) => {
    out({ seen: "update", sessionId: params.sessionId, update: params.update });
    for (const watch of watchers) watch(params);
  })
  .onRequest(methods.client.session.requestPermission, async ({ params }) => {
    const answer = answers.shift() ?? "reject";
    out({ seen: "permission", params, answer });
    if (answer === "disconnect") {
      disconnect();
      return new Promise(() => {});
    }
    // With `permissionsTogether: N`, no request is answered before N are
    // pending at once (they would never all be if one blocked the others).
    if (plan.permissionsTogether) {
      await new Promise((resolve) => {
        held.push(resolve);
        if (held.length >= plan.permissionsTogether) {
          out({ seen: "permissions-pending", count: held.length });
          held.splice(0).forEach((release) => release());
        }
      });
    }
    const option = params.options.find((option) => option.optionId === answer);
    return { outcome: { outcome: "selected", optionId: option ? option.optionId : "reject" } };
  })
  .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
    out({ seen: "read", params });
    const held = (plan.buffers ?? {})[relative(process.cwd(), params.path)];
    if (held === undefined) throw RequestError.resourceNotFound(params.path);
    return { content: held };
  });

// The SDK (2.4.0) drops tool call content of type `session` (a subagent
// session link), which its schema does not know yet: those lines are also
// printed as they came over the wire, {"seen":"wire", message}.
const wire = new PassThrough();
let pending = "";
agent.stdout.on("data", (chunk) => {
  pending += chunk.toString("utf8");
  let end;
  while ((end = pending.indexOf("\n")) >= 0) {
    const line = pending.slice(0, end);
    pending = pending.slice(end + 1);
    if (line.includes('"type":"session"')) out({ seen: "wire", message: JSON.parse(line) });
  }
});
agent.stdout.pipe(wire);
const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(wire));

async function run(ctx) {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: {
      ...(plan.subagents ? { subagents: {} } : {}),
      ...(plan.buffers ? { fs: { readTextFile: true, writeTextFile: false } } : {}),
    },
  });
  out({ seen: "response", step: "initialize", result: init });
  let sessionId;
  const cwd = process.cwd();
  for (const step of plan.steps ?? []) {
    const name = step.op;
    try {
      let result;
      if (step.op === "new") {
        result = await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] });
        sessionId = result.sessionId;
      } else if (step.op === "load") {
        result = await ctx.request(methods.agent.session.load, {
          sessionId: step.id,
          cwd,
          mcpServers: [],
        });
        sessionId = step.id;
      } else if (step.op === "list") {
        result = await ctx.request(methods.agent.session.list, { cwd });
      } else if (step.op === "mode") {
        result = await ctx.request(methods.agent.session.setMode, {
          sessionId,
          modeId: step.mode,
        });
      } else if (step.op === "config") {
        result = await ctx.request(methods.agent.session.setConfigOption, {
          sessionId,
          configId: step.configId,
          value: step.value,
        });
      } else if (step.op === "prompt") {
        const target = step.sessionId ?? sessionId;
        if (step.cancelWhen) {
          let sent = false;
          watchers.push((params) => {
            const { sessionIncludes, toolTitle } = step.cancelWhen;
            const inSession = sessionIncludes
              ? params.sessionId.includes(sessionIncludes)
              : params.sessionId === target;
            const update = params.update;
            if (
              !sent &&
              inSession &&
              update.sessionUpdate === "tool_call" &&
              (update.title ?? "").includes(toolTitle)
            ) {
              sent = true;
              // Give the command a moment to start before cancelling it.
              setTimeout(() => {
                out({ seen: "cancel", sessionId: params.sessionId });
                ctx.notify(methods.agent.session.cancel, { sessionId: params.sessionId });
              }, 300);
            }
          });
        }
        result = await Promise.race([
          ctx.request(methods.agent.session.prompt, {
            sessionId: target,
            prompt: [
              { type: "text", text: step.text },
              ...(step.images ?? []).map((image) => ({ type: "image", ...image })),
            ],
          }),
          disconnected.then(() => "disconnected"),
        ]);
        if (result === "disconnected") {
          out({ seen: "disconnect" });
          return;
        }
      } else if (step.op === "raw") {
        result = await ctx.request(step.method, step.params);
      }
      out({ seen: "response", step: name, result });
    } catch (error) {
      out({ seen: "error", step: name, error: { code: error.code, message: error.message, data: error.data } });
    }
  }
}

const timer = setTimeout(() => {
  out({ seen: "timeout" });
  agent.kill("SIGKILL");
  process.exit(2);
}, 90_000);

try {
  await app.connectWith(stream, run);
} catch (error) {
  out({ seen: "client-error", message: String(error?.message ?? error) });
}
agent.stdin.end();
const status = await exited;
clearTimeout(timer);
out({ seen: "exit", code: status.code, signal: status.signal });
process.exit(0);
