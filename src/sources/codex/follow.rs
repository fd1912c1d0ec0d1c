//! Following a Codex thread live at the cost of what was appended. The
//! thread's rollout files are kept indexed between refreshes and only their
//! new bytes are parsed. When only the file of the current world line grew
//! and what it added is ordinary (no `session_meta`, rollback, subagent
//! spawn or warning), its records are pushed onto the current line's
//! records as last handed out ([`Grow`]), so `Session::build_from`
//! continues the last snapshot; the subagents and lineage are kept. Anything
//! else (a new generation, a file that shrank or was replaced, a change
//! beside the thread) builds the whole thread again from the kept indexes.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::records;
use super::rollout::{Feeder, Kind, Rollout};
use super::{generations_of, home, parts};
use crate::sources::follow::{stamps_of, Follower, Refresh, Stamp};
use crate::sources::{LineMark, Pos, SessionParts};

/// One rollout file as read so far.
struct Kept {
    ino: u64,
    rollout: Rollout,
    feeder: Feeder,
}

/// What growing the last parts needs: which file and world line grow, and
/// how far they were built.
struct Grow {
    /// The current world line's file (the thread's last generation).
    file: PathBuf,
    /// Its entries, warnings and dropped warnings when last built.
    entries: usize,
    warnings: usize,
    dropped: u64,
    /// The current world line (its index among the shown ones).
    line: usize,
    /// Records it shares with its parent.
    shared: usize,
    /// The entry of the file its own records start at.
    own_start: usize,
    /// Shown world lines whose file is this one (their `bytes` follow it).
    same_file: Vec<usize>,
    /// Turns the file's base holds (its `task_started`s count on).
    base: i64,
    /// The line's records are its file's own (a root line): taken from
    /// there rather than pushed.
    shares: bool,
    /// The file is the thread's first (whose first prompt is the title).
    first: bool,
}

pub struct CodexFollower {
    first: PathBuf,
    stamps: Vec<Stamp>,
    dirs: Vec<PathBuf>,
    kept: Vec<(PathBuf, Kept)>,
    /// The parts last made, and whether they must be built afresh.
    latest: Option<(SessionParts, bool)>,
    grow: Option<Grow>,
    /// Refreshes that grew the last parts rather than building them whole.
    pub grown: usize,
}

impl CodexFollower {
    pub fn new(first: &Path) -> CodexFollower {
        CodexFollower {
            first: first.to_path_buf(),
            stamps: Vec::new(),
            dirs: Vec::new(),
            kept: Vec::new(),
            latest: None,
            grow: None,
            grown: 0,
        }
    }

    /// Brings one file's index up to its current length; `true`: it was
    /// read anew (new, replaced or shrunk), nothing of before holds.
    fn catch_up(&mut self, path: &Path) -> crate::Result<bool> {
        let md = std::fs::metadata(path).map_err(|e| crate::Error::io(path, e))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // A compressed rollout is read whole: no appends to one.
        if home::is_zst(path) {
            let rollout = Rollout::read(path, &name)?;
            self.kept.retain(|(p, _)| p != path);
            self.kept.push((
                path.to_path_buf(),
                Kept {
                    ino: md.ino(),
                    rollout,
                    feeder: Feeder::default(),
                },
            ));
            return Ok(true);
        }
        let at = self.kept.iter().position(|(p, _)| p == path);
        let reuse = at.is_some_and(|i| {
            let k = &self.kept[i].1;
            k.ino == md.ino() && md.len() >= k.rollout.bytes + k.feeder_pending()
        });
        let (mut kept, anew) = match (at, reuse) {
            (Some(i), true) => (self.kept.swap_remove(i).1, false),
            (Some(i), false) => {
                self.kept.swap_remove(i);
                (fresh(path, &name, md.ino()), true)
            }
            (None, _) => (fresh(path, &name, md.ino()), true),
        };
        let read = read_on(path, &mut kept);
        self.kept.push((path.to_path_buf(), kept));
        read.map(|()| anew)
    }

    /// The current world line grown by what its file added, when that is
    /// all that changed; `None`: build the thread whole.
    fn grow(&mut self) -> Option<Refresh> {
        let g = self.grow.as_mut()?;
        let (parts, _) = self.latest.as_mut()?;
        let kept = &self.kept.iter().find(|(p, _)| *p == g.file)?.1;
        let r = &kept.rollout;
        if r.entries.len() < g.entries
            || r.warnings.len() != g.warnings
            || r.dropped_warnings != g.dropped
            || !records::fits(r.bytes)
        {
            return None;
        }
        let new = &r.entries[g.entries..];
        let plain = |e: &super::rollout::Entry| match e.kind {
            Kind::Meta | Kind::Spawned => false,
            _ => e.turns() == 0,
        };
        if !new.iter().all(plain) {
            return None;
        }
        let agent = parts.agents.first_mut()?;
        let bytes_before = agent.files.get(g.line)?.bytes;
        if new.is_empty() && bytes_before == r.bytes {
            return Some(Refresh::default());
        }
        for &l in &g.same_file {
            if let Some(f) = agent.files.get_mut(l) {
                f.bytes = r.bytes;
            }
        }
        let root = g.line == 0;
        let file = agent.files.get_mut(g.line)?;
        let times = agent.times.get_mut(g.line)?;
        let info = agent.lines.get_mut(g.line)?;
        if g.shares {
            file.records = r.records.clone();
        }
        for (k, e) in new.iter().enumerate() {
            let k = g.entries + k;
            let at = g.shared + k - g.own_start;
            if !g.shares {
                file.records
                    .push(records::turned(r.records.get(k)?, g.base));
            }
            if at >= g.shared {
                times.set(at, e.time());
            }
            match e.kind {
                Kind::Compacted => agent.compactions.push(LineMark {
                    world_line: g.line,
                    at: Pos::entry(r.records.get(k)?.line(), e.ordinal.to_string()),
                    count: None,
                    first_kept: None,
                }),
                Kind::Prompt if !root && info.prompt.is_none() => {
                    info.prompt = r.prompt(e).map(str::to_string);
                }
                _ => {}
            }
        }
        if let Some(e) = new.last() {
            info.leaf = Some(e.ordinal.to_string());
        }
        // The title is the first prompt of the first file.
        if parts.title.is_none() && g.first {
            parts.title = r.first_prompt().map(str::to_string);
        }
        g.entries = r.entries.len();
        self.grown += 1;
        Some(Refresh {
            changed: true,
            deleted: false,
        })
    }

    /// Builds the thread whole from the kept indexes (read on first).
    fn whole(&mut self, errors: &mut Vec<String>) -> Refresh {
        self.grow = None;
        let mut live: Vec<PathBuf> = Vec::new();
        for p in generations_of(&self.first) {
            match self.catch_up(&p) {
                Ok(_) => live.push(p),
                Err(e) if live.is_empty() => {
                    errors.push(e.to_string());
                    return Refresh::default();
                }
                Err(_) => break,
            }
        }
        // Files no longer part of the thread are forgotten; the kept ones
        // stay in thread order.
        self.kept.retain(|(p, _)| live.contains(p));
        self.kept
            .sort_by_key(|(p, _)| live.iter().position(|q| q == p));
        // The kept indexes are lent to the build, not cloned (a clone is
        // O(thread) per append), and taken back after.
        let gens: Vec<Rollout> = self
            .kept
            .iter_mut()
            .map(|(_, k)| std::mem::take(&mut k.rollout))
            .collect();
        let main = parts::ThreadRead::from_gens(&self.first, gens);
        let made = parts::assemble(&self.first, &main);
        self.grow = grow_state(&main, &live);
        for ((_, k), r) in self.kept.iter_mut().zip(main.gens) {
            k.rollout = r;
        }
        self.latest = Some((made, true));
        Refresh {
            changed: true,
            deleted: false,
        }
    }
}

/// Reads `path` on from where `kept` stopped.
fn read_on(path: &Path, kept: &mut Kept) -> crate::Result<()> {
    let g = crate::read::guard::open_regular(path)
        .map_err(|e| crate::Error::Other(format!("{}: {e}", path.display())))?;
    let mut file = g.file;
    let from = kept.rollout.bytes + kept.feeder_pending();
    if g.len > from {
        file.seek(SeekFrom::Start(from))
            .map_err(|e| crate::Error::io(path, e))?;
        let mut buf = vec![0u8; (g.len - from).min(1 << 20) as usize];
        let mut left = g.len - from;
        while left > 0 {
            let want = buf.len().min(left as usize);
            let n = file
                .read(&mut buf[..want])
                .map_err(|e| crate::Error::io(path, e))?;
            if n == 0 {
                break;
            }
            kept.feeder.feed(&mut kept.rollout, &buf[..n]);
            left -= n as u64;
        }
    }
    Ok(())
}

/// How the thread just built can grow: at its last generation's file,
/// which holds the current world line's own records, when every file is
/// shown and that one is no compressed one.
fn grow_state(main: &parts::ThreadRead, live: &[PathBuf]) -> Option<Grow> {
    let t = &main.thread;
    let last = main.gens.len().checked_sub(1)?;
    let file = live.get(last)?;
    let r = main.gens.get(last)?;
    let shown_all = main.gens.len() <= records::MAX_GENERATIONS
        && main.gens.iter().all(|g| records::fits(g.bytes));
    let line = t.lines.get(t.current)?;
    if !shown_all || home::is_zst(file) || line.gen != last || t.current + 1 != t.lines.len() {
        return None;
    }
    let base = parts::base_turns(main)[last];
    Some(Grow {
        file: file.clone(),
        entries: r.entries.len(),
        warnings: r.warnings.len(),
        dropped: r.dropped_warnings,
        line: t.current,
        shared: line.shared,
        same_file: (0..t.lines.len())
            .filter(|&l| t.lines[l].gen == last)
            .collect(),
        base,
        shares: line.parent.is_none() && base == 0 && line.own.start == 0,
        own_start: line.own.start,
        first: last == 0,
    })
}

fn fresh(path: &Path, name: &str, ino: u64) -> Kept {
    Kept {
        ino,
        rollout: Rollout::new(path, name),
        feeder: Feeder::default(),
    }
}

impl Kept {
    /// Bytes of a line read but not complete yet (held by the feeder).
    fn feeder_pending(&self) -> u64 {
        self.feeder.pending_len() as u64
    }
}

impl Follower for CodexFollower {
    fn refresh(&mut self, _now: Instant, errors: &mut Vec<String>) -> Refresh {
        if !self.first.exists() {
            return Refresh::deleted();
        }
        let paths =
            <super::Codex as crate::sources::Source>::live_paths(&super::Codex, &self.first);
        let (stamps, dirs) = stamps_of(paths, 0);
        self.dirs = dirs;
        if stamps == self.stamps && self.latest.is_some() {
            return Refresh::default();
        }
        // Only the growing file changed: nothing beside it needs reading.
        let growing = self.grow.as_ref().map(|g| g.file.clone());
        let others_same = self.latest.is_some()
            && growing.as_ref().is_some_and(|f| {
                stamps
                    .iter()
                    .filter(|s| s.0 != *f)
                    .eq(self.stamps.iter().filter(|s| s.0 != *f))
                    && stamps.iter().any(|s| s.0 == *f)
            });
        self.stamps = stamps;
        if let (true, Some(f)) = (others_same, growing) {
            if let Ok(false) = self.catch_up(&f) {
                if let Some(r) = self.grow() {
                    return r;
                }
            }
        }
        self.whole(errors)
    }

    fn parts(&mut self) -> Option<(SessionParts, bool)> {
        let (p, fresh) = self.latest.as_mut()?;
        let out = (p.clone(), *fresh);
        // Until built whole again, the next parts continue these.
        *fresh = false;
        Some(out)
    }

    fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::test_util::{copy_dir, follow_in_pieces};
    use crate::sources::{Reading, Source};
    use crate::worldline::Session;

    /// Writes each of `files` (the thread's files in order, first file
    /// `files[0]`) in random pieces (lines cut anywhere); after each, the
    /// follower's snapshot (built from the last one) is the thread read
    /// whole. Returns (snapshots compared, grown).
    fn follow(files: &[(PathBuf, Vec<u8>)], seed: u64, max: usize) -> (usize, usize) {
        let first = &files[0].0;
        let mut f = CodexFollower::new(first);
        let whole = || {
            Session::build(
                super::super::Codex
                    .parts(first, Reading::default())
                    .unwrap(),
            )
        };
        let files: Vec<(&Path, &[u8])> = files
            .iter()
            .map(|(p, b)| (p.as_path(), b.as_slice()))
            .collect();
        // A whole read takes a last line without its newline when it
        // parses; the follower waits for the newline.
        let not_before_newline = |bytes: &[u8], at: usize| bytes.get(at) != Some(&b'\n');
        let n = follow_in_pieces(&mut f, &files, seed, max, &whole, &not_before_newline);
        (n, f.grown)
    }

    #[test]
    fn every_fixture_thread_followed_in_pieces_reads_as_whole() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex");
        let (mut grown, mut threads) = (0, 0);
        for fixture in std::fs::read_dir(&root).unwrap().flatten() {
            let home = fixture.path().join("home");
            let day = home.join(".codex/sessions/2026/12/04");
            let Ok(dir) = std::fs::read_dir(&day) else {
                continue;
            };
            let firsts: Vec<PathBuf> = dir
                .flatten()
                .map(|e| e.path())
                .filter(|p| home::parse_name(p).is_some_and(|n| n.generation.is_none()))
                .collect();
            for first in firsts {
                threads += 1;
                for seed in [3, 11] {
                    let tmp = tempfile::tempdir().unwrap();
                    copy_dir(&home, tmp.path(), None);
                    let to = tmp.path().join(".codex/sessions/2026/12/04");
                    let files: Vec<(PathBuf, Vec<u8>)> = generations_of(&first)
                        .into_iter()
                        .map(|p| {
                            let dst = to.join(p.file_name().unwrap());
                            std::fs::remove_file(&dst).unwrap();
                            (dst, std::fs::read(&p).unwrap())
                        })
                        .collect();
                    let (n, g) = follow(&files, seed, 3000);
                    assert!(n > 5, "{}: {n} snapshots", first.display());
                    grown += g;
                }
            }
        }
        assert!(threads >= 8, "{threads} threads");
        // Most appends grew the current line in place.
        assert!(grown > 100, "grown {grown}");
    }

    fn line(ord: u64, ty: &str, payload: &str) -> String {
        format!(
            "{{\"timestamp\":\"2026-12-04T12:00:{:02}.{:03}Z\",\"ordinal\":{ord},\"type\":\"{ty}\",\"payload\":{payload}}}\n",
            (ord / 7) % 60,
            ord % 1000
        )
    }

    fn turn(ord: &mut u64, k: u64) -> String {
        let mut s = String::new();
        let mut add = |ty: &str, payload: String| {
            s += &line(*ord, ty, &payload);
            *ord += 1;
        };
        add("event_msg", r#"{"type":"task_started"}"#.into());
        add("turn_context", r#"{"cwd":"/p","model":"m"}"#.into());
        add(
            "response_item",
            format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"turn {k}"}}]}}"#
            ),
        );
        add(
            "response_item",
            format!(
                r#"{{"type":"function_call","name":"exec_command","arguments":"{{}}","call_id":"c{k}"}}"#
            ),
        );
        add(
            "response_item",
            format!(r#"{{"type":"function_call_output","call_id":"c{k}","output":"ok"}}"#),
        );
        add(
            "event_msg",
            format!(
                r#"{{"type":"token_count","info":{{"total_token_usage":{{"total_tokens":{k}}}}}}}"#
            ),
        );
        add("response_item", r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}"#.into());
        add("event_msg", r#"{"type":"task_complete"}"#.into());
        s
    }

    const ID: &str = "01b00000-0000-7000-8000-0000000000aa";

    /// A thread of turns with a compaction, legacy rollbacks, bad lines
    /// (not JSON, an ordinal gap, an unknown type, a second session_meta)
    /// and a revert generation with a compaction and a rollback of its own.
    fn generated() -> (String, String) {
        let mut a = line(0, "session_meta", &format!(r#"{{"id":"{ID}","cwd":"/p"}}"#));
        let mut o = 1;
        for k in 0..40 {
            a += &turn(&mut o, k);
            match k {
                10 => {
                    a += &line(o, "compacted", r#"{"message":"summary"}"#);
                    o += 1;
                }
                15 | 30 => {
                    a += &line(
                        o,
                        "event_msg",
                        r#"{"type":"thread_rolled_back","num_turns":2}"#,
                    );
                    o += 1;
                }
                20 => {
                    a += "not json\n";
                    a += &line(o + 5, "brand_new", "{}");
                    o += 6;
                }
                25 => {
                    a += &line(o, "session_meta", r#"{"id":"other"}"#);
                    a += &line(
                        o + 1,
                        "event_msg",
                        r#"{"type":"thread_rolled_back","num_turns":0}"#,
                    );
                    o += 2;
                }
                _ => {}
            }
        }
        let half = 100;
        let mut b = line(
            half,
            "session_meta",
            &format!(
                r#"{{"id":"{ID}","history_base":{{"thread_id":"{ID}","end_ordinal_exclusive":{half}}}}}"#
            ),
        );
        let mut o = half + 1;
        for k in 100..130 {
            b += &turn(&mut o, k);
            if k == 110 {
                b += &line(o, "compacted", r#"{"message":"again"}"#);
                o += 1;
            }
            if k == 120 {
                b += &line(
                    o,
                    "event_msg",
                    r#"{"type":"thread_rolled_back","num_turns":1}"#,
                );
                o += 1;
            }
        }
        (a, b)
    }

    #[test]
    fn a_thread_with_rollbacks_generations_and_bad_lines_followed_in_pieces_reads_as_whole() {
        let (a, b) = generated();
        for (seed, max) in [(1, 300), (5, 900), (9, 4000)] {
            let tmp = tempfile::tempdir().unwrap();
            let day = tmp.path().join(".codex/sessions/2026/12/04");
            std::fs::create_dir_all(&day).unwrap();
            let files = vec![
                (
                    day.join(format!("rollout-2026-12-04T12-00-00-{ID}.jsonl")),
                    a.clone().into_bytes(),
                ),
                (
                    day.join(format!(
                        "rollout-2026-12-04T12-00-01-{ID}_01b00000-0000-7000-8000-0000000000bb.jsonl"
                    )),
                    b.clone().into_bytes(),
                ),
            ];
            let (n, grown) = follow(&files, seed, max);
            let s = Session::build(
                super::super::Codex
                    .parts(&files[0].0, Reading::default())
                    .unwrap(),
            );
            // 3 legacy rollbacks (one of 0 turns), a generation, and the
            // bad lines' warnings.
            assert_eq!(s.agents[0].family.lines.len(), 5);
            assert!(s.warnings.len() >= 3, "{:?}", s.warnings);
            assert!(
                n > 10 && grown > n / 2,
                "seed {seed}: {n} snapshots, {grown} grown"
            );
        }
    }
}
