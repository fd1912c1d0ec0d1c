"""Records real Codex threads offline and checks worldline against them.

The real `codex` (npm @openai/codex, its native binary) runs against
fake_responses.py on 127.0.0.1 with a fresh CODEX_HOME:

  exec      `codex exec` (two tool calls), `exec resume`, `exec fork`, then the
            source resumed again after the fork;
  revert    `codex app-server`: three turns, `thread/revert` before the second
            (Codex 0.171's rollback: a new generation file), a turn, a
            compaction (`thread/compact/start`), a turn — followed live by
            `worldline watch --json` from after the first turn;
  subagent  `codex exec` whose model calls spawn_agent and wait_agent.

What worldline should say is computed here from the rollout files and from
what was driven (turn ids Codex answered, the fork's ordinal), independently
of worldline's reader, then compared with `worldline tree --format json`,
`list --json`, the other formats, and the end of the watch stream.

usage: record.py --codex BIN --worldline BIN --work DIR [--save-fixtures DIR]
"""

import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from appserver import AppServer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "shared"))
from driver import Checks, free_port, stop  # noqa: E402

check = Checks(indent="  ")


CONFIG = """model = "fake-model"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
[analytics]
enabled = false
"""


def rollouts(home):
    return sorted(glob.glob(os.path.join(home, "sessions", "*", "*", "*", "rollout-*.jsonl")))


def lines_of(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def thread_files(home, tid):
    """The thread's files: the first, then generations in name order."""
    files = [p for p in rollouts(home) if tid in os.path.basename(p)]
    return sorted(files, key=lambda p: ("_" in os.path.basename(p)[len("rollout-") + 20:], p))


def ordinals(recs):
    return [r.get("ordinal", i) for i, r in enumerate(recs)]


def worldline(args, env, *argv, cwd=None):
    out = subprocess.run([args.worldline, *argv], env=env, cwd=cwd, capture_output=True,
                         text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"worldline {' '.join(argv)}: {out.stderr}")
    return out.stdout


def codex_exec(args, env, cwd, *argv):
    out = subprocess.run([args.codex, "exec", "--skip-git-repo-check", *argv], env=env, cwd=cwd,
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        raise RuntimeError(f"codex exec {argv}: {out.stderr[-2000:]}")
    for l in (out.stderr + out.stdout).splitlines():
        if l.startswith("session id: "):
            return l.split(": ", 1)[1].strip()
    raise RuntimeError(f"codex exec {argv}: no session id in its output")


def world_lines(tree):
    return [{"leaf": l["leaf"], "parent": l["parent"],
             "after": (l["fork"] or {}).get("after"), "kind": (l["fork"] or {}).get("kind"),
             "records": l["records"]} for l in tree["world_lines"]]


def current(tree):
    return [l["leaf"] for l in tree["world_lines"] if l["current"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--codex", required=True)
    ap.add_argument("--worldline", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--save-fixtures")
    args = ap.parse_args()
    args.codex = os.path.abspath(args.codex)
    args.worldline = os.path.abspath(args.worldline)
    t0 = time.time()
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    home = os.path.join(work, "home", ".codex")
    proj = os.path.join(work, "proj")
    os.makedirs(home)
    os.makedirs(proj)
    port = free_port()
    open(os.path.join(home, "config.toml"), "w").write(CONFIG.format(port=port))
    env = dict(os.environ, CODEX_HOME=home, FAKE_API_KEY="fake", NO_COLOR="1",
               KIMI_SHARE_DIR=os.path.join(work, "no-kimi"), KIMI_CODE_HOME=os.path.join(work, "no-kimi-code"))
    for k in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY"):
        env.pop(k, None)
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_responses.py"), str(port),
                               os.path.join(work, "requests.jsonl")],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    children = [server]
    try:
        if not server.stdout.readline().startswith("listening"):
            raise RuntimeError("the scripted Responses server did not start")
        run(args, env, home, proj, children)
    finally:
        stop(children)
    print(f"     (the whole recording took {time.time() - t0:.1f}s)", flush=True)
    if args.save_fixtures:
        save(args.save_fixtures, home, work)
    if check.failed:
        print(f"Codex bridge: {len(check.failed)} check(s) FAILED", flush=True)
        sys.exit(1)
    print("Codex bridge: all checks passed", flush=True)


EXPECTED = {}


def run(args, env, home, proj, children):
    tree = lambda tid: json.loads(worldline(args, env, "tree", tid, "--format", "json"))  # noqa: E731

    # --- exec, resume, fork ---------------------------------------------------------------
    print("  -- codex exec, exec resume, exec fork", flush=True)
    a = codex_exec(args, env, proj, "TOOLS=2 run two steps")
    codex_exec(args, env, proj, "resume", a, "second turn")
    [a_file] = thread_files(home, a)
    before_fork = len(lines_of(a_file))
    f = codex_exec(args, env, proj, "fork", a, "forked: a different third turn")
    codex_exec(args, env, proj, "resume", a, "original: third turn")
    [f_file] = thread_files(home, f)
    a_recs, f_recs = lines_of(a_file), lines_of(f_file)
    fmeta = f_recs[0]["payload"]
    n = fmeta.get("forked_from_ordinal_exclusive")
    check(fmeta.get("forked_from_id") == a and n == before_fork,
          f"the fork's session_meta points into its source at ordinal {n} (the source had {before_fork} lines)")
    check(ordinals(f_recs)[0] == n, "the fork's own first record continues the source's numbering")
    ta, tf = tree(a), tree(f)
    want_a = {"title": "TOOLS=2 run two steps",
              "world_lines": [{"leaf": str(ordinals(a_recs)[-1]), "parent": None, "after": None,
                               "kind": None, "records": len(a_recs)}],
              "current": str(ordinals(a_recs)[-1]), "compactions": [], "forked_from": None}
    want_f = {"title": "forked: a different third turn",
              "world_lines": [{"leaf": str(ordinals(f_recs)[-1]), "parent": None, "after": None,
                               "kind": None, "records": len(f_recs)}],
              "current": str(ordinals(f_recs)[-1]), "compactions": [],
              "forked_from": {"session": a, "after": str(n - 1)}}
    for tid, t, want, path in ((a, ta, want_a, a_file), (f, tf, want_f, f_file)):
        got = {"title": t["title"], "world_lines": world_lines(t), "current": current(t)[0],
               "compactions": t["compactions"],
               "forked_from": t["forked_from"] and {"session": t["forked_from"]["session"],
                                                    "after": t["forked_from"]["after"]}}
        check(got == want and t["tool"] == "codex" and t["session_id"] == tid,
              f"tree {tid[:13]}: {want['title']!r}" + ("" if got == want else f": {got} != {want}"))
        EXPECTED.setdefault("exec_fork", {})[tid] = dict(want, file=path, subagents=[])
    check({"session": f, "after": str(n - 1)} in [{"session": x["session"], "after": x["after"]}
                                                  for x in ta["forks"]],
          "the source lists the fork after the same entry")

    # --- app-server: revert, compaction, followed live -------------------------------------
    print("  -- codex app-server: thread/revert, thread/compact/start, watched live", flush=True)
    log = open(os.path.join(os.path.dirname(home), "..", "app-server.jsonl"), "w")
    srv = AppServer(args.codex, env, proj, log)
    children.append(srv.proc)
    b = srv.request("thread/start", {"cwd": proj})["thread"]["id"]
    t1 = srv.turn(b, "first turn")
    watch_out = open(os.path.join(os.path.dirname(home), "..", "watch.jsonl"), "w")
    watch = subprocess.Popen([args.worldline, "watch", "--json", b], env=env, cwd=proj,
                             stdout=watch_out, stderr=subprocess.DEVNULL, start_new_session=True)
    children.append(watch)
    time.sleep(1.0)
    t2 = srv.turn(b, "TOOLS=1 second turn")
    srv.turn(b, "third turn")
    srv.request("thread/revert", {"threadId": b, "beforeTurnId": t2})
    srv.turn(b, "after revert: another second turn")
    srv.request("thread/compact/start", {"threadId": b})
    deadline = time.time() + 60
    while time.time() < deadline:
        files = thread_files(home, b)
        if len(files) > 1 and any(r["type"] == "compacted" for r in lines_of(files[-1])):
            break
        time.sleep(0.2)
    srv.turn(b, "after compaction")
    time.sleep(1.5)
    srv.close()
    os.killpg(watch.pid, signal.SIGTERM)
    watch.wait(timeout=10)
    watch_out.close()
    files = thread_files(home, b)
    check(len(files) == 2, f"thread/revert wrote a second generation file: {[os.path.basename(p) for p in files]}")
    g0, g1 = lines_of(files[0]), lines_of(files[1])
    base = g1[0]["payload"].get("history_base", {})
    cut = next(r["ordinal"] for r in g0 if r["type"] == "event_msg"
               and r["payload"].get("type") == "task_started" and r["payload"].get("turn_id") == t2)
    check(base.get("thread_id") == b and base.get("end_ordinal_exclusive") == cut,
          f"the generation's history_base ends at the reverted turn's task_started (ordinal {cut})")
    check(g1[0]["ordinal"] == cut, "the generation continues at that ordinal")
    kept = [r for r in g0 if r["ordinal"] < cut]
    compacted = [r["ordinal"] for r in g1 if r["type"] == "compacted"]
    check(len(compacted) == 1, "the compaction wrote one `compacted` line, in the current generation")
    l0, l1 = str(ordinals(g0)[-1]), str(ordinals(g1)[-1])
    want_b = {"title": "first turn",
              "world_lines": [
                  {"leaf": l0, "parent": None, "after": None, "kind": None, "records": len(g0)},
                  {"leaf": l1, "parent": l0, "after": str(cut - 1), "kind": "rollback",
                   "records": len(kept) + len(g1)}],
              "current": l1, "compactions": [{"leaf": l1, "entry": str(c)} for c in compacted],
              "forked_from": None}
    tb = tree(b)
    got = {"title": tb["title"], "world_lines": world_lines(tb), "current": current(tb)[0],
           "compactions": tb["compactions"], "forked_from": tb["forked_from"]}
    check(got == want_b, "tree of the reverted thread: the rollback line from before turn 2, the compaction"
          + ("" if got == want_b else f": {got} != {want_b}"))
    check(tb["world_lines"][1]["fork"]["prompt"] == "after revert: another second turn",
          "the rollback line's reason is its first prompt")
    EXPECTED.setdefault("revert_compact", {})[b] = dict(want_b, file=files[0], subagents=[])

    events = [json.loads(l) for l in open(os.path.join(os.path.dirname(home), "..", "watch.jsonl")) if l.strip()]
    last, recs = {}, {}
    for e in events:
        if e.get("event") == "world_line" and e.get("agent") == "main":
            last[e["file"]] = {k: v for k, v in e.items() if k not in ("event", "agent")}
        if e.get("event") == "record" and e.get("agent") == "main":
            recs.setdefault(e["file"], set()).add(e["index"])
    # Appends come as record events (a world line's `records` and `leaf`
    # are re-sent only when it changes otherwise).
    ends = []
    for l in tb["world_lines"]:
        w = dict(last.get(l["file"]) or {})
        if w:
            w["records"] = max([w["records"]] + [i + 1 for i in recs.get(l["file"], ())])
            w.pop("leaf")
        ends.append(w)
    want_ends = [{k: v for k, v in l.items() if k != "leaf"} for l in tb["world_lines"]]
    check(ends == want_ends, "watch's world_line and record events end equal to `tree --format json`"
          + ("" if ends == want_ends else f": {ends} != {want_ends}"))
    own = tb["world_lines"][1]
    check(set(range(own["shared_records"], own["records"])) <= recs.get(own["file"], set()),
          "watch reported every record of the rollback line")
    check(any(e.get("event") == "world_line" and e.get("fork") for e in events),
          "watch saw the rollback line appear live")
    check(any(e.get("event") == "record" for e in events), "watch streamed records as Codex wrote them")

    for fmt in ("text", "dot", "mermaid", "svg", "html"):
        out = worldline(args, env, "tree", b, "--format", fmt)
        check(len(out) > 100, f"tree --format {fmt} renders the reverted thread")

    # --- a subagent ------------------------------------------------------------------------
    print("  -- codex exec with a spawn_agent subagent", flush=True)
    s = codex_exec(args, env, proj, "SPAWN a helper please")
    [s_file] = thread_files(home, s)
    s_recs = lines_of(s_file)
    subs = [p for p in rollouts(home) if lines_of(p)[0]["payload"].get("parent_thread_id") == s]
    check(len(subs) == 1, "spawn_agent wrote a subagent thread whose session_meta names its parent")
    sub_recs = lines_of(subs[0])
    sub_id = sub_recs[0]["payload"]["id"]
    spawn = next(r["payload"]["call_id"] for r in s_recs if r["type"] == "response_item"
                 and r["payload"].get("name") == "spawn_agent")
    ts = tree(s)
    got_sub = [{"agent_id": x["agent_id"], "parent_tool_call_id": x["parent_tool_call_id"],
                "world_lines": world_lines(x)} for x in ts["subagents"]]
    want_sub = [{"agent_id": sub_id, "parent_tool_call_id": spawn,
                 "world_lines": [{"leaf": str(ordinals(sub_recs)[-1]), "parent": None, "after": None,
                                  "kind": None, "records": len(sub_recs)}]}]
    check(got_sub == want_sub, "the subagent hangs off the parent's spawn_agent call"
          + ("" if got_sub == want_sub else f": {got_sub} != {want_sub}"))
    EXPECTED.setdefault("subagent", {})[s] = {
        "file": s_file, "title": "SPAWN a helper please",
        "world_lines": world_lines(ts), "current": current(ts)[0], "compactions": [],
        "subagents": want_sub, "forked_from": None}
    check(world_lines(ts) == [{"leaf": str(ordinals(s_recs)[-1]), "parent": None, "after": None,
                               "kind": None, "records": len(s_recs)}], "the parent thread's own world line")

    rows = {r["id"]: r for r in json.loads(worldline(args, env, "list", "--json", cwd=proj))}
    check(set(rows) == {a, f, b, s} and all(r["tool"] == "codex" for r in rows.values()),
          f"`list` in the work dir: the four threads, not the subagent's: {sorted(rows)}")
    check(rows[b]["world_lines"] == 2 and rows[f]["forked_from"] == a,
          "`list` counts the reverted thread's world lines and marks the fork")
    check(json.loads(worldline(args, env, "tree", "--format", "json", cwd=proj))["session_id"] == s,
          "no argument: the newest thread of the work dir")


def save(dest, home, work):
    """Saves each case as a fixture: home/.codex/sessions/... and expected.json."""
    dest = os.path.abspath(dest)
    stand_in = lambda s: s  # noqa: E731
    for case, sessions in EXPECTED.items():
        out = os.path.join(dest, case)
        shutil.rmtree(out, ignore_errors=True)
        keep = set()
        for tid, want in sessions.items():
            keep.update(p for p in rollouts(home) if tid in p)
            for sub in want["subagents"]:
                keep.update(p for p in rollouts(home) if sub["agent_id"] in p)
        # Paths of this machine become same-length stand-ins.
        root = os.path.dirname(os.path.dirname(home))
        fake = ("/home/user/" + "x" * len(root))[:len(root)]
        for p in keep:
            rel = os.path.relpath(p, os.path.dirname(home))
            target = os.path.join(out, "home", rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "w").write(open(p).read().replace(root, fake))
        os.makedirs(os.path.join(out, "home", ".codex"), exist_ok=True)
        open(os.path.join(out, "home", ".codex", "config.toml"), "w").write(
            open(os.path.join(home, "config.toml")).read())
        exp = {"tool": "codex", "sessions": {}}
        for tid, want in sessions.items():
            w = dict(want)
            w["file"] = os.path.join("home", os.path.relpath(want["file"], os.path.dirname(home)))
            exp["sessions"][tid] = {k: w[k] for k in ("file", "title", "world_lines", "current",
                                                      "compactions", "subagents", "forked_from")}
        json.dump(exp, open(os.path.join(out, "expected.json"), "w"), indent=1)
        print(f"     saved {case} to {out}", flush=True)
    _ = stand_in


if __name__ == "__main__":
    main()
