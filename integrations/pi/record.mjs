// Records real Pi sessions through Pi's own SDK (the published package) against
// the scripted model server, then checks worldline against what it drove:
// turns with tools, a label, a /tree move without a summary, one with a
// summary, a compaction, a session name, a /fork continued in the new file,
// all while `worldline watch --json` follows the session file.
//
// node record.mjs --pkg DIR --worldline BIN --work DIR
// Env: PI_CODING_AGENT_DIR (with models.json and settings.json) is set by
// the caller. Exits non-zero with a message naming what differed.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const arg = (name) => {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0 || i + 1 >= process.argv.length) throw new Error(`--${name} is required`);
  return process.argv[i + 1];
};
const pkg = path.resolve(arg("pkg"));
const worldline = path.resolve(arg("worldline"));
const work = path.resolve(arg("work"));

const pi = await import(pathToFileURL(path.join(pkg, "dist/index.js")).href);
const {
  SessionManager,
  createAgentSessionRuntime,
  createAgentSessionServices,
  createAgentSessionFromServices,
} = pi;

let failures = 0;
function check(ok, what, detail) {
  if (ok) {
    console.log(`  ok   ${what}`);
  } else {
    failures += 1;
    console.log(`  FAIL ${what}${detail === undefined ? "" : `: ${JSON.stringify(detail)}`}`);
  }
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

const cwd = path.join(work, "proj");
fs.mkdirSync(cwd, { recursive: true });
fs.writeFileSync(path.join(cwd, "README.md"), "# proj\n\nA project Pi works in.\n");
const agentDir = process.env.PI_CODING_AGENT_DIR;

const createRuntime = async ({ cwd, sessionManager, sessionStartEvent }) => {
  const services = await createAgentSessionServices({ cwd });
  return {
    ...(await createAgentSessionFromServices({ services, sessionManager, sessionStartEvent })),
    services,
    diagnostics: services.diagnostics,
  };
};
const runtime = await createAgentSessionRuntime(createRuntime, {
  cwd,
  agentDir,
  sessionManager: SessionManager.create(cwd),
});
const session = () => runtime.session;
const sm = () => runtime.session.sessionManager;
const leaf = () => sm().getLeafId();
const prompt = async (text) => {
  await session().prompt(text);
  return leaf();
};

// α: three turns (tools in steps, tools in parallel).
const firstEnd = await prompt("TOOLS=2 first turn");
const file = sm().getSessionFile();
const sessionId = sm().getSessionId();
console.log(`Pi bridge: session ${sessionId} in ${file}`);

// Follow it live from here on (Pi wrote the buffered prefix at once).
const watchOut = [];
const watch = spawn(worldline, ["watch", file, "--json"], { stdio: ["ignore", "pipe", "inherit"] });
let pendingOut = "";
watch.stdout.on("data", (d) => {
  pendingOut += d.toString();
  let nl;
  while ((nl = pendingOut.indexOf("\n")) >= 0) {
    watchOut.push(JSON.parse(pendingOut.slice(0, nl)));
    pendingOut = pendingOut.slice(nl + 1);
  }
});
const pause = (ms) => new Promise((r) => setTimeout(r, ms));
await pause(500);

const secondEnd = await prompt("second turn");
await prompt("PAR=2 third turn");
// A label on the end of the first turn: a child of the leaf, the tail of α.
const labelId = sm().appendLabelChange(firstEnd, "first-turn-done");

// β: /tree to the end of the first turn (not a user message: the leaf
// moves onto it), no summary; then a prompt.
let nav = await session().navigateTree(firstEnd);
check(!nav.cancelled, "/tree move without a summary");
const betaLeaf = await prompt("second turn, alternative");

// γ: /tree to the end of the second turn with a summary.
nav = await session().navigateTree(secondEnd, { summarize: true });
check(!nav.cancelled && nav.summaryEntry, "/tree move with a summary", nav);
const summaryId = nav.summaryEntry?.id;
await prompt("after the summary");
const forkUser = sm().getBranch().filter((e) => e.type === "message" && e.message.role === "user").at(-1);
for (let i = 0; i < 4; i++) await prompt(`TOOLS=1 filler turn ${i}`);
let compaction;
for (let i = 0; i < 6 && !compaction; i++) {
  try {
    await session().compact();
    compaction = sm().getEntries().filter((e) => e.type === "compaction").at(-1);
  } catch (e) {
    console.log(`  (compact: ${e.message}; one more turn)`);
    await prompt(`TOOLS=1 more context ${i}`);
  }
}
check(compaction, "a compaction was made");
await prompt("after the compaction");
session().setSessionName("pi bridge");
const gammaLeaf = leaf();
// What Pi resumes on reload is where worldline says `current` is.
check(SessionManager.open(file).getLeafId() === gammaLeaf, "Pi resumes at the last entry");

// /fork at the first prompt after the summary: a new file beside this one.
const forkAfter = forkUser.parentId;
const res = await runtime.fork(forkUser.id);
check(!res.cancelled, "/fork");
const forkFile = sm().getSessionFile();
const forkId = sm().getSessionId();
check(forkFile !== file && path.dirname(forkFile) === path.dirname(file), "the fork is a new file beside it");
await prompt("forked: a turn in the fork");
const forkLeaf = leaf();

// Give watch time to see the last writes: at least 1.5 s, and on a busy
// machine until the fork has shown up (at most 20 s; the checks below say
// what it missed).
await pause(1500);
for (let waited = 0; waited < 20000 && !watchOut.some((e) => e.event === "fork"); waited += 250) {
  await pause(250);
}
watch.kill("SIGTERM");
await new Promise((r) => watch.on("close", r));
await runtime.dispose?.();

const tree = (p) => {
  const r = spawnSync(worldline, ["tree", p, "--format", "json"], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`worldline tree ${p}: ${r.stderr}`);
  return JSON.parse(r.stdout);
};
const main = tree(file);
const lines = main.world_lines;
console.log("Pi bridge: the session, as worldline reads it");
check(main.tool === "pi" && main.session_id === sessionId, "tool and session id", [main.tool, main.session_id]);
check(main.title === "pi bridge", "title is the session name", main.title);
check(
  same(
    lines.map((l) => [l.leaf, l.parent, l.fork && l.fork.kind, l.fork && l.fork.after]),
    [
      [labelId, null, null, undefined],
      [betaLeaf, labelId, "tree", firstEnd],
      [gammaLeaf, labelId, "tree", secondEnd],
    ],
  ),
  "world lines: α (label tail), β (/tree), γ (/tree with a summary)",
  lines.map((l) => [l.leaf, l.parent, l.fork]),
);
check(lines[2]?.fork?.prompt?.startsWith("summary:"), "γ's reason is its summary", lines[2]?.fork);
check(lines[1]?.fork?.prompt === "second turn, alternative", "β's reason is its prompt", lines[1]?.fork);
check(same(lines.map((l) => l.current), [false, false, true]), "current is γ");
check(
  same(main.compactions, [{ leaf: gammaLeaf, entry: compaction?.id, firstKeptEntryId: compaction?.firstKeptEntryId }]),
  "the compaction is a mark on γ",
  main.compactions,
);
check(same(main.labels, [{ entry: firstEnd, label: "first-turn-done" }]), "the label is on its target", main.labels);
check(
  main.forks.some((f) => f.session === forkId && f.after === forkAfter),
  "the source names the fork at the last copied entry",
  main.forks,
);
check(same(main.warnings, []), "no warnings", main.warnings);
check(summaryId && lines[2] && true, "the summary entry exists");

const fork = tree(forkFile);
console.log("Pi bridge: the fork");
check(fork.session_id === forkId, "fork id");
check(
  same(fork.forked_from && [fork.forked_from.session, fork.forked_from.after], [sessionId, forkAfter]),
  "the fork names its source and the last copied entry",
  fork.forked_from,
);
check(fork.world_lines.length === 1 && fork.world_lines[0].leaf === forkLeaf, "the fork's one world line", fork.world_lines);
check(
  fork.labels.some((l) => l.entry === firstEnd && l.label === "first-turn-done"),
  "the fork carries the label Pi re-appended",
  fork.labels,
);

// watch --json: the last world_line event of each line equals tree.
console.log("Pi bridge: watch --json against tree");
const last = new Map();
for (const e of watchOut.filter((e) => e.event === "world_line")) {
  const { event, agent, ...rest } = e;
  last.set(JSON.stringify(rest.fork && rest.fork.after), rest);
}
for (const l of lines) {
  const got = last.get(JSON.stringify(l.fork && l.fork.after));
  check(same(got, l), `watch ended equal to tree for ${l.leaf}`, got);
}
check(watchOut.some((e) => e.event === "fork" && e.session === forkId), "watch saw the fork appear");

if (failures) {
  console.log(`Pi bridge: ${failures} check(s) failed (work dir ${work})`);
  process.exit(1);
}
console.log("Pi bridge: all checks passed");
process.exit(0);
