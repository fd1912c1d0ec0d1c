"""worldline bridge for kimi-cli: a drop-in ``SendDMail`` that also serves denwa/1.

List it in a kimi-cli agent file instead of the built-in tool::

    - "worldline_denwa:SendDMail"

kimi-cli builds tools by import path and injects their constructor dependencies by
annotation (``DenwaRenji``, ``Runtime``). This class *is* kimi-cli's own SendDMail
(a subclass: same name, description, parameters and result texts for the model),
and on construction it also starts a denwa/1 server (worldline's
``docs/denwa-protocol.md``) over the very same DenwaRenji, so ``worldline send``
can post a D-Mail into the running session. kimi-cli itself is not patched.

The server runs on kimi-cli's own asyncio event loop. Every request is handled in
a loop callback, between the agent loop's awaits, so DenwaRenji (plain Python,
not thread-safe) is only ever touched from the loop thread, exactly as when the
model calls SendDMail. If anything about the socket fails, a warning goes to
kimi-cli's log and the tool still works as the plain SendDMail.

No ``from __future__ import annotations`` here: kimi-cli matches the constructor's
annotation objects against its dependency table, so they must be real classes.
"""

import asyncio
import atexit
import contextlib
import errno
import json
import os
import socket
import stat
import struct
import weakref
from pathlib import Path
from typing import Any

from kimi_cli import logger
from kimi_cli.soul.agent import Runtime
from kimi_cli.soul.denwarenji import DenwaRenji, DenwaRenjiError, DMail
from kimi_cli.tools.dmail import SendDMail as _KimiSendDMail

__all__ = ["SendDMail"]

__version__ = "0.1.0"

PROTOCOL = "denwa/1"
MAX_LINE = 1 << 20  # bytes of one request line, newline not counted (asyncio's limit)
WRITE_TIMEOUT_S = 5.0  # a client that does not read its replies is dropped


def _kimi_version() -> str:
    try:
        from kimi_cli.constant import get_version

        return str(get_version())
    except Exception:
        return "unknown"


SERVER_NAME = f"worldline_denwa {__version__} (kimi-cli {_kimi_version()})"


class SendDMail(_KimiSendDMail):
    """kimi-cli's SendDMail, plus a denwa/1 socket for D-Mails from outside."""

    def __init__(self, denwa_renji: DenwaRenji, runtime: Runtime) -> None:
        super().__init__(denwa_renji)
        try:
            _serve(self, denwa_renji, runtime)
        except Exception as e:  # never let the bridge break the agent
            logger.warning("worldline denwa: not serving D-Mails from outside: {e}", e=e)


# ----------------------------------------------------------------------------
# Where things live


def socket_dir() -> Path:
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
    if runtime_dir:
        return Path(runtime_dir) / "worldline"
    return Path("/tmp") / f"worldline-{os.getuid()}"


def socket_path(session_id: str, agent_id: str | None) -> Path:
    name = session_id if agent_id is None else f"{session_id}-{agent_id}"
    return socket_dir() / f"{name}.sock"


def _announce_dir(runtime: Runtime) -> Path:
    session_dir = Path(runtime.session.dir)
    if runtime.role == "subagent" and runtime.subagent_id:
        return session_dir / "subagents" / runtime.subagent_id
    return session_dir


def _private_dir(path: Path) -> None:
    """Create `path` with mode 0700, or accept it only if it is ours and private."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise RuntimeError(f"{path} is not a directory owned by this user")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)


# ----------------------------------------------------------------------------
# Server lifetime

# Servers of this process by socket path. kimi-cli may build the same agent's tools
# again (a resumed subagent, a reload); the newest SendDMail then takes the socket
# over instead of being refused as "already live".
_servers: dict[str, "_DenwaServer"] = {}


def _serve(tool: SendDMail, renji: DenwaRenji, runtime: Runtime) -> None:
    loop = asyncio.get_running_loop()  # RuntimeError (logged) outside kimi's loop
    agent = runtime.subagent_id if runtime.role == "subagent" else None
    path = socket_path(runtime.session.id, agent)
    key = str(path)
    old = _servers.get(key)
    if old is not None:
        if old.loop is loop and not loop.is_closed():
            old.adopt(tool, renji)
            return
        old.close()
    server = _DenwaServer(
        loop=loop,
        path=path,
        announce=_announce_dir(runtime) / "denwa.json",
        session_id=runtime.session.id,
        agent=agent or "main",
        subagent_store=getattr(runtime, "subagent_store", None) if agent else None,
    )
    server.start()
    server.adopt(tool, renji)
    _servers[key] = server


@atexit.register
def _close_all() -> None:
    for server in list(_servers.values()):
        server.close()


class _DenwaServer:
    def __init__(
        self,
        *,
        loop: asyncio.AbstractEventLoop,
        path: Path,
        announce: Path,
        session_id: str,
        agent: str,
        subagent_store: Any = None,
    ) -> None:
        self.loop = loop
        self.path = path
        self.announce = announce
        self.session_id = session_id
        self.agent = agent
        self._subagent_store = subagent_store
        self._renji: weakref.ref[DenwaRenji] | None = None
        self._finalizer: weakref.finalize | None = None
        self._sock: socket.socket | None = None
        self._server: asyncio.AbstractServer | None = None
        self._start_task: asyncio.Task[None] | None = None
        self._bound_ino: int | None = None
        self._closed = False

    def adopt(self, tool: SendDMail, renji: DenwaRenji) -> None:
        """Serve `renji` from now on; close when `tool` is garbage (its agent is gone).

        Only weak references: the server must not keep a finished agent alive.
        """
        self._renji = weakref.ref(renji)
        if self._finalizer is not None:
            self._finalizer.detach()
        self._finalizer = weakref.finalize(tool, self._close_from_gc)

    def _close_from_gc(self) -> None:
        # The garbage collector may run in any thread; asyncio objects belong to the
        # loop's thread, so hand the close over to the loop while it runs.
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if current is self.loop or self.loop.is_closed() or not self.loop.is_running():
            self.close()
        else:
            self.loop.call_soon_threadsafe(self.close)

    # -- start / stop ------------------------------------------------------

    def start(self) -> None:
        _private_dir(self.path.parent)
        self._replace_stale_socket()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(self.path))
            # The directory is 0700, so nobody else can connect before this chmod.
            os.chmod(self.path, 0o600)
            sock.listen(16)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._bound_ino = self.path.stat().st_ino
        # Bound and listening now; the loop starts accepting when it next runs.
        self._start_task = self.loop.create_task(self._start_serving(sock))
        self._write_announce()
        logger.info(
            "worldline denwa: serving {agent} of session {sid} at {path}",
            agent=self.agent,
            sid=self.session_id,
            path=self.path,
        )

    async def _start_serving(self, sock: socket.socket) -> None:
        try:
            self._server = await asyncio.start_unix_server(self._handle, sock=sock, limit=MAX_LINE)
        except Exception as e:
            logger.warning("worldline denwa: cannot serve {path}: {e}", path=self.path, e=e)
            self.close()

    def _replace_stale_socket(self) -> None:
        try:
            st = self.path.lstat()
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(st.st_mode):
            raise RuntimeError(f"{self.path} exists and is not a socket")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(1.0)
        try:
            probe.connect(str(self.path))
        except OSError as e:
            if e.errno not in (errno.ECONNREFUSED, errno.ENOENT):
                raise
            # Nobody listens: a leftover of a process that did not exit cleanly.
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        finally:
            probe.close()
        raise RuntimeError(f"another denwa server is already live for this session at {self.path}")

    def _write_announce(self) -> None:
        self.announce.parent.mkdir(parents=True, exist_ok=True)
        body = {
            "protocol": PROTOCOL,
            "socket": str(self.path.absolute()),
            "pid": os.getpid(),
            "agent": self.agent,
        }
        tmp = self.announce.with_name(f".denwa.json.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(body) + "\n", encoding="utf-8")
        os.replace(tmp, self.announce)

    def close(self) -> None:
        """Stop serving; remove the socket and denwa.json if they are still ours."""
        if self._closed:
            return
        self._closed = True
        if _servers.get(str(self.path)) is self:
            del _servers[str(self.path)]
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._server is not None and not self.loop.is_closed():
            with contextlib.suppress(Exception):
                self._server.close()
        if self._start_task is not None and not self._start_task.done():
            with contextlib.suppress(Exception):
                self._start_task.cancel()
        if self._sock is not None:
            self._sock.close()
        # A newer server may have replaced our files; leave those alone.
        with contextlib.suppress(OSError):
            if self.path.stat().st_ino == self._bound_ino:
                self.path.unlink()
        with contextlib.suppress(OSError, ValueError):
            if json.loads(self.announce.read_text(encoding="utf-8")).get("pid") == os.getpid():
                self.announce.unlink()

    # -- connections ---------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if not _same_uid(writer.get_extra_info("socket")):
                return
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError as e:
                    line = e.partial  # last line without a newline, or EOF
                    if not line.strip():
                        return
                except asyncio.LimitOverrunError:
                    await self._reply(writer, _error(f"line longer than {MAX_LINE} bytes"))
                    return
                await self._reply(writer, self.answer(line))
        except (ConnectionError, TimeoutError):
            pass
        except Exception as e:
            logger.warning("worldline denwa: connection failed: {e}", e=e)
        finally:
            writer.close()

    async def _reply(self, writer: asyncio.StreamWriter, reply: dict[str, Any]) -> None:
        writer.write(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
        await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)

    # -- requests --------------------------------------------------------------

    def answer(self, line: bytes) -> dict[str, Any]:
        """One request line -> its reply. Runs on kimi's loop, so DenwaRenji is safe."""
        try:
            req = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            return _error(f"bad JSON: {e}")
        if not isinstance(req, dict):
            return _error("a request must be a JSON object")
        reply = self._dispatch(req)
        if "id" in req:
            reply["id"] = req["id"]
        return reply

    def _dispatch(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        if not isinstance(op, str):
            return _error('missing or mistyped field "op" (a string)')
        if op == "hello":
            return {
                "ok": True,
                "protocol": PROTOCOL,
                "session": self.session_id,
                "agent": self.agent,
                "server": SERVER_NAME,
            }
        if op not in ("status", "send_dmail"):
            return _error(f"unknown op {op!r}")

        renji = self._renji() if self._renji is not None else None
        if renji is None:
            return _error("this agent has finished")

        if op == "status":
            # DenwaRenji has no public getters; read the state that send_dmail checks.
            pending: DMail | None = getattr(renji, "_pending_dmail", None)
            return {
                "ok": True,
                "n_checkpoints": getattr(renji, "_n_checkpoints", None),
                "pending": None
                if pending is None
                else {"message": pending.message, "checkpoint_id": pending.checkpoint_id},
            }

        message = req.get("message")
        checkpoint_id = req.get("checkpoint_id")
        if not isinstance(message, str):
            return _error('missing or mistyped field "message" (a string)')
        if not isinstance(checkpoint_id, int) or isinstance(checkpoint_id, bool):
            return _error('missing or mistyped field "checkpoint_id" (an integer)')
        if (idle := self._subagent_not_running()) is not None:
            return _error(idle)
        # model_construct skips pydantic's `ge=0`, so a negative id gets
        # DenwaRenji's own error, in DenwaRenji's own order.
        dmail = DMail.model_construct(message=message, checkpoint_id=checkpoint_id)
        try:
            renji.send_dmail(dmail)
        except DenwaRenjiError as e:
            return _error(str(e))
        logger.info(
            "worldline denwa: D-Mail to checkpoint {cp} is pending for {agent}",
            cp=checkpoint_id,
            agent=self.agent,
        )
        return {"ok": True}

    def _subagent_not_running(self) -> str | None:
        """Why a D-Mail to this subagent would never arrive, if it would not.

        A finished subagent's tool (and so this socket) may live on until the
        process exits, but its DenwaRenji is never read again; a resumed subagent
        gets a new one. kimi-cli's subagent store knows whether it is running.
        """
        if self._subagent_store is None:
            return None
        try:
            record = self._subagent_store.get_instance(self.agent)
        except Exception:
            return None  # cannot tell: let DenwaRenji decide as usual
        status = getattr(record, "status", None)
        if isinstance(status, str) and not status.startswith("running"):
            return f"subagent {self.agent} is not running ({status}); a D-Mail would never arrive"
        return None


def _error(text: str) -> dict[str, Any]:
    return {"ok": False, "error": text}


def _same_uid(sock: socket.socket | None) -> bool:
    """Only a peer running as our own uid may talk to us (SO_PEERCRED, Linux)."""
    if sock is None:
        return False
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        # No SO_PEERCRED on this OS: the 0700 directory and 0600 socket still
        # keep other users out.
        return True
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
    except OSError:
        return False
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()
