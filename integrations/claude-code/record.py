"""Records real Claude Code sessions against a scripted Anthropic server and
checks worldline's world lines against what was driven.

    record.py --claude DIR/node_modules/.bin/claude --worldline BIN --work DIR

In a fresh CLAUDE_CONFIG_DIR and work dir, with `claude -p`:
1. "T1 … TOOLS=2" (a new session S, two parallel Bash calls), then
2. "T2 …" resumed;
3. `--resume-session-at U` (U: the entry T2's prompt hangs off) "T3 …": a
   rewind branch;
4. "/compact", then "T4 …";
5. "T5 … SUBAGENT" (an Agent call: a subagent transcript);
6. `--fork-session` "T6 …": a new session F copying S's current chain.
`worldline watch --json S` follows from the first turn to the end; its last
word must equal `tree --format json` of the final files. Expected values
come from the files read here with plain JSON (uuids, the Agent call id),
not from worldline.

Exit 0 when every check passed; otherwise prints what differed and exits 1.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "shared"))
from driver import Checks, free_port, stop  # noqa: E402

check = Checks()


def entries(path):
    out = []
    with open(path) as f:
        for line in f:
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if v.get("uuid"):
                out.append(v)
    return out


def prompt_entry(es, text):
    for e in es:
        if e.get("type") == "user" and isinstance(e["message"].get("content"), str) \
                and e["message"]["content"].startswith(text):
            return e
    raise SystemExit(f"no prompt {text!r} in the session")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--claude", required=True)
    ap.add_argument("--worldline", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    claude = os.path.abspath(a.claude)
    worldline = os.path.abspath(a.worldline)
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    config, home, project = (os.path.join(work, d) for d in ("config", "home", "project"))
    for d in (config, home, project):
        os.makedirs(d)
    with open(os.path.join(project, "README.md"), "w") as f:
        f.write("a project for the Claude Code bridge\n")
    project = os.path.realpath(project)

    port = free_port()
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_anthropic.py"), str(port),
                               os.path.join(work, "requests.jsonl")],
                              stdout=subprocess.PIPE, start_new_session=True)
    server.stdout.readline()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "CLAUDE_CONFIG_DIR": config,
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "sk-scripted-not-a-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    if os.geteuid() == 0:
        # As root Claude Code refuses --dangerously-skip-permissions unless
        # it is told it runs in a sandbox.
        env["IS_SANDBOX"] = "1"
    wl_env = dict(env, KIMI_SHARE_DIR=os.path.join(work, "no-kimi"),
                  KIMI_CODE_HOME=os.path.join(work, "no-kimi-code"))
    watch = None
    try:
        def run(*args):
            cmd = [claude, "-p", "--output-format", "json", "--dangerously-skip-permissions", *args]
            r = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise SystemExit(f"{args}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
            out = json.loads(r.stdout.strip().splitlines()[-1])
            print(f"claude -p {' '.join(args)!r} -> {out.get('result')!r}", flush=True)
            return out

        def wl(*args):
            r = subprocess.run([worldline, *args], cwd=project, env=wl_env,
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                raise SystemExit(f"worldline {args}: exit {r.returncode}\n{r.stderr}")
            return r.stdout

        s = run("T1 first TOOLS=2")["session_id"]
        key = "".join(c if c.isalnum() and c.isascii() else "-" for c in project)
        folder = os.path.join(config, "projects", key)
        s_file = os.path.join(folder, f"{s}.jsonl")
        check(os.path.isfile(s_file), f"the session file is where the format doc says ({s_file})")

        events = []
        watch = subprocess.Popen([worldline, "watch", "--json", s_file], cwd=project, env=wl_env,
                                 stdout=subprocess.PIPE, text=True, start_new_session=True)

        def pump():
            for line in watch.stdout:
                events.append(json.loads(line))
        threading.Thread(target=pump, daemon=True).start()

        run("--resume", s, "T2 second NOTOOL")
        es = entries(s_file)
        u = prompt_entry(es, "T2 second")["parentUuid"]
        line0_leaf = es[-1]["uuid"]
        run("--resume", s, "--resume-session-at", u, "T3 branch from after T1 TOOLS=1")
        run("--resume", s, "/compact")
        run("--resume", s, "T4 after the compact NOTOOL")
        run("--resume", s, "T5 delegate SUBAGENT")
        es = entries(s_file)
        s_last = es[-1]["uuid"]
        boundary = [e["uuid"] for e in es if e.get("subtype") == "compact_boundary"]
        agent_calls = [b["id"] for e in es if e["type"] == "assistant"
                       for b in e["message"]["content"]
                       if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == "Agent"]
        sub_dir = os.path.join(folder, s, "subagents")
        agents = sorted(n[len("agent-"):-len(".jsonl")] for n in os.listdir(sub_dir)
                        if n.endswith(".jsonl")) if os.path.isdir(sub_dir) else []
        f = run("--resume", s, "--fork-session", "T6 on the fork NOTOOL")["session_id"]
        check(f != s, "--fork-session made a new session")

        # What worldline says.
        t = json.loads(wl("tree", s_file, "--format", "json"))
        check(t["tool"] == "claude-code" and t["session_id"] == s, "tool and session id")
        check(t["title"] == "T1 first TOOLS=2", f"title is the first prompt ({t['title']!r})")
        lines = t["world_lines"]
        check(len(lines) == 2, f"two world lines ({len(lines)})")
        if len(lines) == 2:
            l0, l1 = lines
            check(l0["parent"] is None and l0["fork"] is None and l0["leaf"] == line0_leaf,
                  "the first line ends where T2's turn ended")
            check(l1["parent"] == line0_leaf, "the branch's parent is the first line")
            check(l1["fork"]["kind"] == "rewind" and l1["fork"]["after"] == u,
                  f"the branch is a rewind after the entry --resume-session-at named ({u})")
            check((l1["fork"]["prompt"] or "").startswith("T3 branch"),
                  f"the branch's reason is its prompt ({l1['fork']['prompt']!r})")
            check(l1["current"] and not l0["current"], "the branch is current")
            check(l1["leaf"] == s_last, "the branch ends at the last entry written")
            check(t["compactions"] == [{"leaf": s_last, "entry": boundary[0]}] if boundary else False,
                  f"/compact is a mark on the branch ({t['compactions']})")
        subs = t["subagents"]
        check(len(agent_calls) == 1 and len(agents) == 1, f"one Agent call and one transcript ({agent_calls}, {agents})")
        check([(x["agent_id"], x["parent_tool_call_id"], len(x["world_lines"])) for x in subs]
              == [(agents[0] if agents else None, agent_calls[0] if agent_calls else None, 1)],
              f"the subagent hangs off its Agent call ({[(x['agent_id'], x['parent_tool_call_id']) for x in subs]})")
        check([(x["session"], x.get("after")) for x in t["forks"]] == [(f, s_last)],
              f"S lists the fork after its last entry ({t['forks']})")
        check(t["warnings"] == [], f"no warnings ({t['warnings']})")
        tf = json.loads(wl("tree", f[:13], "--format", "json"))
        check(tf["session_id"] == f and len(tf["world_lines"]) == 1, "the fork by id prefix: one world line")
        check(tf["warnings"] == [], f"no warnings on the fork ({tf['warnings']})")
        check(len(tf["compactions"]) == 1, "the fork keeps the compaction it copied as a mark")
        check(tf["forked_from"] and tf["forked_from"]["session"] == s
              and tf["forked_from"].get("after") == s_last, f"the fork names its source ({tf['forked_from']})")
        rows = json.loads(wl("list", "--json"))
        check(sorted(r["id"] for r in rows) == sorted([s, f])
              and all(r["tool"] == "claude-code" for r in rows), "list here: both sessions, tool claude-code")
        check(json.loads(wl("tree", "--format", "json"))["session_id"] in (s, f),
              "no argument: the newest session of this directory")

        # watch's last word equals tree.
        def state(ev):
            out = {}
            for e in ev:
                if e.get("event") == "world_line":
                    l = {k: v for k, v in e.items() if k not in ("event", "agent")}
                    out[(e["agent"], e["name"])] = l
                elif e.get("event") == "world_line_removed":
                    out.pop((e["agent"], e["file"]), None)
            return out

        want = {("main", l["name"]): l for l in t["world_lines"]}
        for x in subs:
            want.update({(x["agent_id"], l["name"]): l for l in x["world_lines"]})
        end = time.time() + 30
        while time.time() < end and state(list(events)) != want:
            time.sleep(0.2)
        got = state(list(events))
        if not check(got == want, "watch --json ends equal to tree"):
            print(json.dumps({"watch": {str(k): v for k, v in got.items()},
                              "tree": {str(k): v for k, v in want.items()}}, indent=1))
    finally:
        stop([watch, server], timeout=5)
    if check.failed:
        print(f"Claude Code bridge: {len(check.failed)} check(s) failed", flush=True)
        sys.exit(1)
    print("Claude Code bridge: all checks passed", flush=True)


if __name__ == "__main__":
    main()
