//! The replay plan of a format whose files only ever grow by appended
//! lines (Kimi Code's wires, Claude Code's, Pi's and Codex's JSON Lines):
//! each file of the session is copied again in chunks that each end just
//! before the next record, so every write adds one record (and the
//! bookkeeping lines after it), at that record's time. Files of several
//! agents or threads interleave by time. Side files the source names are
//! copied whole first. Once played, every file is byte for byte the
//! original.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::plan::{Event, Op, Plan, EVEN_STEP};
use crate::error::{Error, Result};
use crate::worldline::{RecordRef, Session};

/// One write: a byte range of one file, with its record's time.
struct Chunk {
    file: usize,
    start: u64,
    end: u64,
    time: Option<f64>,
}

/// Plans the replay of `s`, whose files live under their common directory;
/// `side_files` are copied whole before anything else.
pub fn plan(s: &Session, side_files: &[PathBuf]) -> Result<Plan> {
    // Each record file once, with the start offsets of its records and
    // their times (a record shared by several world lines is one line).
    let mut files: Vec<PathBuf> = Vec::new();
    let mut starts: Vec<BTreeMap<u64, Option<f64>>> = Vec::new();
    for (a, agent) in s.agents.iter().enumerate() {
        let f = &agent.family;
        for (i, file) in f.files.iter().enumerate() {
            let k = match files.iter().position(|p| p == &file.path) {
                Some(k) => k,
                None => {
                    files.push(file.path.clone());
                    starts.push(BTreeMap::new());
                    files.len() - 1
                }
            };
            let own = f.lines.get(i).map_or(0, |l| l.shared);
            for (r, meta) in file.records.iter().enumerate().skip(own) {
                let time = s.time(RecordRef {
                    agent: a,
                    line: i,
                    record: r,
                });
                let slot = starts[k].entry(meta.offset()).or_insert(None);
                *slot = slot.or(time);
            }
        }
    }
    if files.is_empty() {
        return Err(Error::Other(format!(
            "{}: nothing to replay (no records)",
            s.dir.display()
        )));
    }
    let mut all: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    all.extend(side_files.iter().map(PathBuf::as_path));
    all.push(&s.dir);
    let root = common_dir(&all);
    let rel = |p: &Path| {
        p.strip_prefix(&root)
            .map(Path::to_path_buf)
            .unwrap_or_default()
    };

    let mut chunks = Vec::new();
    for (k, path) in files.iter().enumerate() {
        let len = std::fs::metadata(path)
            .map_err(|e| Error::io(path, e))?
            .len();
        let mut points: Vec<(u64, Option<f64>)> = starts[k]
            .iter()
            .map(|(&o, &t)| (o, t))
            .filter(|&(o, _)| o < len)
            .collect();
        // Whatever precedes the first record (a header, bookkeeping) comes
        // with it; a file without records is copied whole (an empty one is
        // created: an agent that has not written yet).
        match points.first_mut() {
            Some(first) => first.0 = 0,
            None => {
                chunks.push(Chunk {
                    file: k,
                    start: 0,
                    end: len,
                    time: None,
                });
                continue;
            }
        }
        for (j, &(start, time)) in points.iter().enumerate() {
            let end = points.get(j + 1).map_or(len, |p| p.0);
            if end > start {
                chunks.push(Chunk {
                    file: k,
                    start,
                    end,
                    time,
                });
            }
        }
    }
    let timed = chunks.iter().any(|c| c.time.is_some());
    let ats = pace(&chunks, files.len(), timed);
    let mut order: Vec<usize> = (0..chunks.len()).collect();
    // By time; the same time keeps file order, then offset.
    order.sort_by(|&x, &y| {
        ats[x]
            .total_cmp(&ats[y])
            .then(chunks[x].file.cmp(&chunks[y].file))
            .then(chunks[x].start.cmp(&chunks[y].start))
    });

    let mut events = Vec::new();
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut mkdir = |p: &Path, at: f64, events: &mut Vec<Event>| {
        if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dirs.iter().any(|x| x == d) {
                dirs.push(d.to_path_buf());
                events.push(Event {
                    at,
                    op: Op::Mkdir(d.to_path_buf()),
                });
            }
        }
    };
    for side in side_files.iter().filter(|p| p.is_file()) {
        let to = rel(side);
        mkdir(&to, 0.0, &mut events);
        let end = std::fs::metadata(side)
            .map_err(|e| Error::io(side, e))?
            .len();
        events.push(Event {
            at: 0.0,
            op: Op::Copy {
                from: side.clone(),
                to,
                start: 0,
                end,
            },
        });
    }
    let mut opening = None;
    let mut seen = vec![false; files.len()];
    for &c in &order {
        let ch = &chunks[c];
        let to = rel(&files[ch.file]);
        if !seen[ch.file] {
            seen[ch.file] = true;
            mkdir(&to, ats[c], &mut events);
        }
        events.push(Event {
            at: ats[c],
            op: Op::Copy {
                from: files[ch.file].clone(),
                to,
                start: ch.start,
                end: ch.end,
            },
        });
        // The copy opens once the session's main file has its first record.
        if opening.is_none() && ch.file == 0 {
            opening = Some(events.len());
        }
    }
    let open = if s.dir == root {
        PathBuf::new()
    } else {
        rel(&s.dir)
    };
    Ok(Plan {
        events,
        timed,
        open,
        opening,
    })
}

/// Seconds since the first write for every chunk: its record's time, or
/// the last known time in its file; evenly spaced without any times.
fn pace(chunks: &[Chunk], files: usize, timed: bool) -> Vec<f64> {
    if !timed {
        // One file after another, each write EVEN_STEP after the last.
        let mut order: Vec<usize> = (0..chunks.len()).collect();
        order.sort_by_key(|&c| (chunks[c].file, chunks[c].start));
        let mut at = vec![0.0; chunks.len()];
        for (n, c) in order.into_iter().enumerate() {
            at[c] = n as f64 * EVEN_STEP;
        }
        return at;
    }
    let start = chunks
        .iter()
        .filter_map(|c| c.time)
        .fold(f64::INFINITY, f64::min);
    let mut last = vec![start; files];
    chunks
        .iter()
        .map(|c| {
            let t = c.time.unwrap_or(last[c.file]).max(last[c.file]);
            last[c.file] = t;
            t - start
        })
        .collect()
}

/// The deepest directory holding every path (a file's own directory).
fn common_dir(paths: &[&Path]) -> PathBuf {
    let dir_of = |p: &Path| {
        if p.is_dir() {
            p.to_path_buf()
        } else {
            p.parent().map(Path::to_path_buf).unwrap_or_default()
        }
    };
    let mut common = dir_of(paths[0]);
    for p in &paths[1..] {
        let d = dir_of(p);
        while !d.starts_with(&common) {
            if !common.pop() {
                return PathBuf::new();
            }
        }
    }
    common
}
