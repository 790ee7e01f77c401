"""A real MCP client (PyPI's `mcp`, the official Python SDK) driving
`alcove mcp serve` for the end-to-end tests.

    serve_client.py SCENARIO [ARG...] -- ALCOVE [ALCOVE_ARG...]
    serve_client.py SCENARIO [ARG...] -- --http URL TOKEN

starts the server command after `--` over stdio (in the current folder, with
this process's environment), or connects to a running server over
Streamable HTTP with `Authorization: Bearer TOKEN`, runs one scenario and
prints one JSON object on stdout for the Rust test to check:

- list: `logging/setLevel`, then the tools as listed.
- delegate ARGS: one `delegate` call with ARGS (JSON), with a progress token;
  its result, the progress messages and the log messages.
- concurrent ARGS1 ARGS2: two `delegate` calls at once; both results.
- cancel ARGS WORD: a `delegate` call, cancelled (`notifications/cancelled`)
  once a progress message contains WORD; then waits (at most 30 s) for the
  server's log line saying the child ended, and prints the log messages.
- async MESSAGE: `spawn_agent` with MESSAGE, then `wait` for it; both results.
- roster ARGS MESSAGE: `delegate` with ARGS, then `spawn_agent` with MESSAGE,
  `list_agents` while it runs, then creates `go.flag` in the current folder,
  `wait`s for the agent and lists again; also `list_agents` with an argument.
- attack (HTTP only): requests without the token and with a wrong one (an
  initialize, a tools/call of `delegate`, the GET stream, a DELETE), each
  with its status, and whether the SDK's client got in with a wrong token.
- batch ARGS: `spawn_batch` with ARGS (JSON), then `wait` for the batch
  and `list_agents`; all three results.
- elicit ARGS ANSWER: a `delegate` call from a client that offers
  elicitation and answers each request with allow = (ANSWER == "allow").
"""

import json
import os
import sys
import time

import anyio
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def dump(result):
    return {
        "is_error": bool(result.is_error),
        "text": "\n".join(block.text for block in result.content if block.type == "text"),
        "structured": result.structured_content,
    }


async def main(argv):
    split = argv.index("--")
    scenario, args, server = argv[0], argv[1:split], argv[split + 1 :]
    logs, progress, elicitations = [], [], []
    log_seen = anyio.Event()

    async def on_log(params):
        logs.append(params.data)
        if isinstance(params.data, str) and " ended: " in params.data:
            log_seen.set()

    async def on_elicit(context, params):
        elicitations.append(params.message)
        allow = scenario == "elicit" and args[1] == "allow"
        return types.ElicitResult(action="accept", content={"allow": allow})

    async def on_progress(step, total, message):
        progress.append(message)

    if server[0] == "--http":
        url, token = server[1], server[2]
        if scenario == "attack":
            print(json.dumps(await attack(url, token)))
            return
        headers = {"Authorization": f"Bearer {token}"}
        transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    else:
        params = StdioServerParameters(
            command=server[0], args=server[1:], env=dict(os.environ), cwd=os.getcwd()
        )
        transport = stdio_client(params)
    out = {}
    async with transport as (read, write, *_):
        async with ClientSession(
            read,
            write,
            logging_callback=on_log,
            elicitation_callback=on_elicit if scenario == "elicit" else None,
        ) as session:
            init = await session.initialize()
            out["server"] = init.server_info.name
            if scenario == "list":
                await session.set_logging_level("debug")
                out["set_level"] = True
                listed = await session.list_tools()
                out["tools"] = [tool.model_dump(by_alias=True, exclude_none=True) for tool in listed.tools]
            elif scenario in ("delegate", "elicit"):
                result = await session.call_tool(
                    "delegate", json.loads(args[0]), progress_callback=on_progress
                )
                out["result"] = dump(result)
            elif scenario == "async":
                spawned = await session.call_tool("spawn_agent", {"message": args[0]})
                out["spawned"] = dump(spawned)
                agent = spawned.structured_content["agent_id"]
                waited = await session.call_tool("wait", {"ids": [agent], "timeout_ms": 60000})
                out["waited"] = dump(waited)
                closed = await session.call_tool("close_agent", {"id": agent})
                out["closed"] = dump(closed)
            elif scenario == "roster":
                delegated = await session.call_tool("delegate", json.loads(args[0]))
                out["delegated"] = dump(delegated)
                spawned = await session.call_tool("spawn_agent", {"message": args[1]})
                agent = spawned.structured_content["agent_id"]
                out["while_running"] = dump(await session.call_tool("list_agents", {}))
                with open("go.flag", "w") as flag:
                    flag.write("go\n")
                waited = await session.call_tool("wait", {"ids": [agent], "timeout_ms": 60000})
                out["waited"] = dump(waited)
                out["after"] = dump(await session.call_tool("list_agents", {}))
                out["bad"] = dump(await session.call_tool("list_agents", {"status": "running"}))
            elif scenario == "batch":
                spawned = await session.call_tool("spawn_batch", json.loads(args[0]))
                out["spawned"] = dump(spawned)
                batch = spawned.structured_content["batch_id"]
                waited = await session.call_tool("wait", {"ids": [batch], "timeout_ms": 60000})
                out["waited"] = dump(waited)
                out["listed"] = dump(await session.call_tool("list_agents", {}))
            elif scenario == "workflow":
                started = await session.call_tool("Workflow", json.loads(args[0]))
                out["started"] = dump(started)
                run = json.loads(started.content[0].text)["run_id"]
                waited = await session.call_tool("wait", {"ids": [run], "timeout_ms": 60000})
                out["waited"] = dump(waited)
                out["listed"] = dump(await session.call_tool("list_agents", {}))
            elif scenario == "concurrent":
                results = [None, None]

                async def call(index):
                    result = await session.call_tool("delegate", json.loads(args[index]))
                    results[index] = dump(result)

                async with anyio.create_task_group() as group:
                    group.start_soon(call, 0)
                    group.start_soon(call, 1)
                out["results"] = results
            elif scenario == "cancel":
                word = args[1]
                started = anyio.Event()

                async def watch(step, total, message):
                    progress.append(message)
                    if message and word in message:
                        started.set()

                with anyio.fail_after(60):
                    async with anyio.create_task_group() as group:

                        async def call():
                            await session.call_tool(
                                "delegate", json.loads(args[0]), progress_callback=watch
                            )
                            out["finished_before_cancel"] = True

                        group.start_soon(call)
                        await started.wait()
                        # Abandoning the request sends notifications/cancelled.
                        group.cancel_scope.cancel()
                out["cancelled"] = True
                cancelled_at = time.monotonic()
                with anyio.move_on_after(30):
                    await log_seen.wait()
                # For people measuring by hand; the tests assert no timing.
                out["cancel_to_end_ms"] = round((time.monotonic() - cancelled_at) * 1000)
            else:
                raise SystemExit(f"unknown scenario {scenario}")
    out["logs"] = logs
    out["progress"] = progress
    out["elicitations"] = elicitations
    print(json.dumps(out))


async def attack(url, token):
    """What a caller without the token gets."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "attacker", "version": "1"},
        },
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "delegate", "arguments": {"prompt": "TASK-ATTACK rm -rf ."}},
    }
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    statuses = {}
    async with create_mcp_http_client() as http:
        for name, auth in [
            ("none", None),
            ("wrong", f"Bearer {token}x"),
            ("prefix", f"Bearer {token[:-1]}"),
            ("basic", f"Basic {token}"),
            ("no_scheme", token),
        ]:
            headers = dict(accept)
            if auth is not None:
                headers["Authorization"] = auth
            for what, request in [
                ("initialize", lambda: http.post(url, json=initialize, headers=headers)),
                ("call", lambda: http.post(url, json=call, headers=headers)),
                ("get", lambda: http.get(url, headers=headers)),
                ("delete", lambda: http.delete(url, headers=headers)),
            ]:
                response = await request()
                statuses[f"{name}/{what}"] = {
                    "status": response.status_code,
                    "www_authenticate": response.headers.get("www-authenticate"),
                    "body": response.text[:300],
                }
    # The SDK's own client with a wrong token does not get a session.
    sdk = "connected"
    try:
        with anyio.fail_after(30):
            headers = {"Authorization": f"Bearer {token}x"}
            client = create_mcp_http_client(headers=headers)
            async with streamable_http_client(url, http_client=client) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await session.call_tool("delegate", {"prompt": "TASK-ATTACK again"})
    except BaseException as err:  # noqa: BLE001 - any failure is the expected refusal
        sdk = f"refused: {type(err).__name__}: {err}"[:300]
    return {"statuses": statuses, "sdk": sdk}


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
