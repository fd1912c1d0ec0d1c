//! Indexing one Pi session file (`<time>_<id>.jsonl`): the header on line
//! 1, then one entry per line, each kept as its id, its parent (resolved to
//! an earlier entry, so the tree can have no cycle), its time and what the
//! tree and the rows need, with the byte range its body is loaded from. Fed
//! in chunks, so a live tail reads only new bytes. Lines are numbered as
//! an editor numbers them (blank ones included), for warnings.
//!
//! A session of a million entries is a few big arrays (one per field, ids
//! in one buffer with an open-addressing table), not a million boxes; each
//! line is read by [`super::fast`] and only an unusual one by serde. A big
//! file is read in two halves at once ([`PiFile::read`]).

use crate::read::lines::Piece;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::xxh3_64;

use crate::model::{Marker, RecordMeta, RecordParts, Role, ToolCallHead, Warning};
use crate::read::keep_warning;

use super::fields::{serde_fields, Fields, MsgFields};
use super::ids::Ids;
use super::metas::Metas;

/// A line longer than this is counted and warned about, not kept.
pub const LINE_CAP: usize = 256 << 20;

/// No entry: a root's parent, an empty slot.
pub const NONE: u32 = u32::MAX;

/// The session header (line 1).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Header {
    pub id: Option<String>,
    /// Missing means 1, as Pi reads it.
    pub version: u64,
    pub cwd: Option<String>,
    /// `/fork` and `/clone`: the absolute path of the source file.
    pub parent_session: Option<String>,
    pub timestamp: Option<f64>,
}

/// What an entry is, as far as the tree and the rows care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Message,
    /// Its `firstKeptEntryId` is in [`PiFile::said`].
    Compaction,
    BranchSummary,
    /// An extension message that enters the context.
    CustomMessage,
    /// `label {targetId, label?}` (in [`PiFile::said`]): no label clears it.
    Label,
    /// Its `name` is in [`PiFile::said`].
    SessionInfo,
    /// `model_change`, `thinking_level_change`, `custom`, `usage`,
    /// `context_edit`: a node of the tree, never a branch of its own.
    Bookkeeping,
    /// A type this reader doesn't know: shown, as Pi's `/tree` shows it.
    Other,
}

impl Kind {
    /// Entries Pi's `/tree` hides by default: they sit inside a chain but
    /// a subtree of only these is no branch a user can see.
    pub fn is_bookkeeping(self) -> bool {
        matches!(self, Kind::Label | Kind::SessionInfo | Kind::Bookkeeping)
    }
}

/// What a label, a session name or a compaction says (few entries, so
/// kept beside the per-entry arrays).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub entry: u32,
    /// A label's `targetId`; a compaction's `firstKeptEntryId`.
    pub target: Option<Box<str>>,
    /// A label's name (none: cleared); a session's name.
    pub text: Option<Box<str>>,
}

/// A session file, read so far.
#[derive(Debug, Clone, Default)]
pub struct PiFile {
    /// The file name (what JSON's `file` says).
    pub name: String,
    pub path: PathBuf,
    pub header: Option<Header>,
    /// Per entry, in file order: its record index entry, its parent
    /// (`NONE`: a root), its time (NaN: none) and kind.
    metas: Metas,
    parents: Vec<u32>,
    times: Vec<f64>,
    kinds: Vec<Kind>,
    ids: Ids,
    /// Labels, session names and compactions, in file order.
    pub said: Vec<Said>,
    pub warnings: Vec<Warning>,
    pub dropped_warnings: u64,
    /// Lines read (blank ones included).
    pub lines: u32,
    /// Bytes consumed (complete lines).
    pub bytes: u64,
    pending: Vec<u8>,
    oversize: Option<u64>,
    /// Something other than blank space was seen (the header is due).
    started: bool,
    /// The inode read (a rewrite under the same name is a new file).
    pub ino: u64,
    /// The last line was taken whole without its newline (at the end of
    /// the file); a newline arriving next ends it, it is no blank line.
    unterminated: bool,
    /// A first read, until [`PiFile::resolve`] ends it.
    deferred: Option<Deferred>,
    /// Entry times are not kept (an output without them).
    timeless: bool,
}

/// Files from this size on are read in two halves at once.
const SPLIT_MIN: u64 = 32 << 20;

/// A first read (of the file, or of one half of it): parents other than
/// the entry before are named, not resolved, and ids are stored, not
/// checked, until [`PiFile::resolve`] settles them over sorted ids.
#[derive(Debug, Clone, Default)]
struct Deferred {
    /// Per entry naming a parent other than the entry before: `(entry,
    /// where the name ends in text)`.
    named: Vec<(u32, u32)>,
    text: String,
    /// The second half of a split read: the header is the first half's,
    /// and its lines are numbered from 0.
    half: bool,
    /// Where a half begins in the file.
    from: u64,
    /// Something only a read from the start can tell (an entry without an
    /// id or without `parentId` in the second half, a buffer past 4 GiB):
    /// read it in one go.
    bail: bool,
}

impl Deferred {
    fn name(&mut self, entry: u32, parent: &str) {
        match u32::try_from(self.text.len() + parent.len()) {
            Ok(end) => {
                self.text.push_str(parent);
                self.named.push((entry, end));
            }
            Err(_) => self.bail = true,
        }
    }
}

/// A parent named in [`Deferred`], resolved when the read ends.
const NAMED: u32 = NONE - 1;

impl PiFile {
    pub fn new(name: impl Into<String>, path: impl Into<PathBuf>) -> PiFile {
        PiFile {
            name: name.into(),
            path: path.into(),
            ..PiFile::default()
        }
    }

    /// Entries read.
    pub fn len(&self) -> usize {
        self.metas.len
    }

    pub fn is_empty(&self) -> bool {
        self.metas.len == 0
    }

    pub fn id(&self, i: u32) -> &str {
        self.ids.get(i)
    }

    /// Entry `i`'s parent (always an earlier entry); `None`: a root.
    pub fn parent(&self, i: u32) -> Option<u32> {
        Some(self.parents[i as usize]).filter(|&p| p != NONE)
    }

    /// Every entry's parent (`NONE`: a root).
    pub fn parents(&self) -> &[u32] {
        &self.parents
    }

    pub fn meta(&self, i: u32) -> &RecordMeta {
        self.metas.get(i)
    }

    pub fn last_meta(&self) -> Option<&RecordMeta> {
        self.len().checked_sub(1).map(|i| self.meta(i as u32))
    }

    /// The record index entries of `entries` (ascending), moved out to
    /// `put` (a one-shot read hands them to the world lines' records):
    /// see [`PiFile::plan_takes`].
    pub fn take_metas(&mut self, entries: &[u32], put: impl FnMut(RecordMeta)) {
        self.metas.take_each(entries, put);
    }

    /// Entries `take(i)` says will be taken by [`PiFile::take_metas`]; the
    /// storage of a chunk is freed when its last one is, so the index is
    /// not held twice. No other entry's meta is read after.
    pub fn plan_takes(&mut self, take: impl Fn(u32) -> bool) {
        self.metas.plan(take);
    }

    /// Unix seconds.
    pub fn time(&self, i: u32) -> Option<f64> {
        self.times.get(i as usize).copied().filter(|t| !t.is_nan())
    }

    pub fn kind(&self, i: u32) -> Kind {
        self.kinds[i as usize]
    }

    pub fn kinds(&self) -> &[Kind] {
        &self.kinds
    }

    /// The last entry with this id (as Pi's `byId` finds it).
    pub fn index_of(&self, id: &str) -> Option<u32> {
        self.ids.find(id)
    }

    /// Every entry's index fields, for comparing two reads (tests).
    #[cfg(test)]
    pub(crate) fn same_entries(&self, o: &PiFile) -> bool {
        let ids = |f: &PiFile| {
            (0..f.len() as u32)
                .map(|i| f.id(i).to_string())
                .collect::<Vec<_>>()
        };
        let times = |f: &PiFile| f.times.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
        self.metas.iter().eq(o.metas.iter())
            && self.parents == o.parents
            && times(self) == times(o)
            && self.kinds == o.kinds
            && self.said == o.said
            && ids(self) == ids(o)
            && (0..o.len() as u32).all(|i| self.index_of(o.id(i)) == o.index_of(o.id(i)))
    }

    /// Reads a whole session file through the guarded open; a big one in
    /// two halves at once, each on its own thread (the second from the
    /// first line start past the middle, its parents resolved when the
    /// halves are joined): the same index as reading it in one go.
    pub fn read(path: &Path) -> crate::Result<PiFile> {
        PiFile::read_for(path, true)
    }

    /// [`PiFile::read`]; without `times` no entry's time is kept.
    pub fn read_for(path: &Path, times: bool) -> crate::Result<PiFile> {
        let two = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
        PiFile::read_cut(
            path,
            times,
            Some(&|len| (len >= SPLIT_MIN && two).then_some(len / 2)),
        )
    }

    /// Room for the entries `bytes` of a file can hold (a line is at
    /// least ~64 bytes): reserved, not touched, so the arrays never move
    /// while they fill (a moved one leaves its old pages behind).
    fn reserve_for(&mut self, bytes: u64) {
        let n = usize::try_from(bytes / 64)
            .unwrap_or(usize::MAX)
            .min(1 << 27);
        self.parents.reserve_exact(n);
        self.kinds.reserve_exact(n);
        if !self.timeless {
            self.times.reserve_exact(n);
        }
        self.ids.reserve(n);
    }

    /// Reads a file split at the first line start from where `at` says
    /// (given the file's length), if any; `at` = `None`, and a first read
    /// that cannot be settled after it, read it entry by entry.
    fn read_cut(
        path: &Path,
        times: bool,
        at: Option<&dyn Fn(u64) -> Option<u64>>,
    ) -> crate::Result<PiFile> {
        let g = crate::read::guard::open_regular(path).map_err(|e| match e {
            crate::read::guard::GuardError::NotFound => crate::Error::NotFound {
                path: path.to_path_buf(),
            },
            e => crate::Error::Other(format!("{}: {e}", path.display())),
        })?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file = &g.file;
        let io = |e| crate::Error::io(path, e);
        // Bytes `from..to` in 1 MiB reads, each handed to `f`. The file is
        // read as it was when opened: a writer appending meanwhile leaves a
        // whole prefix, and the follower reads the rest.
        let each = |from: u64, to: u64, f: &mut dyn FnMut(&[u8])| -> crate::Result<()> {
            crate::read::read_range(file, from, to, 1 << 20, f).map_err(io)?;
            Ok(())
        };
        let mut ix = PiFile::new(name.clone(), path);
        ix.ino = inode(file);
        ix.timeless = !times;
        ix.reserve_for(g.len);
        let Some(at) = at else {
            each(0, g.len, &mut |b| {
                ix.feed(b);
            })?;
            ix.finish();
            return Ok(ix);
        };
        ix.deferred = Some(Deferred::default());
        let cut = match at(g.len) {
            Some(at) => crate::read::next_line_start(file, at, g.len).map_err(io)?,
            None => None,
        };
        let Some(cut) = cut else {
            each(0, g.len, &mut |b| {
                ix.feed(b);
            })?;
            ix.finish();
            if !ix.resolve() {
                return PiFile::read_cut(path, times, None);
            }
            return Ok(ix);
        };
        let mut rest = PiFile::new(name, path);
        rest.ino = ix.ino;
        rest.bytes = cut;
        rest.started = true;
        rest.deferred = Some(Deferred {
            half: true,
            from: cut,
            ..Deferred::default()
        });
        rest.timeless = ix.timeless;
        rest.reserve_for(g.len - cut);
        crate::read::in_two_halves(
            || {
                each(0, cut, &mut |b| {
                    ix.feed(b);
                })?;
                ix.ids.seal();
                Ok(())
            },
            || {
                // Its lines are numbered from 0 here, on from the first
                // half's when joined.
                each(cut, g.len, &mut |b| {
                    rest.feed(b);
                })?;
                rest.finish();
                rest.ids.seal();
                Ok(())
            },
        )?;
        if !(ix.join(rest) && ix.resolve()) {
            return PiFile::read_cut(path, times, Some(&|_| None));
        }
        Ok(ix)
    }

    /// Takes `b`, the rest of the same file read from the line start
    /// where `self` ends (both first reads, not yet resolved). `false`
    /// (and `self` unusable): read the file in one go.
    fn join(&mut self, mut b: PiFile) -> bool {
        let (Some(d), Some(bd)) = (&mut self.deferred, b.deferred.take()) else {
            return false;
        };
        let n1 = self.metas.len as u32;
        if bd.bail
            || d.bail
            || !self.started
            || !self.pending.is_empty()
            || self.oversize.is_some()
            || self.bytes != bd.from
            || (self.metas.len + b.len()) as u64 >= u64::from(NAMED)
            || (d.text.len() + bd.text.len()) as u64 > u64::from(u32::MAX)
            || !self.ids.append(std::mem::take(&mut b.ids))
        {
            return false;
        }
        let shift = self.lines;
        let Some(lines) = b.lines.checked_add(shift) else {
            return false;
        };
        b.metas.shift_lines(shift);
        let base = d.text.len() as u32;
        d.text.push_str(&bd.text);
        d.named
            .extend(bd.named.iter().map(|&(e, end)| (e + n1, end + base)));
        for p in &mut b.parents {
            if *p < NAMED {
                *p += n1;
            }
        }
        // Both halves' warnings are in line order, each under the cap.
        self.dropped_warnings += b.dropped_warnings;
        for mut w in b.warnings {
            w.line += u64::from(shift);
            keep_warning(&mut self.warnings, &mut self.dropped_warnings, w);
        }
        for s in &mut b.said {
            s.entry += n1;
        }
        self.metas.append(std::mem::take(&mut b.metas));
        self.parents.append(&mut b.parents);
        self.times.append(&mut b.times);
        self.kinds.append(&mut b.kinds);
        self.said.append(&mut b.said);
        self.lines = lines;
        self.bytes = b.bytes;
        self.pending = b.pending;
        self.oversize = b.oversize;
        self.unterminated = b.unterminated;
        true
    }

    /// Ends a first read: its ids become findable, named parents are
    /// found (the last earlier entry holding the id, as the table would
    /// have found it then), and what that and duplicate ids warn about
    /// joins the read's warnings in line order (a line's scan first).
    /// `false`: the read bailed, read it entry by entry.
    fn resolve(&mut self) -> bool {
        let Some(d) = self.deferred.take() else {
            return true;
        };
        if d.bail {
            return false;
        }
        self.ids.seal();
        // Per line: a parent not found, then an id used before.
        let mut resolved: Vec<(u32, String)> = Vec::new();
        let mut start = 0;
        let mut dups = self.ids.duplicates().into_iter().peekable();
        let mut twice = |f: &PiFile, upto: Option<u32>, out: &mut Vec<(u32, String)>| {
            while let Some(&(e, was)) = dups.peek().filter(|(e, _)| upto.is_none_or(|u| *e < u)) {
                dups.next();
                out.push((e, used_twice(f.ids.get(e), f.meta(was).line())));
            }
        };
        for &(e, end) in &d.named {
            twice(self, Some(e), &mut resolved);
            let p = d.text.get(start..end as usize).unwrap_or("");
            start = end as usize;
            self.parents[e as usize] = match self.ids.find_before(p, e) {
                Some(at) => at,
                None => {
                    resolved.push((e, not_earlier(p)));
                    NONE
                }
            };
            twice(self, Some(e + 1), &mut resolved);
        }
        twice(self, None, &mut resolved);
        if resolved.is_empty() {
            return true;
        }
        // In line order, a line's scan first (a stable sort of the scan's,
        // then these), under the one cap.
        let file = self.path.display().to_string();
        let mut all = std::mem::take(&mut self.warnings);
        all.extend(resolved.into_iter().map(|(e, message)| Warning {
            file: file.clone(),
            line: u64::from(self.meta(e).line()),
            message,
        }));
        all.sort_by_key(|w| w.line);
        for w in all {
            keep_warning(&mut self.warnings, &mut self.dropped_warnings, w);
        }
        true
    }

    /// Reads what was appended since the last read. `Ok(false)`: the file
    /// is not the one read (replaced, truncated, or its last read line
    /// changed: Pi rewrites a file only to migrate it), read it anew.
    pub fn read_more(&mut self) -> crate::Result<bool> {
        use std::io::{Read, Seek, SeekFrom};
        let path = self.path.clone();
        let g = crate::read::guard::open_regular(&path)
            .map_err(|e| crate::Error::Other(format!("{}: {e}", path.display())))?;
        let from = self.bytes + self.pending_len() as u64;
        if inode(&g.file) != self.ino || g.len < from || self.oversize.is_some() {
            return Ok(false);
        }
        let mut file = g.file;
        if let Some(last) = self.last_meta() {
            let (off, len) = (last.offset(), last.len() as usize);
            let mut buf = vec![0u8; len];
            file.seek(SeekFrom::Start(off))
                .and_then(|_| file.read_exact(&mut buf))
                .map_err(|e| crate::Error::io(&path, e))?;
            if xxh3_64(&buf) != last.hash() {
                return Ok(false);
            }
        }
        file.seek(SeekFrom::Start(from))
            .map_err(|e| crate::Error::io(&path, e))?;
        let mut rest = file.take(g.len - from);
        let mut buf = vec![0u8; (g.len - from).clamp(1, 1 << 20) as usize];
        loop {
            let n = rest
                .read(&mut buf)
                .map_err(|e| crate::Error::io(&path, e))?;
            if n == 0 {
                break;
            }
            self.feed(&buf[..n]);
        }
        Ok(true)
    }

    /// Parses bytes already in memory (tests).
    pub fn parse(name: &str, path: &Path, bytes: &[u8]) -> PiFile {
        let mut ix = PiFile::new(name, path);
        ix.feed(bytes);
        ix.finish();
        ix
    }

    /// Feeds the next bytes; returns how many lines completed.
    pub fn feed(&mut self, chunk: &[u8]) -> usize {
        let (mut pending, mut oversize) = (std::mem::take(&mut self.pending), self.oversize.take());
        let n =
            crate::read::lines::split(&mut pending, &mut oversize, chunk, LINE_CAP, |p| match p {
                Piece::Line(line) => self.add_line(line, 1),
                Piece::Oversize(len) => self.skip_line(len),
            });
        (self.pending, self.oversize) = (pending, oversize);
        n
    }

    /// The file ended: a last line without its newline counts whole (Pi
    /// writes whole lines; a torn one fails to parse and is warned about).
    pub fn finish(&mut self) {
        if let Some(so_far) = self.oversize.take() {
            self.skip_line(so_far);
        } else if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.add_line(&line, 0);
        }
    }

    /// A live read's end: a last line without its newline is taken when
    /// it parses whole, as [`PiFile::finish`] takes it (else it waits
    /// for its rest); one past the cap waits for its end.
    pub fn settle(&mut self) {
        if self.oversize.is_none() && !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.add_line(&line, 0);
        }
    }

    /// Bytes of a half-written last line.
    pub fn pending_len(&self) -> usize {
        match self.oversize {
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            None => self.pending.len(),
        }
    }

    /// A first read meets what it cannot settle: it is read again, entry
    /// by entry (or, for a half, in one go).
    fn bail(&mut self) {
        if let Some(d) = &mut self.deferred {
            d.bail = true;
        }
    }

    fn skip_line(&mut self, bytes: u64) {
        self.bytes += bytes;
        self.lines += 1;
        self.warn(format!(
            "skipped a line of {bytes} bytes (longer than {} MiB)",
            LINE_CAP >> 20
        ));
    }

    fn warn(&mut self, message: String) {
        let w = Warning {
            file: self.path.display().to_string(),
            line: u64::from(self.lines),
            message,
        };
        keep_warning(&mut self.warnings, &mut self.dropped_warnings, w);
    }

    fn add_line(&mut self, raw: &[u8], terminator: u64) {
        if std::mem::replace(&mut self.unterminated, terminator == 0) && raw.is_empty() {
            self.bytes += terminator;
            return;
        }
        let offset = self.bytes;
        self.bytes += raw.len() as u64 + terminator;
        self.lines += 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Ok(len) = u32::try_from(line.len()) else {
            self.warn("skipped a line over 4 GiB".to_string());
            return;
        };
        let first = !std::mem::replace(&mut self.started, true);
        let owned;
        let from_serde;
        // Filled in place: the fields are a few hundred bytes, and most
        // lines take the fast path.
        let mut fast = Fields::default();
        let rec = match super::fast::line(line, &mut fast) {
            Some(()) => &fast,
            None => {
                from_serde = match serde_fields(line) {
                    Ok(r) => r,
                    Err(e) => {
                        // Invalid UTF-8 or raw control characters: repaired as
                        // the rest of worldline reads lines; else skipped.
                        owned = crate::read::lenient::repair(line);
                        match serde_fields(owned.as_bytes()) {
                            Ok(r) => r,
                            // Pi writes whole lines: a last one without its end
                            // that doesn't parse is still being written (a live
                            // session), not damage.
                            Err(_) if terminator == 0 => {
                                // Kept as pending: the rest arrives with a later read.
                                self.bytes -= raw.len() as u64;
                                self.lines -= 1;
                                self.unterminated = false;
                                self.started = !first;
                                self.pending = raw.to_vec();
                                return;
                            }
                            Err(_) => {
                                self.warn(format!("not a JSON entry ({e}); skipped"));
                                return;
                            }
                        }
                    }
                };
                &from_serde
            }
        };
        let ty = rec.ty.as_deref().unwrap_or("");
        if ty == "session" {
            if !first || self.header.is_some() {
                self.warn("a second session header; ignored".to_string());
                return;
            }
            let version = rec.version.unwrap_or(1);
            self.header = Some(Header {
                id: rec.id.as_deref().map(str::to_string),
                version,
                cwd: rec.cwd.as_deref().map(str::to_string),
                parent_session: rec.parent_session.as_deref().map(str::to_string),
                timestamp: rec.timestamp.as_deref().and_then(parse_iso),
            });
            if version < 3 {
                self.warn(format!(
                    "session version {version}: Pi migrates (rewrites) this file to version 3 when it opens it; read as migrated"
                ));
            }
            return;
        }
        if first {
            self.warn(
                "no session header on the first line (Pi does not open such a file); entries read anyway"
                    .to_string(),
            );
        }
        let version = self.header.as_ref().map_or(3, |h| h.version);
        let prev = self.len().checked_sub(1).map(|i| i as u32);
        let line_no = self.lines;
        let index = self.len() as u32;
        // The second half of a split read doesn't know the header's
        // version, which says what a missing id or parentId means.
        let half = self.deferred.as_ref().is_some_and(|d| d.half);
        let generated;
        let id: &str = match rec.id.as_deref() {
            Some(id) if !id.is_empty() => id,
            // Version 1 entries have no ids: Pi numbers them as a chain.
            _ if half => return self.bail(),
            _ => {
                if version >= 2 {
                    self.warn("an entry without an id; named by its line".to_string());
                }
                generated = format!("line{line_no}");
                &generated
            }
        };
        let parent = match &rec.parent_id {
            // Most entries follow the one before: no probe for it.
            Some(Some(p)) if prev.is_some_and(|i| self.ids.get(i) == p.as_ref()) => prev,
            Some(Some(p)) => match &mut self.deferred {
                Some(d) => {
                    d.name(index, p);
                    Some(NAMED)
                }
                None => match self.ids.find(p) {
                    Some(i) => Some(i),
                    None => {
                        self.warn(not_earlier(p));
                        None
                    }
                },
            },
            Some(None) => None,
            None if half => return self.bail(),
            // Version 1: each entry follows the one before (Pi's migration).
            None if version < 2 || rec.id.is_none() => prev,
            None => {
                self.warn("an entry without parentId; a root here".to_string());
                None
            }
        };
        let parent = parent.unwrap_or(NONE);
        let kind = match ty {
            "message" => Kind::Message,
            "compaction" => Kind::Compaction,
            "branch_summary" => Kind::BranchSummary,
            "custom_message" => Kind::CustomMessage,
            "label" => Kind::Label,
            "session_info" => Kind::SessionInfo,
            "model_change" | "thinking_level_change" | "custom" | "usage" | "context_edit" => {
                Kind::Bookkeeping
            }
            _ => Kind::Other,
        };
        let said = match kind {
            Kind::Compaction => Some((rec.first_kept.as_deref(), None)),
            Kind::Label => Some((
                rec.target_id.as_deref(),
                rec.label.as_deref().filter(|l| !l.is_empty()),
            )),
            Kind::SessionInfo => Some((None, rec.name.as_deref())),
            _ => None,
        };
        let parts = record_parts(ty, kind, rec.message.as_ref());
        let meta = RecordMeta::new(offset, len, line_no, xxh3_64(line), parts);
        if self.deferred.is_some() {
            // Only stored: checked when the read is resolved.
            if self.ids.store(id).is_err() {
                return self.bail();
            }
        } else {
            match self.ids.push(id) {
                Ok(None) => {}
                Ok(Some(was)) => {
                    let at = self.meta(was).line();
                    self.warn(used_twice(id, at));
                }
                Err(()) => {
                    self.warn("entry ids past 4 GiB in all; skipped".to_string());
                    return;
                }
            }
        }
        if let Some((target, text)) = said {
            self.said.push(Said {
                entry: index,
                target: target.map(Into::into),
                text: text.map(Into::into),
            });
        }
        self.metas.push(meta);
        self.parents.push(parent);
        if !self.timeless {
            self.times.push(
                rec.timestamp
                    .as_deref()
                    .and_then(parse_iso)
                    .unwrap_or(f64::NAN),
            );
        }
        self.kinds.push(kind);
    }
}

fn not_earlier(p: &str) -> String {
    format!(
        "parent {} is not an earlier entry (missing, or a cycle); a root here, as Pi treats it",
        crate::text::sanitize_line(p, 40)
    )
}

fn used_twice(id: &str, at: u32) -> String {
    format!(
        "id {} already used on line {at}; entries naming it hang under this one (as in Pi)",
        crate::text::sanitize_line(id, 40)
    )
}

fn inode(f: &std::fs::File) -> u64 {
    use std::os::unix::fs::MetadataExt;
    f.metadata().map_or(0, |m| m.ino())
}

/// The index entry's role, tool calls and marker.
fn record_parts(ty: &str, kind: Kind, msg: Option<&MsgFields>) -> RecordParts {
    let mut parts = RecordParts {
        role: match kind {
            Kind::Message | Kind::Compaction | Kind::BranchSummary | Kind::CustomMessage => {
                Role::System
            }
            _ => Role::Other(ty.into()),
        },
        checkpoint: None,
        tokens: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        marker: None,
    };
    match kind {
        Kind::Message => {
            let role = msg.and_then(|m| m.role.as_deref()).unwrap_or("");
            parts.role = match role {
                "user" => Role::User,
                "assistant" => Role::Assistant,
                "toolResult" => Role::Tool,
                "system" => Role::SystemPrompt,
                "" => Role::Other("message".into()),
                other => Role::Other(other.into()),
            };
            if let Some(m) = msg {
                parts.tool_call_id = m.tool_call_id.as_deref().map(str::to_string);
                if role == "assistant" {
                    parts.tool_calls = m
                        .calls
                        .iter()
                        .map(|(id, name)| ToolCallHead {
                            id: id.to_string(),
                            name: name.to_string(),
                            dmail: None,
                        })
                        .collect();
                }
            }
        }
        Kind::Compaction => {
            parts.role = Role::System;
            parts.marker = Some(Marker::Compaction);
        }
        // Pi hands a branch summary to the model as a user message: here
        // too it opens a step of its own, led by what it says.
        Kind::BranchSummary => parts.role = Role::User,
        Kind::CustomMessage => parts.role = Role::System,
        _ => {}
    }
    parts
}

/// `2026-12-04T12:44:29.451Z` (or with an offset) → Unix seconds.
pub fn parse_iso(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac = 0.0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        // Digits over a power of ten: exact values, one rounding.
        let (mut num, mut den) = (0u64, 1u64);
        for &c in b[start..i].iter().take(12) {
            num = num * 10 + u64::from(c - b'0');
            den *= 10;
        }
        frac = num as f64 / den as f64;
    }
    let offset = match b.get(i) {
        None | Some(b'Z') | Some(b'z') => 0,
        Some(&sign @ (b'+' | b'-')) => {
            let oh = num(i + 1..i + 3)?;
            let om = match b.get(i + 3) {
                Some(b':') => num(i + 4..i + 6)?,
                _ => num(i + 3..i + 5).unwrap_or(0),
            };
            let o = oh * 3600 + om * 60;
            if sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + mi * 60 + sec - offset) as f64 + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times() {
        assert_eq!(parse_iso("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(
            parse_iso("2026-12-04T12:44:29.451Z"),
            Some(1_796_388_269.451)
        );
        assert_eq!(parse_iso("1970-01-01T01:00:00+01:00"), Some(0.0));
        assert_eq!(parse_iso("nope"), None);
        assert_eq!(parse_iso("2026-13-04T12:44:29Z"), None);
    }

    fn parse(text: &str) -> PiFile {
        PiFile::parse("s.jsonl", Path::new("/t/s.jsonl"), text.as_bytes())
    }

    #[test]
    fn bad_input_is_warned_about_never_a_panic() {
        // A missing parent, a cycle, a duplicate id, a torn last line.
        let f = parse(concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
            "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"zz\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n",
            "{\"type\":\"message\",\"id\":\"c\",\"parentId\":\"d\"}\n",
            "{\"type\":\"message\",\"id\":\"d\",\"parentId\":\"c\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"d\"}\n",
            "not json\n",
            "{\"type\":\"message\",\"id\":\"e\",\"par",
        ));
        assert_eq!(f.len(), 5);
        assert_eq!(f.parent(1), None);
        assert_eq!(f.parent(2), None);
        assert_eq!(f.parent(3), Some(2));
        assert_eq!(f.index_of("a").unwrap(), 4);
        let lines: Vec<u64> = f.warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, [3, 4, 6, 7], "{:?}", f.warnings);
        assert!(f.warnings.iter().all(|w| w.file == "/t/s.jsonl"));
    }

    #[test]
    fn version_one_entries_chain_and_headerless_files_are_read() {
        let f = parse(concat!(
            "{\"type\":\"session\",\"id\":\"s\"}\n",
            "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
            "{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"bash\",\"arguments\":{}}]}}\n",
        ));
        assert_eq!(f.parent(1), Some(0));
        assert_eq!(f.meta(1).tool_calls().len(), 1);
        assert!(f.warnings[0].message.contains("version 1"));
        let g = parse("{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n");
        assert_eq!(g.len(), 1);
        assert!(g.warnings[0].message.contains("no session header"));
        assert_eq!(g.warnings[0].line, 1);
    }

    #[test]
    fn reading_on_after_appends_equals_one_read() {
        let text = concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
            "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"message\":{\"role\":\"assistant\",\"content\":[]}}\n",
            "{\"type\":\"label\",\"id\":\"c\",\"parentId\":\"b\",\"targetId\":\"a\",\"label\":\"x\"}\n",
        );
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.jsonl");
        let whole = PiFile::parse("s.jsonl", &path, text.as_bytes());
        // Cut everywhere: mid-line, at a line end without its newline.
        for cut in 1..text.len() {
            std::fs::write(&path, &text[..cut]).unwrap();
            let mut f = PiFile::read(&path).unwrap();
            std::fs::write(&path, text).unwrap();
            assert!(f.read_more().unwrap(), "cut {cut}");
            f.finish();
            assert!(f.same_entries(&whole), "cut {cut}");
            assert_eq!(f.lines, whole.lines, "cut {cut}");
            assert_eq!(f.warnings, whole.warnings, "cut {cut}");
        }
        // A rewritten file (its last read line changed) is read anew.
        let mut f = PiFile::read(&path).unwrap();
        std::fs::write(&path, text.replace("\"x\"", "\"y\"")).unwrap();
        assert!(!f.read_more().unwrap());
    }

    fn same_read(a: &PiFile, b: &PiFile) -> bool {
        a.same_entries(b)
            && a.warnings == b.warnings
            && a.dropped_warnings == b.dropped_warnings
            && a.lines == b.lines
            && a.bytes == b.bytes
            && a.header == b.header
            && a.pending == b.pending
    }

    /// A file cut at every line start reads as one read in one go: the
    /// fixtures, and a damaged one (missing parents, a cycle, duplicate
    /// ids across the halves, bad lines, a second header, an id-less
    /// entry, a torn last line, warnings past the cap).
    #[test]
    fn a_file_read_in_two_halves_is_the_file_read_in_one() {
        let tmp = tempfile::tempdir().unwrap();
        let mut files = crate::sources::test_util::fixture_files("pi");
        let mut text = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n");
        for i in 0..150 {
            let p = if i == 0 {
                "null".to_string()
            } else {
                format!("\"e{}\"", i - 1)
            };
            text.push_str(&format!("{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{p},\"timestamp\":\"2026-12-04T12:00:{:02}Z\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"toolCall\",\"id\":\"c{i}\",\"name\":\"bash\"}}]}}}}\n", i % 60));
            match i % 7 {
                0 => text.push_str(&format!("{{\"type\":\"message\",\"id\":\"d{i}\",\"parentId\":\"nope{i}\"}}\n")),
                1 => text.push_str("not json\n\n"),
                2 => text.push_str(&format!("{{\"type\":\"message\",\"id\":\"e{}\",\"parentId\":\"e{i}\"}}\n", i / 2)),
                3 => text.push_str("{\"type\":\"session\",\"version\":3,\"id\":\"t\"}\n"),
                4 => text.push_str(&format!("{{\"type\":\"label\",\"id\":\"l{i}\",\"parentId\":\"e{i}\",\"targetId\":\"e1\",\"label\":\"x{i}\"}}\n")),
                5 => text.push_str(&format!("{{\"type\":\"message\",\"id\":\"x{i}\",\"parentId\":\"y{i}\"}}\n{{\"type\":\"message\",\"id\":\"y{i}\",\"parentId\":\"x{i}\"}}\n")),
                _ => text.push_str("{\"type\":\"message\",\"id\":\"e3\",\"parentId\":\"e2\",\"x\":\"\u{1}\"}\r\n"),
            }
        }
        let damaged = tmp.path().join("damaged.jsonl");
        std::fs::write(
            &damaged,
            format!("{text}{{\"type\":\"message\",\"id\":\"torn\",\"par"),
        )
        .unwrap();
        let idless = tmp.path().join("idless.jsonl");
        std::fs::write(&idless, format!("{text}{{\"type\":\"message\",\"parentId\":\"e5\"}}\n{{\"type\":\"message\",\"id\":\"z\"}}\n")).unwrap();
        files.extend([damaged, idless]);
        for path in files {
            let whole = PiFile::read_cut(&path, true, Some(&|_| None)).unwrap();
            let plain = PiFile::read_cut(&path, true, None).unwrap();
            assert!(same_read(&plain, &whole), "{}", path.display());
            let bytes = std::fs::read(&path).unwrap();
            let starts =
                std::iter::once(0).chain(memchr::memchr_iter(b'\n', &bytes).map(|i| i as u64 + 1));
            for at in starts {
                let split = PiFile::read_cut(&path, true, Some(&|_| Some(at))).unwrap();
                assert!(
                    same_read(&split, &whole),
                    "{} cut at {at}: {} {} {:?} {:?}\n{:#?}\n{:#?}",
                    path.display(),
                    split.same_entries(&whole),
                    split.dropped_warnings == whole.dropped_warnings,
                    (split.lines, split.bytes, split.len()),
                    (whole.lines, whole.bytes, whole.len()),
                    split
                        .warnings
                        .iter()
                        .zip(&whole.warnings)
                        .find(|(a, b)| a != b),
                    (split.warnings.len(), whole.warnings.len())
                );
            }
        }
    }
}
