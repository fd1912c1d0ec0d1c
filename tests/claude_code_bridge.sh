#!/usr/bin/env bash
# Real Claude Code sessions, recorded and read back: the pinned
# @anthropic-ai/claude-code from the npm registry (its native binary comes as
# an optional dependency), cached in target/claude-code-npm; a scripted
# Anthropic Messages server on 127.0.0.1; `claude -p` drives turns, a
# `--resume-session-at` branch, `/compact`, a subagent and `--fork-session`
# while `worldline watch --json` follows (integrations/claude-code/record.py
# says what is checked).
# Skips (exit 0, loudly) only when the package registry cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."

CLAUDE_CODE_VERSION=2.1.332 # the version the fixtures were recorded with
PREFIX=target/claude-code-npm
TEST_TIMEOUT=600 # seconds; a run takes about 15

skip() {
  printf '%s\n' "########################################################################" \
    "## SKIP: $*" \
    "########################################################################" >&2
  echo "Claude Code bridge: SKIPPED ($*)"
  exit 0
}

command -v npm >/dev/null 2>&1 || {
  echo "Claude Code bridge: npm not found (it installs @anthropic-ai/claude-code)" >&2
  exit 1
}
command -v python3 >/dev/null 2>&1 || {
  echo "Claude Code bridge: python3 not found (it runs the scripted server)" >&2
  exit 1
}

installed() {
  local v
  v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' \
    "$PREFIX/node_modules/@anthropic-ai/claude-code/package.json" 2>/dev/null || true)
  [ "$v" = "$CLAUDE_CODE_VERSION" ] && [ -x "$PREFIX/node_modules/.bin/claude" ]
}
if ! installed; then
  echo "Claude Code bridge: installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION into $PREFIX"
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  printf '{"name":"worldline-claude-code-bridge","private":true}\n' >"$PREFIX/package.json"
  if ! timeout 300 npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error \
    --fetch-timeout=20000 --fetch-retries=2 "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"; then
    registry=$(npm config get registry 2>/dev/null || echo https://registry.npmjs.org/)
    if ! python3 -c 'import sys, urllib.request as u; u.urlopen(sys.argv[1].rstrip("/") + "/@anthropic-ai%2fclaude-code", timeout=15)' "$registry" 2>/dev/null; then
      rm -rf "$PREFIX"
      skip "npm registry unreachable ($registry); Claude Code bridge not run"
    fi
    rm -rf "$PREFIX"
    echo "Claude Code bridge: npm install failed with the registry reachable" >&2
    exit 1
  fi
fi
echo "Claude Code bridge: claude-code $("$PREFIX/node_modules/.bin/claude" --version 2>/dev/null || echo "$CLAUDE_CODE_VERSION")"

WORLDLINE_BIN="${WORLDLINE_BIN:-target/debug/worldline}"
if [ ! -x "$WORLDLINE_BIN" ]; then
  cargo build --quiet
fi

# record.py runs every child in its own process group and ends them itself;
# the timeout is the backstop.
timeout --kill-after=10 "$TEST_TIMEOUT" python3 integrations/claude-code/record.py \
  --claude "$PREFIX/node_modules/.bin/claude" --worldline "$WORLDLINE_BIN" \
  --work target/claude-code-run "$@"
