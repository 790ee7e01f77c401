#!/usr/bin/env bash
# Starts Arize Phoenix (the `arize-phoenix` package, pinned with every
# dependency in requirements.txt, in tests/otel/.venv) as the OpenTelemetry
# receiver for the trace tests (crates/alcove-cli/tests/e2e/telemetry.rs):
# OTLP/HTTP and its REST API on 127.0.0.1:$PORT, its database in a fresh
# folder. Returns at once; the tests wait until it answers. Prints the base
# URL, which .ci/run exports as ALCOVE_TEST_PHOENIX. tests/otel/down.sh stops it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
port="${PHOENIX_PORT:-16006}"
if [ ! -x "$here/.venv/bin/phoenix" ]; then
    rm -rf "$here/.venv"
    python3 -m venv "$here/.venv"
    "$here/.venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi
"$here/down.sh" >/dev/null 2>&1 || true
work="$(mktemp -d /tmp/alcove-phoenix.XXXXXX)"
echo "$work" > "$here/.workdir"
PHOENIX_WORKING_DIR="$work" PHOENIX_HOST=127.0.0.1 PHOENIX_PORT="$port" \
    PHOENIX_GRPC_PORT="$((port + 1))" PHOENIX_TELEMETRY_ENABLED=false \
    setsid "$here/.venv/bin/phoenix" serve >"$work/phoenix.log" 2>&1 < /dev/null &
echo $! > "$here/.pid"
echo "http://127.0.0.1:$port"
