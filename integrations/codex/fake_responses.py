"""A scripted OpenAI Responses-API server (POST /v1/responses, SSE) for
recording real Codex sessions offline (127.0.0.1 only, Python 3 stdlib).

Replies are a pure function of the request, so a scenario replays the same:
* a compaction request (Codex's summarisation prompt)      -> a fixed summary;
* after tool outputs in the current turn                    -> "Finished after N tool result(s). (scripted)";
* a prompt with TOOLS=N                                     -> N exec_command calls, one per request;
* a prompt with SPAWN                                       -> one spawn_agent call (a subagent);
* anything else                                             -> "Scripted reply to: <prompt>".
Usage reported per response is large when the prompt says BIG, so Codex's
auto-compaction can be triggered. Every request is appended to the log file
given as argv[2] (one JSON line), so a test can check what Codex sent.
usage: fake_responses.py PORT LOG
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "shared"))
from openai_chat import text_of  # noqa: E402
from scripted_server import Handler as ScriptedHandler, main  # noqa: E402


def injected(text):
    t = text.lstrip()
    return t.startswith("<") or t.startswith("# AGENTS.md")


def reply_for(req):
    items = [i for i in req.get("input", []) if isinstance(i, dict)]
    # The current turn: everything after the last real user message.
    last_user = None
    for k, it in enumerate(items):
        if it.get("type", "message") == "message" and it.get("role") == "user" \
                and not injected(text_of(it.get("content"))):
            last_user = k
    prompt = text_of(items[last_user].get("content")).strip() if last_user is not None else ""
    after = items[last_user + 1:] if last_user is not None else items
    outputs = [i for i in after if i.get("type", "").endswith("_output")]
    tools = set()
    for t in req.get("tools", []):
        if isinstance(t, dict):
            tools.add(t.get("name"))
            tools.update(x.get("name") for x in t.get("tools", []) if isinstance(x, dict))
    everything = json.dumps(items)
    if "summar" in (req.get("instructions") or "").lower() and "checkpoint" in everything.lower() \
            or re.search(r"(handoff summary|CONTEXT CHECKPOINT COMPACTION)", prompt, re.I):
        return {"text": "## Summary\nScripted compaction summary. (scripted)"}
    m = re.search(r"TOOLS=(\d+)", prompt)
    n = int(m.group(1)) if m else 0
    if "SPAWN" in prompt and "spawn_agent" in tools and not outputs:
        return {"call": ("spawn_agent", {"message": "SUB: say hello from the subagent"}),
                "namespace": "multi_agent_v1"}
    if "SPAWN" in prompt and "wait_agent" in tools and len(outputs) == 1:
        ids = re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                         text_of(outputs[0].get("output")) if isinstance(outputs[0].get("output"), (str, list)) else "")
        if ids:
            return {"call": ("wait_agent", {"targets": ids[:1], "timeout_ms": 30000}),
                    "namespace": "multi_agent_v1"}
    if len(outputs) < n:
        k = len(outputs) + 1
        return {"call": ("exec_command", {"cmd": f"echo step-{k}-of-{n}"})}
    if outputs:
        return {"text": f"Finished after {len(outputs)} tool result(s). (scripted)"}
    return {"text": f"Scripted reply to: {prompt}"}


class Handler(ScriptedHandler):
    log_paths = True

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self.send_models({"models": []})
            return
        self.send_response(404)
        self.end_headers()

    def answer(self, path, req, k):
        if not path.endswith("/responses"):
            self.send_response(404)
            self.end_headers()
            return
        reply = reply_for(req)
        rid = f"resp_{k:06d}"
        if "call" in reply:
            name, args = reply["call"]
            item = {"type": "function_call", "id": f"fc_{k:06d}", "status": "completed",
                    "name": name, "arguments": json.dumps(args), "call_id": f"call_{k:06d}"}
            if reply.get("namespace"):
                item["namespace"] = reply["namespace"]
        else:
            item = {"type": "message", "id": f"msg_{k:06d}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": reply["text"], "annotations": []}]}
        big = "BIG" in json.dumps(req.get("input", []))
        inp = 90000 if big else 100 + 20 * k
        usage = {"input_tokens": inp, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": inp + 12}
        events = [
            ("response.created", {"type": "response.created", "response": {"id": rid, "status": "in_progress"}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {"id": rid, "status": "completed", "output": [item], "usage": usage}}),
        ]
        body = "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


if __name__ == "__main__":
    main(Handler, "listening {port}")
