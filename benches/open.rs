//! Issue #7's open benchmark: one run, the same files, several readers.
//!
//! ```text
//! cargo bench --bench open -- [--size 1GB] [--dir DIR] [--seed N] [--runs 3]
//!                             [--records 1000000 | --no-records] [--no-jq] [--no-kimi]
//!                             [--small-family 2000000 | --no-small-family] [--no-family]
//! ```
//!
//! `--small-family N` (issue #14): N small records in three world lines
//! (two D-Mails), the shape of a long run; its group also gives the `tree`
//! process's peak RSS per record.
//!
//! Generates (or reuses) a session family with the `gen-session` generator,
//! warms the page cache, then times each reader `--runs` times and prints
//! the median: worldline's release binary (`tree --format json`, a child
//! process, so its peak RSS is its own), worldline's `Session::load` and
//! `read::index_file` in this process, `jq -c .role`, and kimi-cli's
//! `Context.restore()` when a Python that imports `kimi_cli` is found
//! (`$KIMI_PYTHON`, else `target/kimi-venv/bin/python`, else `python3`).
//! The machine is shared and noisy, so each group also gets a ratio to
//! worldline measured minutes apart on the same files.
//!
//! `harness = false`: under `cargo test --benches` (no `--bench` flag) it
//! only prints how to run it.

// The generator is shared with the example; this bench uses only part of it.
#[allow(dead_code)]
#[path = "../examples/gen_session/content.rs"]
mod content;
#[allow(dead_code)]
#[path = "../examples/gen_session/gen.rs"]
mod gen;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use clap::Parser;

#[derive(Debug, Parser)]
#[command(about = "worldline open benchmark (issue #7)")]
struct Args {
    /// Family size to generate (context files, 1 GB = 10^9 bytes)
    #[arg(long, default_value = "1GB")]
    size: String,
    /// Share dir of the family; generated there if absent, reused if complete
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Runs per measurement; the median is reported
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Records of the one-world-line session for the scrolling goal
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
    #[arg(long)]
    no_records: bool,
    /// Records of the long-run family (three world lines of small records)
    #[arg(long, default_value_t = 2_000_000)]
    small_family: u64,
    #[arg(long)]
    no_small_family: bool,
    /// Skip the size family (to measure only the small-record sessions)
    #[arg(long)]
    no_family: bool,
    #[arg(long)]
    no_jq: bool,
    #[arg(long)]
    no_kimi: bool,
    /// Set by `cargo bench`; without it (`cargo test --benches`) nothing runs
    #[arg(long, hide = true)]
    bench: bool,
}

/// Python run by the kimi-cli measurement: times `restore()` alone, after
/// the imports, and prints seconds and the number of messages restored.
const KIMI_RESTORE_PY: &str = r#"
import asyncio, sys, time
from pathlib import Path
from kimi_cli.soul.context import Context

async def main():
    ctx = Context(Path(sys.argv[1]))
    t = time.perf_counter()
    await ctx.restore()
    print(time.perf_counter() - t, len(ctx.history))

asyncio.run(main())
"#;

fn main() -> Result<()> {
    let args = Args::parse();
    if !args.bench {
        println!("open: a benchmark; run it with `cargo bench --bench open -- --size 1GB`");
        return Ok(());
    }
    let size = gen::parse_size(&args.size)?;
    let runs = args.runs.max(1);
    let machine_before = machine_state();

    let dir = args.dir.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "/tmp/wl-perf/family-{}-seed{}",
            args.size.to_ascii_lowercase(),
            args.seed
        ))
    });
    let family = if args.no_family {
        None
    } else {
        Some(ensure(
            &dir,
            &gen::Options {
                size,
                seed: args.seed,
                records: None,
                lines: 1,
            },
        )?)
    };
    let records = if args.no_records {
        None
    } else {
        let dir = PathBuf::from(format!(
            "/tmp/wl-perf/records-{}-seed{}",
            args.records, args.seed
        ));
        Some(ensure(
            &dir,
            &gen::Options {
                size: 0,
                seed: args.seed,
                records: Some(args.records),
                lines: 1,
            },
        )?)
    };

    let small = if args.no_small_family {
        None
    } else {
        Some(ensure(
            &small_family_dir(args.small_family, args.seed),
            &small_family_options(args.small_family, args.seed),
        )?)
    };

    let python = if args.no_kimi { None } else { kimi_python() };
    let mut table = Table::default();
    if let Some(family) = &family {
        measure_family(family, &args, runs, python.as_deref(), &mut table)?;
    }

    // The million-record session of the scrolling goal.
    if let Some(rec) = &records {
        warm(&rec.session_dir)?;
        let current = rec.session_dir.join("context.jsonl");
        let mb = file_mb(&current)?;
        table.group(format!(
            "{} records in one world line: context.jsonl {mb:.0} MB ({:.0} MB with wire.jsonl)",
            rec.records,
            rec.total_bytes as f64 / 1e6
        ));
        let wl = worldline_child(&rec.session_dir, runs)?;
        table.row("worldline tree --format json (process)", wl, mb, wl.secs);
        let index = index_file(&current, runs)?;
        table.row(
            "worldline read::index_file (in process)",
            index,
            mb,
            wl.secs,
        );
        let wire = wire_read(&rec.session_dir.join("wire.jsonl"), runs)?;
        table.row(&wire.0, wire.1, wire.2, wl.secs);
        if !args.no_jq {
            if let Some(m) = jq(std::slice::from_ref(&current), runs)? {
                table.row("jq -c .role", m, mb, wl.secs);
            }
        }
        if let Some(py) = &python {
            // kimi reads a line per thread hop (aiofiles): minutes for a
            // million lines, so one run only.
            let m = kimi_restore(py, &current, 1)?;
            table.row("kimi-cli Context.restore() (1 run)", m, mb, wl.secs);
        }
    }

    if let Some(small) = &small {
        measure_small_family(small, &args, runs, python.as_deref(), &mut table)?;
    }

    println!();
    println!("median of {runs} runs, warm page cache; ratio = time / the group's worldline time");
    println!("machine before: {machine_before}");
    println!("machine after:  {}", machine_state());
    println!();
    table.print();
    Ok(())
}

/// The size family: every context file of the session and its subagents,
/// then `context.jsonl` alone.
fn measure_family(
    family: &Family,
    args: &Args,
    runs: usize,
    python: Option<&Path>,
    table: &mut Table,
) -> Result<()> {
    // The family: every context file of the session and its subagents.
    eprintln!("warming the page cache");
    warm(&family.session_dir)?;
    let mb = family.context_bytes as f64 / 1e6;
    table.group(format!(
        "family: {} context files, {:.0} MB ({:.0} MB with wire.jsonl and metadata), {} records",
        family.files.len(),
        mb,
        family.total_bytes as f64 / 1e6,
        family.records
    ));
    let wl = worldline_child(&family.session_dir, runs)?;
    table.row("worldline tree --format json (process)", wl, mb, wl.secs);
    let load = session_load(&family.session_dir, runs)?;
    table.row("worldline Session::load (in process)", load, mb, wl.secs);
    let wire = wire_read(&family.session_dir.join("wire.jsonl"), runs)?;
    table.row(&wire.0, wire.1, wire.2, wl.secs);
    if !args.no_jq {
        match jq(&family.files, runs)? {
            Some(m) => table.row("jq -c .role (all context files)", m, mb, wl.secs),
            None => table.note("jq: skipped, not installed"),
        }
    }

    // context.jsonl alone: the one file kimi-cli restores.
    let current = family.session_dir.join("context.jsonl");
    let current_mb = file_mb(&current)?;
    table.group(format!("context.jsonl alone: {current_mb:.0} MB"));
    let index = index_file(&current, runs)?;
    table.row(
        "worldline read::index_file (in process)",
        index,
        current_mb,
        index.secs,
    );
    if !args.no_jq {
        if let Some(m) = jq(std::slice::from_ref(&current), runs)? {
            table.row("jq -c .role", m, current_mb, index.secs);
        }
    }
    match python {
        Some(py) => {
            let m = kimi_restore(py, &current, runs)?;
            table.row("kimi-cli Context.restore()", m, current_mb, index.secs);
        }
        None => table.note(
            "kimi-cli: skipped, not installed (set KIMI_PYTHON to a Python that imports kimi_cli)",
        ),
    }

    Ok(())
}

/// Where the long-run family of `records` records is kept.
pub fn small_family_dir(records: u64, seed: u64) -> PathBuf {
    PathBuf::from(format!("/tmp/wl-perf/small-family-{records}-seed{seed}"))
}

/// Issue #14's long-run family: small records in three world lines.
pub fn small_family_options(records: u64, seed: u64) -> gen::Options {
    gen::Options {
        size: 0,
        seed,
        records: Some(records),
        lines: 3,
    }
}

/// Issue #14's table: `tree` against `jq` on the long-run family, with the
/// peak RSS per record.
fn measure_small_family(
    small: &Family,
    args: &Args,
    runs: usize,
    python: Option<&Path>,
    table: &mut Table,
) -> Result<()> {
    warm(&small.session_dir)?;
    let mb = small.context_bytes as f64 / 1e6;
    table.group(format!(
        "long-run family: {} records in {} context files, {mb:.0} MB ({:.0} MB with wire.jsonl)",
        small.records,
        small.files.len(),
        small.total_bytes as f64 / 1e6
    ));
    let wl = worldline_child(&small.session_dir, runs)?;
    table.row("worldline tree --format json (process)", wl, mb, wl.secs);
    let load = session_load(&small.session_dir, runs)?;
    table.row("worldline Session::load (in process)", load, mb, wl.secs);
    let first = median(runs, || {
        let t = Instant::now();
        let (rx, handle) = worldline::live::spawn(small.session_dir.clone(), Default::default())?;
        loop {
            match rx.recv() {
                Ok(worldline::live::LiveEvent::Snapshot(_)) => break,
                Ok(_) => {}
                Err(_) => bail!("the follower stopped before its first snapshot"),
            }
        }
        let secs = t.elapsed().as_secs_f64();
        drop(handle);
        Ok(Measure { secs, rss_kb: None })
    })?;
    table.row(
        "worldline live follower, first snapshot (the TUI's one read)",
        first,
        mb,
        wl.secs,
    );
    let wire = wire_read(&small.session_dir.join("wire.jsonl"), runs)?;
    table.row(&wire.0, wire.1, wire.2, wl.secs);
    let mut jq_secs = None;
    if !args.no_jq {
        match jq(&small.files, runs)? {
            Some(m) => {
                jq_secs = Some(m.secs);
                table.row("jq -c .role (all context files)", m, mb, wl.secs);
            }
            None => table.note("jq: skipped, not installed"),
        }
    }
    if let Some(py) = python {
        // The one file kimi-cli restores; minutes for its ~700 k lines, so
        // one run only.
        let current = small.session_dir.join("context.jsonl");
        let m = kimi_restore(py, &current, 1)?;
        table.row(
            "kimi-cli Context.restore() of context.jsonl (1 run)",
            m,
            file_mb(&current)?,
            wl.secs,
        );
    }
    let per_record = wl.rss_kb.unwrap_or(0) as f64 * 1024.0 / small.records.max(1) as f64;
    table.note(&record_share(&small.session_dir, wl.rss_kb)?);
    let speedup = jq_secs.map_or("jq not run".to_string(), |j| {
        format!("{:.1}× faster than jq", j / wl.secs)
    });
    table.note(&format!(
        "tree: {speedup}; peak RSS {per_record:.0} B a record (goal: ≥ 10×, ≤ 64 B)"
    ));
    Ok(())
}

/// A family on disk, found or freshly generated.
struct Family {
    session_dir: PathBuf,
    files: Vec<PathBuf>,
    context_bytes: u64,
    total_bytes: u64,
    records: u64,
}

/// Reuses `dir` if a previous run finished it (the `.complete` marker),
/// else generates into it.
fn ensure(dir: &Path, opts: &gen::Options) -> Result<Family> {
    let marker = dir.join(".complete");
    if !marker.exists() {
        if dir.exists() {
            bail!(
                "{} exists but is not a finished family; delete it or choose another --dir",
                dir.display()
            );
        }
        eprintln!("generating {} …", dir.display());
        let t = Instant::now();
        let g = gen::generate(dir, opts)?;
        eprintln!(
            "  {:.0} MB of context in {:.1} s",
            g.context_bytes as f64 / 1e6,
            t.elapsed().as_secs_f64()
        );
        fs::write(&marker, format!("{opts:?}\n")).with_context(|| marker.display().to_string())?;
    } else {
        eprintln!("reusing {}", dir.display());
    }
    let session_dir = gen::find_session(dir)?;
    let files = gen::context_files(&session_dir)?;
    let mut context_bytes = 0;
    let mut records = 0;
    for f in &files {
        let bytes = fs::read(f).with_context(|| f.display().to_string())?;
        context_bytes += bytes.len() as u64;
        records += memchr::memchr_iter(b'\n', &bytes).count() as u64;
    }
    Ok(Family {
        total_bytes: gen::dir_bytes(&session_dir)?,
        session_dir,
        files,
        context_bytes,
        records,
    })
}

/// Reads every file under `dir` once so that no reader pays for the disk.
fn warm(dir: &Path) -> Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    for e in fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            warm(&p)?;
        } else {
            let mut f = fs::File::open(&p)?;
            while f.read(&mut buf)? > 0 {}
        }
    }
    Ok(())
}

fn file_mb(p: &Path) -> Result<f64> {
    Ok(fs::metadata(p)
        .with_context(|| p.display().to_string())?
        .len() as f64
        / 1e6)
}

#[derive(Debug, Clone, Copy)]
struct Measure {
    secs: f64,
    /// Peak resident set of a child process, KiB.
    rss_kb: Option<u64>,
}

/// Runs `f` `runs` times; the median time, and the largest peak RSS seen.
fn median(runs: usize, mut f: impl FnMut() -> Result<Measure>) -> Result<Measure> {
    let mut all = Vec::with_capacity(runs);
    for _ in 0..runs {
        all.push(f()?);
    }
    let rss_kb = all.iter().filter_map(|m| m.rss_kb).max();
    all.sort_by(|a, b| a.secs.total_cmp(&b.secs));
    Ok(Measure {
        secs: all[all.len() / 2].secs,
        rss_kb,
    })
}

/// Spawns `cmd` and returns its wall time, its peak RSS and what it
/// printed on stdout. The peak is the child's own `VmHWM`, polled while it
/// runs: `wait4`'s `ru_maxrss` would also count this process's high-water
/// mark, which a vfork-style spawn hands down to the child.
fn run_child(cmd: &mut Command) -> Result<(Measure, String)> {
    let t = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .spawn()
        .with_context(|| format!("spawning {cmd:?}"))?;
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kb = 0;
    let status = loop {
        if let Some(kb) = vm_hwm_kb(&status_path) {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let secs = t.elapsed().as_secs_f64();
    let mut out = String::new();
    if let Some(mut so) = child.stdout.take() {
        // Children here print one short line: the pipe buffer holds it.
        so.read_to_string(&mut out)?;
    }
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok((
        Measure {
            secs,
            rss_kb: Some(peak_kb),
        },
        out,
    ))
}

/// `VmHWM` (peak resident set) from a `/proc/<pid>/status`, KiB.
fn vm_hwm_kb(status_path: &str) -> Option<u64> {
    let text = fs::read_to_string(status_path).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn worldline_child(session: &Path, runs: usize) -> Result<Measure> {
    eprintln!("worldline tree {}", session.display());
    median(runs, || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_worldline"));
        cmd.arg("tree")
            .arg(session)
            .args(["--format", "json"])
            .stdout(Stdio::null());
        Ok(run_child(&mut cmd)?.0)
    })
}

/// `Session::load` in this process: the open without the export and the
/// process start.
fn session_load(session: &Path, runs: usize) -> Result<Measure> {
    median(runs, || {
        let t = Instant::now();
        let s = worldline::worldline::Session::load(session)?;
        let secs = t.elapsed().as_secs_f64();
        drop(s);
        Ok(Measure { secs, rss_kb: None })
    })
}

/// What the loaded records themselves cost: `RecordMeta`'s size, what
/// they box, and their share of `tree`'s peak RSS.
fn record_share(session: &Path, tree_rss_kb: Option<u64>) -> Result<String> {
    use worldline::model::RecordMeta;
    let s = worldline::worldline::Session::load(session)?;
    let (mut n, mut boxed) = (0usize, 0usize);
    for a in &s.agents {
        for f in &a.family.files {
            n += f.records.len();
            boxed += f.records.iter().map(RecordMeta::boxed_bytes).sum::<usize>();
        }
    }
    let size = std::mem::size_of::<RecordMeta>();
    let total = n * size + boxed;
    let share = tree_rss_kb.map_or(String::new(), |kb| {
        format!(
            ", {:.0}% of tree's peak RSS",
            total as f64 * 100.0 / (kb as f64 * 1024.0)
        )
    });
    Ok(format!(
        "records: size_of::<RecordMeta>() = {size} B, {:.1} B a record boxed; {n} records hold {:.0} MiB{share}",
        boxed as f64 / n.max(1) as f64,
        total as f64 / (1 << 20) as f64
    ))
}

fn index_file(path: &Path, runs: usize) -> Result<Measure> {
    median(runs, || {
        let t = Instant::now();
        let idx = worldline::read::index_file(path, "context.jsonl")?;
        let secs = t.elapsed().as_secs_f64();
        drop(idx);
        Ok(Measure { secs, rss_kb: None })
    })
}

/// worldline's wire.jsonl reader alone, part of every open: its row name,
/// time and size in MB (MB/s in its row are of wire.jsonl).
fn wire_read(path: &Path, runs: usize) -> Result<(String, Measure, f64)> {
    let mb = file_mb(path)?;
    let m = median(runs, || {
        let t = Instant::now();
        let w = worldline::sources::WireLog::read(path);
        let secs = t.elapsed().as_secs_f64();
        drop(w);
        Ok(Measure { secs, rss_kb: None })
    })?;
    Ok((
        format!("worldline WireLog::read of wire.jsonl, {mb:.0} MB (in process)"),
        m,
        mb,
    ))
}

/// `jq -c .role FILES > /dev/null`, or `None` when jq is not installed.
fn jq(files: &[PathBuf], runs: usize) -> Result<Option<Measure>> {
    if Command::new("jq").arg("--version").output().is_err() {
        return Ok(None);
    }
    eprintln!("jq -c .role over {} files", files.len());
    median(runs, || {
        let mut cmd = Command::new("jq");
        cmd.args(["-c", ".role"]).args(files).stdout(Stdio::null());
        Ok(run_child(&mut cmd)?.0)
    })
    .map(Some)
}

/// A Python that can import kimi-cli's `Context`.
fn kimi_python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/kimi-venv/bin/python");
    let candidates = std::env::var_os("KIMI_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([venv, PathBuf::from("python3")]);
    for py in candidates {
        let ok = Command::new(&py)
            .args(["-c", "import kimi_cli.soul.context"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(py);
        }
    }
    None
}

/// kimi-cli's restore: the time `restore()` itself took (imports excluded)
/// and the whole interpreter's peak RSS.
fn kimi_restore(python: &Path, file: &Path, runs: usize) -> Result<Measure> {
    eprintln!("kimi-cli Context.restore() on {}", file.display());
    median(runs, || {
        let mut cmd = Command::new(python);
        cmd.args(["-c", KIMI_RESTORE_PY])
            .arg(file)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let (m, out) = run_child(&mut cmd)?;
        let secs: f64 = out
            .split_whitespace()
            .next()
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("kimi restore printed {out:?}"))?;
        Ok(Measure { secs, ..m })
    })
}

/// `nproc`, load average and free memory, to judge how noisy a run was.
fn machine_state() -> String {
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    let avail = fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024);
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{cpus} CPUs, load average {}, {avail} MiB available",
        load.join(" ")
    )
}

/// Markdown rows, grouped; printed at the end so progress lines on stderr
/// do not interleave with it.
#[derive(Default)]
struct Table {
    lines: Vec<String>,
}

impl Table {
    fn group(&mut self, title: String) {
        if !self.lines.is_empty() {
            self.lines.push(String::new());
        }
        self.lines.push(format!("**{title}**"));
        self.lines.push(String::new());
        self.lines
            .push("| reader | time | MB/s | peak RSS | ratio |".to_string());
        self.lines
            .push("| --- | ---: | ---: | ---: | ---: |".to_string());
    }

    fn row(&mut self, name: &str, m: Measure, mb: f64, reference_secs: f64) {
        let rss = m.rss_kb.map_or("—".to_string(), |kb| {
            format!("{:.0} MiB", kb as f64 / 1024.0)
        });
        self.lines.push(format!(
            "| {name} | {:.3} s | {:.0} | {rss} | {:.2}× |",
            m.secs,
            mb / m.secs,
            m.secs / reference_secs
        ));
    }

    fn note(&mut self, text: &str) {
        self.lines.push(format!("| {text} | | | | |"));
    }

    fn print(&self) {
        for l in &self.lines {
            println!("{l}");
        }
    }
}
