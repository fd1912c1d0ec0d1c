//! Where Codex keeps threads: `$CODEX_HOME` (else `~/.codex`),
//! `sessions/YYYY/MM/DD/rollout-<local time>-<thread uuid>.jsonl` and the
//! flat `archived_sessions/`; `.jsonl.zst` is a compressed rollout. A
//! reverted thread gets a further file per generation,
//! `rollout-<time>-<thread uuid>_<generation uuid>.jsonl`, beside the
//! first. Heads (`session_meta`) are read capped, for listing and lineage.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::rollout::{Meta, Rollout};
use crate::read::guard;

/// A thread's first line is its `session_meta`; past this many bytes of
/// head no more is read to list it.
const HEAD_CAP: usize = 4 << 20;

/// A rollout file's name, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutName {
    /// `2026-12-04T12-49-28`.
    pub time: String,
    pub thread: String,
    /// A reverted thread's later generation.
    pub generation: Option<String>,
}

/// `rollout-<time>-<uuid>[_<uuid>].jsonl[.zst]`.
pub fn parse_name(path: &Path) -> Option<RolloutName> {
    let name = path.file_name()?.to_str()?;
    let stem = name
        .strip_suffix(".jsonl.zst")
        .or_else(|| name.strip_suffix(".jsonl"))?;
    let rest = stem.strip_prefix("rollout-")?;
    // The time has a fixed width: YYYY-MM-DDTHH-MM-SS.
    if rest.len() < 20 || rest.as_bytes().get(19) != Some(&b'-') {
        return None;
    }
    let (time, ids) = (&rest[..19], &rest[20..]);
    let (thread, generation) = match ids.split_once('_') {
        Some((t, g)) => (t, Some(g)),
        None => (ids, None),
    };
    (is_uuid(thread) && generation.is_none_or(is_uuid)).then(|| RolloutName {
        time: time.to_string(),
        thread: thread.to_string(),
        generation: generation.map(str::to_string),
    })
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

pub fn is_zst(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}

/// Codex's data home.
#[derive(Debug, Clone)]
pub struct Home {
    pub root: PathBuf,
}

impl Home {
    /// `$CODEX_HOME`, else `~/.codex`.
    pub fn from_env() -> Home {
        let root = match std::env::var_os("CODEX_HOME") {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default()
                .join(".codex"),
        };
        Home { root }
    }

    pub fn sessions_root(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// Every rollout file (first generations, later ones, subagents').
    pub fn rollout_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        walk(&self.sessions_root(), 0, &mut out);
        walk(&self.root.join("archived_sessions"), 3, &mut out);
        out
    }

    /// Every file of a thread, by its uuid: the first generation first.
    pub fn thread_files(&self, thread: &str) -> Vec<PathBuf> {
        let mut files: Vec<(RolloutName, PathBuf)> = self
            .rollout_files()
            .into_iter()
            .filter_map(|p| Some((parse_name(&p)?, p)))
            .filter(|(n, _)| n.thread == thread)
            .collect();
        files.sort_by(|a, b| order(&a.0, &b.0));
        files.into_iter().map(|(_, p)| p).collect()
    }

    /// The first generation of every thread that isn't a subagent's.
    pub fn threads(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .rollout_files()
            .into_iter()
            .filter(|p| parse_name(p).is_some_and(|n| n.generation.is_none()))
            .filter(|p| head(p).is_some_and(|m| m.parent_thread.is_none()))
            .collect();
        out.sort();
        out
    }
}

/// Generations in the order they were written: the first (no generation
/// id), then by time in the name and the generation's UUIDv7.
pub fn order(a: &RolloutName, b: &RolloutName) -> std::cmp::Ordering {
    (a.generation.is_some(), &a.time, &a.generation).cmp(&(
        b.generation.is_some(),
        &b.time,
        &b.generation,
    ))
}

/// `sessions/YYYY/MM/DD/` is three levels deep; `archived_sessions/` flat.
fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() && depth < 3 {
            walk(&p, depth + 1, out);
        } else if ft.is_file() && parse_name(&p).is_some() {
            out.push(p);
        }
    }
}

/// What a rollout's first two lines say: its thread's `session_meta`,
/// and the source an older fork copied (a second `session_meta`).
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    pub meta: Meta,
    pub copied_from: Option<String>,
}

type HeadKey = (PathBuf, u64, u64);
static HEADS: std::sync::Mutex<Option<std::collections::HashMap<HeadKey, Head>>> =
    std::sync::Mutex::new(None);
/// Heads kept at most (a home of many thousand threads is read once).
const HEADS_KEPT: usize = 100_000;

/// A rollout's head, read capped (and decompressed for `.zst`); `None`
/// when its first line isn't a complete `session_meta`. A file's first
/// lines never change once written, so heads are kept by path and inode:
/// listing, lineage and live re-reads don't read them again.
pub fn head_of(path: &Path) -> Option<Head> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(path).ok()?;
    let key = (path.to_path_buf(), md.dev(), md.ino());
    if let Some(h) = HEADS.lock().ok()?.as_ref().and_then(|m| m.get(&key)) {
        return Some(h.clone());
    }
    let r = head_lines(path, HEAD_CAP, 2)?;
    let head = Head {
        meta: r.meta.clone()?,
        copied_from: r.copied_from.clone(),
    };
    // Only once two lines are complete (or the file holds just one): a
    // fork being written may not have its copied meta yet.
    let settled = r.entries.len() >= 2 || r.bytes == md.len();
    if settled {
        if let Ok(mut g) = HEADS.lock() {
            let m = g.get_or_insert_with(Default::default);
            if m.len() >= HEADS_KEPT {
                m.clear();
            }
            m.insert(key, head.clone());
        }
    }
    Some(head)
}

/// A rollout's first `session_meta` ([`head_of`]).
pub fn head(path: &Path) -> Option<Meta> {
    head_of(path).map(|h| h.meta)
}

/// The first lines of a rollout, at most `cap` bytes of them and `max`
/// lines, indexed like a whole file.
pub fn head_lines(path: &Path, cap: usize, max: usize) -> Option<Rollout> {
    let g = guard::open_regular(path).ok()?;
    let mut reader: Box<dyn Read> = Box::new(g.file.take(g.len));
    if is_zst(path) {
        reader = Box::new(ruzstd::decoding::StreamingDecoder::new(reader).ok()?);
    }
    let mut r = Rollout::new(path, "");
    let mut feeder = super::rollout::Feeder::default();
    let mut buf = vec![0u8; 64 << 10];
    let mut read = 0usize;
    while read < cap && r.entries.len() < max {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => break,
        };
        read += n;
        feeder.feed(&mut r, &buf[..n]);
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse() {
        let n = parse_name(Path::new(
            "/h/rollout-2026-12-04T14-30-55-01a24177-1d37-7563-88fd-ed71d3abd507_01a24177-2041-7133-baba-ceaeebae2642.jsonl",
        ))
        .unwrap();
        assert_eq!(n.thread, "01a24177-1d37-7563-88fd-ed71d3abd507");
        assert_eq!(
            n.generation.as_deref(),
            Some("01a24177-2041-7133-baba-ceaeebae2642")
        );
        let z = parse_name(Path::new(
            "rollout-2026-12-04T14-30-55-01a24177-1d37-7563-88fd-ed71d3abd507.jsonl.zst",
        ))
        .unwrap();
        assert_eq!(z.generation, None);
        assert!(parse_name(Path::new("rollout-2026-12-04T14-30-55-nope.jsonl")).is_none());
        assert!(parse_name(Path::new("context.jsonl")).is_none());
    }
}
