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
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "shared"))
from openai_chat import ChatHandler, assistant, text_of, tool_results_since_user  # noqa: E402
from scripted_server import main  # noqa: E402


def reply_for(req):
    msgs = req.get("messages", [])
    last_user = next((m for m in reversed(msgs) if m.get("role") == "user"), None)
    prompt = text_of(last_user.get("content")).strip() if last_user else ""
    results = tool_results_since_user(msgs)
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


class Handler(ChatHandler):
    def message(self, req, k):
        r = reply_for(req)
        prompt_tokens = 100 + 20 * len(req.get("messages", []))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 12,
                 "total_tokens": prompt_tokens + 12}
        if r.get("calls"):
            calls = [{"index": i, "id": f"call_{k:06x}{i:02x}", "type": "function",
                      "function": {"name": "bash", "arguments": json.dumps({"command": c})}}
                     for i, c in enumerate(r["calls"])]
            return (*assistant(tool_calls=calls), usage)
        return (*assistant(r["content"]), usage)


if __name__ == "__main__":
    main(Handler, "{port}")
