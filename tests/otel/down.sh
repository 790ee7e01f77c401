#!/usr/bin/env bash
# Stops the Phoenix that tests/otel/up.sh started (its whole process group)
# and removes its database folder.
here="$(cd "$(dirname "$0")" && pwd)"
if [ -s "$here/.pid" ]; then
    kill -TERM -- "-$(cat "$here/.pid")" 2>/dev/null || true
    rm -f "$here/.pid"
fi
if [ -s "$here/.workdir" ]; then
    rm -rf "$(cat "$here/.workdir")"
    rm -f "$here/.workdir"
fi
