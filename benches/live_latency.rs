//! Live-follow benchmark (not a test): how long from a line's append to its
//! `record` event with the native watcher, and whether one append costs the
//! same on a 1 MB and on a big file.
//!
//! Then issue #14's long run: the same on a copy of `gen-session`'s long-run
//! family (small records in three world lines) of 3 k and of 2 M records,
//! and the ratio of the two.
//!
//! cargo bench --bench live_latency
//! Knobs (env): WORLDLINE_BENCH_APPENDS (500), WORLDLINE_BENCH_BIG_MB (500),
//! WORLDLINE_BENCH_LINE_KB (1024: the big file is made of lines this long),
//! WORLDLINE_BENCH_POLL=1 (poll watcher instead), WORLDLINE_BENCH_ONLY=files
//! or long-run (one part only), WORLDLINE_BENCH_LONG_RUN (2000000: records of
//! the big long-run family; generated under /tmp/wl-perf/ once, copied to a
//! temp dir for each run, since the bench appends to it).

// The generator is shared with the example; this bench uses only part of it.
#[allow(dead_code)]
#[path = "../examples/gen_session/content.rs"]
mod content;
#[allow(dead_code)]
#[path = "../examples/gen_session/gen.rs"]
mod gen;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use worldline::live::{self, events_between, LiveEvent, LiveOptions};
use worldline::worldline::Session;

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A context file of about `bytes`, in lines of `line_len`.
fn make_file(path: &Path, bytes: usize, line_len: usize) -> usize {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let head = "{\"role\":\"tool\",\"content\":\"";
    let fill = "x".repeat(line_len.saturating_sub(head.len() + 3).max(1));
    let line = format!("{head}{fill}\"}}\n");
    let mut written = 0;
    let mut n = 0;
    f.write_all(b"{\"role\": \"_checkpoint\", \"id\": 0}\n")
        .expect("write");
    while written < bytes {
        f.write_all(line.as_bytes()).expect("write");
        written += line.len();
        n += 1;
    }
    f.flush().expect("flush");
    n + 1
}

struct Stats(Vec<Duration>);

impl Stats {
    fn pct(&mut self, p: f64) -> Duration {
        self.0.sort();
        let i = ((self.0.len() as f64 - 1.0) * p).round() as usize;
        self.0[i]
    }

    fn line(&mut self) -> String {
        format!(
            "p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>6.2} ms  (n = {})",
            ms(self.pct(0.5)),
            ms(self.pct(0.99)),
            ms(self.pct(1.0)),
            self.0.len()
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn records(s: &Session) -> usize {
    s.main().files.last().map_or(0, |f| f.records.len())
}

fn wait_for(rx: &Receiver<LiveEvent>, want: usize, prev: &mut Option<Arc<Session>>) -> bool {
    let deadline = Instant::now() + Duration::from_secs(120);
    while let Ok(ev) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if let LiveEvent::Snapshot(s) = ev {
            // The work `watch` does to turn a snapshot into `record` events.
            let events = events_between(prev.as_deref(), &s);
            let done = records(&s) >= want
                && (prev.is_none() || events.iter().any(|e| e["event"] == "record"));
            *prev = Some(s);
            if done {
                return true;
            }
        }
    }
    false
}

/// Appends `n` lines one at a time to a session whose context file holds
/// `size` bytes; returns append → record-event latencies.
fn run(size: usize, line_len: usize, n: usize, poll: bool) -> (Stats, Duration) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("bench-session");
    std::fs::create_dir(&dir).expect("mkdir");
    let path = dir.join("context.jsonl");
    let have = make_file(&path, size, line_len);
    follow_and_append(&dir, have, n, poll)
}

/// The long-run family of `records` records (generated once under
/// /tmp/wl-perf/), copied into a temp dir: the bench appends to it.
fn long_run_copy(records: u64, tmp: &Path) -> (std::path::PathBuf, usize) {
    let share = std::path::PathBuf::from(format!("/tmp/wl-perf/small-family-{records}-seed1"));
    let marker = share.join(".complete");
    if !marker.exists() {
        assert!(
            !share.exists(),
            "{} exists but is unfinished; delete it",
            share.display()
        );
        eprintln!("generating {} …", share.display());
        let opts = gen::Options {
            size: 0,
            seed: 1,
            records: Some(records),
            lines: 3,
        };
        gen::generate(&share, &opts).expect("generate");
        std::fs::write(&marker, format!("{opts:?}\n")).expect("marker");
    }
    let session = gen::find_session(&share).expect("session");
    let dir = tmp.join("long-run");
    std::fs::create_dir(&dir).expect("mkdir");
    for e in std::fs::read_dir(&session).expect("read_dir").flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), dir.join(e.file_name())).expect("copy");
        }
    }
    let have = std::fs::read(dir.join("context.jsonl"))
        .map(|b| memchr::memchr_iter(b'\n', &b).count())
        .expect("read");
    (dir, have)
}

/// Issue #14: append → record event on a long-run family of `records`.
fn run_long(records: u64, n: usize, poll: bool) -> (Stats, Duration) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (dir, have) = long_run_copy(records, tmp.path());
    follow_and_append(&dir, have, n, poll)
}

/// Follows `dir` (whose `context.jsonl` holds `have` records), then appends
/// `n` records one at a time; returns append → record-event latencies and
/// the time of the initial read.
fn follow_and_append(dir: &Path, mut have: usize, n: usize, poll: bool) -> (Stats, Duration) {
    let path = dir.join("context.jsonl");
    let t = Instant::now();
    let (rx, _h) = live::spawn(
        dir.to_path_buf(),
        LiveOptions {
            poll,
            ..LiveOptions::default()
        },
    )
    .expect("spawn");
    let mut prev = None;
    assert!(wait_for(&rx, have, &mut prev), "initial read");
    let initial = t.elapsed();
    let mut f = OpenOptions::new().append(true).open(&path).expect("open");
    let mut lat = Vec::with_capacity(n);
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for i in 0..n {
        let line = format!("{{\"role\":\"user\",\"content\":\"append {i}\"}}\n");
        let t0 = Instant::now();
        f.write_all(line.as_bytes()).expect("append");
        have += 1;
        assert!(wait_for(&rx, have, &mut prev), "append {i} never showed");
        lat.push(t0.elapsed());
        // A pause so appends are not coalesced into one batch.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(2 + seed % 8));
    }
    (Stats(lat), initial)
}

fn main() {
    // `cargo test --all-targets` runs bench targets without `--bench`.
    if !std::env::args().any(|a| a == "--bench") {
        println!("live_latency: run with `cargo bench --bench live_latency`");
        return;
    }
    let appends = env_usize("WORLDLINE_BENCH_APPENDS", 500);
    let big_mb = env_usize("WORLDLINE_BENCH_BIG_MB", 500);
    let line_kb = env_usize("WORLDLINE_BENCH_LINE_KB", 1024);
    let poll = std::env::var_os("WORLDLINE_BENCH_POLL").is_some();
    let watcher = if poll { "poll" } else { "native" };
    println!("watcher: {watcher}, machine: {}", load_average());
    let only = std::env::var("WORLDLINE_BENCH_ONLY").unwrap_or_default();
    if only != "long-run" {
        files(appends, big_mb, line_kb, poll);
    }
    if only != "files" {
        let records = env_usize("WORLDLINE_BENCH_LONG_RUN", 2_000_000) as u64;
        let (mut small, _) = run_long(3_000, appends / 5, poll);
        println!("long-run family, 3 k records:   {}", small.line());
        let (mut big, initial) = run_long(records, appends / 10, poll);
        println!(
            "long-run family, {} k records: {}  (initial read {:.2} s)",
            records / 1000,
            big.line(),
            initial.as_secs_f64()
        );
        println!(
            "ratio big / 3 k: p50 {:.1}×, p99 {:.1}× (goal: p99 within 2×)",
            big.pct(0.5).as_secs_f64() / small.pct(0.5).as_secs_f64(),
            big.pct(0.99).as_secs_f64() / small.pct(0.99).as_secs_f64()
        );
        snapshot_breakdown(records);
    }
}

/// Where one snapshot's time goes on the big long-run family: the follower
/// copies every record list it holds into the parts, rebuilds the session
/// from them (from scratch, or from the previous snapshot as the follower
/// does), and whoever held the previous snapshot drops it.
fn snapshot_breakdown(records: u64) {
    let share = std::path::PathBuf::from(format!("/tmp/wl-perf/small-family-{records}-seed1"));
    let session = gen::find_session(&share).expect("session");
    let mut parts = worldline::sources::parts(&session).expect("parts");
    // Room to append in place, as a follower's record lists have.
    for f in parts.agents.iter_mut().flat_map(|a| a.files.iter_mut()) {
        f.records.reserve_exact(16);
    }
    let prev = Session::build(parts.clone());
    let mut grown = parts.clone();
    if let Some(f) = grown.agents[0].files.last_mut() {
        if let Some(last) = f.records.last().cloned() {
            f.records.push(last);
        }
    }
    let t = Instant::now();
    let next = Session::build_from(grown, Some(&prev));
    let incremental = t.elapsed();
    drop((prev, next));
    let t = Instant::now();
    let copy = parts.clone();
    let cloned = t.elapsed();
    let t = Instant::now();
    let s = Session::build(copy);
    let built = t.elapsed();
    let again = Session::build(parts.clone());
    let t = Instant::now();
    drop(s);
    let dropped = t.elapsed();
    // What the TUI and `watch` do now: hand it to the dropper thread.
    let t = Instant::now();
    worldline::live::drop_later(again);
    let handed = t.elapsed();
    println!(
        "one snapshot at {} k records: copy the parts {:.1} ms, Session::build {:.0} ms, \
         Session::build_from the previous snapshot after one append {:.2} ms, \
         drop the previous session {:.0} ms (handed to the dropper thread: {:.2} ms)",
        records / 1000,
        ms(cloned),
        ms(built),
        ms(incremental),
        ms(dropped),
        ms(handed)
    );
}

/// The file-size part: one append on a 64 KB, 1 MB and big file.
fn files(appends: usize, big_mb: usize, line_kb: usize, poll: bool) {
    let (mut small, _) = run(64 << 10, 1 << 10, appends, poll);
    println!("append -> record event, 64 KB file:   {}", small.line());
    let (mut one, _) = run(1 << 20, line_kb << 10, appends / 5, poll);
    println!("append -> record event, 1 MB file:    {}", one.line());
    let (mut big, initial) = run(big_mb << 20, line_kb << 10, appends / 5, poll);
    println!(
        "append -> record event, {big_mb} MB file: {}  (initial read {:.2} s)",
        big.line(),
        initial.as_secs_f64()
    );
}

fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!("load average {}", load.join(" "))
}
