"""A scripted OpenAI-compatible chat-completions server for recording real
Kimi Code sessions offline (127.0.0.1 only, Python 3 stdlib).

Replies are a pure function of the request, so a scenario replays the same:
* a compaction request (its instructions ask for a summary)  -> a fixed summary;
* a last user message containing TOOL                        -> one Bash call;
* a last user message containing SLOW                        -> a Bash call that sleeps 60 s
  (a turn to interrupt);
* after tool results                                         -> "Finished after N tool result(s).";
* anything else                                              -> "Scripted reply to: <prompt>".
Every request is appended to the log file given as argv[2] (one JSON line),
so a test can check what Kimi Code sent.
"""

import json
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
    everything = " ".join(text_of(m.get("content")) for m in msgs)
    # Kimi Code appends injections (`<system-reminder>…`) after the prompt.
    last_user = next((m for m in reversed(msgs) if m.get("role") == "user"
                      and not text_of(m.get("content")).lstrip().startswith("<system")), None)
    prompt = text_of(last_user.get("content")).strip() if last_user else ""
    tools_after = 0
    for m in reversed(msgs):
        if m.get("role") == "tool":
            tools_after += 1
        elif m.get("role") == "user":
            break
    if "summar" in prompt.lower() and ("compact" in everything.lower() or "summary" in prompt.lower()):
        return {"content": "## Summary\nScripted compaction summary. (fake provider)"}
    if tools_after:
        return {"content": f"Finished after {tools_after} tool result(s). (scripted)"}
    if "SLOW" in prompt and req.get("tools"):
        return {"tool_call": {"name": "Bash", "arguments": json.dumps(
            {"command": "sleep 60", "description": "a long turn", "timeout": 120000})}}
    if "TOOL" in prompt and req.get("tools"):
        return {"tool_call": {"name": "Bash", "arguments": json.dumps(
            {"command": "echo scripted-tool", "description": "scripted"})}}
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
            cid = f"chatcmpl-fake-{Handler.counter}"
            with open(sys.argv[2], "a") as log:
                log.write(json.dumps(req) + "\n")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_error(404)
            return
        r = reply_for(req)
        usage = {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112}
        if r.get("tool_call"):
            call = {"index": 0, "id": f"call_{Handler.counter:08x}", "type": "function",
                    "function": r["tool_call"]}
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
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
    print(f"fake llm on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
