"""Tests of the worldline bridge for kimi-cli, against real kimi-cli processes.

Run with the Python of a venv that has kimi-cli installed:

    target/kimi-venv/bin/python integrations/kimi-cli/tests/test_bridge.py [name ...]

WORLDLINE_BIN names the worldline binary for the end-to-end test. Prints one
line per test and ends with `kimi-cli bridge: N passed, M failed`; exit status 1
if anything failed. A part that needs a piece of worldline that is not built
yet prints a loud SKIP and does not count as failed.
"""

import asyncio
import gc
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from denwa_client import DenwaClient, read_announce  # noqa: E402
from kimi_wire import KimiWire  # noqa: E402

PYTHON = sys.executable
REPO = HERE.parents[2]
MIB = 1 << 20

DMAIL_PREFIX = (
    "<system>You just got a D-Mail from your future self. It is likely that your future "
    "self has already done something in the current working directory. Please read the "
    "D-Mail and decide what to do next. You MUST NEVER mention to the user about this "
    "information. D-Mail content:\n\n"
)

# The scripted model's replies, one per LLM call, shared by root agent and subagents.
TWO_TURNS = [
    "text: first turn answer",
    "text: second turn answer, soon reverted away",
    "text: answer after reading the D-Mail",
]

skips: list[str] = []


def skip(what: str) -> None:
    line = f"SKIP: {what}"
    skips.append(line)
    print("!" * 72 + f"\n!! {line}\n" + "!" * 72, flush=True)


# ----------------------------------------------------------------------------
# Helpers on session files


def records(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


def n_checkpoints(path: Path) -> int:
    return sum(1 for r in records(path) if r.get("role") == "_checkpoint")


def text_of(record: dict[str, Any]) -> str:
    content = record.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def assert_reverted(agent_dir: Path, checkpoint: int, message: str) -> None:
    """kimi-cli itself went back: the old world line was rotated away, and the new one
    is its prefix up to `_checkpoint <checkpoint>` followed by the D-Mail."""
    old_file = agent_dir / "context_1.jsonl"
    assert old_file.exists(), f"no rotated {old_file.name} in {agent_dir}"
    old = records(old_file)
    new = records(agent_dir / "context.jsonl")
    cut = old.index({"role": "_checkpoint", "id": checkpoint})
    assert new[: cut + 1] == old[: cut + 1], "new world line does not share the prefix"
    after = new[cut + 1 :]
    assert after[0] == {"role": "user", "content": f"<system>CHECKPOINT {checkpoint}</system>"}, (
        after[0]
    )
    assert (
        after[1]["role"] == "user" and text_of(after[1]) == DMAIL_PREFIX + message + "</system>"
    ), after[1]


def wait_gone(*paths: Path, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while any(p.exists() for p in paths) and time.monotonic() < deadline:
        time.sleep(0.05)
    for p in paths:
        assert not p.exists(), f"{p} still exists after exit"


def expect_error(c: DenwaClient, req: dict[str, Any], error: str) -> None:
    reply = c.request(req)
    assert reply == {"ok": False, "error": error}, f"{req} -> {reply}"


def expect_bad(c: DenwaClient, req: Any, raw: bytes | None = None) -> dict[str, Any]:
    if raw is None:
        raw = json.dumps(req).encode() + b"\n"
    c.send_raw(raw)
    reply = c.read_reply()
    assert reply is not None and reply["ok"] is False and reply["error"], f"{raw[:80]!r} -> {reply}"
    return reply


# ----------------------------------------------------------------------------
# Test 1: denwa/1 against a real kimi-cli session, and the revert it causes


def test_protocol_and_revert(root: Path) -> None:
    k = KimiWire(python=PYTHON, root=root, scripts=TWO_TURNS)
    try:
        k.initialize()
        sdir = k.session_dir()

        ann = read_announce(sdir)
        sock = Path(ann["socket"])
        runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
        base = (
            Path(runtime_dir) / "worldline"
            if runtime_dir
            else Path(f"/tmp/worldline-{os.getuid()}")
        )
        assert ann == {
            "protocol": "denwa/1",
            "socket": str(base / f"{sdir.name}.sock"),
            "pid": k.proc.pid,
            "agent": "main",
        }, ann
        assert stat.S_IMODE(sock.stat().st_mode) == 0o600, oct(sock.stat().st_mode)
        assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700

        with DenwaClient(sock) as c:
            hello = c.request({"op": "hello", "id": 7})
            assert hello["ok"] and hello["protocol"] == "denwa/1" and hello["id"] == 7, hello
            assert hello["session"] == sdir.name and hello["agent"] == "main", hello
            assert hello["server"].startswith("worldline_denwa "), hello
            # No turn yet: no checkpoint to go back to.
            assert c.request({"op": "status"}) == {"ok": True, "n_checkpoints": 0, "pending": None}
            expect_error(
                c,
                {"op": "send_dmail", "message": "x", "checkpoint_id": 0},
                "There is no checkpoint with the given ID",
            )

        k.prompt("first question")
        live = n_checkpoints(sdir / "context.jsonl")
        assert live == 2, f"expected 2 checkpoints after one text-only turn, found {live}"

        with DenwaClient(sock) as c:
            assert c.request({"op": "status", "id": "s"}) == {
                "ok": True,
                "n_checkpoints": live,
                "pending": None,
                "id": "s",
            }
            # DenwaRenji's own errors, word for word.
            expect_error(
                c,
                {"op": "send_dmail", "message": "x", "checkpoint_id": -1},
                "The checkpoint ID can not be negative",
            )
            expect_error(
                c,
                {"op": "send_dmail", "message": "x", "checkpoint_id": live},
                "There is no checkpoint with the given ID",
            )
            # Malformed requests get an error, and the connection stays open.
            expect_bad(c, None, raw=b"{not json\n")
            expect_bad(c, [1, 2])
            expect_bad(c, {"op": "launch"})
            expect_bad(c, {"nop": "status"})
            expect_bad(c, {"op": "send_dmail", "checkpoint_id": 0})
            expect_bad(c, {"op": "send_dmail", "message": "x", "checkpoint_id": "0"})
            expect_bad(c, {"op": "send_dmail", "message": "x", "checkpoint_id": True})
            assert expect_bad(c, {"op": "launch", "id": [1]})["id"] == [1]
            # A line of exactly 1 MiB is still fine.
            hello = b'{"op":"hello","pad":"'
            line = hello + b"x" * (MIB - len(hello) - 2) + b'"}'
            assert len(line) == MIB
            c.send_raw(line + b"\n")
            assert (c.read_reply() or {}).get("ok") is True

            message = "Checkpoint 0 is where it went wrong: answer in one word."
            assert c.request(
                {"op": "send_dmail", "message": message, "checkpoint_id": 0, "id": 1}
            ) == {"ok": True, "id": 1}
            expect_error(
                c,
                {"op": "send_dmail", "message": "again", "checkpoint_id": 1},
                "Only one D-Mail can be sent at a time",
            )
            assert c.request({"op": "status"}) == {
                "ok": True,
                "n_checkpoints": live,
                "pending": {"message": message, "checkpoint_id": 0},
            }

        # A line over 1 MiB: an error reply, then the connection is closed.
        with DenwaClient(sock) as c:
            c.send_raw(b"x" * (MIB + 1) + b"\n")
            reply = c.read_reply()
            assert reply is not None and reply["ok"] is False, reply
            assert c.read_reply() is None, "connection stayed open after an overlong line"

        # Nothing happens until the agent's next step ends; then kimi-cli reverts.
        assert not (sdir / "context_1.jsonl").exists()
        k.prompt("second question")
        assert_reverted(sdir, 0, message)
        new = records(sdir / "context.jsonl")
        assert new[-1] == {"role": "assistant", "content": "answer after reading the D-Mail"}, new[
            -1
        ]
        with DenwaClient(sock) as c:
            assert c.request({"op": "status"}) == {
                "ok": True,
                "n_checkpoints": n_checkpoints(sdir / "context.jsonl"),
                "pending": None,
            }

        assert k.close() == 0
        wait_gone(sock, sdir / "denwa.json")
    finally:
        k.kill()


# ----------------------------------------------------------------------------
# Test 2: worldline send / worldline tree against a real kimi-cli session


def run_worldline(*args: str) -> subprocess.CompletedProcess[str]:
    bin_path = os.environ.get("WORLDLINE_BIN") or str(REPO / "target/debug/worldline")
    return subprocess.run([bin_path, *args], capture_output=True, text=True, timeout=30)


def not_built(proc: subprocess.CompletedProcess[str]) -> bool:
    return proc.returncode != 0 and "not built yet" in (proc.stderr + proc.stdout)


def test_worldline_send_and_tree(root: Path) -> None:
    k = KimiWire(python=PYTHON, root=root, scripts=TWO_TURNS)
    try:
        k.initialize()
        sdir = k.session_dir()
        k.prompt("first question")
        checkpoint, message = 1, "The user wanted Rust, not Python. Start over from here."

        sent = run_worldline(
            "send", str(sdir), "--checkpoint", str(checkpoint), "--message", message
        )
        if not_built(sent):
            skip(
                "`worldline send` is not built yet: sent the D-Mail with the Python client instead"
            )
            with DenwaClient.for_dir(sdir) as c:
                reply = c.request(
                    {"op": "send_dmail", "message": message, "checkpoint_id": checkpoint}
                )
                assert reply == {"ok": True}, reply
        else:
            assert sent.returncode == 0, f"worldline send failed ({sent.returncode}): {sent.stderr}"

        k.prompt("second question")
        assert_reverted(sdir, checkpoint, message)

        tree = run_worldline("tree", str(sdir), "--format", "json")
        if not_built(tree):
            skip("`worldline tree` is not built yet: checked the rotation on the files only")
        else:
            assert tree.returncode == 0, f"worldline tree failed ({tree.returncode}): {tree.stderr}"
            lines = json.loads(tree.stdout)["world_lines"]
            dmail = [w for w in lines if (w.get("fork") or {}).get("kind") == "dmail"]
            assert any(
                w["fork"].get("checkpoint") == checkpoint and w["fork"].get("message") == message
                for w in dmail
            ), f"no dmail world line at checkpoint {checkpoint} with the message: {lines}"
        assert k.close() == 0
    finally:
        k.kill()


# ----------------------------------------------------------------------------
# Test 3: a subagent serves its own socket, and a D-Mail reverts the subagent


SUB_MESSAGE = "Subagent: the sleep was pointless, skip it."
SUBAGENT_TURN = [
    # root, step 1: hand the task to a "coder" subagent (foreground)
    'tool_call: {"id": "call_agent", "name": "Agent", "arguments": '
    + json.dumps(
        json.dumps(
            {"description": "slow task", "prompt": "Sleep, then report.", "subagent_type": "coder"}
        )
    )
    + "}",
    # subagent, step 1: a slow command; the test sends the D-Mail meanwhile
    'tool_call: {"id": "call_sleep", "name": "Shell", "arguments": '
    + json.dumps(json.dumps({"command": "sleep 4"}))
    + "}",
    # subagent, step 2 (after the revert): a final report long enough to be a summary
    "text: " + "Report after the D-Mail: nothing to do. " * 8,
    # root, step 2
    "text: the subagent reported back",
]


def test_subagent_socket(root: Path) -> None:
    k = KimiWire(
        python=PYTHON,
        root=root,
        scripts=SUBAGENT_TURN,
        agent_file=HERE / "agents" / "with-subagent.yaml",
    )
    result: dict[str, Any] = {}

    def meddle(sdir: Path) -> None:
        """While the subagent sleeps: find its socket, check it, send it a D-Mail."""
        try:
            deadline = time.monotonic() + 30
            while not (found := list(sdir.glob("subagents/*/denwa.json"))):
                if time.monotonic() > deadline:
                    raise TimeoutError("no subagent denwa.json appeared")
                time.sleep(0.05)
            sub_dir = found[0].parent
            ann = read_announce(sub_dir)
            result["sub_dir"], result["ann"] = sub_dir, ann
            with DenwaClient(ann["socket"]) as c:
                result["hello"] = c.request({"op": "hello"})
                # Wait until the subagent's first step has begun (its checkpoints are set).
                while (st := c.request({"op": "status"}))["n_checkpoints"] < 2:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"subagent never reached its first step: {st}")
                    time.sleep(0.05)
                result["status"] = st
                result["sent"] = c.request(
                    {"op": "send_dmail", "message": SUB_MESSAGE, "checkpoint_id": 0}
                )
        except Exception as e:
            result["error"] = e

    try:
        k.initialize()
        sdir = k.session_dir()
        import threading

        t = threading.Thread(target=meddle, args=(sdir,), daemon=True)
        t.start()
        k.prompt("please delegate", timeout=90)
        t.join(10)
        if "error" in result:
            raise result["error"]
        sub_dir, ann = result["sub_dir"], result["ann"]
        agent_id = sub_dir.name
        assert ann["agent"] == agent_id, ann
        assert ann["socket"].endswith(f"/{sdir.name}-{agent_id}.sock"), ann
        assert ann["socket"] != read_announce(sdir)["socket"]
        assert result["hello"]["agent"] == agent_id and result["hello"]["session"] == sdir.name
        assert result["status"]["pending"] is None, result["status"]
        assert result["sent"] == {"ok": True}, result["sent"]

        # The subagent went back; the main agent's world line did not.
        assert_reverted(sub_dir, 0, SUB_MESSAGE)
        assert not (sdir / "context_1.jsonl").exists()
        with DenwaClient.for_dir(sdir) as c:
            assert c.request({"op": "status"})["pending"] is None
        # Finished: its socket may live on, but it takes no D-Mail that would be lost.
        with DenwaClient(ann["socket"]) as c:
            expect_error(
                c,
                {"op": "send_dmail", "message": "late", "checkpoint_id": 0},
                f"subagent {agent_id} is not running (idle); a D-Mail would never arrive",
            )
        assert k.close() == 0
        wait_gone(Path(ann["socket"]), sub_dir / "denwa.json")
    finally:
        k.kill()


# ----------------------------------------------------------------------------
# Test 4: the socket rules, in this process and a helper process, without a model


def stub_runtime(session_dir: Path, session_id: str, agent: str | None = None) -> Any:
    """Just what the bridge reads from kimi-cli's Runtime."""
    return SimpleNamespace(
        session=SimpleNamespace(dir=session_dir, id=session_id),
        role="subagent" if agent else "root",
        subagent_id=agent,
    )


_SECOND_SERVER = textwrap.dedent("""
    import asyncio, json, sys
    from pathlib import Path
    from types import SimpleNamespace
    import worldline_denwa as wd
    from kimi_cli.soul.denwarenji import DenwaRenji, DMail

    async def main():
        rt = SimpleNamespace(session=SimpleNamespace(dir=Path(sys.argv[1]), id=sys.argv[2]),
                             role="root", subagent_id=None)
        tool = wd.SendDMail(DenwaRenji(), rt)   # must not raise
        ret = await tool(DMail(message="m", checkpoint_id=0))
        print(json.dumps({"serving": len(wd._servers), "tool_message": ret.message}))

    asyncio.run(main())
""")


_KNOCK = textwrap.dedent("""
    import socket, sys
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    try:
        s.connect(sys.argv[1])
    except PermissionError:
        sys.exit(print("unreachable"))  # a parent directory keeps us out already
    try:
        s.sendall(b'{"op":"hello"}\\n')
        print("closed" if s.recv(100) == b"" else "answered")
    except (BrokenPipeError, ConnectionResetError):
        print("closed")  # shut before we could even write
""")


def test_socket_rules(root: Path) -> None:
    import inspect

    import worldline_denwa as wd
    from kimi_cli.soul.agent import Runtime
    from kimi_cli.soul.denwarenji import DenwaRenji, DMail
    from kimi_cli.tools.dmail import SendDMail as KimiSendDMail

    # Same tool for the model, and kimi-cli can inject its dependencies.
    assert issubclass(wd.SendDMail, KimiSendDMail)
    assert wd.SendDMail.name == KimiSendDMail.name == "SendDMail"
    assert wd.SendDMail.description == KimiSendDMail.description
    assert wd.SendDMail.params is KimiSendDMail.params
    annotations = [p.annotation for p in inspect.signature(wd.SendDMail).parameters.values()]
    assert annotations == [DenwaRenji, Runtime], annotations

    sid = f"unit-{os.getpid()}"
    sdir = root / "session"
    sdir.mkdir()
    sock_path = wd.socket_path(sid, None)

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        # A stale socket (bound, nobody listening) is replaced.
        sock_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        stale = socket.socket(socket.AF_UNIX)
        stale.bind(str(sock_path))
        stale.close()
        renji = DenwaRenji()
        tool = wd.SendDMail(renji, stub_runtime(sdir, sid))
        await asyncio.sleep(0.05)
        assert read_announce(sdir)["socket"] == str(sock_path)

        def client_calls() -> list[dict[str, Any]]:
            with DenwaClient(sock_path) as c:
                return [
                    c.request({"op": "hello"}),
                    c.request({"op": "status"}),
                    c.request({"op": "send_dmail", "message": "m", "checkpoint_id": 0}),
                ]

        renji.set_n_checkpoints(3)
        hello, status, sent = await loop.run_in_executor(None, client_calls)
        assert hello["session"] == sid and hello["agent"] == "main", hello
        assert status == {"ok": True, "n_checkpoints": 3, "pending": None}, status
        assert sent == {"ok": True} and renji.fetch_pending_dmail() == DMail(
            message="m", checkpoint_id=0
        )

        # The same agent built again in this process (a resumed subagent, a reload):
        # the newer tool takes the socket over, and the older one going away
        # does not close it.
        renji2 = DenwaRenji()
        renji2.set_n_checkpoints(5)
        tool2 = wd.SendDMail(renji2, stub_runtime(sdir, sid))
        del tool
        gc.collect()
        with DenwaClient(sock_path) as c:
            status = await loop.run_in_executor(None, c.request, {"op": "status"})
        assert status == {"ok": True, "n_checkpoints": 5, "pending": None}, status
        tool = tool2
        del tool2

        # A second server for the same live session (another process) refuses to
        # start, and its SendDMail still works as the plain tool.
        other = await asyncio.create_subprocess_exec(
            PYTHON,
            "-c",
            _SECOND_SERVER,
            str(root / "other"),
            sid,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=str(HERE.parent)),
        )
        out, err = await asyncio.wait_for(other.communicate(), 60)
        assert b"another denwa server is already live for this session" in err, err
        got = json.loads(out.decode().strip().splitlines()[-1])
        assert got == {
            "serving": 0,
            "tool_message": "Failed to send D-Mail. Error: "
            "There is no checkpoint with the given ID",
        }, got
        assert read_announce(sdir)["pid"] == os.getpid()

        # Another uid is shut out by SO_PEERCRED, even with the file modes opened up.
        if (
            os.getuid() == 0
            and hasattr(socket, "SO_PEERCRED")
            and os.path.exists("/usr/bin/python3")
        ):
            os.chmod(sock_path.parent, 0o755)
            os.chmod(sock_path, 0o777)
            try:
                # The system python: this one may live in a home nobody can enter.
                knock = await asyncio.create_subprocess_exec(
                    "/usr/bin/python3",
                    "-c",
                    _KNOCK,
                    str(sock_path),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    user=65534,
                    group=65534,
                    extra_groups=[],
                    cwd="/",
                )
                out, _ = await asyncio.wait_for(knock.communicate(), 20)
                if out.decode().strip() == "unreachable":
                    skip(f"SO_PEERCRED check: another uid cannot reach {sock_path.parent.parent}")
                else:
                    assert out.decode().strip() == "closed", f"another uid got: {out!r}"
            finally:
                os.chmod(sock_path.parent, 0o700)
                os.chmod(sock_path, 0o600)
        else:
            skip("SO_PEERCRED check needs root (to act as another uid) on Linux")

        # A subagent gets its own socket, announced in its own directory.
        sub = wd.SendDMail(DenwaRenji(), stub_runtime(sdir, sid, agent="a1b2"))
        sub_ann = read_announce(sdir / "subagents" / "a1b2")
        assert sub_ann["socket"] == str(wd.socket_path(sid, "a1b2")) and sub_ann["agent"] == "a1b2"
        assert sub_ann["socket"].endswith(f"/{sid}-a1b2.sock")
        await asyncio.sleep(0.05)
        with DenwaClient(sub_ann["socket"]) as c:
            hello = await loop.run_in_executor(None, c.request, {"op": "hello"})
        assert hello["agent"] == "a1b2", hello

        # When the agent (its tool) is gone, its socket and denwa.json go too.
        del sub
        gc.collect()
        wait_gone(wd.socket_path(sid, "a1b2"), sdir / "subagents" / "a1b2" / "denwa.json")
        del tool
        gc.collect()
        wait_gone(sock_path, sdir / "denwa.json")

    asyncio.run(scenario())

    # Outside an event loop, or with an unusable socket directory: no server,
    # a warning in kimi-cli's log, and still the normal SendDMail.
    from kimi_cli import logger

    warnings: list[str] = []
    sink = logger.add(lambda m: warnings.append(str(m)), level="WARNING")
    saved = os.environ.get("XDG_RUNTIME_DIR")
    (root / "not-a-dir").write_text("")
    os.environ["XDG_RUNTIME_DIR"] = str(root / "not-a-dir")
    try:

        async def degraded() -> None:
            tool = wd.SendDMail(DenwaRenji(), stub_runtime(sdir, sid + "-x"))
            assert not wd._servers and not (sdir / "denwa.json").exists()
            assert (await tool(DMail(message="m", checkpoint_id=0))).message.startswith("Failed")

        asyncio.run(degraded())
    finally:
        if saved is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = saved
    wd.SendDMail(DenwaRenji(), stub_runtime(sdir, sid + "-y"))  # no running loop
    assert not wd._servers
    logger.remove(sink)
    assert len(warnings) == 2 and all("not serving D-Mails from outside" in w for w in warnings), (
        warnings
    )
    assert "Not a directory" in warnings[0] and "no running event loop" in warnings[1], warnings


# ----------------------------------------------------------------------------

TESTS: dict[str, Callable[[Path], None]] = {
    "protocol_and_revert": test_protocol_and_revert,
    "worldline_send_and_tree": test_worldline_send_and_tree,
    "subagent_socket": test_subagent_socket,
    "socket_rules": test_socket_rules,
}


def main(argv: list[str]) -> int:
    names = argv or list(TESTS)
    # The bridge logs through kimi-cli's loguru logger; in this process keep warnings only.
    from kimi_cli import logger

    logger.remove()
    logger.add(sys.stderr, level="ERROR")
    passed = failed = 0
    for name in names:
        root = Path(tempfile.mkdtemp(prefix=f"kimi-bridge-{name}-"))
        t0 = time.monotonic()
        try:
            TESTS[name](root)
        except Exception:
            failed += 1
            print(f"FAIL {name} ({time.monotonic() - t0:.1f}s)", flush=True)
            traceback.print_exc()
            for log in ("kimi.stderr", "share/logs/kimi.log"):
                if (root / log).exists():
                    tail = (root / log).read_text(errors="replace").splitlines()[-15:]
                    print(f"--- last lines of {log}:\n" + "\n".join(tail))
            print(f"(files kept in {root})")
        else:
            passed += 1
            print(f"ok   {name} ({time.monotonic() - t0:.1f}s)", flush=True)
            shutil.rmtree(root, ignore_errors=True)
    for line in skips:
        print(line)
    print(f"kimi-cli bridge: {passed} passed, {failed} failed")
    return 1 if failed else 0


def _terminated(signum: int, _frame: Any) -> None:
    # Unwind through the tests' `finally` blocks, which kill their kimi-cli.
    raise SystemExit(f"kimi-cli bridge: stopped by signal {signum}")


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGTERM, _terminated)
    sys.exit(main(sys.argv[1:]))
