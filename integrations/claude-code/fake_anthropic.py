"""A scripted Anthropic Messages API server for recording real Claude Code
sessions offline (127.0.0.1 only, Python 3 stdlib).

    fake_anthropic.py PORT LOGFILE

Replies are a pure function of the request, so a scenario replays the same:
* a compaction request (asks for <analysis> and <summary>) -> a fixed summary;
* the last user message holds tool results                 -> "Done after N tool result(s).";
* a prompt with SUBAGENT (and the Agent tool offered)      -> one Agent call whose prompt says SUBBASH;
* a prompt with SUBBASH or TOOLS=N                         -> one (N parallel) Bash call(s);
* anything else                                            -> "Scripted reply to: <prompt>".
`stream: true` is answered as Anthropic's server-sent events. Every request
is appended to LOGFILE as one JSON line, so a test can see what was sent.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "shared"))
from scripted_server import Handler as ScriptedHandler, main  # noqa: E402


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content
                       if isinstance(b, dict) and b.get("type") == "text")
    return ""


def results_in(msg):
    c = msg.get("content")
    if not isinstance(c, list):
        return 0
    return sum(1 for b in c if isinstance(b, dict) and b.get("type") == "tool_result")


def prompt_of(msgs):
    """What the last user message says: its typed text (system reminders
    skipped), or a background agent's notification."""
    for m in reversed(msgs):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        blocks = [{"type": "text", "text": c}] if isinstance(c, str) else (c or [])
        texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        if any("<task-notification>" in t for t in texts):
            return "<task-notification>"
        texts = [t for t in texts if not t.lstrip().startswith("<system-reminder>")]
        return texts[-1].strip() if texts else ""
    return ""


def reply_for(req):
    msgs = req.get("messages", [])
    last = msgs[-1] if msgs else {}
    prompt = prompt_of(msgs)
    tools = {t.get("name") for t in req.get("tools", []) if isinstance(t, dict)}
    if "<summary>" in text_of(last.get("content")) and "<analysis>" in text_of(last.get("content")):
        return [("text", "<analysis>scripted</analysis>\n<summary>Scripted summary of the "
                 "conversation so far.</summary>")]
    if prompt == "<task-notification>":
        return [("text", "The background agent finished.")]
    n = results_in(last)
    if n:
        return [("text", f"Done after {n} tool result(s).")]
    if "SUBAGENT" in prompt and "Agent" in tools:
        return [("tool", "Agent", {"description": "Inspect directory",
                                   "prompt": "SUBBASH: list the files and report.",
                                   "subagent_type": "general-purpose"})]
    if "SUBBASH" in prompt and "Bash" in tools:
        return [("tool", "Bash", {"command": "ls", "description": "List files"})]
    m = re.search(r"TOOLS=(\d+)", prompt)
    if m and "Bash" in tools:
        k = int(m.group(1))
        return [("text", f"Running {k} command(s).")] + [
            ("tool", "Bash", {"command": f"echo step-{i + 1}", "description": f"step {i + 1}"})
            for i in range(k)]
    return [("text", f"Scripted reply to: {prompt[:200]}")]


class Handler(ScriptedHandler):
    protocol_version = "HTTP/1.1"
    log_paths = True

    def not_found(self, path):
        self.send_json({"type": "error", "error": {"type": "not_found_error", "message": path}}, 404)

    def do_GET(self):
        self.not_found(self.path)

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def answer(self, path, req, k):
        if path.endswith("/count_tokens"):
            self.send_json({"input_tokens": 100})
            return
        if not path.endswith("/v1/messages"):
            self.not_found(path)
            return
        blocks = []
        for i, b in enumerate(reply_for(req)):
            if b[0] == "text":
                blocks.append({"type": "text", "text": b[1]})
            else:
                blocks.append({"type": "tool_use", "id": f"toolu_{k:06d}{i:02d}fake",
                               "name": b[1], "input": b[2]})
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        msg = {"id": f"msg_fake{k:08d}", "type": "message", "role": "assistant",
               "model": req.get("model", "claude-fake"), "content": blocks,
               "stop_reason": stop, "stop_sequence": None,
               "usage": {"input_tokens": 100, "output_tokens": 12,
                         "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
        if not req.get("stream"):
            self.send_json(msg)
            return
        self.start_events(close=True)

        def event(name, data):
            self.event(data, name)

        start = dict(msg, content=[], stop_reason=None)
        start["usage"] = dict(msg["usage"], output_tokens=1)
        event("message_start", {"type": "message_start", "message": start})
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "text", "text": ""}})
                event("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "text_delta", "text": b["text"]}})
            else:
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": dict(b, input={})})
                event("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "input_json_delta",
                                                        "partial_json": json.dumps(b["input"])}})
            event("content_block_stop", {"type": "content_block_stop", "index": i})
        event("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": 12}})
        event("message_stop", {"type": "message_stop"})
        self.wfile.flush()
        self.close_connection = True


if __name__ == "__main__":
    main(Handler, "fake anthropic on 127.0.0.1:{port}")
