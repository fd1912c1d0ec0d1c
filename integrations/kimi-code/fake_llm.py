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
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "shared"))
from openai_chat import ChatHandler, assistant, text_of, tool_results_since_user  # noqa: E402
from scripted_server import main  # noqa: E402


def reply_for(req):
    msgs = req.get("messages", [])
    everything = " ".join(text_of(m.get("content")) for m in msgs)
    # Kimi Code appends injections (`<system-reminder>…`) after the prompt.
    last_user = next((m for m in reversed(msgs) if m.get("role") == "user"
                      and not text_of(m.get("content")).lstrip().startswith("<system")), None)
    prompt = text_of(last_user.get("content")).strip() if last_user else ""
    tools_after = tool_results_since_user(msgs)
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


class Handler(ChatHandler):
    def message(self, req, k):
        r = reply_for(req)
        usage = {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112}
        if r.get("tool_call"):
            call = {"index": 0, "id": f"call_{k:08x}", "type": "function", "function": r["tool_call"]}
            return (*assistant(tool_calls=[call]), usage)
        return (*assistant(r["content"]), usage)


if __name__ == "__main__":
    main(Handler, "fake llm on 127.0.0.1:{port}")
