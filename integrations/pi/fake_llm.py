"""A scripted OpenAI-compatible chat-completions server for recording real
Pi sessions offline (127.0.0.1 only, Python 3 stdlib).

Replies are a pure function of the request, so a scenario replays the same:
* a summary request (compaction or a /tree branch summary)   -> a fixed summary;
* a prompt with TOOLS=N                                      -> N bash calls, one per step;
* a prompt with PAR=N                                        -> N bash calls in one step;
* after the last tool result                                 -> "Finished after N tool result(s). (scripted)";
* anything else                                              -> "Scripted reply to: <prompt>".
Usage grows with the conversation, so Pi sees a context worth compacting.
Every request is appended to the log file given as argv[2] (one JSON line).
The port is argv[1] (0: any); the bound port is printed first.
"""

import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def reply_for(req):
    msgs = req.get("messages", [])
    last_user = next((m for m in reversed(msgs) if m.get("role") == "user"), None)
    prompt = text_of(last_user.get("content")).strip() if last_user else ""
    results = 0
    for m in reversed(msgs):
        if m.get("role") == "tool":
            results += 1
        elif m.get("role") == "user":
            break
    low = prompt.lower()
    if "summar" in low and ("<conversation>" in prompt or "checkpoint" in low or "branch" in low):
        return {"content": "## Goal\nScripted summary. (fake provider)"}
    want = re.search(r"TOOLS=(\d+)", prompt)
    par = re.search(r"PAR=(\d+)", prompt)
    if par and req.get("tools"):
        n = int(par.group(1))
        if results == 0:
            return {"calls": [f"echo parallel-{k}" for k in range(1, n + 1)]}
        return {"content": f"Finished after {results} tool result(s). (scripted)"}
    if want and req.get("tools"):
        n = int(want.group(1))
        if results < n:
            return {"calls": [f"echo step-{results + 1}-of-{n}"]}
        return {"content": f"Finished after {results} tool result(s). (scripted)"}
    if results:
        return {"content": f"Finished after {results} tool result(s). (scripted)"}
    return {"content": f"Scripted reply to: {prompt}"}


class Handler(BaseHTTPRequestHandler):
    counter = 0
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self.send_json({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        else:
            self.send_error(404)

    def send_json(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n) or b"{}")
        with Handler.lock:
            Handler.counter += 1
            count = Handler.counter
            with open(sys.argv[2], "a") as log:
                log.write(json.dumps(req) + "\n")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_error(404)
            return
        cid = f"chatcmpl-fake-{count}"
        r = reply_for(req)
        prompt_tokens = 100 + 20 * len(req.get("messages", []))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 12,
                 "total_tokens": prompt_tokens + 12}
        if r.get("calls"):
            calls = [{"index": i, "id": f"call_{count:06x}{i:02x}", "type": "function",
                      "function": {"name": "bash", "arguments": json.dumps({"command": c})}}
                     for i, c in enumerate(r["calls"])]
            message, finish = {"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": r["content"]}, "stop"
        if not req.get("stream"):
            self.send_json({"id": cid, "object": "chat.completion", "created": int(time.time()),
                            "model": req.get("model", "fake-model"),
                            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                            "usage": usage})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

        def chunk(delta, fin=None, use=None):
            c = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                 "model": req.get("model", "fake-model"),
                 "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]}
            if use:
                c["usage"] = use
            self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")

        chunk({"role": "assistant"})
        if message.get("tool_calls"):
            chunk({"tool_calls": message["tool_calls"]})
        else:
            chunk({"content": message["content"]})
        chunk({}, finish, usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
