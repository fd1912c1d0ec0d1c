"""The HTTP side of the scripted model servers the bridges record against
(Python 3 stdlib): a threaded server on 127.0.0.1 only, a request counter,
the request log (one JSON line a request) and JSON / server-sent-event
replies. Each agent's fake server subclasses Handler with its wire format
(`answer`) and its script; `main` runs it as `fake.py PORT LOG`.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    """A POST is read as JSON, numbered and logged, then handed to `answer`."""

    counter = 0
    lock = threading.Lock()
    log_path = None
    # Log {"path", "request"} rather than the bare request.
    log_paths = False

    def log_message(self, *args):
        pass

    def answer(self, path, req, k):
        """Reply to POST `path` with body `req`, the server's k-th request."""
        raise NotImplementedError

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        try:
            req = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            req = {}
        with Handler.lock:
            Handler.counter += 1
            k = Handler.counter
            if Handler.log_path:
                entry = {"path": self.path, "request": req} if self.log_paths else req
                with open(Handler.log_path, "a") as log:
                    log.write(json.dumps(entry) + "\n")
        self.answer(self.path.split("?")[0].rstrip("/"), req, k)

    def send_json(self, obj, code=200):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_models(self, extra=None):
        """GET …/models: the one fake model, OpenAI-style."""
        self.send_json(dict({"object": "list", "data": [{"id": "fake-model", "object": "model"}]},
                            **(extra or {})))

    def start_events(self, close=False):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if close:
            self.send_header("Connection", "close")
        self.end_headers()

    def event(self, data, name=None):
        """One server-sent event: `data` as JSON (or as it is, when a string)."""
        text = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {name}\n" if name else ""
        self.wfile.write(f"{head}data: {text}\n\n".encode())


def main(handler, banner):
    """Serve `handler` on 127.0.0.1:argv[1] (0: any port), logging requests to
    argv[2] when given; prints `banner` formatted with the bound port first."""
    Handler.log_path = sys.argv[2] if len(sys.argv) > 2 else None
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), handler)
    print(banner.format(port=server.server_address[1]), flush=True)
    server.serve_forever()
