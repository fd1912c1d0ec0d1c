//! `gen-session`: writes a synthetic kimi-cli session family for worldline's
//! performance work (issue #7).
//!
//! ```text
//! cargo run --release --example gen-session -- --size 1GB --out /tmp/wl-perf/1gb
//! cargo run --release --example gen-session -- --records 1000000 --out /tmp/wl-perf/1m
//! cargo run --release --example gen-session -- --records 2000000 --lines 3 --out /tmp/wl-perf/2m3
//! worldline tree /tmp/wl-perf/1gb/sessions/*/*
//! ```

mod content;
mod gen;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Parser;

#[derive(Debug, Parser)]
#[command(about = "Write a synthetic kimi-cli session family (a share dir) for benchmarks")]
struct Args {
    /// Total size of the context files: 200MB, 1GB, 10GB, 512MiB … (1 GB = 10^9 bytes)
    #[arg(long, default_value = "1GB")]
    size: String,
    /// Share dir to write (DIR/kimi.json, DIR/sessions/<md5>/<id>/)
    #[arg(long)]
    out: PathBuf,
    /// Same seed, same files
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Instead of --size: one world line of about N small records
    #[arg(long)]
    records: Option<u64>,
    /// With --records: that many records in this many world lines (D-Mails)
    #[arg(long, default_value_t = 1)]
    lines: u32,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let opts = gen::Options {
        size: gen::parse_size(&args.size)?,
        seed: args.seed,
        records: args.records,
        lines: args.lines,
    };
    let t = Instant::now();
    let g = gen::generate(&args.out, &opts)?;
    let secs = t.elapsed().as_secs_f64();
    println!("{}", g.session_dir.display());
    eprintln!(
        "{} context files ({} world lines, {} subagents), {:.1} MB of context, {:.1} MB in all, \
         {} records, {} image lines, written in {:.1} s ({:.0} MB/s)",
        g.context_files.len(),
        g.world_lines,
        g.subagents,
        g.context_bytes as f64 / 1e6,
        g.total_bytes as f64 / 1e6,
        g.records,
        g.image_lines,
        secs,
        g.total_bytes as f64 / 1e6 / secs,
    );
    Ok(())
}
