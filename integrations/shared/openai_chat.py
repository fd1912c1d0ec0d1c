"""OpenAI chat-completions on the wire, for the scripted servers of agents
that speak it (Kimi Code, Pi): GET …/models, and POST …/chat/completions
answered as one completion or, with `stream`, as SSE chunks. Each agent's
fake server supplies the reply (`message`) from its own script."""

import time

from scripted_server import Handler


def text_of(content):
    """A message's text: the string, or its parts' texts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def tool_results_since_user(msgs):
    """How many tool results follow the last user message."""
    n = 0
    for m in reversed(msgs):
        if m.get("role") == "tool":
            n += 1
        elif m.get("role") == "user":
            break
    return n


class ChatHandler(Handler):
    def message(self, req, k):
        """(assistant message, finish_reason, usage) for the k-th request."""
        raise NotImplementedError

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self.send_models()
        else:
            self.send_error(404)

    def answer(self, path, req, k):
        if not path.endswith("/chat/completions"):
            self.send_error(404)
            return
        cid = f"chatcmpl-fake-{k}"
        message, finish, usage = self.message(req, k)
        model = req.get("model", "fake-model")
        if not req.get("stream"):
            self.send_json({"id": cid, "object": "chat.completion", "created": int(time.time()),
                            "model": model,
                            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                            "usage": usage})
            return
        self.start_events()

        def chunk(delta, fin=None, use=None):
            c = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                 "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]}
            if use:
                c["usage"] = use
            self.event(c)

        chunk({"role": "assistant"})
        if message.get("tool_calls"):
            chunk({"tool_calls": message["tool_calls"]})
        else:
            chunk({"content": message["content"]})
        chunk({}, finish, usage)
        self.event("[DONE]")
        self.wfile.flush()


def assistant(content=None, tool_calls=None):
    """An assistant message and its finish_reason."""
    if tool_calls:
        return {"role": "assistant", "content": None, "tool_calls": tool_calls}, "tool_calls"
    return {"role": "assistant", "content": content}, "stop"
