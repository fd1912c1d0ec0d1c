"""Drive a real kimi-cli process in wire mode (JSON-RPC 2.0 over stdin/stdout).

The session runs with kimi-cli's scripted test model (provider type
`_scripted_echo`, its replies read from the file in KIMI_SCRIPTED_ECHO_SCRIPTS),
a private share dir (KIMI_SHARE_DIR) and the agent file that loads the bridge.
kimi-cli 1.52's `kimi` command only prints a deprecation notice, so the real
CLI is entered through `kimi_cli.__main__.run_original_cli(argv)`.
"""

import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BRIDGE_DIR = HERE.parent  # holds worldline_denwa.py
AGENT_FILE = BRIDGE_DIR / "worldline-agent.yaml"
WIRE_PROTOCOL = "1.10"

_ENTRY = (
    "import sys\n"
    "from kimi_cli.__main__ import run_original_cli\n"
    "sys.exit(run_original_cli(sys.argv[1:]))\n"
)


def write_config(path: Path) -> Path:
    """A kimi-cli config with one model served by the scripted echo provider."""
    config = {
        "default_model": "scripted",
        "telemetry": False,
        "providers": {"scripted": {"type": "_scripted_echo", "base_url": "", "api_key": ""}},
        "models": {
            "scripted": {
                "provider": "scripted",
                "model": "scripted_echo",
                "max_context_size": 100000,
            }
        },
    }
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


class KimiWire:
    def __init__(
        self,
        *,
        python: str,
        root: Path,
        scripts: list[str],
        agent_file: Path = AGENT_FILE,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.root = root
        self.share = root / "share"
        self.work = root / "work"
        for d in (self.share, self.work):
            d.mkdir(parents=True, exist_ok=True)
        scripts_file = root / "scripts.json"
        scripts_file.write_text(json.dumps(scripts, indent=2), encoding="utf-8")
        config = write_config(root / "config.json")
        env = dict(os.environ)
        env.update(
            KIMI_SHARE_DIR=str(self.share),
            KIMI_SCRIPTED_ECHO_SCRIPTS=str(scripts_file),
            PYTHONPATH=os.pathsep.join(
                p for p in (str(BRIDGE_DIR), env.get("PYTHONPATH", "")) if p
            ),
        )
        env.update(extra_env or {})
        self.stderr = open(root / "kimi.stderr", "wb")
        # A session of its own, so a trap or close() can kill the whole group.
        self.proc = subprocess.Popen(
            [
                python,
                "-c",
                _ENTRY,
                "--wire",
                "--yolo",
                "--config-file",
                str(config),
                "--agent-file",
                str(agent_file),
                "--work-dir",
                str(self.work),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            start_new_session=True,
        )
        if pids := os.environ.get("KIMI_BRIDGE_PIDS"):
            with open(pids, "a") as f:  # for the CI script's trap, should we die
                f.write(f"{self.proc.pid}\n")
        self.events: list[dict[str, Any]] = []
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self._next_id = 0

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def call(self, method: str, params: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        """Send one request and wait for its response, collecting events meanwhile."""
        self._next_id += 1
        rid = str(self._next_id)
        msg = {"jsonrpc": "2.0", "method": method, "id": rid, "params": params}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"kimi-cli did not answer {method} within {timeout}s")
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError(
                    f"kimi-cli exited (rc={self.proc.poll()}); see {self.stderr.name}"
                )
            try:
                m = json.loads(line)
            except json.JSONDecodeError:
                continue  # e.g. the "To resume this session" note at exit
            if m.get("id") == rid and "method" not in m:
                if "error" in m:
                    raise RuntimeError(f"kimi-cli {method} failed: {m['error']}")
                return m["result"]
            if m.get("method") == "event":
                self.events.append(m["params"])

    def initialize(self) -> dict[str, Any]:
        return self.call("initialize", {"protocol_version": WIRE_PROTOCOL})

    def prompt(self, text: str, timeout: float = 60.0) -> dict[str, Any]:
        result = self.call("prompt", {"user_input": text}, timeout)
        if result.get("status") != "finished":
            raise RuntimeError(f"turn did not finish: {result}")
        return result

    def session_dir(self, timeout: float = 30.0) -> Path:
        """The one session directory in this private share dir, once it is announced."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = list(self.share.glob("sessions/*/*/denwa.json"))
            if found:
                return found[0].parent
            time.sleep(0.1)
        raise TimeoutError("no denwa.json appeared in the session directory")

    def close(self, timeout: float = 15.0) -> int:
        """Normal exit (stdin closed); kill the group if it does not go in time."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.stderr.close()
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
