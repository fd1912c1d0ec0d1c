//! Issue #7's TUI benchmark, in process, on the files of `benches/open.rs`.
//!
//! ```text
//! cargo bench --bench tui -- [--size 1GB] [--records 1000000] [--seed N] [--runs 3]
//!                            [--only family|records|live] [--query TEXT]
//!                            [--live-records 2000000] [--batches 30]
//! ```
//!
//! For the 1 M-record session and the 1 GB family:
//! - first frame: `Session::load` → `Live::Snapshot` → `prepare` → one
//!   `terminal.draw` on a 120×40 `TestBackend` (what `ui::open` and the event
//!   loop do before the first frame; process start and the tty excluded);
//! - per key: `update` + `prepare` + `draw`, p50/p99/max by key kind;
//! - a repeated snapshot (what the live follower's first snapshot costs);
//! - search: the real worker (`search::scan`) on its own thread: time to the
//!   first progress message, to the end, and from cancel to the thread's end.
//!
//! And issue #14's live rows (`--only live`), on a copy of the long-run
//! family (`gen-session --records N --lines 3`) of 3 k and of
//! `--live-records` records, followed by the real follower (`live::spawn`):
//! `update(Live::Snapshot)` + `prepare` + draw for each snapshot after a
//! batch of 10 records appended to the current world line, and after a
//! D-Mail revert that adds a world line; p50/p99 and the ratio of the two
//! sizes.
//!
//! `harness = false`: under `cargo test --benches` it only prints how to run.

// The generator is shared with the example; this bench uses only part of it.
#[allow(dead_code)]
#[path = "../examples/gen_session/content.rs"]
mod content;
#[allow(dead_code)]
#[path = "../examples/gen_session/gen.rs"]
mod gen;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Size;
use ratatui::Terminal;
use worldline::ui::app::{Action, App, Effect, Found, Live};
use worldline::ui::keys;
use worldline::ui::theme::Theme;
use worldline::ui::{search, view};
use worldline::worldline::Session;

const W: u16 = 120;
const H: u16 = 40;
/// One frame at 60 Hz.
const FRAME_MS: f64 = 16.7;

struct Args {
    size: String,
    records: u64,
    seed: u64,
    runs: usize,
    only: Option<String>,
    query: String,
    live_records: u64,
    batches: usize,
    bench: bool,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        size: "1GB".into(),
        records: 1_000_000,
        seed: 1,
        runs: 3,
        only: None,
        // Absent from every body, so the search reads the whole agent.
        query: "zq-absent-needle-qz".into(),
        live_records: 2_000_000,
        batches: 30,
        bench: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().with_context(|| format!("{k} needs a value"));
        match k.as_str() {
            "--size" => a.size = val()?,
            "--records" => a.records = val()?.parse()?,
            "--seed" => a.seed = val()?.parse()?,
            "--runs" => a.runs = val()?.parse::<usize>()?.max(1),
            "--only" => a.only = Some(val()?),
            "--query" => a.query = val()?,
            "--live-records" => a.live_records = val()?.parse()?,
            "--batches" => a.batches = val()?.parse::<usize>()?.max(1),
            "--bench" => a.bench = true,
            other => bail!("unknown argument {other}"),
        }
    }
    Ok(a)
}

fn main() -> Result<()> {
    let args = parse_args()?;
    if !args.bench {
        println!("tui: a benchmark; run it with `cargo bench --bench tui`");
        return Ok(());
    }
    let mut out = Vec::new();
    let only = |part: &str| args.only.as_deref().is_none_or(|o| o == part);
    if only("records") {
        let dir = PathBuf::from(format!(
            "/tmp/wl-perf/records-{}-seed{}",
            args.records, args.seed
        ));
        let opts = gen::Options {
            size: 0,
            seed: args.seed,
            records: Some(args.records),
            lines: 1,
        };
        let session = ensure(&dir, &opts)?;
        out.push(measure(
            &format!("{} records, one world line", args.records),
            &session,
            &args,
        )?);
    }
    if only("family") {
        let dir = PathBuf::from(format!(
            "/tmp/wl-perf/family-{}-seed{}",
            args.size.to_ascii_lowercase(),
            args.seed
        ));
        let opts = gen::Options {
            size: gen::parse_size(&args.size)?,
            seed: args.seed,
            records: None,
            lines: 1,
        };
        let session = ensure(&dir, &opts)?;
        out.push(measure(&format!("{} family", args.size), &session, &args)?);
    }
    if only("live") {
        out.push(live::measure(&args)?);
    }
    println!();
    println!(
        "{W}×{H} TestBackend, warm page cache; {} CPUs, load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    for block in out {
        println!();
        println!("{block}");
    }
    Ok(())
}

/// Reuses `dir` if `benches/open.rs` (or an earlier run) finished it.
fn ensure(dir: &Path, opts: &gen::Options) -> Result<PathBuf> {
    let marker = dir.join(".complete");
    if !marker.exists() {
        if dir.exists() {
            bail!("{} exists but is not finished; delete it", dir.display());
        }
        eprintln!("generating {} …", dir.display());
        gen::generate(dir, opts)?;
        fs::write(&marker, format!("{opts:?}\n"))?;
    }
    gen::find_session(dir)
}

type Term = Terminal<TestBackend>;

fn term() -> Result<Term> {
    Ok(Terminal::new(TestBackend::new(W, H))?)
}

fn frame(app: &mut App, t: &mut Term) -> Result<()> {
    app.prepare();
    t.draw(|f| view::draw(f, app))?;
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// First frame, keys, a repeated snapshot and search on one session.
fn measure(name: &str, dir: &Path, args: &Args) -> Result<String> {
    eprintln!("{name}: {}", dir.display());
    // Warm the page cache (and the reader's code paths) once.
    drop(Session::load(dir)?);

    // (a) First frame, median of `runs`, with its parts.
    let mut firsts = Vec::new();
    let mut kept = None;
    for _ in 0..args.runs {
        let t0 = Instant::now();
        let s = Arc::new(Session::load(dir)?);
        let t_load = t0.elapsed();
        let mut app = App::new(Theme { color: true }, false, Size::new(W, H));
        app.update(Live::Snapshot(s.clone()));
        let t_snap = t0.elapsed();
        app.prepare();
        let t_prep = t0.elapsed();
        let mut t = term()?;
        t.draw(|f| view::draw(f, &app))?;
        let t_draw = t0.elapsed();
        firsts.push([
            t_load,
            t_snap - t_load,
            t_prep - t_snap,
            t_draw - t_prep,
            t_draw,
        ]);
        kept = Some((app, t, s));
    }
    firsts.sort_by_key(|f| f[4]);
    let first = firsts[firsts.len() / 2];
    let (mut app, mut t, s) = kept.context("at least one run")?;
    let records: usize = s
        .agents
        .first()
        .map_or(0, |a| a.family.files.iter().map(|f| f.records.len()).sum());

    let mut b = String::new();
    use std::fmt::Write as _;
    writeln!(
        b,
        "**{name}: {} world lines, {records} records in the main agent's files, {} rows**",
        s.agents.first().map_or(0, |a| a.family.lines.len()),
        app.rows().total
    )?;
    writeln!(b)?;
    writeln!(
        b,
        "first frame (median of {}): **{:.0} ms** = load {:.0} + snapshot {:.1} + prepare {:.1} + draw {:.1} ms",
        args.runs,
        ms(first[4]),
        ms(first[0]),
        ms(first[1]),
        ms(first[2]),
        ms(first[3])
    )?;
    writeln!(b)?;

    // (b) Keys. Each: update + prepare + draw, timed alone.
    let mut rows: Vec<(String, Vec<Duration>)> = Vec::new();
    // Slow presses, with the longest line the frame had to read.
    let mut slow: Vec<(f64, u32)> = Vec::new();
    let mut press = |app: &mut App, t: &mut Term, code: KeyCode| -> Result<Duration> {
        let k = KeyEvent::new(code, KeyModifiers::NONE);
        let t0 = Instant::now();
        if let Some(a) = keys::key(app.mode(), &k) {
            app.update(a);
        }
        frame(app, t)?;
        let d = t0.elapsed();
        if ms(d) > FRAME_MS {
            slow.push((ms(d), longest_visible(app)));
        }
        Ok(d)
    };
    let mut run = |label: &str, codes: &[KeyCode], n: usize, app: &mut App, t: &mut Term| {
        let mut v = Vec::with_capacity(n * codes.len());
        for _ in 0..n {
            for &c in codes {
                v.push(press(app, t, c)?);
            }
        }
        rows.push((label.to_string(), v));
        anyhow::Ok(())
    };
    run("j", &[KeyCode::Char('j')], 1000, &mut app, &mut t)?;
    run("PgDn", &[KeyCode::PageDown], 200, &mut app, &mut t)?;
    run("G", &[KeyCode::Char('G')], 1, &mut app, &mut t)?;
    run("g", &[KeyCode::Char('g')], 1, &mut app, &mut t)?;
    run(
        "G/g ×20",
        &[KeyCode::Char('G'), KeyCode::Char('g')],
        10,
        &mut app,
        &mut t,
    )?;
    run("]", &[KeyCode::Char(']')], 100, &mut app, &mut t)?;
    run("[", &[KeyCode::Char('[')], 100, &mut app, &mut t)?;
    // In the middle of the session, where world lines are most likely shared.
    for _ in 0..app.rows().len() / 2 / usize::from(H) {
        app.update(Action::Page(1));
    }
    run(
        "h/l",
        &[KeyCode::Char('l'), KeyCode::Char('h')],
        25,
        &mut app,
        &mut t,
    )?;
    // The live follower's first snapshot repeats the loaded one.
    let mut snaps = Vec::new();
    for _ in 0..args.runs {
        let t0 = Instant::now();
        app.update(Live::Snapshot(s.clone()));
        frame(&mut app, &mut t)?;
        snaps.push(t0.elapsed());
    }
    rows.push(("snapshot again (live follower)".into(), snaps));

    writeln!(b, "| key | presses | p50 | p99 | max | over 16.7 ms |")?;
    writeln!(b, "| --- | ---: | ---: | ---: | ---: | ---: |")?;
    for (label, mut v) in rows {
        v.sort();
        let q = |p: f64| ms(v[((v.len() - 1) as f64 * p).round() as usize]);
        let over = v.iter().filter(|d| ms(**d) > FRAME_MS).count();
        writeln!(
            b,
            "| {label} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {over} |",
            v.len(),
            q(0.5),
            q(0.99),
            ms(v[v.len() - 1])
        )?;
    }
    writeln!(b)?;
    if !slow.is_empty() {
        let list: Vec<String> = slow
            .iter()
            .map(|(t, len)| format!("{t:.0} ms ({:.1} MB line)", *len as f64 / 1e6))
            .collect();
        writeln!(
            b,
            "presses over a frame, with the longest line on screen: {}",
            list.join(", ")
        )?;
        writeln!(b)?;
    }

    // (c) Search.
    let (progress, done, hits) = search_once(&mut app, &args.query, None)?;
    writeln!(
        b,
        "search `/{}` (whole agent, {hits} hits): first progress {:.0} ms, done {:.2} s",
        args.query,
        progress.map_or(f64::NAN, ms),
        done.map_or(f64::NAN, |d| d.as_secs_f64())
    )?;
    let (_, stop, _) = search_once(&mut app, &args.query, Some(Duration::from_millis(300)))?;
    writeln!(
        b,
        "search cancelled 300 ms in: worker stopped {:.2} ms after the cancel flag",
        stop.map_or(f64::NAN, ms)
    )?;
    Ok(b)
}

/// The longest line (bytes) among the rows drawn and the selected record.
fn longest_visible(app: &App) -> u32 {
    let Some(s) = app.session() else { return 0 };
    (app.scroll()..app.scroll() + usize::from(H))
        .filter_map(|p| app.rows().record_of(app.rows().row_at(p)?))
        .chain(app.selected())
        .filter_map(|r| s.record(r).map(|m| m.len()))
        .max()
        .unwrap_or(0)
}

/// Runs one search the way the event loop does (the `Effect::Search` of a
/// typed query, `search::scan` on a worker thread). Without `cancel_after`:
/// time to the first progress, to the end, and hits. With it: the flag is set
/// after that long, and the second figure is cancel → worker ended.
fn search_once(
    app: &mut App,
    query: &str,
    cancel_after: Option<Duration>,
) -> Result<(Option<Duration>, Option<Duration>, usize)> {
    app.update(Action::SearchOpen);
    for c in query.chars() {
        app.update(Action::SearchChar(c));
    }
    let Effect::Search(req) = app.update(Action::SearchSubmit) else {
        bail!("no search started");
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let t0 = Instant::now();
    let worker = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            search::scan(&req, &cancel, &move |a| tx.send(a).is_ok());
        })
    };
    let mut first = None;
    let mut done = None;
    if let Some(after) = cancel_after {
        std::thread::sleep(after);
        let tc = Instant::now();
        cancel.store(true, Ordering::Relaxed);
        app.update(Action::SearchCancel);
        worker
            .join()
            .map_err(|_| anyhow::anyhow!("search panicked"))?;
        return Ok((None, Some(tc.elapsed()), 0));
    }
    for a in rx {
        if first.is_none() && matches!(a, Found::Progress { .. }) {
            first = Some(t0.elapsed());
        }
        if matches!(a, Found::Done { .. }) {
            done = Some(t0.elapsed());
        }
        app.update(a);
    }
    worker
        .join()
        .map_err(|_| anyhow::anyhow!("search panicked"))?;
    Ok((first, done, app.search().hits.len()))
}

/// Issue #14: what one live snapshot costs the TUI on a long run.
mod live {
    use super::*;
    use std::fs::OpenOptions;
    use std::io::Write as _;
    use worldline::kimi_writer as kw;
    use worldline::live::{self as follower, LiveEvent, LiveOptions};

    /// Records appended per batch.
    const BATCH: usize = 10;

    /// One size: the follower's snapshots after appended batches and after
    /// reverts, applied to a following app.
    struct Figures {
        records: usize,
        append: Vec<Duration>,
        /// The same, in CPU time of the UI thread: the follower rebuilds
        /// the session on the other core meanwhile, and a shared machine
        /// preempts.
        append_cpu: Vec<Duration>,
        line: Vec<Duration>,
    }

    /// CPU time this thread has used.
    fn thread_cpu() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid clock id and a pointer to a live timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    pub fn measure(args: &Args) -> Result<String> {
        let small = one(3_000, args)?;
        let big = one(args.live_records, args)?;
        let mut b = String::new();
        use std::fmt::Write as _;
        writeln!(
            b,
            "**live snapshots (follow on): `update(Live::Snapshot)` + prepare + draw**"
        )?;
        writeln!(b)?;
        writeln!(b, "| snapshot | records | n | p50 | p99 | max |")?;
        writeln!(b, "| --- | ---: | ---: | ---: | ---: | ---: |")?;
        for f in [&small, &big] {
            for (what, v) in [
                (format!("{BATCH} records appended"), &f.append),
                (
                    format!("{BATCH} records appended, UI thread CPU time"),
                    &f.append_cpu,
                ),
                ("a world line added (D-Mail revert)".to_string(), &f.line),
            ] {
                writeln!(
                    b,
                    "| {what} | {} | {} | {:.2} ms | {:.2} ms | {:.2} ms |",
                    f.records,
                    v.len(),
                    ms(pct(v, 0.5)),
                    ms(pct(v, 0.99)),
                    ms(pct(v, 1.0))
                )?;
            }
        }
        let ratio =
            |p: f64| pct(&big.append, p).as_secs_f64() / pct(&small.append, p).as_secs_f64();
        writeln!(b)?;
        writeln!(
            b,
            "appended batch, {} vs {} records: p50 {:.1}×, p99 {:.1}× (goal: p99 within 2×)",
            big.records,
            small.records,
            ratio(0.5),
            ratio(0.99)
        )?;
        let cpu = |p: f64| {
            pct(&big.append_cpu, p).as_secs_f64() / pct(&small.append_cpu, p).as_secs_f64()
        };
        writeln!(
            b,
            "the same in UI thread CPU time: p50 {:.1}×, p99 {:.1}×",
            cpu(0.5),
            cpu(0.99)
        )?;
        Ok(b)
    }

    fn pct(v: &[Duration], p: f64) -> Duration {
        let mut v = v.to_vec();
        v.sort();
        v.get(((v.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or_default()
    }

    /// A copy of the long-run family of `records` records (the bench writes
    /// to it), followed and appended to.
    fn one(records: u64, args: &Args) -> Result<Figures> {
        let share = PathBuf::from(format!("/tmp/wl-perf/small-family-{records}-seed1"));
        let opts = gen::Options {
            size: 0,
            seed: 1,
            records: Some(records),
            lines: 3,
        };
        let session = ensure(&share, &opts)?;
        let tmp = tempfile::tempdir()?;
        let dir = tmp.path().join("long-run");
        fs::create_dir(&dir)?;
        for e in fs::read_dir(&session)?.flatten() {
            if e.path().is_file() {
                fs::copy(e.path(), dir.join(e.file_name()))?;
            }
        }
        eprintln!("live: following a copy of {}", session.display());
        let (rx, _handle) = follower::spawn(dir.clone(), LiveOptions::default())?;
        let mut app = App::new(Theme { color: true }, true, Size::new(W, H));
        let mut t = term()?;
        let first = next_snapshot(&rx)?;
        let total = records_of(&first);
        app.update(Live::Snapshot(first));
        frame(&mut app, &mut t)?;
        let mut have = last_file_len(&app);
        let path = dir.join("context.jsonl");
        let mut append = Vec::new();
        let mut append_cpu = Vec::new();
        for b in 0..args.batches {
            let mut f = OpenOptions::new().append(true).open(&path)?;
            let mut text = String::new();
            for i in 0..BATCH {
                let m = if i % 2 == 0 {
                    kw::Message::user(format!("appended {b}.{i}"))
                } else {
                    kw::Message::assistant(format!("reply {b}.{i}"))
                };
                text.push_str(&kw::message_line(&m));
            }
            f.write_all(text.as_bytes())?;
            have += BATCH;
            // The follower may hand the batch over in more than one
            // snapshot: the TUI applies each.
            loop {
                let s = next_snapshot(&rx)?;
                let done = s.main().files.last().map_or(0, |f| f.records.len()) >= have;
                let (t0, c0) = (Instant::now(), thread_cpu());
                app.update(Live::Snapshot(s));
                frame(&mut app, &mut t)?;
                append.push(t0.elapsed());
                append_cpu.push(thread_cpu() - c0);
                if done {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut line = Vec::new();
        for k in 0..args.runs {
            let lines = app.family().map_or(0, |f| f.lines.len());
            revert(&dir, &format!("revert {k}"))?;
            loop {
                let s = next_snapshot(&rx)?;
                let done = s.main().lines.len() > lines;
                let t0 = Instant::now();
                app.update(Live::Snapshot(s));
                frame(&mut app, &mut t)?;
                if done {
                    line.push(t0.elapsed());
                    break;
                }
            }
        }
        Ok(Figures {
            records: total,
            append,
            append_cpu,
            line,
        })
    }

    fn records_of(s: &Session) -> usize {
        s.main().files.iter().map(|f| f.records.len()).sum()
    }

    fn last_file_len(app: &App) -> usize {
        app.family()
            .and_then(|f| f.files.last())
            .map_or(0, |f| f.records.len())
    }

    fn next_snapshot(rx: &mpsc::Receiver<LiveEvent>) -> Result<Arc<Session>> {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left)? {
                LiveEvent::Snapshot(s) => return Ok(s),
                LiveEvent::Error(e) => bail!("follower: {e}"),
                _ => {}
            }
        }
    }

    /// A D-Mail revert as kimi-cli writes it: `context.jsonl` rotated, every
    /// line before its second-to-last checkpoint copied, that checkpoint
    /// again and the D-Mail.
    fn revert(dir: &Path, message: &str) -> Result<()> {
        let path = dir.join("context.jsonl");
        let text = fs::read_to_string(&path)?;
        let mut starts = Vec::new();
        let mut at = 0;
        for l in text.split_inclusive('\n') {
            if l.starts_with(r#"{"role": "_checkpoint""#) {
                starts.push((at, l));
            }
            at += l.len();
        }
        let Some(&(cut, cp)) = starts.len().checked_sub(2).and_then(|i| starts.get(i)) else {
            bail!("{}: too few checkpoints to revert", path.display());
        };
        let v: serde_json::Value = serde_json::from_str(cp)?;
        let id = v["id"].as_i64().context("checkpoint id")?;
        let next = kw::max_rotation_index(dir)? + 1;
        fs::rename(&path, dir.join(format!("context_{next}.jsonl")))?;
        let mut out = String::with_capacity(cut + 512);
        out.push_str(&text[..cut]);
        out.push_str(&kw::checkpoint_line(id));
        out.push_str(&kw::message_line(&kw::checkpoint_message(id)));
        out.push_str(&kw::message_line(&kw::dmail_injection_message(message)));
        fs::write(&path, out)?;
        Ok(())
    }
}
