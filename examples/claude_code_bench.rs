//! Claude Code at scale (not a test): generates sessions in the line shapes
//! of the recorded fixtures (prompts, attachment chains, replies split per
//! content block, parallel Bash calls with `toolUseResult` objects,
//! `turn_duration`, bookkeeping lines, a rewind every 20 000 turns, a
//! `/compact` every 400) and prints:
//! - open: parts + build + the JSON `tree --format json` prints, vs
//!   `jq -c .type` over the same file;
//! - memory: resident bytes per entry once the session is open;
//! - append latency: one entry appended → the live follower's snapshot
//!   holding it, on the big session and on a 3 k-entry one.
//!
//! cargo run --release --example claude_code_bench
//! Knobs (env): WORLDLINE_CC_ENTRIES (1000000), WORLDLINE_CC_APPENDS (20).

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

struct Gen<W: Write> {
    out: W,
    next: u64,
    entries: u64,
    sid: String,
    rng: u64,
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
    fn entry(&mut self, parent: Option<u64>, body: &str) -> u64 {
        self.next += 1;
        let id = self.next;
        let p = parent.map_or("null".to_string(), |p| format!("\"{}\"", uuid(p)));
        writeln!(
            self.out,
            r#"{{"parentUuid":{p},"isSidechain":false,{body},"uuid":"{}","timestamp":"{}","userType":"external","entrypoint":"sdk-cli","cwd":"/home/user/project","sessionId":"{}","version":"2.1.332","gitBranch":"main"}}"#,
            uuid(id),
            self.ts(),
            self.sid
        )
        .unwrap();
        self.entries += 1;
        id
    }

    fn bookkeeping(&mut self, ty: &str) {
        writeln!(
            self.out,
            r#"{{"type":"{ty}","operation":"enqueue","timestamp":"{}","sessionId":"{}"}}"#,
            self.ts(),
            self.sid
        )
        .unwrap();
    }

    /// One turn after `parent`; returns the turn's last entry.
    fn turn(&mut self, parent: Option<u64>, t: u64) -> u64 {
        self.bookkeeping("queue-operation");
        let mut at = self.entry(
            parent,
            &format!(r#""type":"user","message":{{"role":"user","content":"T{t} please look at module {} and run the checks TOOLS=2"}}"#, t % 97),
        );
        for kind in ["date", "prompt_snapshot"] {
            at = self.entry(Some(at), &format!(r#""type":"attachment","attachment":{{"type":"{kind}","content":"scripted {kind} for turn {t}"}}"#));
        }
        self.bookkeeping("api-request");
        let rounds = 1 + self.rand(3);
        for r in 0..rounds {
            let msg = format!("msg_{t:08}{r:02}");
            let words = "lorem ipsum dolor ".repeat(1 + self.rand(6) as usize);
            at = self.entry(Some(at), &format!(r#""type":"assistant","message":{{"id":"{msg}","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{{"type":"text","text":"Looking at it, round {r}: {words}"}}],"stop_reason":null,"usage":{{"input_tokens":2689,"output_tokens":20}}}}"#));
            let calls = 1 + self.rand(3);
            let mut uses = Vec::new();
            for c in 0..calls {
                at = self.entry(Some(at), &format!(r#""type":"assistant","message":{{"id":"{msg}","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{{"type":"tool_use","id":"toolu_{t:08}{r:02}{c:02}","name":"Bash","input":{{"command":"echo step-{c}","description":"step {c}"}}}}],"stop_reason":"tool_use","usage":{{"input_tokens":2689,"output_tokens":20}}}}"#));
                uses.push((at, c));
            }
            // Results written out of call order; the last one goes on.
            let mut last = at;
            for &(u, c) in uses.iter().rev() {
                let out = "output line\\n".repeat(1 + self.rand(20) as usize);
                last = self.entry(Some(u), &format!(r#""type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_{t:08}{r:02}{c:02}","type":"tool_result","content":"{out}","is_error":false}}]}},"toolUseResult":{{"stdout":"{out}","stderr":"","interrupted":false,"isImage":false}},"sourceToolAssistantUUID":"{}""#, uuid(u)));
            }
            at = last;
        }
        at = self.entry(Some(at), &format!(r#""type":"assistant","message":{{"id":"msg_{t:08}99","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{{"type":"text","text":"Done with turn {t}."}}],"stop_reason":"end_turn","usage":{{"input_tokens":2689,"output_tokens":20}}}}"#));
        at = self.entry(
            Some(at),
            r#""type":"system","subtype":"turn_duration","durationMs":1234,"isMeta":false"#,
        );
        self.bookkeeping("last-prompt");
        at
    }
}

/// Turns between rewinds: each world line is a whole record list (the
/// seam's shape), so branches multiply memory; a few, as real sessions have.
const REWIND_EVERY: u64 = 20_001;

/// A session of at least `entries` entries at `path`; returns (entries,
/// last uuid number).
fn generate(path: &Path, entries: u64, first: u64) -> (u64, u64) {
    let f = std::fs::File::create(path).unwrap();
    let mut g = Gen {
        out: BufWriter::with_capacity(1 << 20, f),
        next: first,
        entries: 0,
        sid: path.file_stem().unwrap().to_string_lossy().into_owned(),
        rng: 0x2545_F491_4F6C_DD1D,
    };
    let mut at: Option<u64> = None;
    let mut ends = Vec::new();
    let mut t = 0;
    while g.entries < entries {
        t += 1;
        if t % 400 == 0 {
            let b = g.entry(None, &format!(r#""type":"system","subtype":"compact_boundary","content":"Conversation compacted","logicalParentUuid":"{0}","compactMetadata":{{"trigger":"manual","preTokens":9000,"preservedSegment":{{"headUuid":"{0}","anchorUuid":"{0}","tailUuid":"{0}"}}}}"#, uuid(at.unwrap_or(0))));
            at = Some(g.entry(Some(b), r#""type":"user","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued from a previous conversation. Summary: scripted."}"#));
        } else if t % REWIND_EVERY == 0 && ends.len() > 2 {
            // A rewind: the next prompt goes on from a few turns back.
            at = Some(ends[ends.len() - 3]);
        }
        let end = g.turn(at, t);
        ends.push(end);
        at = Some(end);
    }
    g.out.flush().unwrap();
    (g.entries, g.next)
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

/// Appends `n` entries one at a time, each continuing the last; returns
/// the time from each append to a snapshot holding it.
fn appends(path: &Path, mut last: u64, n: usize) -> Vec<Duration> {
    let (rx, _h) = live::spawn(path.to_path_buf(), LiveOptions::default()).unwrap();
    let first = loop {
        match rx
            .recv_timeout(Duration::from_secs(300))
            .expect("initial snapshot")
        {
            LiveEvent::Snapshot(s) => break s,
            _ => continue,
        }
    };
    let mut want = first
        .main()
        .files
        .iter()
        .map(|f| f.records.len())
        .sum::<usize>();
    let mut f = OpenOptions::new().append(true).open(path).unwrap();
    let sid = path.file_stem().unwrap().to_string_lossy().into_owned();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        last += 1;
        let line = format!(
            r#"{{"parentUuid":"{}","isSidechain":false,"type":"user","message":{{"role":"user","content":"appended {i}"}},"uuid":"{}","timestamp":"2026-12-05T00:00:00.000Z","sessionId":"{sid}"}}"#,
            uuid(last - 1),
            uuid(last)
        ) + "\n";
        let t0 = Instant::now();
        f.write_all(line.as_bytes()).unwrap();
        want += 1;
        loop {
            match rx
                .recv_timeout(Duration::from_secs(300))
                .expect("snapshot after append")
            {
                LiveEvent::Snapshot(s)
                    if s.main()
                        .files
                        .iter()
                        .map(|f| f.records.len())
                        .sum::<usize>()
                        >= want =>
                {
                    break
                }
                _ => {}
            }
        }
        out.push(t0.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    out
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1000.0
}

/// Open time vs jq, and resident memory once open.
fn open_figures(big: &Path, entries: u64) {
    let before = rss_kb("VmRSS:");
    let (took, s, json) = open(big);
    let after = rss_kb("VmRSS:");
    println!(
        "open (parts + build + JSON, {} world lines, longest {} records, {json} B of JSON): {:.2} s",
        s.main().lines.len(),
        records(&s),
        took.as_secs_f64()
    );
    let t = Instant::now();
    let jq = std::process::Command::new("jq")
        .args(["-c", ".type"])
        .arg(big)
        .stdout(std::process::Stdio::null())
        .status();
    match jq {
        Ok(st) if st.success() => {
            let j = t.elapsed().as_secs_f64();
            println!(
                "jq -c .type: {j:.2} s  → worldline/jq = {:.2}",
                took.as_secs_f64() / j
            );
        }
        _ => println!("jq -c .type: jq not found or failed"),
    }
    println!(
        "memory: {:.0} MB resident after open ({:.0} B per entry; the session plus the parsed file kept for live re-reads)",
        (after.saturating_sub(before)) as f64 / 1024.0,
        (after.saturating_sub(before)) as f64 * 1024.0 / entries as f64
    );
    drop(s);
}

fn main() {
    let n = env_usize("WORLDLINE_CC_ENTRIES", 1_000_000) as u64;
    let k = env_usize("WORLDLINE_CC_APPENDS", 20);
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join(".claude/projects/-home-user-project");
    std::fs::create_dir_all(&project).unwrap();
    let big: PathBuf = project.join("11111111-2222-3333-4444-555555555555.jsonl");
    let small: PathBuf = project.join("66666666-7777-8888-9999-000000000000.jsonl");
    let t = Instant::now();
    let (entries, last_big) = generate(&big, n, 0);
    let bytes = std::fs::metadata(&big).unwrap().len();
    println!(
        "generated {entries} entries, {:.0} MB ({} B/line avg incl. bookkeeping) in {:.1} s",
        bytes as f64 / 1e6,
        bytes / entries.max(1),
        t.elapsed().as_secs_f64()
    );
    let (small_entries, last_small) = generate(&small, 3000, 1 << 40);

    let only_appends = std::env::var_os("WORLDLINE_CC_ONLY_APPENDS").is_some();
    if !only_appends {
        open_figures(&big, entries);
    }
    let mut small_lat = appends(&small, last_small, k * 3);

    let mut big_lat = appends(&big, last_big, k);
    println!(
        "append → snapshot, {small_entries} entries: median {:.1} ms, p99 {:.1} ms ({} appends)",
        pct(&mut small_lat, 0.5),
        pct(&mut small_lat, 0.99),
        small_lat.len()
    );
    println!(
        "append → snapshot, {entries} entries: median {:.1} ms, p99 {:.1} ms ({} appends)",
        pct(&mut big_lat, 0.5),
        pct(&mut big_lat, 0.99),
        big_lat.len()
    );
    println!(
        "ratio big/small (median): {:.1}x   load average: {}",
        pct(&mut big_lat, 0.5) / pct(&mut small_lat, 0.5).max(0.001),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
}
