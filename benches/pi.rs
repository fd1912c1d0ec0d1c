//! Pi benchmark (not a test): a generated Pi session of a million entries
//! (turns with tool calls and thinking, a `/tree` move back three turns
//! every 50 000 entries, labels, a compaction). Prints: opening it with worldline's release binary (`tree
//! --format json`) against `jq -c .type` over the same file; the tree
//! process's peak RSS per entry; and live append latency (append → the
//! follower's snapshot holds it) on that session and on a small one.
//!
//! cargo bench --bench pi
//! Knobs (env): WORLDLINE_BENCH_PI_ENTRIES (1000000), WORLDLINE_BENCH_RUNS (3),
//! WORLDLINE_BENCH_PI_BRANCH_EVERY (50000),
//! WORLDLINE_BENCH_APPENDS (10 on the big session, 50 on the small one),
//! WORLDLINE_BENCH_PI_SMALL (3000: the small session's entries).
//! The big session is generated under /tmp/wl-perf/ once and copied to a
//! temp dir for the live part (it appends).

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use worldline::live::{self, LiveEvent, LiveOptions};
use worldline::worldline::Session;

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Entry ids: 8 hex digits, distinct (an odd multiplier is a bijection).
fn id(i: usize) -> String {
    format!("{:08x}", (i as u32).wrapping_mul(2_654_435_761))
}

fn stamp(i: usize) -> String {
    let ms = i;
    let (h, m, s, r) = (
        12 + ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000,
    );
    format!("2026-12-04T{h:02}:{m:02}:{s:02}.{r:03}Z")
}

/// Writes entries one by one, each a child of the last unless moved.
struct Gen {
    f: std::io::BufWriter<std::fs::File>,
    count: usize,
    parent: Option<String>,
    line: String,
}

impl Gen {
    fn push(&mut self, ty: &str, rest: &str) {
        let me = id(self.count);
        let p = self
            .parent
            .as_deref()
            .map_or("null".to_string(), |p| format!("\"{p}\""));
        self.line.clear();
        let _ = writeln!(
            self.line,
            "{{\"type\":\"{ty}\",\"id\":\"{me}\",\"parentId\":{p},\"timestamp\":\"{}\"{rest}}}",
            stamp(self.count)
        );
        self.f.write_all(self.line.as_bytes()).expect("write");
        self.count += 1;
        self.parent = Some(me);
    }
}

/// Writes a Pi session of about `n` entries; returns the entries written.
fn generate(path: &Path, n: usize) -> usize {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    writeln!(f, "{{\"type\":\"session\",\"version\":3,\"id\":\"01a24115-0000-7000-8000-000000000000\",\"timestamp\":\"{}\",\"cwd\":\"/home/user/bench\"}}", stamp(0)).expect("write");
    let mut g = Gen {
        f,
        count: 0,
        parent: None,
        line: String::new(),
    };
    g.push(
        "model_change",
        ",\"provider\":\"fake\",\"modelId\":\"fake-model\"",
    );
    g.push("thinking_level_change", ",\"thinkingLevel\":\"off\"");
    g.push("message", ",\"message\":{\"role\":\"system\",\"content\":\"\",\"sections\":{\"preamble\":\"You are a coding assistant.\"}}");
    let mut turn = 0;
    let mut turn_ends: Vec<String> = Vec::new();
    let every = env_usize("WORLDLINE_BENCH_PI_BRANCH_EVERY", 50_000);
    let mut next_branch = every;
    let mut compacted = false;
    while g.count < n {
        if g.count >= next_branch && turn_ends.len() > 4 {
            // A /tree move: the next prompt hangs off an earlier turn's end.
            g.parent = Some(turn_ends[turn_ends.len() - 4].clone());
            next_branch += every;
        }
        g.push("message", &format!(",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"TOOLS=1 turn {turn}: please look at the files and report\"}}],\"timestamp\":1796388269253}}"));
        let call = format!("call_{turn:012x}");
        g.push("message", &format!(",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"thinking\",\"thinking\":\"I should run a command.\"}},{{\"type\":\"toolCall\",\"id\":\"{call}\",\"name\":\"bash\",\"arguments\":{{\"command\":\"ls -la src/{turn}\"}}}}],\"api\":\"openai-completions\",\"provider\":\"fake\",\"model\":\"fake-model\",\"usage\":{{\"input\":120,\"output\":12,\"totalTokens\":132}},\"stopReason\":\"toolUse\"}}"));
        g.push("message", &format!(",\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"{call}\",\"toolName\":\"bash\",\"content\":[{{\"type\":\"text\",\"text\":\"total 8\\ndrwxr-xr-x 2 user user 4096 main.rs\\n\"}}],\"isError\":false}}"));
        g.push("message", &format!(",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"Finished turn {turn}: the directory holds main.rs. (scripted)\"}}],\"usage\":{{\"input\":140,\"output\":12,\"totalTokens\":152}},\"stopReason\":\"stop\"}}"));
        turn_ends.push(g.parent.clone().unwrap_or_default());
        if turn % 2500 == 7 {
            let target = g.parent.clone().unwrap_or_default();
            g.push(
                "label",
                &format!(",\"targetId\":\"{target}\",\"label\":\"turn {turn}\""),
            );
        }
        if !compacted && g.count > n / 2 {
            let kept = turn_ends[turn_ends.len() - 2].clone();
            g.push("compaction", &format!(",\"summary\":\"## Goal\\nBenchmark.\",\"firstKeptEntryId\":\"{kept}\",\"tokensBefore\":50000"));
            compacted = true;
        }
        turn += 1;
    }
    g.f.flush().expect("flush");
    g.count
}

fn big_session(n: usize) -> PathBuf {
    let every = env_usize("WORLDLINE_BENCH_PI_BRANCH_EVERY", 50_000);
    let dir = PathBuf::from(format!("/tmp/wl-perf/pi-{n}-every-{every}"));
    let marker = dir.join(".complete");
    let file = dir.join("2026-12-04T12-00-00-000Z_01a24115-0000-7000-8000-000000000000.jsonl");
    if !marker.exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        eprintln!("generating {} …", file.display());
        let wrote = generate(&file, n);
        std::fs::write(&marker, format!("{wrote}\n")).expect("marker");
    }
    file
}

/// Runs a command to the end; its wall time and peak RSS (bytes).
// The child is reaped by `wait4`, which also gives its own peak RSS.
#[allow(clippy::zombie_processes)]
fn timed(mut c: Command) -> (Duration, u64) {
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let t = Instant::now();
    let child = c.spawn().expect("spawn");
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as i32;
    // SAFETY: waiting on the pid we spawned, with valid out-pointers.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = t.elapsed();
    assert!(r == pid && status == 0, "{c:?} failed ({status})");
    (wall, usage.ru_maxrss as u64 * 1024)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn current_records(s: &Session) -> usize {
    let f = s.main();
    f.lines
        .iter()
        .position(|l| l.current)
        .and_then(|i| f.files.get(i))
        .map_or(0, |x| x.records.len())
}

fn wait_for(rx: &Receiver<LiveEvent>, want: usize) -> Option<Arc<Session>> {
    let deadline = Instant::now() + Duration::from_secs(300);
    while let Ok(ev) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if let LiveEvent::Snapshot(s) = ev {
            if current_records(&s) >= want {
                return Some(s);
            }
        }
    }
    None
}

/// Follows `file`, then appends `n` entries to its current line one at a
/// time; returns the initial read and the latencies.
fn live_appends(file: &Path, n: usize) -> (Duration, Vec<Duration>) {
    let t = Instant::now();
    let (rx, _h) = live::spawn(file.to_path_buf(), LiveOptions::default()).expect("spawn");
    let first = wait_for(&rx, 1).expect("initial read");
    let initial = t.elapsed();
    let f = first.main();
    let cur = f.lines.iter().position(|l| l.current).expect("current");
    let mut leaf = f.lines[cur].leaf.clone().expect("leaf");
    let mut have = current_records(&first);
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .open(file)
        .expect("open");
    let mut lat = Vec::new();
    for i in 0..n {
        let me = format!("a{i:07x}");
        let line = format!("{{\"type\":\"message\",\"id\":\"{me}\",\"parentId\":\"{leaf}\",\"timestamp\":\"2026-12-04T13:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"append {i}\"}}}}\n");
        let t0 = Instant::now();
        out.write_all(line.as_bytes()).expect("append");
        have += 1;
        wait_for(&rx, have).expect("the append never showed");
        lat.push(t0.elapsed());
        leaf = me;
        std::thread::sleep(Duration::from_millis(20));
    }
    (initial, lat)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("pi: run with `cargo bench --bench pi`");
        return;
    }
    let n = env_usize("WORLDLINE_BENCH_PI_ENTRIES", 1_000_000);
    let runs = env_usize("WORLDLINE_BENCH_RUNS", 3).max(1);
    let file = big_session(n);
    let bytes = std::fs::metadata(&file).expect("stat").len();
    // Counted in pieces, which also warms the page cache: a child's peak
    // RSS starts from this process's (exec keeps the high-water mark), so
    // this process never holds the file.
    let entries = {
        use std::io::Read;
        let mut f = std::fs::File::open(&file).expect("open");
        let (mut buf, mut n) = (vec![0u8; 1 << 20], 0);
        loop {
            let got = f.read(&mut buf).expect("read");
            if got == 0 {
                break;
            }
            n += memchr::memchr_iter(b'\n', &buf[..got]).count();
        }
        n - 1
    };
    println!(
        "Pi session: {entries} entries, {:.1} MB ({:.0} bytes per entry on disk)",
        bytes as f64 / 1e6,
        bytes as f64 / entries as f64
    );
    let bin = env!("CARGO_BIN_EXE_worldline");
    let mut wl = Vec::new();
    let mut rss = 0;
    for _ in 0..runs {
        let mut c = Command::new(bin);
        c.args(["tree", "--format", "json"]).arg(&file);
        c.env("PI_CODING_AGENT_DIR", "/nonexistent");
        let (t, r) = timed(c);
        wl.push(t);
        rss = rss.max(r);
    }
    let wl = median(wl);
    println!(
        "open  worldline tree --format json: {:>8.0} ms  peak RSS {:.0} MB = {:.0} bytes per entry",
        ms(wl),
        rss as f64 / 1e6,
        rss as f64 / entries as f64
    );
    if Command::new("jq").arg("--version").output().is_ok() {
        let mut jq = Vec::new();
        for _ in 0..runs {
            let mut c = Command::new("jq");
            c.args(["-c", ".type"]).arg(&file);
            jq.push(timed(c).0);
        }
        let jq = median(jq);
        println!(
            "open  jq -c .type:                  {:>8.0} ms  (worldline / jq = {:.2})",
            ms(jq),
            wl.as_secs_f64() / jq.as_secs_f64()
        );
    } else {
        println!("open  jq: not installed, skipped");
    }
    let t = Instant::now();
    let s = Session::load(&file).expect("load");
    println!(
        "open  Session::load in process:     {:>8.0} ms  ({} world lines)",
        ms(t.elapsed()),
        s.main().lines.len()
    );
    drop(s);

    let tmp = tempfile::tempdir().expect("tempdir");
    let small = tmp
        .path()
        .join("2026-12-04T12-00-00-000Z_01a24115-small.jsonl");
    let small_n = generate(&small, env_usize("WORLDLINE_BENCH_PI_SMALL", 3000));
    let big = tmp.path().join(file.file_name().expect("name"));
    std::fs::copy(&file, &big).expect("copy");
    let (si, mut sl) = live_appends(&small, env_usize("WORLDLINE_BENCH_APPENDS", 50));
    let (bi, mut bl) = live_appends(&big, env_usize("WORLDLINE_BENCH_APPENDS", 10));
    sl.sort();
    bl.sort();
    let p50 = |v: &[Duration]| v[v.len() / 2];
    println!(
        "live  small session ({small_n} entries): initial {:>6.0} ms, append → snapshot p50 {:>8.1} ms, max {:>8.1} ms",
        ms(si),
        ms(p50(&sl)),
        ms(*sl.last().expect("n"))
    );
    println!(
        "live  big session ({entries} entries): initial {:>6.0} ms, append → snapshot p50 {:>8.1} ms, max {:>8.1} ms ({:.1}× the small one)",
        ms(bi),
        ms(p50(&bl)),
        ms(*bl.last().expect("n")),
        p50(&bl).as_secs_f64() / p50(&sl).as_secs_f64()
    );
}
