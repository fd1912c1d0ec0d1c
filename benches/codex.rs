//! Codex open benchmark (issue #23): a generated Codex thread family of
//! `--records` rollout lines (default 1 M) — a thread of many turns with
//! `exec_command` calls, a `thread/revert` generation from its middle (the
//! 0.171 rollback) with a compaction, and a fork continuing its ordinals —
//! opened by worldline's release binary (`tree --format json`, a child, so
//! its peak RSS is its own) and by `jq -c .type` over the same files.
//!
//! ```text
//! cargo bench --bench codex -- [--records 1000000] [--runs 3] [--dir DIR]
//! ```
//!
//! Prints time, throughput, peak RSS, bytes of peak RSS per record and the
//! ratio to jq. `harness = false`: under `cargo test --benches` it only
//! says how to run it.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use clap::Parser;

#[derive(Debug, Parser)]
#[command(about = "worldline Codex open benchmark (issue #23)")]
struct Args {
    /// Rollout lines in the whole family
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Where the family is generated (reused when complete)
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(long, hide = true)]
    bench: bool,
    /// Skip following the thread live
    #[arg(long)]
    no_live: bool,
    /// Turns appended in the live part (each waited for)
    #[arg(long, default_value_t = 20)]
    appends: usize,
}

const THREAD: &str = "01b00000-0000-7000-8000-00000000000a";
const GEN: &str = "01b00000-0000-7000-8000-00000000000b";
const FORK: &str = "01b00000-0000-7000-8000-00000000000c";
const DAY: &str = "sessions/2026/12/04";

/// One turn's lines, as Codex 0.171 writes them, starting at `ord`.
fn turn(w: &mut impl Write, ord: &mut u64, k: u64, thread: &str) -> Result<()> {
    let ts = |o: u64| {
        format!(
            "2026-12-04T12:{:02}:{:02}.{:03}Z",
            (o / 60000) % 60,
            (o / 1000) % 60,
            o % 1000
        )
    };
    let mut line = |ty: &str, payload: String| -> Result<()> {
        writeln!(
            w,
            "{{\"timestamp\":\"{}\",\"ordinal\":{},\"type\":\"{ty}\",\"payload\":{payload}}}",
            ts(*ord),
            *ord
        )?;
        *ord += 1;
        Ok(())
    };
    let tid = format!("01b00000-{:04x}-7000-8000-{:012x}", k % 0xffff, k);
    line("event_msg", format!("{{\"type\":\"task_started\",\"turn_id\":\"{tid}\",\"started_at\":1796388568,\"model_context_window\":258400}}"))?;
    line("turn_context", format!("{{\"turn_id\":\"{tid}\",\"cwd\":\"/home/user/project\",\"approval_policy\":\"never\",\"model\":\"gpt-5\",\"sandbox_policy\":{{\"type\":\"danger-full-access\"}},\"summary\":\"auto\"}}"))?;
    line("response_item", format!("{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"turn {k}: run the tests and fix what fails\"}}]}}"))?;
    line("event_msg", format!("{{\"type\":\"item_completed\",\"thread_id\":\"{thread}\",\"turn_id\":\"{tid}\",\"item\":{{\"type\":\"UserMessage\",\"id\":\"u{k}\"}}}}"))?;
    let call = format!("call_{k:08}");
    line("response_item", format!("{{\"type\":\"function_call\",\"name\":\"exec_command\",\"arguments\":\"{{\\\"cmd\\\": \\\"cargo test -q {k}\\\"}}\",\"call_id\":\"{call}\"}}"))?;
    line("token_usage_record", format!("{{\"thread_id\":\"{thread}\",\"turn_id\":\"{tid}\",\"usage\":{{\"input_tokens\":{},\"output_tokens\":12}}}}", 100 + k))?;
    line("response_item", format!("{{\"type\":\"function_call_output\",\"call_id\":\"{call}\",\"output\":\"Process exited with code 0\\nOutput:\\nrunning 12 tests\\ntest result: ok. 12 passed; 0 failed\\n\"}}"))?;
    line("event_msg", format!("{{\"type\":\"token_count\",\"info\":{{\"total_token_usage\":{{\"input_tokens\":{},\"output_tokens\":{},\"total_tokens\":{}}}}}}}", 1000 * k, 12 * k, 1012 * k))?;
    line("response_item", format!("{{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{{\"type\":\"output_text\",\"text\":\"All 12 tests pass after turn {k}.\"}}]}}"))?;
    line("event_msg", format!("{{\"type\":\"task_complete\",\"turn_id\":\"{tid}\",\"last_agent_message\":\"All 12 tests pass after turn {k}.\"}}"))?;
    Ok(())
}

const TURN_LINES: u64 = 10;

fn meta(w: &mut impl Write, ord: u64, id: &str, extra: &str) -> Result<()> {
    let instructions = "You are Codex, a coding agent. ".repeat(300);
    writeln!(w, "{{\"timestamp\":\"2026-12-04T12:00:00.000Z\",\"ordinal\":{ord},\"type\":\"session_meta\",\"payload\":{{\"id\":\"{id}\",\"session_id\":\"{id}\",\"cwd\":\"/home/user/project\",\"cli_version\":\"0.171.0\",\"source\":\"exec\",\"model_provider\":\"openai\",\"history_mode\":\"paginated\"{extra},\"base_instructions\":{{\"text\":\"{instructions}\"}}}}}}")?;
    Ok(())
}

fn name(id: &str, gen: Option<&str>) -> String {
    match gen {
        Some(g) => format!("rollout-2026-12-04T12-00-00-{id}_{g}.jsonl"),
        None => format!("rollout-2026-12-04T12-00-00-{id}.jsonl"),
    }
}

/// The family: 60 % of the lines in the thread's first file, 20 % in a
/// revert generation from its middle, 20 % in a fork from its end.
fn generate(home: &Path, records: u64) -> Result<Vec<PathBuf>> {
    let day = home.join(DAY);
    fs::create_dir_all(&day)?;
    let per = |share: u64| (records * share / 100 / TURN_LINES).max(1);
    let (a_turns, g_turns, f_turns) = (per(60), per(20), per(20));
    let mut files = Vec::new();
    // The thread.
    let p = day.join(name(THREAD, None));
    let mut w = BufWriter::new(fs::File::create(&p)?);
    meta(&mut w, 0, THREAD, "")?;
    let mut ord = 1;
    let mut half = 0;
    for k in 0..a_turns {
        if k == a_turns / 2 {
            half = ord;
        }
        turn(&mut w, &mut ord, k, THREAD)?;
    }
    let a_end = ord;
    w.flush()?;
    files.push(p);
    // Its revert generation: back to the middle, then on, with a compaction.
    let p = day.join(name(THREAD, Some(GEN)));
    let mut w = BufWriter::new(fs::File::create(&p)?);
    meta(
        &mut w,
        half,
        THREAD,
        &format!(
            ",\"history_base\":{{\"thread_id\":\"{THREAD}\",\"end_ordinal_exclusive\":{half}}}"
        ),
    )?;
    let mut ord = half + 1;
    for k in 0..g_turns {
        if k == g_turns / 2 {
            writeln!(w, "{{\"timestamp\":\"2026-12-04T13:00:00.000Z\",\"ordinal\":{ord},\"type\":\"compacted\",\"payload\":{{\"message\":\"summary of the work so far\"}}}}")?;
            ord += 1;
        }
        turn(&mut w, &mut ord, a_turns + k, THREAD)?;
    }
    w.flush()?;
    files.push(p);
    // A fork of the first file's end.
    let p = day.join(name(FORK, None));
    let mut w = BufWriter::new(fs::File::create(&p)?);
    meta(&mut w, a_end, FORK, &format!(",\"forked_from_id\":\"{THREAD}\",\"forked_from_ordinal_exclusive\":{a_end},\"history_base\":{{\"thread_id\":\"{THREAD}\",\"end_ordinal_exclusive\":{a_end}}}"))?;
    let mut ord = a_end + 1;
    for k in 0..f_turns {
        turn(&mut w, &mut ord, a_turns + g_turns + k, FORK)?;
    }
    w.flush()?;
    files.push(p);
    Ok(files)
}

fn lines(files: &[PathBuf]) -> Result<u64> {
    let mut n = 0;
    for f in files {
        n += memchr::memchr_iter(b'\n', &fs::read(f)?).count() as u64;
    }
    Ok(n)
}

struct Measure {
    secs: f64,
    rss_kb: u64,
}

fn vm_hwm_kb(pid: u32) -> Option<u64> {
    let text = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Wall time and peak RSS (polled `VmHWM`) of a child.
fn run_child(cmd: &mut Command) -> Result<Measure> {
    let t = Instant::now();
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).spawn()?;
    let mut peak = 0;
    let status = loop {
        if let Some(kb) = vm_hwm_kb(child.id()) {
            peak = peak.max(kb);
        }
        if let Some(s) = child.try_wait()? {
            break s;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(Measure {
        secs: t.elapsed().as_secs_f64(),
        rss_kb: peak,
    })
}

fn median(runs: usize, mut f: impl FnMut() -> Result<Measure>) -> Result<Measure> {
    let mut all = Vec::new();
    for _ in 0..runs.max(1) {
        all.push(f()?);
    }
    let rss_kb = all.iter().map(|m| m.rss_kb).max().unwrap_or(0);
    all.sort_by(|a, b| a.secs.total_cmp(&b.secs));
    Ok(Measure {
        secs: all[all.len() / 2].secs,
        rss_kb,
    })
}

fn main() -> Result<()> {
    let args = Args::parse();
    if !args.bench && std::env::args().all(|a| a != "--bench") {
        println!("run with: cargo bench --bench codex -- [--records N]");
        return Ok(());
    }
    let dir = args.dir.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/codex-bench-{}", args.records))
    });
    let home = dir.join(".codex");
    let done = dir.join("complete");
    let files = if done.exists() {
        let day = home.join(DAY);
        vec![
            day.join(name(THREAD, None)),
            day.join(name(THREAD, Some(GEN))),
            day.join(name(FORK, None)),
        ]
    } else {
        let _ = fs::remove_dir_all(&dir);
        eprintln!("generating {} records in {}", args.records, dir.display());
        let f = generate(&home, args.records)?;
        fs::write(&done, "")?;
        f
    };
    let n = lines(&files)?;
    let bytes: u64 = files
        .iter()
        .map(|f| fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    let mb = bytes as f64 / 1e6;
    for f in &files {
        fs::read(f).context("warming the page cache")?;
    }
    println!(
        "Codex family: {n} records in 3 files, {mb:.0} MB (thread + revert generation + fork)"
    );
    let wl = median(args.runs, || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_worldline"));
        c.env("CODEX_HOME", &home)
            .args(["tree", THREAD, "--format", "json"]);
        run_child(&mut c)
    })?;
    let fork = median(args.runs, || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_worldline"));
        c.env("CODEX_HOME", &home)
            .args(["tree", FORK, "--format", "json"]);
        run_child(&mut c)
    })?;
    let jq = if Command::new("jq").arg("--version").output().is_ok() {
        Some(median(args.runs, || {
            let mut c = Command::new("jq");
            c.args(["-c", ".type"]).args(&files);
            run_child(&mut c)
        })?)
    } else {
        None
    };
    let row = |what: &str, m: &Measure, records: u64, mb: f64| {
        println!(
            "| {what} | {:.2} s | {:.0} MB/s | {:.0} MiB | {:.0} B a record |",
            m.secs,
            mb / m.secs,
            m.rss_kb as f64 / 1024.0,
            m.rss_kb as f64 * 1024.0 / records.max(1) as f64
        )
    };
    println!("| | time | throughput | peak RSS | peak RSS per record |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    row(
        "`worldline tree --format json` (thread, 2 world lines, + fork lookup)",
        &wl,
        n,
        mb,
    );
    row("`worldline tree --format json` of the fork", &fork, n, mb);
    if let Some(j) = &jq {
        row("`jq -c .type` over the 3 files", j, n, mb);
        println!("worldline is {:.1}× faster than jq", j.secs / wl.secs);
    }
    if !args.no_live {
        live_part(&files, args.appends)?;
    }
    Ok(())
}

/// The thread's current line (its revert generation) followed live while
/// whole turns are appended to it, on copies of the big family and of a
/// 3 k-record one: append → a snapshot holding it.
fn live_part(big: &[PathBuf], appends: usize) -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let small_home = tmp.path().join("small/.codex");
    let small = generate(&small_home, 3_000)?;
    let big_home = tmp.path().join("big/.codex");
    let day = big_home.join(DAY);
    fs::create_dir_all(&day)?;
    let mut copies = Vec::new();
    for f in big {
        let to = day.join(f.file_name().context("a file name")?);
        fs::copy(f, &to)?;
        copies.push(to);
    }
    let (si, sl) = live_appends(&small[1], appends.max(20))?;
    let (bi, bl) = live_appends(&copies[1], appends)?;
    let p50 = |v: &[f64]| v[v.len() / 2];
    let p99 = |v: &[f64]| v[(v.len() * 99 / 100).min(v.len() - 1)];
    println!("live, one turn appended to the current line → the snapshot holding it:");
    println!(
        "  3 k records: initial {:.0} ms, p50 {:.1} ms, p99 {:.1} ms (n = {})",
        si,
        p50(&sl),
        p99(&sl),
        sl.len()
    );
    println!(
        "  {} records: initial {:.0} ms, p50 {:.1} ms, p99 {:.1} ms (n = {}); p50 ratio big / 3 k {:.1}× (goal: within 2× + 5 ms)",
        lines(big)?,
        bi,
        p50(&bl),
        p99(&bl),
        bl.len(),
        p50(&bl) / p50(&sl)
    );
    Ok(())
}

fn current_records(s: &worldline::worldline::Session) -> usize {
    let Some(a) = s.agents.first() else { return 0 };
    let f = &a.family;
    f.lines
        .iter()
        .position(|l| l.current)
        .and_then(|i| f.files.get(i))
        .map_or(0, |x| x.records.len())
}

/// Follows `file` (sorted latencies in ms, and the initial read in ms).
fn live_appends(file: &Path, n: usize) -> Result<(f64, Vec<f64>)> {
    use std::sync::mpsc::Receiver;
    use std::time::Duration;
    use worldline::live::{self, LiveEvent, LiveOptions};
    let wait = |rx: &Receiver<LiveEvent>, want: usize| -> Result<usize> {
        let deadline = Instant::now() + Duration::from_secs(300);
        while let Ok(ev) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            if let LiveEvent::Snapshot(s) = ev {
                let have = current_records(&s);
                if have >= want {
                    return Ok(have);
                }
            }
        }
        bail!("no snapshot with {want} records on the current line")
    };
    // The last ordinal written, to go on from.
    let text = fs::read(file)?;
    let last = text
        .split(|&b| b == b'\n')
        .rev()
        .find_map(|l| {
            let v: serde_json::Value = serde_json::from_slice(l).ok()?;
            v["ordinal"].as_u64()
        })
        .context("an ordinal")?;
    drop(text);
    let t = Instant::now();
    let (rx, _h) = live::spawn(file.to_path_buf(), LiveOptions::default())?;
    let mut have = wait(&rx, 1)?;
    let initial = t.elapsed().as_secs_f64() * 1000.0;
    let mut out = fs::OpenOptions::new().append(true).open(file)?;
    let mut ord = last + 1;
    let mut lat = Vec::new();
    for k in 0..n {
        let mut turn_text = Vec::new();
        turn(&mut turn_text, &mut ord, 9_000_000 + k as u64, THREAD)?;
        let t0 = Instant::now();
        out.write_all(&turn_text)?;
        have = wait(&rx, have + 1)?;
        lat.push(t0.elapsed().as_secs_f64() * 1000.0);
        std::thread::sleep(Duration::from_millis(20));
    }
    lat.sort_by(f64::total_cmp);
    Ok((initial, lat))
}
