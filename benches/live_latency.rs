//! Live-follow benchmark (not a test): how long from a line's append to its
//! `record` event with the native watcher, and whether one append costs the
//! same on a 1 MB and on a big file.
//!
//! cargo bench --bench live_latency
//! Knobs (env): WORLDLINE_BENCH_APPENDS (500), WORLDLINE_BENCH_BIG_MB (500),
//! WORLDLINE_BENCH_LINE_KB (1024: the big file is made of lines this long),
//! WORLDLINE_BENCH_POLL=1 (poll watcher instead).

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
    let mut have = make_file(&path, size, line_len);
    let t = Instant::now();
    let (rx, _h) = live::spawn(
        dir.clone(),
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
    println!("watcher: {watcher}");
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
