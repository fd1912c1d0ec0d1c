"""What the bridge drivers (each agent's record.py) share: the ok/FAIL lines
and their tally, a free port on 127.0.0.1, waiting for a condition, and
ending the process groups of the children they started."""

import os
import signal
import socket
import subprocess
import time


class Checks:
    """`check(cond, what)` prints one ok/FAIL line; `check.failed` lists the
    FAILs."""

    def __init__(self, indent=""):
        self.indent = indent
        self.failed = []

    def __call__(self, cond, what):
        print(self.indent + ("ok   " if cond else "FAIL ") + what, flush=True)
        if not cond:
            self.failed.append(what)
        return cond


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout, what):
    """pred()'s first true value, polled every 0.1 s; exits after `timeout` s."""
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise SystemExit(f"timed out after {timeout}s waiting for {what}")


def stop(procs, timeout=10):
    """TERM each child's process group (each was started with
    start_new_session), then KILL those that outlast `timeout`."""
    procs = [p for p in procs if p is not None]
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
