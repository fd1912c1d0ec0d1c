"""A minimal denwa/1 client (docs/denwa-protocol.md), for tests and by hand.

    python denwa_client.py <session_dir> status
    python denwa_client.py <session_dir> send <checkpoint_id> <message>

Standard library only, so it runs with any Python 3.
"""

import json
import socket
import sys
from pathlib import Path
from typing import Any


def read_announce(agent_dir: Path) -> dict[str, Any]:
    """The denwa.json a live server wrote into a session (or subagent) directory."""
    return json.loads((Path(agent_dir) / "denwa.json").read_text(encoding="utf-8"))


class DenwaClient:
    def __init__(self, sock_path: str | Path, timeout: float = 10.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(sock_path))
        self._buf = b""

    @classmethod
    def for_dir(cls, agent_dir: Path, timeout: float = 10.0) -> "DenwaClient":
        return cls(read_announce(agent_dir)["socket"], timeout)

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_reply(self) -> dict[str, Any] | None:
        """The next reply line, or None when the server closed the connection."""
        while b"\n" not in self._buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, req: dict[str, Any]) -> dict[str, Any]:
        self.send_raw(json.dumps(req).encode() + b"\n")
        reply = self.read_reply()
        if reply is None:
            raise ConnectionError("server closed the connection without a reply")
        return reply

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "DenwaClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] not in ("status", "hello", "send"):
        print(__doc__, file=sys.stderr)
        return 2
    with DenwaClient.for_dir(Path(argv[0])) as c:
        if argv[1] == "send":
            reply = c.request(
                {"op": "send_dmail", "checkpoint_id": int(argv[2]), "message": argv[3]}
            )
        else:
            reply = c.request({"op": argv[1]})
    print(json.dumps(reply))
    return 0 if reply.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
