#!/usr/bin/env bash
# Real Codex threads, recorded and read back: the pinned @openai/codex from
# the npm registry (its native binary comes as an optional dependency),
# cached in target/codex-npm; a scripted Responses-API server on 127.0.0.1;
# `codex exec`, `exec resume`, `exec fork`, and `codex app-server` for a
# thread/revert (rollback) and a compaction while `worldline watch --json`
# follows, and a spawn_agent subagent (integrations/codex/record.py says
# what is checked). Skips (exit 0, loudly) only when the registry can't be
# reached.
set -euo pipefail
cd "$(dirname "$0")/.."

CODEX_VERSION=0.171.0 # the version the fixtures were recorded with
PREFIX=target/codex-npm
TEST_TIMEOUT=300 # seconds; a run takes about 10

skip() {
  printf '%s\n' "########################################################################" \
    "## SKIP: $*" \
    "########################################################################" >&2
  echo "Codex bridge: SKIPPED ($*)"
  exit 0
}

command -v npm >/dev/null 2>&1 || {
  echo "Codex bridge: npm not found (it installs @openai/codex)" >&2
  exit 1
}
command -v python3 >/dev/null 2>&1 || {
  echo "Codex bridge: python3 not found (it runs the scripted Responses server)" >&2
  exit 1
}

installed() {
  local v
  v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' \
    "$PREFIX/node_modules/@openai/codex/package.json" 2>/dev/null || true)
  [ "$v" = "$CODEX_VERSION" ] && "$PREFIX/node_modules/.bin/codex" --version >/dev/null 2>&1
}
if ! installed; then
  echo "Codex bridge: installing @openai/codex@$CODEX_VERSION into $PREFIX"
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  printf '{"name":"worldline-codex-bridge","private":true}\n' >"$PREFIX/package.json"
  if ! timeout 600 npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error \
    --fetch-timeout=20000 --fetch-retries=2 "@openai/codex@$CODEX_VERSION"; then
    registry=$(npm config get registry 2>/dev/null || echo https://registry.npmjs.org/)
    if ! python3 -c 'import sys, urllib.request as u; u.urlopen(sys.argv[1].rstrip("/") + "/@openai%2fcodex", timeout=15)' "$registry" 2>/dev/null; then
      rm -rf "$PREFIX"
      skip "npm registry unreachable ($registry); Codex bridge not run"
    fi
    rm -rf "$PREFIX"
    echo "Codex bridge: npm install failed with the registry reachable" >&2
    exit 1
  fi
fi
echo "Codex bridge: $("$PREFIX/node_modules/.bin/codex" --version)"

WORLDLINE_BIN="${WORLDLINE_BIN:-target/debug/worldline}"
if [ ! -x "$WORLDLINE_BIN" ]; then
  cargo build --quiet
fi

# record.py runs every child in its own process group and ends them itself;
# the timeout is the backstop.
timeout --kill-after=10 "$TEST_TIMEOUT" python3 integrations/codex/record.py \
  --codex "$PREFIX/node_modules/.bin/codex" --worldline "$WORLDLINE_BIN" \
  --work target/codex-run "$@"
