#!/usr/bin/env bash
# Stops the test cluster tests/slurm/up.sh started: cancels every job, then
# stops slurmd, slurmctld and munged.
set -uo pipefail
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
command -v scancel >/dev/null 2>&1 && $sudo scancel --quiet --full --signal=KILL --user=root 2>/dev/null
for pidfile in /run/slurmd.pid /run/slurmctld.pid /run/munge/munged.pid; do
    if [ -s "$pidfile" ]; then
        pid="$(cat "$pidfile")"
        $sudo kill "$pid" 2>/dev/null
        for _ in $(seq 1 50); do
            $sudo kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        $sudo kill -9 "$pid" 2>/dev/null
        $sudo rm -f "$pidfile"
    fi
done
exit 0
