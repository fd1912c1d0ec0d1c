"""A minimal JSON-RPC client for `codex app-server` over stdio (one JSON
object a line), enough to drive threads as a user's IDE does: start, turns,
revert (rollback), compaction, fork. Python 3 stdlib only."""

import json
import subprocess
import threading
import queue
import time


class AppServer:
    def __init__(self, codex, env, cwd, log=None):
        self.proc = subprocess.Popen([codex, "app-server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, cwd=cwd, text=True, bufsize=1,
                                     start_new_session=True)
        self.next_id = 0
        self.inbox = queue.Queue()
        self.log = log
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {"clientInfo": {"name": "worldline-test", "version": "0"},
                                    "capabilities": {"experimentalApi": True}})
        self.notify("initialized", {})

    def _read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if self.log:
                self.log.write(line)
            self.inbox.put(msg)

    def notify(self, method, params):
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params, timeout=60):
        self.next_id += 1
        rid = self.next_id
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                          "params": params}) + "\n")
        self.proc.stdin.flush()
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                msg = self.inbox.get(timeout=max(0.05, deadline - time.time()))
            except queue.Empty:
                break
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result")
            if "method" in msg and "id" in msg:
                # A server request (an approval): decline politely.
                self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                                  "result": {"decision": "approved"}}) + "\n")
                self.proc.stdin.flush()
            self.pending.append(msg) if hasattr(self, "pending") else setattr(self, "pending", [msg])
        raise TimeoutError(method)

    def wait_for(self, method, timeout=60, pred=lambda p: True):
        deadline = time.time() + timeout
        pending = getattr(self, "pending", [])
        for k, msg in enumerate(pending):
            if msg.get("method") == method and pred(msg.get("params") or {}):
                del pending[k]
                return msg.get("params")
        while time.time() < deadline:
            try:
                msg = self.inbox.get(timeout=max(0.05, deadline - time.time()))
            except queue.Empty:
                break
            if msg.get("method") == method and pred(msg.get("params") or {}):
                return msg.get("params")
            if "method" in msg and "id" in msg:
                self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                                  "result": {"decision": "approved"}}) + "\n")
                self.proc.stdin.flush()
        raise TimeoutError(method)

    def turn(self, thread_id, text, timeout=90):
        res = self.request("turn/start", {"threadId": thread_id,
                                          "input": [{"type": "text", "text": text}]})
        turn_id = res["turn"]["id"]
        self.wait_for("turn/completed", timeout, lambda p: p.get("turn", {}).get("id") == turn_id)
        return turn_id

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
