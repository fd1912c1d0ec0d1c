//! Following a Claude Code session live at the cost of what was appended.
//! The main file is read on from where it was left ([`Kept`]), its tree
//! grown at the current world line ([`Growth`]; built whole again after a
//! rewind, a compaction or a rewritten file), and only the world line that
//! changed gets new records, pushed onto the storage the last snapshot
//! holds, so `Session::build_from` continues that snapshot. Subagents and
//! lineage (the files beside it) are read again only when those files
//! change or an appended entry names a subagent.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::cache::{Caught, Kept};
use super::grow::Growth;
use super::parts::{self, Read};
use super::records;
use super::tree::{self, Rec, Tree};
use crate::read::FileIndex;
use crate::sources::follow::{stamps_of, Follower, Refresh, Stamp};
use crate::sources::{SessionParts, Source, Times};

/// The main file as followed.
struct Main {
    kept: Kept,
    tree: Tree,
    growth: Growth,
    /// Per world line: its records and times as last handed out.
    files: Vec<FileIndex>,
    times: Vec<Times>,
}

pub struct ClaudeFollower {
    path: PathBuf,
    stamps: Vec<Stamp>,
    dirs: Vec<PathBuf>,
    main: Option<Main>,
    /// The parts last made (the main agent's times left out: they are
    /// [`Main::times`]), and whether they were made afresh.
    latest: Option<(SessionParts, bool)>,
    /// Refreshes that grew the tree rather than building it whole.
    pub grown: usize,
}

impl ClaudeFollower {
    pub fn new(path: &Path) -> ClaudeFollower {
        ClaudeFollower {
            path: path.to_path_buf(),
            stamps: Vec::new(),
            dirs: Vec::new(),
            main: None,
            latest: None,
            grown: 0,
        }
    }

    /// Reads the main file on; `Some(fresh)`: what changed in it is in
    /// `self.main` (`fresh`: read anew, nothing of before holds).
    fn catch_up(&mut self) -> crate::Result<bool> {
        let name = parts::main_name(&self.path);
        let Some(mut m) = self.main.take() else {
            let kept = Kept::read(&self.path, &name)?;
            self.main = Some(whole(kept, None));
            return Ok(true);
        };
        let n0 = m.kept.scan.entries.len();
        if m.kept.catch_up()? == Caught::Anew {
            self.main = Some(whole(m.kept, None));
            return Ok(true);
        }
        if m.kept.scan.entries.len() == n0 {
            self.main = Some(m);
            return Ok(false);
        }
        let scan = &m.kept.scan;
        match m.growth.grow(&mut m.tree, &scan.entries, &scan.extras) {
            Some(k) => {
                let c = m.tree.current.unwrap_or_default();
                regrow_line(&mut m, c, k);
                self.main = Some(m);
                self.grown += 1;
            }
            None => {
                let old = (std::mem::take(&mut m.tree), m.files, m.times);
                self.main = Some(whole(m.kept, Some(old)));
            }
        }
        Ok(false)
    }
}

/// The main file's tree built whole, each world line's records reusing
/// `old`'s storage where they only grew.
fn whole(kept: Kept, old: Option<(Tree, Vec<FileIndex>, Vec<Times>)>) -> Main {
    let scan = &kept.scan;
    let tree = tree::build(&scan.entries, &scan.extras);
    let growth = Growth::new(&scan.entries);
    let mut files: Vec<FileIndex> = Vec::with_capacity(tree.lines.len());
    let mut times = Vec::with_capacity(tree.lines.len());
    for (i, l) in tree.lines.iter().enumerate() {
        let kept_line = old.as_ref().and_then(|(t, f, w)| {
            let was = t.lines.get(i)?;
            let same = was.start == l.start
                && was.parent == l.parent
                && was.shared == l.shared
                && l.records.starts_with(&was.records);
            if !same {
                return None;
            }
            Some((f.get(i)?, w.get(i)?, was.records.len()))
        });
        let (file, when) = match kept_line {
            Some((f, w, from)) => extend(scan, f, w, &l.records, from),
            None => {
                let base = l.parent.and_then(|p| files.get(p)).map(|f| &f.records);
                records::line_index(scan, l, base, true)
            }
        };
        files.push(file);
        times.push(when);
    }
    Main {
        kept,
        tree,
        growth,
        files,
        times,
    }
}

/// A line's index and times as handed out, with `more` records after
/// (the line's records from `from` on).
fn extend(
    scan: &super::scan::Scan,
    file: &FileIndex,
    when: &Times,
    recs: &[Rec],
    from: usize,
) -> (FileIndex, Times) {
    let mut f = file.clone();
    f.bytes = scan.bytes;
    let mut w = when.clone();
    for (i, &r) in recs.iter().enumerate().skip(from) {
        f.records.push(records::record_meta(scan, r));
        w.set(i, records::time_of(scan, r));
    }
    (f, w)
}

/// World line `c` changed from its record `k` on: its records before `k`
/// keep their storage; those that are the same after it too.
fn regrow_line(m: &mut Main, c: usize, k: usize) {
    let scan = &m.kept.scan;
    let recs = &m.tree.lines[c].records;
    let Some(file) = m.files.get(c) else {
        return;
    };
    let old = file.records.len();
    // Records before `k` are as they were; those from `k` to the old end
    // too, when the line only grew (checked against what was handed out).
    let same = (k..old.min(recs.len())).all(|i| {
        let meta = records::record_meta(scan, recs[i]);
        file.records.get(i) == Some(&meta)
    });
    let from = if same && recs.len() >= old { old } else { k };
    let mut f = file.clone();
    f.records = file.records.prefix(from);
    f.bytes = scan.bytes;
    let w = &mut m.times[c];
    w.truncate(from);
    for (i, &r) in recs.iter().enumerate().skip(from) {
        f.records.push(records::record_meta(scan, r));
        w.set(i, records::time_of(scan, r));
    }
    m.files[c] = f;
}

impl Follower for ClaudeFollower {
    fn refresh(&mut self, _now: Instant, errors: &mut Vec<String>) -> Refresh {
        if !self.path.exists() {
            return Refresh::deleted();
        }
        let (stamps, dirs) = stamps_of(super::ClaudeCode.live_paths(&self.path), 0);
        self.dirs = dirs;
        if stamps == self.stamps && self.latest.is_some() {
            return Refresh::default();
        }
        // Only the main file changed: the files beside it need no reading.
        let others_same = self.latest.is_some()
            && stamps
                .iter()
                .filter(|s| s.0 != self.path)
                .eq(self.stamps.iter().filter(|s| s.0 != self.path));
        self.stamps = stamps;
        let n0 = self.main.as_ref().map_or(0, |m| m.kept.scan.entries.len());
        let fresh = match self.catch_up() {
            Ok(f) => f,
            Err(e) => {
                errors.push(e.to_string());
                return Refresh::default();
            }
        };
        let Some(m) = self.main.as_mut() else {
            return Refresh::default();
        };
        // Every line's index says how much of the file was read.
        for f in &mut m.files {
            f.bytes = m.kept.scan.bytes;
        }
        let read = Read {
            scan: m.kept.scan.clone(),
            tree: std::mem::take(&mut m.tree),
        };
        // Times are put in when the parts are handed out.
        let first = parts::line_parts(&read, &self.path, m.files.clone(), Vec::new());
        // Appended entries that name a subagent (its result, or a call a
        // subagent waits for) change how subagents hang: read them again.
        let waiting = self
            .latest
            .as_ref()
            .is_some_and(|(p, _)| p.agents.iter().skip(1).any(|a| a.parent_line.is_none()));
        let names_agent = read.scan.entries[n0.min(read.scan.entries.len())..]
            .iter()
            .any(|e| (waiting && e.calls) || read.scan.agent(e).is_some());
        let reuse = match (&self.latest, others_same && !fresh && !names_agent) {
            (Some((prev, _)), true) => Some(prev),
            _ => None,
        };
        let made = match reuse {
            Some(prev) => {
                let mut p = prev.clone();
                p.title = read.title();
                p.agents[0] = first;
                Ok(p)
            }
            None => parts::assemble(&self.path, &read, first, true, Read::cached),
        };
        m.tree = read.tree;
        crate::sources::follow::refreshed(&mut self.latest, made.map(|p| (p, fresh)), errors)
    }

    fn parts(&mut self) -> Option<(SessionParts, bool)> {
        let (mut p, fresh) = self.latest.clone()?;
        if let (Some(a), Some(m)) = (p.agents.first_mut(), &self.main) {
            a.times = m.times.clone();
        }
        Some((p, fresh))
    }

    fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::test_util::{copy_dir, follow_in_pieces};
    use crate::sources::Reading;
    use crate::worldline::Session;

    /// Writes `bytes` to `path` in random pieces (lines cut anywhere);
    /// after each, the follower's snapshot (built from the last one) is
    /// the session read whole from the file. Returns (snapshots, grown).
    fn follow(path: &Path, bytes: &[u8], seed: u64, max: usize) -> (usize, usize) {
        let mut f = ClaudeFollower::new(path);
        let whole = || {
            Session::build(
                super::super::ClaudeCode
                    .parts(path, Reading::default())
                    .unwrap(),
            )
        };
        let n = follow_in_pieces(&mut f, &[(path, bytes)], seed, max, &whole, &|_, _| true);
        (n, f.grown)
    }

    #[test]
    fn every_fixture_followed_in_pieces_reads_as_whole() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude-code");
        let mut grown = 0;
        for fixture in std::fs::read_dir(&root).unwrap().flatten() {
            let projects = fixture.path().join("home/.claude/projects");
            let Ok(dirs) = std::fs::read_dir(&projects) else {
                continue;
            };
            for project in dirs.flatten() {
                let sessions = std::fs::read_dir(project.path()).unwrap().flatten();
                for main in sessions.map(|e| e.path()) {
                    if main.extension().is_none_or(|x| x != "jsonl") {
                        continue;
                    }
                    for seed in [3, 11] {
                        let tmp = tempfile::tempdir().unwrap();
                        let dst = tmp.path().join("-p");
                        copy_dir(&project.path(), &dst, Some(&main));
                        let bytes = std::fs::read(&main).unwrap();
                        let path = dst.join(main.file_name().unwrap());
                        let (n, g) = follow(&path, &bytes, seed, 3000);
                        assert!(n > 5, "{}: {n} snapshots", main.display());
                        grown += g;
                    }
                }
            }
        }
        // Most appends grew the tree in place.
        assert!(grown > 100, "grown {grown}");
    }

    fn uuid(n: u32) -> String {
        super::super::scan::uuid_text(u128::from(n) << 64 | 0xabc)
    }

    /// A session of turns with parallel calls answered out of order, a
    /// rewind (into the past and into the turn being written), a
    /// compaction, a duplicate uuid and a bad line.
    fn session() -> String {
        let mut out = String::new();
        let mut id = 0u32;
        let mut line = |parent: Option<u32>, body: &str, id: &mut u32| -> u32 {
            *id += 1;
            let p = parent.map_or("null".into(), |p| format!("\"{}\"", uuid(p)));
            out.push_str(&format!(
                "{{\"parentUuid\":{p},{body},\"uuid\":\"{}\",\"timestamp\":\"2026-12-04T10:00:{:02}.000Z\"}}\n",
                uuid(*id),
                *id % 60
            ));
            *id
        };
        let mut at = None;
        let mut ends = Vec::new();
        for t in 0..30u32 {
            if t == 12 {
                // Rewound two turns back.
                at = Some(ends[ends.len() - 3]);
            }
            if t == 20 {
                let tail = uuid(at.unwrap());
                let b = line(None, &format!("\"type\":\"system\",\"subtype\":\"compact_boundary\",\"logicalParentUuid\":\"{tail}\",\"compactMetadata\":{{\"preservedSegment\":{{\"tailUuid\":\"{tail}\"}}}}"), &mut id);
                at = Some(line(Some(b), "\"type\":\"user\",\"isCompactSummary\":true,\"message\":{\"content\":\"summary\"}", &mut id));
            }
            let p = line(
                at,
                &format!(
                    "\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"T{t}\"}}"
                ),
                &mut id,
            );
            let mut a = line(
                Some(p),
                "\"type\":\"attachment\",\"attachment\":{\"type\":\"date\"}",
                &mut id,
            );
            for r in 0..(1 + t % 3) {
                let msg = format!("m{t}_{r}");
                a = line(Some(a), &format!("\"type\":\"assistant\",\"message\":{{\"id\":\"{msg}\",\"content\":[{{\"type\":\"text\",\"text\":\"hi\"}}]}}"), &mut id);
                let mut calls = Vec::new();
                for c in 0..(1 + (t + r) % 3) {
                    a = line(Some(a), &format!("\"type\":\"assistant\",\"message\":{{\"id\":\"{msg}\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"tu{t}_{r}_{c}\",\"name\":\"Bash\",\"input\":{{}}}}]}}"), &mut id);
                    calls.push((a, c));
                }
                for &(u, c) in calls.iter().rev() {
                    a = line(Some(u), &format!("\"type\":\"user\",\"message\":{{\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"tu{t}_{r}_{c}\",\"content\":\"ok\"}}]}}"), &mut id);
                }
            }
            if t == 25 {
                // Rewound inside the turn: back to its prompt.
                a = line(
                    Some(p),
                    "\"type\":\"user\",\"message\":{\"content\":\"again\"}",
                    &mut id,
                );
            }
            let end = line(
                Some(a),
                "\"type\":\"system\",\"subtype\":\"turn_duration\"",
                &mut id,
            );
            ends.push(end);
            at = Some(end);
        }
        out
    }

    #[test]
    fn a_session_with_rewinds_and_parallel_calls_followed_in_pieces_reads_as_whole() {
        let mut text = session();
        // A bookkeeping line, a bad line and a duplicate uuid in the middle.
        let mid = text.len() / 2;
        let cut = mid + text[mid..].find('\n').unwrap() + 1;
        let dup = text[..cut].lines().nth(5).unwrap().to_string();
        text.insert_str(
            cut,
            &format!("{{\"type\":\"last-prompt\",\"leafUuid\":\"x\"}}\nnot json\n{dup}\n"),
        );
        for (seed, max) in [(1, 300), (5, 900), (9, 4000)] {
            let tmp = tempfile::tempdir().unwrap();
            let path = tmp.path().join("s.jsonl");
            let (n, grown) = follow(&path, text.as_bytes(), seed, max);
            assert!(
                n > 10 && grown > n / 2,
                "seed {seed}: {n} snapshots, {grown} grown"
            );
        }
    }
}
