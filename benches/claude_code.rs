//! Claude Code at scale (not a test): generates sessions in the line shapes
//! of the recorded fixtures (`fixtures/claude-code/`, Claude Code 2.1.332):
//! prompts with their `promptId`/`turnPosition`, `date` and
//! `prompt_snapshot` attachments, replies split per content block with
//! their full `usage`, parallel Bash calls whose results come back out of
//! order with `toolUseResult` objects (one in 25 a long output of 8–40 KB),
//! `turn_duration`, and the bookkeeping lines around them (queue
//! operations, `api-request` per round, `tools-used`, `last-prompt`,
//! `atis-latch`, `cost-state`); a `/compact` every 400 turns and a rewind
//! every 20 000. About 1.7 KB a entry with its share of bookkeeping, as
//! recorded sessions are. Prints:
//! - open: parts + build + the JSON `tree --format json` prints, vs
//!   `jq -c .type` over the same file (ratio from the same run);
//! - memory: resident bytes per entry once the session is open;
//! - live: one whole turn appended → the live follower's snapshot holding
//!   its last entry, on the big session and on a 3 k-entry one; and the
//!   same written line by line, each entry waited for.
//!
//! cargo bench --bench claude_code
//! Knobs (env): WORLDLINE_CC_ENTRIES (1000000), WORLDLINE_CC_APPENDS (10
//! turns on the big session, three times as many on the small one),
//! WORLDLINE_CC_ONLY_APPENDS (skip the open figures), WORLDLINE_CC_ONLY_OPEN
//! (skip the live figures), WORLDLINE_CC_NO_JQ, WORLDLINE_CC_KEEP=<path>
//! (copy the generated big session there and stop: to profile on it).

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use worldline::live::{self, LiveEvent, LiveOptions};
use worldline::worldline::Session;

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn uuid(n: u64) -> String {
    let h = format!("{:032x}", u128::from(n) * 0x9E37_79B9_7F4A_7C15 + 1);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Counts what goes through, so the generator knows where each line ends.
struct Counting<W: Write> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(b)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

const USAGE: &str = r#""usage":{"input_tokens":2689,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":20,"output_tokens_details":{"thinking_tokens":0},"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard","fallback_credit":null},"stop_details":null"#;

const API_PARAMS: &str = r#""params":{"model":"claude-opus-5-5","betas":["claude-code-20250219","interleaved-thinking-2025-05-14","context-management-2025-06-27","per-turn-control-2026-07-01","mid-conversation-tool-changes-2026-07-01","thinking-token-count-2026-05-13","advanced-tool-use-2025-11-20","effort-2025-11-24"],"max_tokens":128000,"thinking":{"type":"adaptive","display":"omitted"},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"output_config":{"effort":"medium"}},"thread":{"type":"none"},"echoWireToolInputs":false,"keep":0,"tail":["68b569506875eacbd1ff7a6d10b44be477e3e2d01d175b1f1086eba4633c062b","da1c426f6c7110db001edbdb608de9a11bba51679f13ee64f6c14e87ff5e4106"],"cacheControl":[{"path":["system",0],"value":{"type":"ephemeral"}},{"path":["system",1],"value":{"type":"ephemeral"}},{"path":["messages",1,"content",0],"value":{"type":"ephemeral"}}],"requestDigest":"cdd46501a8afd4dd39d425aebccaf1888676df8093d8a5bcd65efcfaf296e758""#;

struct Gen<W: Write> {
    out: Counting<W>,
    next: u64,
    entries: u64,
    sid: String,
    rng: u64,
    /// Where the last entry's line ends (its newline excluded).
    last_end: u64,
    /// Where each entry's line ends, in order.
    ends: Vec<u64>,
}

impl<W: Write> Gen<W> {
    fn rand(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n.max(1)
    }

    fn ts(&self) -> String {
        let s = self.next / 4;
        format!(
            "2026-12-04T{:02}:{:02}:{:02}.{:03}Z",
            (s / 3600) % 24,
            (s / 60) % 60,
            s % 60,
            self.next % 1000
        )
    }

    /// Writes one entry hanging off `parent`; returns its uuid number.
    /// `head` goes before `uuid`, `tail` after `timestamp`.
    fn entry(&mut self, parent: Option<u64>, head: &str, tail: &str) -> u64 {
        self.next += 1;
        let id = self.next;
        let p = parent.map_or("null".to_string(), |p| format!("\"{}\"", uuid(p)));
        write!(
            self.out,
            r#"{{"parentUuid":{p},"isSidechain":false,{head},"uuid":"{}","timestamp":"{}",{tail}"userType":"external","entrypoint":"sdk-cli","cwd":"/home/user/project","sessionId":"{}","version":"2.1.332","gitBranch":"main"}}"#,
            uuid(id),
            self.ts(),
            self.sid
        )
        .unwrap();
        self.last_end = self.out.bytes;
        self.ends.push(self.last_end);
        self.out.write_all(b"\n").unwrap();
        self.entries += 1;
        id
    }

    fn bookkeeping(&mut self, line: &str) {
        writeln!(self.out, "{line}").unwrap();
    }

    /// One turn after `parent`; returns the turn's last entry.
    fn turn(&mut self, parent: Option<u64>, t: u64) -> u64 {
        let sid = self.sid.clone();
        let prompt = format!("T{t} please look at module {} and run the checks", t % 97);
        self.bookkeeping(&format!(r#"{{"type":"queue-operation","operation":"enqueue","timestamp":"{}","sessionId":"{sid}","content":"{prompt}"}}"#, self.ts()));
        self.bookkeeping(&format!(r#"{{"type":"queue-operation","operation":"dequeue","timestamp":"{}","sessionId":"{sid}"}}"#, self.ts()));
        let pid = uuid(self.next + (1 << 50));
        let mut at = self.entry(
            parent,
            &format!(r#""promptId":"{pid}","type":"user","message":{{"role":"user","content":"{prompt}"}}"#),
            r#""permissionMode":"bypassPermissions","promptSource":"sdk","sentAtMs":1796389454629,"rowSource":"local","turnOrigin":"sdk","turnPosition":{"promptIndex":0,"turnIndex":1},"#,
        );
        at = self.entry(
            Some(at),
            r#""attachment":{"type":"date","date":"2026-12-04"},"type":"attachment""#,
            r#""rendered":[{"content":"<system-reminder>\nToday's date is 2026-12-04.\n</system-reminder>"}],"renderedRole":"system","#,
        );
        let snapshot = "- src/module.rs: fn check(&self) -> Result<()> { todo!() }\\n"
            .repeat(20 + self.rand(60) as usize);
        at = self.entry(
            Some(at),
            &format!(r#""attachment":{{"type":"prompt_snapshot","content":"{snapshot}"}},"type":"attachment""#),
            r#""renderedRole":"system","#,
        );
        let rounds = 1 + self.rand(3);
        let mut tools = 0;
        for r in 0..rounds {
            let req = uuid(self.next + (1 << 51));
            self.bookkeeping(&format!(r#"{{"type":"api-request","sessionId":"{sid}","id":"{req}","timestamp":"{}","version":"2.1.332","querySource":"sdk","shapeHash":"1f3d6b46342e8bf40e008df0c5e44c4a52224fa4f91b4ce230cc86e39375211b",{API_PARAMS}}}"#, self.ts()));
            if r == 0 {
                self.bookkeeping(&format!(
                    r#"{{"type":"tools-used","tools":["Bash"],"sessionId":"{sid}"}}"#
                ));
            }
            let msg = format!("msg_{t:016}{r:02}");
            let words = "lorem ipsum dolor ".repeat(1 + self.rand(6) as usize);
            let more = format!(
                r#""apiBlockIndex":0,"requestRef":"{req}","requestedModel":"claude-opus-5-5","promptCacheRequested":"5m","#
            );
            at = self.entry(Some(at), &format!(r#""message":{{"id":"{msg}","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{{"type":"text","text":"Looking at it, round {r}: {words}"}}],"stop_reason":"tool_use","stop_sequence":null,{USAGE}}},"type":"assistant""#), &(more.clone() + r#""effort":"medium","perTurnEffort":"medium","madeBy":"model","#));
            let calls = 1 + self.rand(3);
            let mut uses = Vec::new();
            for c in 0..calls {
                at = self.entry(Some(at), &format!(r#""message":{{"id":"{msg}","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{{"type":"tool_use","id":"toolu_{t:016}{r:02}{c:02}","name":"Bash","input":{{"command":"echo step-{c} && wc -l README.md","description":"Step {c}"}}}}],"stop_reason":"tool_use","stop_sequence":null,{USAGE}}},"type":"assistant""#), &(more.clone() + r#""effort":"medium","perTurnEffort":"medium","madeBy":"model","#));
                uses.push((at, c));
                tools += 1;
            }
            // Results written out of call order; the last one goes on.
            let mut last = at;
            for &(u, c) in uses.iter().rev() {
                let long = self.rand(25) == 0;
                let n = if long {
                    200 + self.rand(800)
                } else {
                    1 + self.rand(4)
                };
                let out = "output line of a command\\n".repeat(n as usize)[..].to_string();
                last = self.entry(
                    Some(u),
                    &format!(r#""promptId":"{pid}","type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_{t:016}{r:02}{c:02}","type":"tool_result","content":"{out}","is_error":false}}]}}"#),
                    &format!(r#""toolUseResult":{{"stdout":"{out}","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}},"sandboxed":false,"sourceToolAssistantUUID":"{}","permissionDecision":{{"decision":"accept","source":"config","reasonType":"mode"}},"#, uuid(u)),
                );
            }
            at = last;
        }
        at = self.entry(Some(at), &format!(r#""message":{{"id":"msg_{t:016}99","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{{"type":"text","text":"Done with turn {t}."}}],"stop_reason":"end_turn","stop_sequence":null,{USAGE}}},"type":"assistant""#), r#""apiBlockIndex":0,"requestedModel":"claude-opus-5-5","promptCacheRequested":"5m","effort":"medium","perTurnEffort":"medium","madeBy":"model","#);
        at = self.entry(
            Some(at),
            &format!(
                r#""type":"system","subtype":"turn_duration","durationMs":1234,"messageCount":{}"#,
                4 + tools * 2
            ),
            r#""isMeta":false,"#,
        );
        self.bookkeeping(&format!(r#"{{"type":"last-prompt","lastPrompt":"{prompt}","leafUuid":"{}","sessionId":"{sid}"}}"#, uuid(at)));
        self.bookkeeping(&format!(
            r#"{{"type":"atis-latch","atis":"","sessionId":"{sid}"}}"#
        ));
        self.bookkeeping(&format!(r#"{{"type":"cost-state","sessionId":"{sid}","totalCostUSD":0.034603999999999996,"totalAPIDuration":98,"totalAPIDurationWithoutRetries":93,"totalToolDuration":44,"totalLinesAdded":0,"totalLinesRemoved":0,"totalDuration":544,"startTime":1796389454364,"modelUsage":{{"claude-opus-5-5":{{"inputTokens":8351,"outputTokens":60,"thinkingTokens":0,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"cacheCreationEphemeral5mInputTokens":0,"cacheCreationEphemeral1hInputTokens":0,"webSearchRequests":0,"costUSD":0.034603999999999996}}}},"hasUnknownModelCost":false}}"#));
        at
    }

    fn compact(&mut self, before: Option<u64>) -> u64 {
        let tail = uuid(before.unwrap_or(0));
        let b = self.entry(None, &format!(r#""logicalParentUuid":"{tail}","type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false"#), &format!(r#""level":"info","compactMetadata":{{"trigger":"manual","preTokens":9000,"durationMs":49,"preservedSegment":{{"headUuid":"{tail}","anchorUuid":"{tail}","tailUuid":"{tail}"}},"preservedMessages":{{"anchorUuid":"{tail}","uuids":["{tail}"],"allUuids":["{tail}"]}},"postTokens":2712}},"#));
        self.entry(Some(b), r#""type":"user","message":{"role":"user","content":"This session is being continued from a previous conversation that ran out of context. Summary: scripted."},"isVisibleInTranscriptOnly":true,"isCompactSummary":true"#, "")
    }
}

/// Turns between rewinds (a few, as real sessions have).
const REWIND_EVERY: u64 = 20_001;

/// Where a generated session stands, to append turns to it.
struct Written {
    entries: u64,
    next: u64,
    turn: u64,
    at: Option<u64>,
    rng: u64,
}

/// A session of at least `entries` entries at `path`.
fn generate(path: &Path, entries: u64, first: u64) -> Written {
    let f = std::fs::File::create(path).unwrap();
    let mut g = Gen {
        out: Counting {
            inner: BufWriter::with_capacity(1 << 20, f),
            bytes: 0,
        },
        next: first,
        entries: 0,
        sid: path.file_stem().unwrap().to_string_lossy().into_owned(),
        rng: 0x2545_F491_4F6C_DD1D,
        last_end: 0,
        ends: Vec::new(),
    };
    let mut at: Option<u64> = None;
    let mut ends = Vec::new();
    let mut t = 0;
    while g.entries < entries {
        t += 1;
        if t % 400 == 0 {
            at = Some(g.compact(at));
        } else if t % REWIND_EVERY == 0 && ends.len() > 2 {
            // A rewind: the next prompt goes on from a few turns back.
            at = Some(ends[ends.len() - 3]);
        }
        let end = g.turn(at, t);
        ends.push(end);
        at = Some(end);
    }
    g.out.flush().unwrap();
    Written {
        entries: g.entries,
        next: g.next,
        turn: t,
        at,
        rng: g.rng,
    }
}

fn rss_kb(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn open(path: &Path) -> (Duration, Session, usize) {
    let t = Instant::now();
    let s = Session::load_with(path, worldline::sources::Reading { times: false }).unwrap();
    let json = serde_json::to_string(&worldline::export::json::session_json(&s)).unwrap();
    (t.elapsed(), s, json.len())
}

fn records(s: &Session) -> usize {
    s.main()
        .files
        .iter()
        .map(|f| f.records.len())
        .max()
        .unwrap_or(0)
}

/// Waits for a snapshot holding the entry whose line ends at `end`.
fn wait(rx: &std::sync::mpsc::Receiver<LiveEvent>, end: u64) {
    loop {
        match rx
            .recv_timeout(Duration::from_secs(300))
            .expect("snapshot after append")
        {
            LiveEvent::Snapshot(s) if holds(&s, end) => return,
            _ => {}
        }
    }
}

/// Does a snapshot hold the entry whose line ends at `end`?
fn holds(s: &Session, end: u64) -> bool {
    s.main().files.iter().any(|f| {
        f.records
            .last()
            .is_some_and(|r| r.offset() + u64::from(r.len()) >= end)
    })
}

/// Appends `n` turns one at a time (each turn one write), each continuing
/// the last; returns the time from each append to a snapshot holding its
/// last entry.
fn appends(path: &Path, w: &mut Written, n: usize, by_line: bool) -> Vec<Duration> {
    let (rx, _h) = live::spawn(path.to_path_buf(), LiveOptions::default()).unwrap();
    loop {
        match rx
            .recv_timeout(Duration::from_secs(300))
            .expect("initial snapshot")
        {
            LiveEvent::Snapshot(_) => break,
            _ => continue,
        }
    }
    let mut f = OpenOptions::new().append(true).open(path).unwrap();
    let sid = path.file_stem().unwrap().to_string_lossy().into_owned();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let size = f.metadata().unwrap().len();
        let mut g = Gen {
            out: Counting {
                inner: Vec::new(),
                bytes: size,
            },
            next: w.next,
            entries: 0,
            sid: sid.clone(),
            rng: w.rng,
            last_end: 0,
            ends: Vec::new(),
        };
        w.turn += 1;
        let end = g.turn(w.at, w.turn);
        w.at = Some(end);
        w.next = g.next;
        w.rng = g.rng;
        w.entries += g.entries;
        if !by_line {
            let want = g.last_end;
            let t0 = Instant::now();
            f.write_all(&g.out.inner).unwrap();
            wait(&rx, want);
            out.push(t0.elapsed());
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        // As Claude Code writes: one line at a time, each entry shown
        // before the next line comes.
        let mut at = size;
        for line in g.out.inner.split_inclusive(|&b| b == b'\n') {
            let end = at + line.len() as u64 - 1;
            at += line.len() as u64;
            let t0 = Instant::now();
            f.write_all(line).unwrap();
            if g.ends.binary_search(&end).is_ok() {
                wait(&rx, end);
                out.push(t0.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    out
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1000.0
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Open time vs jq, and resident memory once open.
fn open_figures(big: &Path, entries: u64) {
    let before = rss_kb("VmRSS:");
    let (took, s, json) = open(big);
    let after = rss_kb("VmRSS:");
    println!(
        "open (parts + build + JSON, {} world lines, longest {} records, {json} B of JSON): {:.2} s   load {}",
        s.main().lines.len(),
        records(&s),
        took.as_secs_f64(),
        load()
    );
    let t = Instant::now();
    let jq = std::process::Command::new(if std::env::var_os("WORLDLINE_CC_NO_JQ").is_some() {
        "false"
    } else {
        "jq"
    })
    .args(["-c", ".type"])
    .arg(big)
    .stdout(std::process::Stdio::null())
    .status();
    match jq {
        Ok(st) if st.success() => {
            let j = t.elapsed().as_secs_f64();
            println!(
                "jq -c .type: {j:.2} s  → worldline is {:.1}x faster than jq   load {}",
                j / took.as_secs_f64(),
                load()
            );
        }
        _ => println!("jq -c .type: jq not found or failed"),
    }
    println!(
        "memory: {:.0} MB resident after open ({:.0} B per entry)",
        (after.saturating_sub(before)) as f64 / 1024.0,
        (after.saturating_sub(before)) as f64 * 1024.0 / entries as f64
    );
    // The allocator keeps freed heap pages resident; what the session
    // itself holds shows once they are handed back.
    // SAFETY: malloc_trim only returns free memory to the system.
    unsafe { libc::malloc_trim(0) };
    let trimmed = rss_kb("VmRSS:");
    println!(
        "  of which the session holds {:.0} B per entry (resident after malloc_trim); peak resident {:.0} MB",
        (trimmed.saturating_sub(before)) as f64 * 1024.0 / entries as f64,
        rss_kb("VmHWM:") as f64 / 1024.0
    );
    // What the records are: stored once each (branches share), a few
    // boxed (a record standing for several parallel calls holds them all).
    let fam = s.main();
    let (mut stored, mut boxed, mut heap) = (0, 0, 0);
    for (f, l) in fam.files.iter().zip(&fam.lines) {
        stored += f.records.stored();
        for r in f.records.range(l.shared..f.records.len()) {
            let b = r.boxed_bytes();
            boxed += usize::from(b > 0);
            heap += b;
        }
    }
    println!(
        "  records: {stored} stored, {} B each ({:.0} B per entry); {boxed} boxed, their boxes {:.0} B per entry",
        std::mem::size_of::<worldline::model::RecordMeta>(),
        (stored * std::mem::size_of::<worldline::model::RecordMeta>()) as f64 / entries as f64,
        heap as f64 / entries as f64
    );
    drop(s);
    // Where the time goes (each step alone, after the figures above).
    use worldline::sources::claude_code::{scan::Scan, tree};
    let t = Instant::now();
    let scan = Scan::read(big, "big.jsonl").unwrap();
    let scan_t = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let tr = tree::build(&scan.entries, &scan.extras);
    println!(
        "  of which: scan {scan_t:.2} s ({:.0} MB/s), tree {:.2} s ({} lines)",
        std::fs::metadata(big).map_or(0, |m| m.len()) as f64 / 1e6 / scan_t,
        t.elapsed().as_secs_f64(),
        tr.lines.len()
    );
}

fn main() {
    let n = env_usize("WORLDLINE_CC_ENTRIES", 1_000_000) as u64;
    let k = env_usize("WORLDLINE_CC_APPENDS", 10);
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join(".claude/projects/-home-user-project");
    std::fs::create_dir_all(&project).unwrap();
    let big: PathBuf = project.join("11111111-2222-3333-4444-555555555555.jsonl");
    let small: PathBuf = project.join("66666666-7777-8888-9999-000000000000.jsonl");
    let t = Instant::now();
    let mut wb = generate(&big, n, 0);
    let bytes = std::fs::metadata(&big).unwrap().len();
    println!(
        "generated {} entries, {:.0} MB ({} B/entry incl. bookkeeping) in {:.1} s",
        wb.entries,
        bytes as f64 / 1e6,
        bytes / wb.entries.max(1),
        t.elapsed().as_secs_f64()
    );
    let mut ws = generate(&small, 3000, 1 << 40);
    if let Some(keep) = std::env::var_os("WORLDLINE_CC_KEEP") {
        std::fs::copy(&big, keep).unwrap();
        return;
    }

    if std::env::var_os("WORLDLINE_CC_ONLY_APPENDS").is_none() {
        open_figures(&big, wb.entries);
    }
    if std::env::var_os("WORLDLINE_CC_ONLY_OPEN").is_some() {
        return;
    }
    let small_entries = ws.entries;
    let mut small_lat = appends(&small, &mut ws, k * 3, false);
    let big_entries = wb.entries;
    let mut big_lat = appends(&big, &mut wb, k, false);
    let mut small_lines = appends(&small, &mut ws, 3, true);
    let mut big_lines = appends(&big, &mut wb, 3, true);
    println!(
        "append line by line (each entry of 3 turns) → snapshot: {small_entries} entries median {:.1} ms, p99 {:.1} ms; {big_entries} entries median {:.1} ms, p99 {:.1} ms",
        pct(&mut small_lines, 0.5),
        pct(&mut small_lines, 0.99),
        pct(&mut big_lines, 0.5),
        pct(&mut big_lines, 0.99)
    );
    println!(
        "append one turn → snapshot, {small_entries} entries: median {:.1} ms, p99 {:.1} ms ({} turns)",
        pct(&mut small_lat, 0.5),
        pct(&mut small_lat, 0.99),
        small_lat.len()
    );
    println!(
        "append one turn → snapshot, {big_entries} entries: median {:.1} ms, p99 {:.1} ms ({} turns)",
        pct(&mut big_lat, 0.5),
        pct(&mut big_lat, 0.99),
        big_lat.len()
    );
    let (b, s) = (pct(&mut big_lat, 0.5), pct(&mut small_lat, 0.5));
    println!(
        "big/small (median): {:.1}x; goal: big ≤ 2 × small + 5 ms = {:.1} ms   load {}",
        b / s.max(0.001),
        2.0 * s + 5.0,
        load()
    );
}
