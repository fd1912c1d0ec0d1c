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

BRIDGE="Claude Code bridge"
. tests/bridge_lib.sh
bridge_need npm "it installs @anthropic-ai/claude-code"
bridge_need python3 "it runs the scripted server"

bridge_npm_pinned "$PREFIX" 300 claude "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"
echo "Claude Code bridge: claude-code $("$PREFIX/node_modules/.bin/claude" --version 2>/dev/null || echo "$CLAUDE_CODE_VERSION")"
bridge_worldline

# record.py runs every child in its own process group and ends them itself;
# the timeout is the backstop.
timeout --kill-after=10 "$TEST_TIMEOUT" python3 integrations/claude-code/record.py \
  --claude "$PREFIX/node_modules/.bin/claude" --worldline "$WORLDLINE_BIN" \
  --work target/claude-code-run "$@"
