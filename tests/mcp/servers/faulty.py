"""A misbehaving MCP server for fault tests (plain Python, no packages).

Usage: faulty.py MODE
  fail   write to stderr and exit 1 before answering initialize
  mute   read requests and never answer (a start-up that hangs)
  serve  answer normally; tools:
         ok     returns "ok from <pid>"
         slow   answers after `seconds` (default 1)
         crash  exits without answering (mid-call crash)
         hang   never answers; a notifications/cancelled for it is written
                to $FAULTY_LOG
Every start appends the process id to $FAULTY_PIDS when set.
"""
import json
import os
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "serve"
if os.environ.get("FAULTY_PIDS"):
    with open(os.environ["FAULTY_PIDS"], "a") as pids:
        pids.write(f"{os.getpid()}\n")
if mode == "fail":
    print("faulty: cannot open the frobnicator database", file=sys.stderr)
    sys.exit(1)
if mode == "mute":
    print("faulty: thinking very hard", file=sys.stderr, flush=True)
    for _ in sys.stdin:
        pass
    time.sleep(3600)


def log(line):
    if os.environ.get("FAULTY_LOG"):
        with open(os.environ["FAULTY_LOG"], "a") as out:
            out.write(line + "\n")


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


TOOLS = [
    {"name": name, "description": f"faulty {name}",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}}
    for name in ["ok", "slow", "crash", "hang"]
]

print("faulty: started", file=sys.stderr, flush=True)
for raw in sys.stdin:
    message = json.loads(raw)
    method = message.get("method")
    ident = message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "faulty", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "notifications/cancelled":
        log("cancelled " + json.dumps(message.get("params", {}).get("requestId")))
    elif method == "tools/call":
        name = message["params"]["name"]
        log(f"call {name}")
        if name == "crash":
            print("faulty: crashing on purpose", file=sys.stderr, flush=True)
            os._exit(3)
        if name == "hang":
            continue
        if name == "slow":
            time.sleep(float(message["params"].get("arguments", {}).get("seconds", 1)))
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "content": [{"type": "text", "text": f"{name} from {os.getpid()}"}]}})
    elif ident is not None:
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
