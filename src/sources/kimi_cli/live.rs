//! What the follower keeps between batches: one `Tail` per context file,
//! a wire tail and meta per agent. A refresh lists the directories (cheap),
//! matches files to tails by inode so a rotation moves a tail instead of
//! re-reading it, and reads only new bytes. Which files form the session,
//! their order and its subagents are `sources::kimi_cli`'s rules; sessions
//! forked from this one are looked for when the work-dir folder changes.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::forks::Forks;
use super::layout::{self, AgentSpec, Layout, MetaSource};
use super::wire;
use super::{lineage, meta};
use crate::model::shared_prefix;
use crate::read::{FileId, Follow, Sink, Tail, TailChange};
use crate::sources::follow::Follower;
pub use crate::sources::follow::Refresh;
use crate::sources::{AgentParts, Lineage, SessionParts, SubagentMeta, WireLog};

/// How long a rotation may look unfinished (the new `context.jsonl`
/// missing, or still a copy of the old one's start) before it is shown as
/// it is. `/clear` leaves an empty file until the next turn.
pub const ROTATION_GRACE: Duration = Duration::from_millis(300);

/// Size, mtime and inode: enough to tell that a small file changed.
type Stamp = (u64, Option<SystemTime>, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok(), m.ino()))
}

/// Feeds complete wire lines to a `WireLog`. An unfinished line is held
/// only up to `MAX_WIRE_LINE` bytes, as when the wire is read whole: a
/// 1 GB line being written costs 4 MiB, not 1 GB.
#[derive(Debug, Clone, Default)]
struct WireSink {
    log: WireLog,
    pending: Vec<u8>,
    /// `pending` was cut at the cap.
    cut: bool,
}

impl Sink for WireSink {
    fn push(&mut self, chunk: &[u8]) -> usize {
        let mut n = 0;
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', chunk) {
            if self.pending.is_empty() && !self.cut {
                self.log.push_line(&chunk[start..nl]);
            } else {
                wire::keep(&mut self.pending, &mut self.cut, &chunk[start..nl]);
                let line = std::mem::take(&mut self.pending);
                self.log.push_kept(&line, std::mem::take(&mut self.cut));
            }
            n += 1;
            start = nl + 1;
        }
        wire::keep(&mut self.pending, &mut self.cut, &chunk[start..]);
        n
    }

    fn reset(&mut self) {
        *self = WireSink::default();
    }
}

#[derive(Debug)]
struct ContextTail {
    /// Base name in the agent's directory.
    name: String,
    rotation: Option<u64>,
    tail: Tail,
    /// Found by inode on the last listing: a different file under its name
    /// is a rename in progress, not a replacement.
    by_id: bool,
}

/// One listed context file.
struct Entry {
    name: String,
    rotation: Option<u64>,
    id: FileId,
}

#[derive(Debug)]
struct AgentState {
    spec: AgentSpec,
    dir: PathBuf,
    files: Vec<ContextTail>,
    wire: Option<Follow<WireSink>>,
    wire_exists: bool,
    /// `Some` for subagents: the meta and, when it comes from a file, the
    /// stamp it was read at.
    meta: Option<(Option<Stamp>, SubagentMeta)>,
    /// When `context.jsonl` last appeared, grew, was reset, was renamed
    /// away or went missing: the start of the grace period of an unfinished
    /// rotation. Tracked however the rotation was observed (a rename seen,
    /// or only its outcome), so a race in observing it cannot cause flicker.
    current_activity: Option<Instant>,
    /// `context.jsonl` was absent at the last listing.
    current_missing: bool,
    /// The wire was read again from its start since the last snapshot, so
    /// times joined from the old one cannot be continued.
    wire_reset: bool,
    /// Where its world lines fork, as last handed over.
    forks: Forks,
    /// The wire's times joined to the records, continued from the last
    /// snapshot (forgotten when the wire is read again).
    times: super::times::WireJoin,
}

impl AgentState {
    fn new(spec: AgentSpec) -> AgentState {
        let meta = match &spec.meta {
            MetaSource::Main => None,
            MetaSource::File(p) => Some((stamp(p), meta::subagent_meta(p))),
            MetaSource::Fixed(m) => Some((None, m.clone())),
        };
        AgentState {
            wire: spec
                .wire
                .as_ref()
                .map(|w| Follow::with_sink(w.clone(), WireSink::default())),
            wire_exists: false,
            meta,
            files: Vec::new(),
            dir: spec.dir.clone(),
            spec,
            current_activity: None,
            current_missing: false,
            wire_reset: false,
            forks: Forks::default(),
            times: Default::default(),
        }
    }

    fn shown_name(spec: &AgentSpec, name: &str) -> String {
        format!("{}{name}", spec.prefix)
    }

    fn list(&self) -> std::io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(&self.dir)?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(rotation) = layout::rotation_of(&name, &self.spec.stem) else {
                continue;
            };
            let Ok(m) = e.metadata() else { continue };
            if m.is_file() {
                out.push(Entry {
                    name,
                    rotation,
                    id: (m.dev(), m.ino()),
                });
            }
        }
        Ok(out)
    }

    /// Lists, matches and reads. `Err` only when the directory is unreadable.
    fn refresh(&mut self, now: Instant, errors: &mut Vec<String>) -> std::io::Result<bool> {
        let mut changed = false;
        // A rename racing the read shows up as `Replaced`: list again.
        for _attempt in 0..4 {
            let listing = self.list()?;
            changed |= self.reconcile(&listing, now);
            match self.read_all(now, errors) {
                Some(c) => {
                    changed |= c;
                    break;
                }
                None => changed = true,
            }
        }
        changed |= self.refresh_side_files(errors);
        Ok(changed)
    }

    /// Matches listed files to tails: by inode first (a rename keeps the
    /// tail and its records), then by name (a replaced file is re-read).
    fn reconcile(&mut self, listing: &[Entry], now: Instant) -> bool {
        let mut changed = false;
        let mut claimed = vec![false; listing.len()];
        let mut matched = vec![false; self.files.len()];
        for (t, ct) in self.files.iter_mut().enumerate() {
            let Some(id) = ct.tail.file_id() else {
                continue;
            };
            let Some(k) = (0..listing.len()).find(|&k| !claimed[k] && listing[k].id == id) else {
                continue;
            };
            claimed[k] = true;
            matched[t] = true;
            ct.by_id = true;
            if listing[k].name != ct.name {
                if ct.rotation.is_none() {
                    self.current_activity = Some(now);
                }
                ct.name = listing[k].name.clone();
                ct.rotation = listing[k].rotation;
                let shown = Self::shown_name(&self.spec, &ct.name);
                ct.tail.rename(self.dir.join(&ct.name), shown);
                changed = true;
            }
        }
        for (t, ct) in self.files.iter_mut().enumerate() {
            if matched[t] {
                continue;
            }
            ct.by_id = false;
            if let Some(k) = (0..listing.len()).find(|&k| !claimed[k] && listing[k].name == ct.name)
            {
                claimed[k] = true;
                matched[t] = true;
            }
        }
        let before = self.files.len();
        let mut t = 0;
        self.files.retain(|_| {
            t += 1;
            matched[t - 1]
        });
        changed |= self.files.len() != before;
        for (k, e) in listing.iter().enumerate() {
            if !claimed[k] {
                let shown = Self::shown_name(&self.spec, &e.name);
                self.files.push(ContextTail {
                    name: e.name.clone(),
                    rotation: e.rotation,
                    tail: Tail::new(self.dir.join(&e.name), shown),
                    by_id: false,
                });
                if e.rotation.is_none() {
                    self.current_activity = Some(now);
                }
                changed = true;
            }
        }
        self.files.sort_by_key(|f| layout::family_order(f.rotation));
        let missing = !self.files.iter().any(|f| f.rotation.is_none());
        if missing && !self.current_missing {
            self.current_activity = Some(now);
        }
        self.current_missing = missing;
        changed
    }

    /// Reads new bytes of every file. `None`: a file was replaced under its
    /// name while we looked, list again.
    fn read_all(&mut self, now: Instant, errors: &mut Vec<String>) -> Option<bool> {
        let mut changed = false;
        for ct in &mut self.files {
            let res = if ct.by_id {
                ct.tail.poll_same_file()
            } else {
                ct.tail.poll()
            };
            match res {
                Ok(TailChange::Unchanged) | Ok(TailChange::Missing) => {}
                Ok(TailChange::Replaced) => return None,
                Ok(TailChange::Appended(_)) | Ok(TailChange::Reset) => {
                    changed = true;
                    if ct.rotation.is_none() {
                        self.current_activity = Some(now);
                    }
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        Some(changed)
    }

    fn refresh_side_files(&mut self, errors: &mut Vec<String>) -> bool {
        let mut changed = false;
        if let (Some(wire), Some(path)) = (&mut self.wire, &self.spec.wire) {
            let exists = path.is_file();
            if exists != self.wire_exists {
                self.wire_exists = exists;
                changed = true;
            }
            if exists {
                match wire.poll() {
                    Ok(TailChange::Appended(_)) => changed = true,
                    Ok(TailChange::Reset) => {
                        self.wire_reset = true;
                        changed = true;
                    }
                    Ok(_) => {}
                    Err(e) => errors.push(e.to_string()),
                }
            }
        }
        if let (Some((old, meta)), Some(path)) = (&mut self.meta, self.spec.meta_file()) {
            let now = stamp(path);
            if now != *old {
                *old = now;
                *meta = meta::subagent_meta(path);
                changed = true;
            }
        }
        changed
    }

    /// A rotation still under way: the new `context.jsonl` is missing, or
    /// holds nothing but a copy of the old file's start. Shown anyway once
    /// it stopped changing for `ROTATION_GRACE`.
    fn settling_until(&self, now: Instant) -> Option<Instant> {
        let until = self.current_activity? + ROTATION_GRACE;
        if now >= until {
            return None;
        }
        let current = self.files.iter().find(|f| f.rotation.is_none());
        let predecessor = self
            .files
            .iter()
            .rev()
            .find(|f| f.rotation.is_some() && f.tail.read_to() > 0);
        let unfinished = match (current, predecessor) {
            (None, Some(_)) => true,
            (Some(cur), Some(pred)) => {
                let (c, p) = (&cur.tail.index().records, &pred.tail.index().records);
                c.len() <= p.len() && shared_prefix(p, c) == c.len()
            }
            _ => false,
        };
        unfinished.then_some(until)
    }

    /// The agent's parts; where its world lines fork is continued from the
    /// last call.
    fn agent_parts(&mut self) -> AgentParts {
        let keep = layout::world_line_files(&self.files, |f| f.rotation, |f| f.tail.read_to() == 0);
        let files: Vec<_> = keep
            .into_iter()
            .map(|i| self.files[i].tail.index().clone())
            .collect();
        let (forks, lines) = self.forks.infer(&files);
        if self.wire_reset {
            self.times.reset();
        }
        let times = match self.wire.as_ref().filter(|_| self.wire_exists) {
            Some(w) => self.times.join(&files, &forks, &w.sink().log),
            None => Vec::new(),
        };
        AgentParts {
            dir: self.dir.clone(),
            files,
            forks,
            lines,
            times,
            meta: self.meta.as_ref().map(|(_, m)| m.clone()),
            link: self.spec.link.clone(),
            // Live problems arrive as follower errors instead.
            warnings: Vec::new(),
            ..AgentParts::default()
        }
    }
}

/// The whole session as followed so far.
#[derive(Debug)]
pub struct SessionState {
    layout: Layout,
    main: AgentState,
    subs: BTreeMap<(PathBuf, String), AgentState>,
    title: Option<Stamp>,
    /// `state.json`'s title, read again only when its stamp changes.
    title_text: Option<String>,
    /// Why `state.json` could not be read (a FIFO, a device, too big).
    title_problem: Option<String>,
    /// Directories a native watcher should cover.
    dirs: Vec<PathBuf>,
    siblings: Siblings,
    /// Lineage as last computed; `None` when it must be computed again.
    lineage: Option<Lineage>,
    /// Subagents came or went since the last snapshot: build afresh.
    subs_changed: bool,
}

/// What the work-dir folder looked like. A new session there (kimi-cli's
/// `fork_session` makes the directory, copies the context, then writes
/// `state.json` with the title) means lineage is looked up again, and so
/// does the title arriving in a young sibling. Siblings older than
/// [`YOUNG`] are not stamped: they are not being written by a fork.
#[derive(Debug, Default)]
struct Siblings {
    folder: Option<Stamp>,
    /// Young siblings and their `state.json` stamp, until `YOUNG` passed.
    watched: Vec<(PathBuf, Option<Stamp>, Instant)>,
}

/// How long after it appeared a sibling may still get its title.
const YOUNG: Duration = Duration::from_secs(30);

impl Siblings {
    /// `true` when something lineage depends on changed.
    fn refresh(&mut self, layout: &Layout, now: Instant) -> bool {
        let Layout::Dir { dir } = layout else {
            return false;
        };
        let Some(folder) = dir.parent() else {
            return false;
        };
        let stamp_now = stamp(folder);
        let mut changed = false;
        if stamp_now != self.folder {
            self.folder = stamp_now;
            changed = true;
            let young = |p: &Path| {
                std::fs::metadata(p)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| SystemTime::now().duration_since(t).ok())
                    .is_none_or(|age| age < YOUNG)
            };
            let known: Vec<PathBuf> = self.watched.iter().map(|w| w.0.clone()).collect();
            let fresh: Vec<PathBuf> = std::fs::read_dir(folder)
                .map(|r| {
                    r.flatten()
                        .map(|e| e.path())
                        .filter(|p| p != dir && p.is_dir() && !known.contains(p) && young(p))
                        .collect()
                })
                .unwrap_or_default();
            self.watched
                .extend(fresh.into_iter().map(|p| (p, None, now)));
        }
        self.watched.retain(|w| now.duration_since(w.2) < YOUNG);
        for (p, old, _) in &mut self.watched {
            let s = stamp(&p.join(layout::STATE));
            if s != *old {
                *old = s;
                changed = true;
            }
        }
        changed
    }
}

impl SessionState {
    pub fn new(path: &Path) -> SessionState {
        let layout = Layout::of(path);
        SessionState {
            main: AgentState::new(layout.main()),
            subs: BTreeMap::new(),
            title: None,
            title_text: None,
            title_problem: None,
            dirs: vec![layout.folder().to_path_buf()],
            siblings: Siblings::default(),
            lineage: None,
            subs_changed: false,
            layout,
        }
    }

    /// The session's folder, `subagents/` and each subagent directory, as
    /// far as they exist, and the work-dir folder (for new forks).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    pub fn refresh(&mut self, now: Instant, errors: &mut Vec<String>) -> Refresh {
        let folder = self.layout.folder().to_path_buf();
        let mut changed = match self.main.refresh(now, errors) {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || !folder.is_dir() => {
                return Refresh {
                    changed: false,
                    deleted: true,
                }
            }
            Err(e) => {
                errors.push(format!("{}: {e}", folder.display()));
                false
            }
        };
        let (specs, extra) = layout::subagents(&self.layout);
        let mut dirs = vec![folder];
        dirs.extend(extra);
        let before = self.subs.len();
        self.subs.retain(|k, _| specs.iter().any(|s| s.key() == *k));
        changed |= before != self.subs.len();
        self.subs_changed |= before != self.subs.len();
        for spec in specs {
            let sub = self.subs.entry(spec.key()).or_insert_with(|| {
                // Agents keep their place by directory; a new one moves
                // later ones.
                self.subs_changed = true;
                AgentState::new(spec)
            });
            match sub.refresh(now, errors) {
                Ok(c) => changed |= c,
                // Removed while we looked: the next listing drops it.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => changed = true,
                Err(e) => errors.push(format!("{}: {e}", sub.dir.display())),
            }
        }
        if let Layout::Dir { dir } = &self.layout {
            if let Some(work) = dir.parent() {
                dirs.push(work.to_path_buf());
            }
        }
        self.dirs = dirs;
        let state = self.layout.side_file(layout::STATE);
        let title = state.as_deref().and_then(stamp);
        if title != self.title {
            self.title = title;
            (self.title_text, self.title_problem) =
                state.as_deref().map_or((None, None), meta::title_checked);
            self.lineage = None;
            changed = true;
        }
        if self.siblings.refresh(&self.layout, now) {
            self.lineage = None;
            changed = true;
        }
        // A young sibling may be a fork still being written: watch it until
        // its title is there.
        self.dirs
            .extend(self.siblings.watched.iter().map(|w| w.0.clone()));
        Refresh {
            changed,
            deleted: false,
        }
    }

    /// `Some(t)`: an agent is mid-rotation; don't show it before `t`.
    pub fn settling_until(&self, now: Instant) -> Option<Instant> {
        std::iter::once(&self.main)
            .chain(self.subs.values())
            .filter_map(|a| a.settling_until(now))
            .max()
    }

    /// What a snapshot is built from, and whether it must be built afresh
    /// (a wire was read again, subagents came or went); `None` while the
    /// main agent has no context file yet.
    pub fn parts(&mut self) -> Option<(SessionParts, bool)> {
        let mut main = self.main.agent_parts();
        if let Some(why) = &self.title_problem {
            main.warnings.push(crate::model::Warning {
                file: layout::STATE.to_string(),
                line: 0,
                message: why.clone(),
            });
        }
        if main.files.is_empty() {
            return None;
        }
        let mut subs: Vec<(&AgentSpec, AgentParts)> = self
            .subs
            .values_mut()
            .map(|a| {
                let parts = a.agent_parts();
                let a: &AgentState = a;
                (&a.spec, parts)
            })
            .collect();
        layout::sort_subagents(&mut subs, |(s, a)| {
            (*s, a.meta.as_ref().and_then(|m| m.created_at))
        });
        let lineage = self
            .lineage
            .get_or_insert_with(|| {
                lineage::of(&self.layout, self.title_text.as_deref(), &main.files)
            })
            .clone();
        let parts = SessionParts {
            dir: self.layout.path(),
            id: self.layout.id(),
            title: self.title_text.clone(),
            agents: std::iter::once(main)
                .chain(subs.into_iter().map(|(_, a)| a))
                .collect(),
            lineage,
            tool: crate::sources::Tool::KimiCli,
        };
        let mut fresh = std::mem::take(&mut self.subs_changed);
        for a in std::iter::once(&mut self.main).chain(self.subs.values_mut()) {
            fresh |= std::mem::take(&mut a.wire_reset);
        }
        Some((parts, fresh))
    }
}

impl Follower for SessionState {
    fn refresh(&mut self, now: Instant, errors: &mut Vec<String>) -> Refresh {
        SessionState::refresh(self, now, errors)
    }

    fn settling_until(&self, now: Instant) -> Option<Instant> {
        SessionState::settling_until(self, now)
    }

    fn parts(&mut self) -> Option<(SessionParts, bool)> {
        SessionState::parts(self)
    }

    fn dirs(&self) -> &[PathBuf] {
        SessionState::dirs(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::test_util::append;
    use crate::worldline::Session;

    impl SessionState {
        fn snapshot(&mut self) -> Option<Session> {
            Some(Session::build(SessionState::parts(self)?.0))
        }
    }

    const START: &str = "{\"role\": \"_system_prompt\", \"content\": \"s\"}\n{\"role\": \"_checkpoint\", \"id\": 0}\n{\"role\":\"user\",\"content\":\"a\"}\n{\"role\": \"_checkpoint\", \"id\": 1}\n{\"role\":\"user\",\"content\":\"b\"}\n";

    #[test]
    fn a_rotation_moves_the_tail_and_is_held_until_it_diverges() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let (cur, old) = (dir.join("context.jsonl"), dir.join("context_1.jsonl"));
        append(&cur, START);
        let mut st = SessionState::new(dir);
        let mut errs = Vec::new();
        let t = Instant::now();
        assert!(st.refresh(t, &mut errs).changed);
        let id = st.main.files[0].tail.file_id();
        // Placeholder: not a world line.
        std::fs::File::create(&old).unwrap();
        st.refresh(t, &mut errs);
        assert_eq!(st.settling_until(t), None);
        assert_eq!(st.snapshot().unwrap().main().lines.len(), 1);
        // Renamed: the tail follows the inode, keeps its records; held.
        std::fs::rename(&cur, &old).unwrap();
        st.refresh(t, &mut errs);
        assert_eq!(st.main.files.len(), 1);
        assert_eq!(st.main.files[0].name, "context_1.jsonl");
        assert_eq!(st.main.files[0].tail.file_id(), id);
        assert_eq!(st.main.files[0].tail.index().records.len(), 5);
        assert!(st.settling_until(t).is_some());
        // The prefix copy, up to and including checkpoint 1: still held.
        let prefix: Vec<&str> = START.lines().take(4).collect();
        append(&cur, &(prefix.join("\n") + "\n"));
        st.refresh(t, &mut errs);
        assert!(st.settling_until(t).is_some());
        // ...and shown as it is once the grace period passed.
        assert_eq!(st.settling_until(t + ROTATION_GRACE), None);
        // The first own record: one new world line, forked at checkpoint 1.
        append(&cur, "{\"role\":\"user\",\"content\":\"c\"}\n");
        st.refresh(t, &mut errs);
        assert_eq!(st.settling_until(t), None);
        let s = st.snapshot().unwrap();
        let lines = &s.main().lines;
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].shared, 4);
        assert_eq!(lines[1].file, "context.jsonl");
        assert!(errs.is_empty(), "{errs:?}");
    }

    #[test]
    fn a_rotation_seen_only_by_its_outcome_is_held_too() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let (cur, old) = (dir.join("context.jsonl"), dir.join("context_1.jsonl"));
        append(&cur, START);
        let mut st = SessionState::new(dir);
        let mut errs = Vec::new();
        let t = Instant::now();
        st.refresh(t, &mut errs);
        // The listing sees the placeholder; the rename and the new file
        // happen before the files are read.
        std::fs::File::create(&old).unwrap();
        let listing = st.main.list().unwrap();
        std::fs::rename(&cur, &old).unwrap();
        let prefix: Vec<&str> = START.lines().take(4).collect();
        append(&cur, &(prefix.join("\n") + "\n"));
        st.main.reconcile(&listing, t);
        let _ = st.main.read_all(t, &mut errs);
        st.refresh(t, &mut errs);
        let names: Vec<(&str, usize)> = st
            .main
            .files
            .iter()
            .map(|f| (f.name.as_str(), f.tail.index().records.len()))
            .collect();
        assert_eq!(names, [("context_1.jsonl", 5), ("context.jsonl", 4)]);
        assert!(st.settling_until(t).is_some());
        assert!(errs.is_empty(), "{errs:?}");
    }
}
