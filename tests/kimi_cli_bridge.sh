#!/usr/bin/env bash
# The kimi-cli bridge (integrations/kimi-cli) against a real kimi-cli: a venv with
# the pinned kimi-cli from PyPI (cached in target/kimi-venv), then real wire-mode
# sessions with kimi-cli's scripted test model; `worldline send` / `worldline tree`
# from $WORLDLINE_BIN (default target/debug/worldline, built if absent).
# Skips (exit 0, loudly) only when the package registry cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."

KIMI_CLI_VERSION=1.52.0 # the version the bridge was tested with
VENV=target/kimi-venv
TEST_TIMEOUT=240 # seconds for all tests; they take about 30

BRIDGE="kimi-cli bridge"
. tests/bridge_lib.sh

# --- Python >= 3.12 (kimi-cli needs it): pyenv first, then PATH ----------------
is_new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; }
find_python() {
  local c
  for c in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3 \
    "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3 \
    "$(command -v python3.13 || true)" "$(command -v python3.12 || true)" \
    "$(command -v python3 || true)"; do
    if [ -n "$c" ] && [ -x "$c" ] && is_new_enough "$c"; then
      echo "$c"
      return 0
    fi
  done
  return 1
}
PYTHON=$(find_python) || {
  echo "kimi-cli bridge: no Python >= 3.12 found (pyenv or python3.12/3.13 on PATH)" >&2
  exit 1
}

# --- the venv, reused while it holds the pinned kimi-cli -----------------------
installed_version() {
  "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("kimi-cli"))' 2>/dev/null || true
}
if [ ! -x "$VENV/bin/python" ] || [ "$(installed_version)" != "$KIMI_CLI_VERSION" ]; then
  echo "kimi-cli bridge: installing kimi-cli $KIMI_CLI_VERSION into $VENV (with $PYTHON)"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  if ! timeout 200 "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    --timeout 20 --retries 2 "kimi-cli==$KIMI_CLI_VERSION"; then
    # Unreachable registry: skip. Reachable and still failing: a real failure.
    index="${PIP_INDEX_URL:-https://pypi.org/simple}"
    if ! "$PYTHON" -c 'import sys, urllib.request as u; u.urlopen(sys.argv[1].rstrip("/") + "/kimi-cli/", timeout=15)' "$index" 2>/dev/null; then
      rm -rf "$VENV"
      bridge_skip "package registry unreachable ($index); kimi-cli bridge tests not run"
    fi
    rm -rf "$VENV"
    echo "kimi-cli bridge: pip install kimi-cli==$KIMI_CLI_VERSION failed" >&2
    exit 1
  fi
fi
# kimi-cli 1.52.0 does not even import on some Pythons (3.12.1: a dataclass bug).
if ! "$VENV/bin/python" -c 'import kimi_cli.soul.kimisoul' 2>/dev/null; then
  echo "kimi-cli bridge: kimi-cli $KIMI_CLI_VERSION does not import on $("$VENV/bin/python" -V);" \
    "remove $VENV and provide Python 3.13" >&2
  exit 1
fi

# --- worldline --------------------------------------------------------------------
bridge_worldline
export WORLDLINE_BIN

# --- run; whatever happens, no kimi-cli outlives us ------------------------------
# Each kimi-cli runs in its own process group and the runner kills it itself; the
# runner also lists their pids here, so this trap can kill them if the runner dies.
pids_file=$(mktemp)
export KIMI_BRIDGE_PIDS="$pids_file"
runner=
cleanup() {
  local pid
  [ -n "$runner" ] && kill -TERM "$runner" 2>/dev/null || true
  while read -r pid; do
    kill -KILL -- "-$pid" 2>/dev/null || true
  done <"$pids_file"
  rm -f "$pids_file"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# In the background, so a signal to this script is handled at once, not after the run.
timeout --kill-after=10 "$TEST_TIMEOUT" \
  "$VENV/bin/python" integrations/kimi-cli/tests/test_bridge.py "$@" &
runner=$!
wait "$runner"
