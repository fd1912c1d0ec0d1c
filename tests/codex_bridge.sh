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

BRIDGE="Codex bridge"
. tests/bridge_lib.sh
bridge_need npm "it installs @openai/codex"
bridge_need python3 "it runs the scripted Responses server"

bridge_npm_pinned "$PREFIX" 600 codex "@openai/codex@$CODEX_VERSION"
# Its native binary is an optional dependency: reinstall when codex does not run.
"$PREFIX/node_modules/.bin/codex" --version >/dev/null 2>&1 ||
  bridge_npm_install "$PREFIX" 600 "@openai/codex@$CODEX_VERSION"
echo "Codex bridge: $("$PREFIX/node_modules/.bin/codex" --version)"
bridge_worldline

# record.py runs every child in its own process group and ends them itself;
# the timeout is the backstop.
timeout --kill-after=10 "$TEST_TIMEOUT" python3 integrations/codex/record.py \
  --codex "$PREFIX/node_modules/.bin/codex" --worldline "$WORLDLINE_BIN" \
  --work target/codex-run "$@"
