"""Records real Kimi Code sessions against a scripted provider and checks
worldline's world lines against what was driven and what Kimi Code answered.

    record.py --kimi DIR/node_modules/.bin/kimi --node-bin DIR --worldline BIN --work DIR

1. `kimi -p` once (a print-mode session: no title, one world line).
2. `kimi web`, driven over its REST API: three prompts, `:undo` (→ b1), a
   prompt, `:compact`, `:undo` again (Kimi Code refuses: compaction
   boundary), a prompt, `:undo` (→ b2, based on b1), a prompt, `:fork`, and a
   prompt on the fork. `worldline watch --json` follows the session from its
   first turn to the end; its final state must equal `tree --format json`
   of the final files.
3. D-Mails with `worldline send` into another session of the same server:
   `--status`, one into an idle session, one into a turn still running
   (aborted first), refusals (too many turns, a compaction boundary, a
   session no server has loaded, no server at all) with their exit codes,
   each writing nothing; one more from the TUI (`d`, a message, Ctrl-S, in
   tmux); the wire and `tree`/`watch` read them as D-Mails.

Exit 0 when every check passed; otherwise prints what differed and exits 1.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "shared"))
from driver import Checks, free_port, stop, wait_for  # noqa: E402

check = Checks()


class Api:
    def __init__(self, port, token):
        self.base = f"http://127.0.0.1:{port}/api/v1"
        self.token = token

    def call(self, method, path, body=None):
        req = urllib.request.Request(
            self.base + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            return json.loads(e.read() or b"{}")

    def idle(self, sid):
        d = self.call("GET", f"/sessions/{sid}").get("data") or {}
        return not d.get("busy") and not d.get("main_turn_active")

    def prompt(self, sid, text):
        r = self.call("POST", f"/sessions/{sid}/prompts",
                      {"content": [{"type": "text", "text": text}], "model": "fake"})
        if r.get("code") != 0:
            raise SystemExit(f"prompt refused: {r}")
        time.sleep(0.3)
        wait_for(lambda: self.idle(sid), 60, f"the turn {text!r}")
        return r


def wire_lines(path):
    """Non-empty lines of a wire, numbered from 1, parsed."""
    out = []
    with open(path, "rb") as f:
        for raw in f:
            if raw.strip():
                out.append(json.loads(raw))
    return out


def line_of(lines, pred):
    return [i + 1 for i, v in enumerate(lines) if pred(v)]


def user_text_lines(lines, text):
    return line_of(lines, lambda v: v.get("type") == "context.append_message"
                   and v["message"].get("role") == "user"
                   and any(p.get("text") == text for p in v["message"].get("content", [])))


def worldline(args, env, *argv, cwd=None):
    r = subprocess.run([args.worldline, *argv], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"worldline {' '.join(argv)} failed: {r.stderr}")
    return r.stdout


def branches(tree):
    return [(l["branch"], l["parent"], (l["fork"] or {}).get("kind"),
             (l["fork"] or {}).get("turns"), l["current"]) for l in tree["world_lines"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kimi", required=True)
    ap.add_argument("--node-bin", required=True)
    ap.add_argument("--worldline", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--save-fixture")
    args = ap.parse_args()
    # Children run in other directories.
    args.kimi, args.worldline = os.path.abspath(args.kimi), os.path.abspath(args.worldline)

    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    home, proj = os.path.join(work, "home"), os.path.join(work, "project")
    os.makedirs(home)
    os.makedirs(proj)
    llm_port, web_port = free_port(), free_port()
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(f"""default_model = "fake"
default_permission_mode = "yolo"
telemetry = false
[providers.fake]
type = "openai"
base_url = "http://127.0.0.1:{llm_port}/v1"
api_key = "sk-fake"
[models.fake]
provider = "fake"
model = "fake-model"
max_context_size = 128000
capabilities = ["tool_use"]
""")
    with open(os.path.join(home, "tui.toml"), "w") as f:
        f.write("[upgrade]\nauto_install = false\n")
    env = dict(os.environ)
    env["KIMI_CODE_HOME"] = home
    env["KIMI_SHARE_DIR"] = os.path.join(work, "no-kimi-cli")
    env["PATH"] = os.path.abspath(args.node_bin) + os.pathsep + env.get("PATH", "")
    env.pop("KIMI_API_KEY", None)

    procs = []

    def start(argv, **kw):
        p = subprocess.Popen(argv, env=env, start_new_session=True, **kw)
        procs.append(p)
        return p

    def stop_all():
        stop(procs)

    try:
        start([sys.executable, os.path.join(HERE, "fake_llm.py"), str(llm_port),
               os.path.join(work, "llm.log")], stdout=subprocess.DEVNULL)
        wait_for(lambda: socket.socket().connect_ex(("127.0.0.1", llm_port)) == 0, 20, "the fake provider")
        run(args, env, home, proj, web_port, start)
    finally:
        stop_all()
    if check.failed:
        print(f"\n{len(check.failed)} check(s) failed", flush=True)
        sys.exit(1)
    print("\nall Kimi Code bridge checks passed", flush=True)


def run(args, env, home, proj, web_port, start):
    t0 = time.time()
    # --- 1. print mode ---------------------------------------------------------------
    r = subprocess.run([args.kimi, "-p", "Print-mode prompt."], env=env, cwd=proj,
                       capture_output=True, text=True, timeout=180)
    check(r.returncode == 0, f"kimi -p exits 0 ({r.stderr[-300:]!r})")
    check("Scripted reply to: Print-mode prompt." in r.stdout, "kimi -p prints the scripted reply")
    rows = json.loads(worldline(args, env, "list", "--json", cwd=proj))
    check(len(rows) == 1 and rows[0]["tool"] == "kimi-code", f"`list` in the work dir shows the print session as kimi-code: {rows}")
    tree = json.loads(worldline(args, env, "tree", "--format", "json", cwd=proj))
    check(tree["tool"] == "kimi-code" and tree["title"] is None, "print-mode session: kimi-code, no title")
    check(branches(tree) == [("main", None, None, None, True)], f"print-mode session: one world line: {branches(tree)}")
    check(tree["world_lines"][0]["records"] >= 2, "print-mode session: prompt and reply are records")
    print_sid = rows[0]["id"] if rows else None
    print(f"     (print mode took {time.time() - t0:.1f}s)", flush=True)

    # --- 2. kimi web -----------------------------------------------------------------
    web = start([args.kimi, "web", "--no-open", "--port", str(web_port)], cwd=proj,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    token_file = os.path.join(home, "server.token")
    wait_for(lambda: os.path.exists(token_file) and open(token_file).read().strip(), 90, "kimi web's token")
    api = Api(web_port, open(token_file).read().strip())
    wait_for(lambda: socket.socket().connect_ex(("127.0.0.1", web_port)) == 0, 90, "kimi web")
    wait_for(lambda: api.call("GET", "/healthz") is not None, 30, "healthz")
    s = api.call("POST", "/sessions", {"title": "bridge: two undos, a compaction, a fork",
                                       "metadata": {"cwd": proj}})
    check(s.get("code") == 0, f"session created: {s.get('msg')}")
    sid = s["data"]["id"]
    api.prompt(sid, "Turn 1: hello.")
    sdir = wait_for(lambda: next((os.path.join(r, sid) for r, ds, _ in os.walk(os.path.join(home, "sessions"))
                                  if sid in ds), None), 20, "the session dir")
    watch_out = open(os.path.join(os.path.dirname(home), "watch.jsonl"), "w")
    watch = start([args.worldline, "watch", "--json", sid], cwd=proj, stdout=watch_out)
    time.sleep(1.0)
    api.prompt(sid, "Turn 2: run a TOOL please.")
    api.prompt(sid, "Turn 3: to be undone.")
    u1 = api.call("POST", f"/sessions/{sid}:undo", {"count": 1})
    check(u1.get("code") == 0, f"first undo accepted: {u1.get('msg')}")
    api.prompt(sid, "Turn 4: on b1.")
    c = api.call("POST", f"/sessions/{sid}:compact", {})
    check(c.get("code") == 0, f"compaction started: {c.get('msg')}")
    wire = os.path.join(sdir, "agents", "main", "wire.jsonl")
    wait_for(lambda: line_of(wire_lines(wire), lambda v: v.get("type") in
                             ("full_compaction.complete", "full_compaction.cancel")), 60, "the compaction")
    wait_for(lambda: api.idle(sid), 30, "idle after compaction")
    before_refusal = len(wire_lines(wire))
    u2 = api.call("POST", f"/sessions/{sid}:undo", {"count": 1})
    refused = u2.get("code") == 40911
    check(refused, f"undo across the compaction refused (40911): {u2.get('code')} {u2.get('msg')}")
    reason = (u2.get("data") or {}).get("reason")
    check(reason == "compaction_boundary", f"refusal reason is compaction_boundary: {reason}")
    check(len(wire_lines(wire)) == before_refusal, "the refused undo wrote nothing")
    api.prompt(sid, "Turn 5: after the compaction, to be undone.")
    u3 = api.call("POST", f"/sessions/{sid}:undo", {"count": 1})
    check(u3.get("code") == 0, f"undo after a new prompt accepted: {u3.get('msg')}")
    api.prompt(sid, "Turn 6: on b2.")
    src_lines_at_fork = len(wire_lines(wire))
    f = api.call("POST", f"/sessions/{sid}:fork", {"title": "bridge: the fork"})
    check(f.get("code") == 0, f"fork made: {f.get('msg')}")
    fid = f["data"]["id"]
    api.prompt(fid, "Turn 7: on the fork.")
    time.sleep(2.0)
    watch.send_signal(signal.SIGTERM)
    watch.wait(timeout=10)
    watch_out.close()

    # --- what the files say, independently of worldline -----------------------------
    lines = wire_lines(wire)
    edges = [(i + 1, v) for i, v in enumerate(lines) if v.get("type") == "agent.switched"]
    check([v["branch"] for _, v in edges] == ["b1", "b2"], f"Kimi Code wrote two branch edges: {[v['branch'] for _, v in edges]}")
    comp = line_of(lines, lambda v: v.get("type") == "context.apply_compaction")
    check(len(comp) == 1, f"one compaction in the wire: {comp}")
    t2, t3 = user_text_lines(lines, "Turn 2: run a TOOL please."), user_text_lines(lines, "Turn 3: to be undone.")
    t4, t5 = user_text_lines(lines, "Turn 4: on b1."), user_text_lines(lines, "Turn 5: after the compaction, to be undone.")
    fdir = os.path.join(os.path.dirname(sdir), fid)
    flines = wire_lines(os.path.join(fdir, "agents", "main", "wire.jsonl"))
    forked = line_of(flines, lambda v: v.get("type") == "forked")
    check(len(forked) == 1, f"the fork's wire has one forked line: {forked}")
    with open(wire, "rb") as a, open(os.path.join(fdir, "agents", "main", "wire.jsonl"), "rb") as b:
        src_bytes = b"".join(l for l in a if l.strip())
        fork_bytes = b"".join(l for l in b if l.strip())
    copied = forked[0] - 1 if forked else -1
    check(copied == src_lines_at_fork, f"the fork copied the {src_lines_at_fork} source lines: {copied}")
    check(fork_bytes.splitlines()[:copied] == src_bytes.splitlines()[:copied], "the copy is byte for byte")

    # --- what worldline says -----------------------------------------------------------
    tree = json.loads(worldline(args, env, "tree", sid, "--format", "json"))
    check(branches(tree) == [("main", None, None, None, False), ("b1", "main", "undo", 1, False),
                             ("b2", "b1", "undo", 1, True)],
          f"source world lines main → b1 → b2 (current): {branches(tree)}")
    wl = {l["branch"]: l for l in tree["world_lines"]}
    b1_fork, b2_fork = wl["b1"]["fork"]["line"], wl["b2"]["fork"]["line"]
    check(b1_fork == edges[0][1]["base"]["line"] and b2_fork == edges[1][1]["base"]["line"],
          f"fork lines are the edges' base lines: {b1_fork}, {b2_fork}")
    check(t2[0] < b1_fork < t3[0], f"b1 keeps turn 2 (line {t2}) and undoes turn 3 (line {t3}): fork after {b1_fork}")
    check(t4[0] < comp[0] <= b2_fork < t5[0], f"b2 keeps turn 4 and the compaction, undoes turn 5: fork after {b2_fork}")
    check(tree["compactions"] == [{"branch": "b1", "line": comp[0]}], f"the compaction marks b1: {tree['compactions']}")
    check(tree["folded_undos"] == [], "no folded undos")
    pick = lambda l: l and {k: l.get(k) for k in ("session", "line", "kind")}
    check([pick(f) for f in tree["forks"]] == [{"session": fid, "line": copied, "kind": "fork"}],
          f"the source lists its fork: {tree['forks']}")
    check(not tree["warnings"], f"no warnings: {tree['warnings']}")
    ftree = json.loads(worldline(args, env, "tree", fid, "--format", "json"))
    check(pick(ftree["forked_from"]) == {"session": sid, "line": copied, "kind": "fork"},
          f"the fork names its source: {ftree['forked_from']}")
    check(ftree["forked_from"]["records"] == tree["forks"][0]["records"] > 0,
          f"both ends count the same shared records: {ftree['forked_from']['records']}")
    check(branches(ftree) == branches(tree), "the fork inherits the source's branches")
    check(ftree["title"] == "bridge: the fork", f"the fork's title: {ftree['title']}")
    rows = {r["id"]: r for r in json.loads(worldline(args, env, "list", "--json", cwd=proj))}
    check(set(rows) >= {sid, fid} and rows[sid]["world_lines"] == 3 and rows[sid]["tool"] == "kimi-code",
          f"`list` in the work dir: {[(k, v['tool'], v['world_lines']) for k, v in rows.items()]}")

    # --- watch ended where the files are ----------------------------------------------
    events = [json.loads(l) for l in open(os.path.join(os.path.dirname(home), "watch.jsonl")) if l.strip()]
    last, recs = {}, {}
    for e in events:
        if e.get("event") == "world_line" and e["agent"] == "main":
            w = {k: v for k, v in e.items() if k not in ("event", "agent")}
            last[w["branch"]] = w
        if e.get("event") == "record" and e["agent"] == "main":
            recs.setdefault(e["branch"], set()).add(e["index"])
    # A world line's `records` grows by record events, not by new world_line events.
    final = []
    for l in tree["world_lines"]:
        w = dict(last.get(l["branch"]) or {})
        if w:
            w["records"] = max([w["records"]] + [i + 1 for i in recs.get(l["branch"], ())])
        final.append(w)
    check(final == tree["world_lines"], "watch's world lines and record events end equal to `tree --format json`"
          + ("" if final == tree["world_lines"] else f": {final} != {tree['world_lines']}"))
    for l in tree["world_lines"]:
        seen = recs.get(l["branch"], set())
        want = set(range(l["shared_records"], l["records"]))
        if l["branch"] == "main":
            # Records already there when watch started come with no event.
            want = {i for i in want if i >= min(seen | {l["records"]})}
        check(want <= seen, f"watch reported every record of {l['branch']} ({len(want)} new)")
    check(any(e.get("event") == "world_line" and e.get("branch") == "b2" for e in events),
          "watch saw b2 appear live")
    print(f"     (the whole recording took {time.time() - t0:.1f}s)", flush=True)

    if args.save_fixture:
        dest = os.path.abspath(args.save_fixture)
        shutil.rmtree(dest, ignore_errors=True)
        for d in (sdir, fdir):
            rel = os.path.relpath(d, home)
            shutil.copytree(d, os.path.join(dest, "home", rel),
                            ignore=shutil.ignore_patterns("logs", "notify", "tasks"))
        shutil.copy(os.path.join(home, "session_index.jsonl"), os.path.join(dest, "home"))
        print(f"     saved the recording to {dest}", flush=True)

    dmails(args, env, api, home, proj, print_sid, web, start)


def tui_dmail(args, env, api, did, wire, proj):
    if not shutil.which("tmux"):
        print("SKIP the TUI D-Mail: no tmux", flush=True)
        return
    api.prompt(did, "D6: after the compaction, the wrong road again.")
    sock = f"wl-bridge-{os.getpid()}"
    tmux = lambda *a: subprocess.run(["tmux", "-L", sock, *a], env=env, capture_output=True, text=True, timeout=20)
    pane = lambda: tmux("capture-pane", "-p", "-t", "wl").stdout
    cmd = " ".join(["env", f"KIMI_CODE_HOME={env['KIMI_CODE_HOME']}", args.worldline, did])
    try:
        tmux("new-session", "-d", "-s", "wl", "-x", "120", "-y", "40", "-c", proj, cmd)
        wait_for(lambda: "D6" in pane(), 20, "the TUI showing the session")
        edges_before = sum(1 for v in wire_lines(wire) if v.get("type") == "agent.switched")
        tmux("send-keys", "-t", "wl", "G")
        time.sleep(0.3)
        tmux("send-keys", "-t", "wl", "d")
        shown = wait_for(lambda: (lambda p: p if "D-Mail →" in p else None)(pane()), 10, "the D-Mail box")
        check("1 turn back" in shown, "d on the last turn opens the box for 1 turn back"
              + ("" if "1 turn back" in shown else f":\n{shown}"))
        msg = "From the TUI: the wrong road again; take the first."
        tmux("send-keys", "-t", "wl", "-l", msg)
        time.sleep(0.3)
        tmux("send-keys", "-t", "wl", "C-s")
        landed = wait_for(lambda: (lambda p: p if "D-Mail landed" in p else None)(pane()), 30, "the D-Mail to land")
        check("1 turn back" in landed, "the TUI says where the D-Mail landed")
        wait_for(lambda: api.idle(did), 60, "the TUI D-Mail's turn")
        lines = wire_lines(wire)
        edges = [v for v in lines if v.get("type") == "agent.switched"]
        check(len(edges) == edges_before + 1 and edges[-1].get("turns") == 1,
              f"the TUI's D-Mail wrote one more undo edge of 1 turn: {[(v['branch'], v.get('turns')) for v in edges]}")
        tree = json.loads(worldline(args, env, "tree", did, "--format", "json"))
        last = tree["world_lines"][-1]
        check((last["fork"] or {}).get("kind") == "dmail" and last["fork"].get("message") == msg and last["current"],
              f"tree reads the TUI's D-Mail as the current D-Mail world line: {last['fork']}")
    finally:
        tmux("kill-server")


def send(args, env, *argv):
    """`worldline send …`: (exit code, stdout, stderr, seconds)."""
    t = time.time()
    r = subprocess.run([args.worldline, "send", *argv], env=env, capture_output=True,
                       text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr, time.time() - t


def dmails(args, env, api, home, proj, print_sid, web, start):
    t0 = time.time()
    s = api.call("POST", "/sessions", {"title": "bridge: D-Mails", "metadata": {"cwd": proj}})
    did = s["data"]["id"]
    for t in ("D1: first.", "D2: second TOOL.", "D3: third, the wrong road."):
        api.prompt(did, t)
    ddir = wait_for(lambda: next((os.path.join(r, did) for r, ds, _ in os.walk(os.path.join(home, "sessions"))
                                  if did in ds), None), 20, "the D-Mail session dir")
    wire = os.path.join(ddir, "agents", "main", "wire.jsonl")
    watch_path = os.path.join(os.path.dirname(home), "watch-dmail.jsonl")
    watch_out = open(watch_path, "w")
    watch = start([args.worldline, "watch", "--json", did], cwd=proj, stdout=watch_out)
    time.sleep(1.0)

    code, out, err, _ = send(args, env, did, "--status")
    check(code == 0 and f"127.0.0.1:{api.base.split(':')[2].split('/')[0]}" in out
          and "loaded: yes" in out and "idle" in out and "turns: 3" in out and "1..=3" in out,
          f"send --status names the server, loaded, idle, 3 turns back: {code} {out!r} {err!r}")

    # Refusals first: each exits 1 with Kimi Code's reason and writes nothing.
    n = len(wire_lines(wire))
    code, out, err, _ = send(args, env, did, "--turns-back", "9", "--message", "too far")
    check(code == 1 and "only 3 of 9 requested turn(s) available" in err,
          f"too many turns: exit 1 with Kimi Code's reason: {code} {err!r}")
    check(len(wire_lines(wire)) == n, "the refused D-Mail wrote nothing")

    # An idle session: undo one turn, the D-Mail is the next prompt.
    msg1 = "D-Mail from the future: the third road is wrong, take the second."
    code, out, err, _ = send(args, env, did, "--turns-back", "1", "--message", msg1)
    check(code == 0 and "D-Mail accepted" in out, f"D-Mail into the idle session accepted: {code} {out!r} {err!r}")
    time.sleep(0.3)
    wait_for(lambda: api.idle(did), 60, "the D-Mail's turn")
    lines = wire_lines(wire)
    edges = [(i + 1, v) for i, v in enumerate(lines) if v.get("type") == "agent.switched"]
    check([(v["branch"], v.get("reason"), v.get("turns")) for _, v in edges] == [("b1", "undo", 1)],
          f"the wire holds agent.switched b1 (undo, 1 turn): {[v.get('branch') for _, v in edges]}")
    after = [v.get("type") for v in lines[edges[0][0]:]] if edges else []
    check(after[:2] == ["context.undo", "context.undone"], f"then context.undo and context.undone: {after[:3]}")
    prompts = [v for v in lines if v.get("type") == "turn.prompt" and v.get("promptId", "").startswith("wl-dmail-")]
    check(len(prompts) == 1 and prompts[0]["input"][0]["text"] == msg1
          and prompts[0]["origin"]["clientMetadata"][0]["worldline"]["kind"] == "dmail",
          f"the D-Mail's turn.prompt carries its prompt id and metadata: {prompts}")
    tree = json.loads(worldline(args, env, "tree", did, "--format", "json"))
    wl = {l["branch"]: l for l in tree["world_lines"]}
    b1 = (wl.get("b1") or {}).get("fork") or {}
    check((b1.get("kind"), b1.get("turns"), b1.get("message")) == ("dmail", 1, msg1) and wl["b1"]["current"],
          f"tree reads b1 as a D-Mail with its message and turns: {b1}")
    text = worldline(args, env, "tree", did)
    check("D-Mail" in text, f"the text tree names the D-Mail: {text!r}")

    # A retried D-Mail (the same text to the same turn) is refused from the wire: never undo twice.
    # (Found by its prompt id only while that turn is the one it would undo again.)

    # Mid-turn: a long turn runs; the D-Mail aborts it and goes back two turns (it counts as one).
    r = api.call("POST", f"/sessions/{did}/prompts", {"content": [{"type": "text", "text": "D5: a SLOW turn."}]})
    check(r.get("code") == 0, f"a long turn started: {r.get('msg')}")
    wait_for(lambda: any(v.get("type") == "context.append_loop_event" and (v.get("event") or {}).get("type") == "tool.call"
                         and "sleep" in json.dumps(v) for v in wire_lines(wire)), 30, "the long turn's tool call")
    check(not api.idle(did), "the session is busy mid-turn")
    code, out, _, _ = send(args, env, did, "--status")
    check(code == 0 and "busy" in out, f"send --status says busy: {out!r}")
    msg2 = "Second D-Mail: do not start the slow job, and keep the first road."
    code, out, err, took = send(args, env, did, "--turns-back", "2", "--message", msg2)
    check(code == 0 and "running turn aborted" in out, f"D-Mail into a running turn accepted: {code} {out!r} {err!r}")
    check(took < 30, f"it did not wait for the slow turn: {took:.1f}s")
    time.sleep(0.3)
    wait_for(lambda: api.idle(did), 60, "the second D-Mail's turn")
    lines = wire_lines(wire)
    edges = [v for v in lines if v.get("type") == "agent.switched"]
    check([(v["branch"], v.get("turns")) for v in edges] == [("b1", 1), ("b2", 2)],
          f"the wire holds a second edge b2 of 2 turns: {[(v['branch'], v.get('turns')) for v in edges]}")
    tree = json.loads(worldline(args, env, "tree", did, "--format", "json"))
    wl = {l["branch"]: l for l in tree["world_lines"]}
    b2 = (wl.get("b2") or {}).get("fork") or {}
    check((b2.get("kind"), b2.get("turns"), b2.get("message"), wl.get("b2", {}).get("current"))
          == ("dmail", 2, msg2, True), f"tree reads b2 as the current D-Mail world line: {b2}")
    check(not tree["warnings"], f"no warnings: {tree['warnings']}")

    # A compaction boundary: after /compact nothing can be undone.
    c = api.call("POST", f"/sessions/{did}:compact", {})
    check(c.get("code") == 0, f"compaction started: {c.get('msg')}")
    wait_for(lambda: any(v.get("type") in ("full_compaction.complete", "full_compaction.cancel")
                         for v in wire_lines(wire)), 60, "the compaction")
    wait_for(lambda: api.idle(did), 30, "idle after compaction")
    n = len(wire_lines(wire))
    code, out, err, _ = send(args, env, did, "--turns-back", "1", "--message", "across the compaction")
    check(code == 1 and "compaction boundary" in err, f"across a compaction: exit 1, compaction boundary: {code} {err!r}")
    check(len(wire_lines(wire)) == n, "the refused D-Mail wrote nothing")

    # The TUI: `d` on the last turn, a message, Ctrl-S; the D-Mail lands live.
    tui_dmail(args, env, api, did, wire, proj)

    # No server has the print-mode session loaded: exit 2, and what to do.
    if print_sid:
        code, out, err, _ = send(args, env, print_sid, "--turns-back", "1", "--message", "x")
        check(code == 2 and "/web" in err, f"a session no server has loaded: exit 2 with /web advice: {code} {err!r}")

    time.sleep(1.5)
    watch.send_signal(signal.SIGTERM)
    watch.wait(timeout=10)
    watch_out.close()
    events = [json.loads(l) for l in open(watch_path) if l.strip()]
    seen = [e for e in events if e.get("event") == "world_line" and (e.get("fork") or {}).get("kind") == "dmail"]
    tree = json.loads(worldline(args, env, "tree", did, "--format", "json"))
    want = {l["branch"]: l["fork"]["message"] for l in tree["world_lines"] if (l["fork"] or {}).get("kind") == "dmail"}
    check(len(want) >= 2 and {e["branch"]: e["fork"]["message"] for e in seen} == want,
          f"watch saw every D-Mail world line appear live, with its message: {sorted(want)}")

    # No server at all: exit 2.
    os.killpg(web.pid, signal.SIGTERM)
    web.wait(timeout=20)
    code, out, err, _ = send(args, env, did, "--turns-back", "1", "--message", "x")
    check(code == 2 and "no Kimi Code server" in err, f"no server running: exit 2: {code} {err!r}")
    code, out, err, _ = send(args, env, did, "--status")
    check(code == 2 and "kimi web" in err, f"send --status without a server: exit 2: {code} {err!r}")
    tui_web(args, env, home, proj)
    print(f"     (the D-Mails took {time.time() - t0:.1f}s)", flush=True)


def tui_web(args, env, home, proj):
    """Kimi Code's own TUI has no server: `/web` hands its session to one
    (the TUI exits, the process serves), which loads the session only when
    asked: `send` says so, and `--load` sends."""
    if not shutil.which("tmux"):
        print("SKIP the /web hand-over: no tmux", flush=True)
        return
    sessions = lambda: {d for r, ds, _ in os.walk(os.path.join(home, "sessions")) for d in ds if d.startswith("session_")}
    before = sessions()
    sock = f"kimi-tui-{os.getpid()}"
    tmux = lambda *a: subprocess.run(["tmux", "-L", sock, *a], env=env, capture_output=True, text=True, timeout=20)
    pane = lambda: tmux("capture-pane", "-p", "-t", "k").stdout
    inst_dir = os.path.join(home, "server", "instances")
    server_pid = None
    try:
        tmux("new-session", "-d", "-s", "k", "-x", "150", "-y", "45", "-c", proj,
             " ".join(["env", f"KIMI_CODE_HOME={home}", f"PATH={env['PATH']}", args.kimi]))
        wait_for(lambda: "Trust this folder" in pane() or "Version" in pane(), 60, "the Kimi Code TUI")
        if "Trust this folder" in pane():
            tmux("send-keys", "-t", "k", "Enter")
            time.sleep(1.0)
        tmux("send-keys", "-t", "k", "-l", "W1: typed in the Kimi Code TUI.")
        time.sleep(0.3)
        tmux("send-keys", "-t", "k", "Enter")
        wait_for(lambda: "Scripted reply to: W1" in pane(), 60, "the TUI's turn")
        new = wait_for(lambda: sessions() - before, 20, "the TUI's session")
        tid = sorted(new)[0]
        tmux("send-keys", "-t", "k", "-l", "/web")
        time.sleep(0.3)
        tmux("send-keys", "-t", "k", "Enter")
        wait_for(lambda: os.path.isdir(inst_dir) and os.listdir(inst_dir), 60, "the /web server's instance file")
        inst = json.load(open(os.path.join(inst_dir, os.listdir(inst_dir)[0])))
        server_pid = inst["pid"]
        # The instance file comes before the server listens.
        wait_for(lambda: socket.socket().connect_ex(("127.0.0.1", inst["port"])) == 0, 60, "the /web server")
        code, out, err, _ = send(args, env, tid, "--status")
        check(code == 0 and "loaded: no" in out, f"after /web, --status: served, loaded nowhere: {code} {out!r} {err!r}")
        code, out, err, _ = send(args, env, tid, "--turns-back", "1", "--message", "x")
        check(code == 2 and "--load" in err, f"after /web, send without --load: exit 2, says --load: {code} {err!r}")
        msg = "After /web: the D-Mail reaches the session the TUI handed over."
        code, out, err, _ = send(args, env, tid, "--turns-back", "1", "--message", msg, "--load")
        check(code == 0, f"after /web, send --load: accepted: {code} {out!r} {err!r}")
        tdir = next(os.path.join(r, tid) for r, ds, _ in os.walk(os.path.join(home, "sessions")) if tid in ds)
        twire = os.path.join(tdir, "agents", "main", "wire.jsonl")
        wait_for(lambda: any("Scripted reply to: After /web" in json.dumps(v) for v in wire_lines(twire)), 60,
                 "the D-Mail's reply")
        tree = json.loads(worldline(args, env, "tree", tid, "--format", "json"))
        last = tree["world_lines"][-1]
        check((last["fork"] or {}).get("kind") == "dmail" and last["fork"].get("message") == msg,
              f"the handed-over session shows the D-Mail world line: {last['fork']}")
    finally:
        tmux("kill-server")
        if server_pid:
            try:
                os.kill(server_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    main()
