#!/usr/bin/env python3
# bench/notes.md, point 45: `bench/persistent-shell.py target/debug/alcove-sandbox [N] [net]`.
"""A confined call's cost: a fresh confined shell per command (the launcher)
against one persistent confined shell fed commands on stdin (cwd kept).
Measures wall time per call and CPU per call (alcove's side here is this
script, whose own CPU is counted too)."""
import json, os, resource, subprocess, sys, time, tempfile

LAUNCHER = os.path.abspath(sys.argv[1])
NETWORK = len(sys.argv) > 3 and sys.argv[3] == "net"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200
work = tempfile.mkdtemp(prefix="pshell-")
policy = json.dumps({
    "mode": "workspace-write", "network": NETWORK, "allow_loopback": False,
    "network_holder": None, "writable": [work, "/tmp"], "deny_read": [],
    "limits": {"cpu_secs": 600, "address_space_mb": 32768, "processes": 4096,
               "file_size_mb": 16384, "open_files": 4096},
})

def cpu():
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime

def per_command(argv_of, label):
    c0, t0 = cpu(), time.perf_counter()
    for _ in range(N):
        subprocess.run(argv_of(), cwd=work, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=True)
    t1, c1 = time.perf_counter(), cpu()
    report(label, (c1 - c0), (t1 - t0))

def persistent(command, label):
    c0, t0 = cpu(), time.perf_counter()
    shell = subprocess.Popen([LAUNCHER, policy, "--", "bash", "--noprofile", "--norc"],
                             cwd=work, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, bufsize=0)
    out = shell.stdout
    for i in range(N):
        marker = f"__alcove_done_{i}"
        # The command's stdin is /dev/null, as a Bash call's is.
        shell.stdin.write(f"{{ {command} ; }} < /dev/null 2>&1; echo {marker} $?\n".encode())
        buf = b""
        while marker.encode() not in buf:
            chunk = os.read(out.fileno(), 65536)
            if not chunk:
                raise SystemExit("shell ended")
            buf += chunk
    shell.stdin.close()
    shell.wait()
    t1, c1 = time.perf_counter(), cpu()
    report(label, (c1 - c0), (t1 - t0))

def report(label, cpu_s, wall_s):
    print(f"{label:58s} cpu {cpu_s / N * 1e6:8.0f} µs/call   wall {wall_s / N * 1e6:8.0f} µs/call")

print(f"{N} calls each; launcher {LAUNCHER}; network {NETWORK}; load {os.getloadavg()}")
per_command(lambda: ["bash", "-c", "true"], "bash -c true, unconfined (the shell alone)")
per_command(lambda: [LAUNCHER, policy, "--", "bash", "-c", "true"], "a fresh confined shell per call (launcher), true")
per_command(lambda: [LAUNCHER, policy, "--", "bash", "-c", "/bin/true"], "a fresh confined shell per call (launcher), /bin/true")
persistent("true", "one persistent confined shell, true (builtin)")
persistent("/bin/true", "one persistent confined shell, /bin/true (fork+exec)")
