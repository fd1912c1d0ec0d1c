//! Rebuilds a recorded session in an empty directory the way kimi-cli wrote
//! it: each world line's bytes appended in random chunks (a line may be
//! split across writes) with small random pauses; each rotation as
//! placeholder → rename → prefix copy (quickly) → new lines; wire.jsonl
//! growing alongside; a subagent's directory made when its parent's Agent
//! call is written. Bytes are copied exactly from the fixture.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use worldline::worldline::{Agent, Session};

use super::Rng;

#[derive(Debug)]
enum Op {
    Mkdir(PathBuf),
    /// Create empty (or truncate).
    Create(PathBuf),
    Rename(PathBuf, PathBuf),
    Append {
        path: PathBuf,
        bytes: Vec<u8>,
        /// A copy loop in kimi-cli: no pause after it.
        fast: bool,
    },
}

/// The operations that rebuild `src` in `dst`, in kimi-cli's order.
fn plan(src: &Path, dst: &Path, rng: &mut Rng) -> Vec<Op> {
    let session = Session::load(src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let mut ops = Vec::new();
    let state = src.join("state.json");
    if let Ok(bytes) = std::fs::read(&state) {
        ops.push(Op::Append {
            path: dst.join("state.json"),
            bytes,
            fast: true,
        });
    }
    // Subagents start right after the parent's Agent call is written.
    let mut starts: Vec<(usize, u64, &Agent)> = session.agents[1..]
        .iter()
        .map(|a| match a.parent_call {
            Some(c) => {
                let rec = session.record(c).expect("parent call record");
                (c.line, rec.offset() + u64::from(rec.len()) + 1, a)
            }
            None => (usize::MAX, 0, a),
        })
        .collect();
    starts.sort_by_key(|s| (s.0, s.1));
    let mut subs = Vec::new();
    for (line, at, a) in &starts {
        let rel = a.dir.strip_prefix(src).expect("subagent under session");
        subs.push((*line, *at, agent_ops(src, dst, a, &[], rel, rng)));
    }
    ops.extend(agent_ops(
        src,
        dst,
        &session.agents[0],
        &subs,
        Path::new(""),
        rng,
    ));
    ops
}

/// One agent's files. `inserts`: (world line, byte offset, ops) to run once
/// that much of that world line's file was written.
fn agent_ops(
    src: &Path,
    dst: &Path,
    agent: &Agent,
    inserts: &[(usize, u64, Vec<Op>)],
    rel: &Path,
    rng: &mut Rng,
) -> Vec<Op> {
    let (sdir, ddir) = (src.join(rel), dst.join(rel));
    let mut ops = Vec::new();
    if !rel.as_os_str().is_empty() {
        ops.push(Op::Mkdir(ddir.clone()));
        for side in ["meta.json", "prompt.txt"] {
            if let Ok(bytes) = std::fs::read(sdir.join(side)) {
                ops.push(Op::Append {
                    path: ddir.join(side),
                    bytes,
                    fast: true,
                });
            }
        }
    }
    let wire = std::fs::read(sdir.join("wire.jsonl")).ok();
    let f = &agent.family;
    let total: u64 = f.files.iter().map(|x| x.bytes).sum::<u64>().max(1);
    let (mut written, mut wire_done) = (0u64, 0usize);
    let current = ddir.join("context.jsonl");
    let mut pending: Vec<&(usize, u64, Vec<Op>)> = inserts.iter().collect();
    for (i, file) in f.files.iter().enumerate() {
        let bytes = std::fs::read(&file.path).expect("fixture file");
        if i == 0 {
            ops.push(Op::Create(current.clone()));
        } else {
            let rotated = ddir.join(format!("context_{i}.jsonl"));
            ops.push(Op::Create(rotated.clone()));
            ops.push(Op::Rename(current.clone(), rotated));
            ops.push(Op::Create(current.clone()));
        }
        let shared = f.lines[i].shared;
        let own_from = file
            .records
            .get(shared)
            .map_or(bytes.len(), |r| r.offset() as usize);
        for (fast, lo, hi) in [(true, 0, own_from), (false, own_from, bytes.len())] {
            let mut at = lo;
            while at < hi {
                let mut end = (at + rng.range(1, 400)).min(hi);
                // Stop at an insertion point so it happens in order.
                if let Some(p) = pending.first().filter(|p| p.0 == i) {
                    let cut = p.1 as usize;
                    if at < cut && end >= cut {
                        end = cut;
                    }
                }
                ops.push(Op::Append {
                    path: current.clone(),
                    bytes: bytes[at..end].to_vec(),
                    fast,
                });
                written += (end - at) as u64;
                at = end;
                if let Some(w) = &wire {
                    let upto = (w.len() as u128 * written as u128 / total as u128) as usize;
                    if upto > wire_done {
                        ops.push(Op::Append {
                            path: ddir.join("wire.jsonl"),
                            bytes: w[wire_done..upto].to_vec(),
                            fast,
                        });
                        wire_done = upto;
                    }
                }
                while let Some(p) = pending.first() {
                    if p.0 != i || (p.1 as usize) > at {
                        break;
                    }
                    ops.extend(clone_ops(&p.2));
                    pending.remove(0);
                }
            }
        }
        while let Some(p) = pending.first() {
            if p.0 != i {
                break;
            }
            ops.extend(clone_ops(&p.2));
            pending.remove(0);
        }
    }
    if let Some(w) = &wire {
        ops.push(Op::Append {
            path: ddir.join("wire.jsonl"),
            bytes: w[wire_done..].to_vec(),
            fast: false,
        });
    }
    for p in pending {
        ops.extend(clone_ops(&p.2));
    }
    if let Ok(bytes) = std::fs::read(sdir.join("output")) {
        ops.push(Op::Append {
            path: ddir.join("output"),
            bytes,
            fast: true,
        });
    }
    ops
}

fn clone_ops(ops: &[Op]) -> Vec<Op> {
    ops.iter()
        .map(|o| match o {
            Op::Mkdir(p) => Op::Mkdir(p.clone()),
            Op::Create(p) => Op::Create(p.clone()),
            Op::Rename(a, b) => Op::Rename(a.clone(), b.clone()),
            Op::Append { path, bytes, fast } => Op::Append {
                path: path.clone(),
                bytes: bytes.clone(),
                fast: *fast,
            },
        })
        .collect()
}

/// Replays the session at `src` into the (existing, empty) directory `dst`.
pub fn replay(src: &Path, dst: &Path, seed: u64) {
    run(src, dst, seed, true, || {});
}

/// [`replay`] without pauses, calling `each` after every write, rename or
/// new file.
pub fn replay_steps(src: &Path, dst: &Path, seed: u64, each: impl FnMut()) {
    run(src, dst, seed, false, each);
}

fn run(src: &Path, dst: &Path, seed: u64, pause: bool, mut each: impl FnMut()) {
    let mut rng = Rng::new(seed);
    let ops = plan(src, dst, &mut rng);
    for op in ops {
        match op {
            Op::Mkdir(p) => std::fs::create_dir_all(&p).unwrap(),
            Op::Create(p) => {
                std::fs::File::create(&p).unwrap();
            }
            Op::Rename(a, b) => std::fs::rename(&a, &b).unwrap(),
            Op::Append { path, bytes, fast } => {
                let mut f = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .unwrap();
                f.write_all(&bytes).unwrap();
                if pause && !fast && rng.range(0, 9) < 5 {
                    std::thread::sleep(Duration::from_micros(rng.range(0, 4000) as u64));
                }
            }
        }
        each();
    }
}
