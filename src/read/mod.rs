//! Reading context files: line scanning, lenient parsing and the per-record
//! index. Memory follows the number of records, not bytes: bodies stay on
//! disk and load on demand.

pub mod guard;
mod hash;
pub mod head;
pub mod json_cursor;
pub mod lenient;
pub mod lines;
mod records;
pub mod scan;
mod stream;
mod tail;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub use hash::canonical_hash;
pub use records::{Iter as RecordIter, Records};
pub use tail::{FileId, Follow, Sink, Tail, TailChange};

use crate::error::{Error, Result};
use crate::model::{Body, RecordMeta, Warning};

/// The index of one context file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileIndex {
    /// Name shown to users and in JSON, relative to the session directory
    /// (`context_1.jsonl`, `subagents/a1/context.jsonl`).
    pub name: String,
    pub path: PathBuf,
    /// Shared with the live follower's later snapshots (append-only).
    pub records: Records,
    pub warnings: Vec<Warning>,
    /// Bytes consumed: every complete line (and the last one at EOF).
    pub bytes: u64,
    /// Warnings past [`MAX_WARNINGS`] are only counted, so a file of
    /// millions of malformed lines costs a counter, not a warning each.
    pub dropped_warnings: u64,
}

/// Warnings kept per file; the rest are counted in `dropped_warnings`.
pub const MAX_WARNINGS: usize = 100;

/// Keeps `w` among a file's `warnings` while they are under
/// [`MAX_WARNINGS`], else counts it in `dropped`.
pub fn keep_warning(warnings: &mut Vec<Warning>, dropped: &mut u64, w: Warning) {
    if warnings.len() < MAX_WARNINGS {
        warnings.push(w);
    } else {
        *dropped += 1;
    }
}

impl FileIndex {
    pub fn checkpoints(&self) -> usize {
        self.records
            .iter()
            .filter(|r| r.checkpoint().is_some())
            .count()
    }

    /// The warnings to show: the kept ones, then one saying how many more
    /// there were.
    pub fn reported_warnings(&self) -> impl Iterator<Item = Warning> + '_ {
        let summary = (self.dropped_warnings > 0).then(|| Warning {
            file: self.name.clone(),
            line: self.warnings.last().map_or(0, |w| w.line),
            message: format!(
                "{} more warning{} in this file not listed (only the first {MAX_WARNINGS} are kept)",
                self.dropped_warnings,
                if self.dropped_warnings == 1 { "" } else { "s" }
            ),
        });
        self.warnings.iter().cloned().chain(summary)
    }

    fn add_warning(&mut self, w: Warning) {
        keep_warning(&mut self.warnings, &mut self.dropped_warnings, w);
    }
}

/// A line still without its newline after this many bytes is read in
/// pieces from then on (`stream`), so a 50 MB image line never sits whole in
/// memory; shorter lines take the faster whole-line path.
const STREAM_THRESHOLD: usize = 4 << 20;
/// Bytes kept of each index field of a line read in pieces.
const STREAM_KEEP: usize = 64 << 10;

/// Turns bytes into records incrementally: feed chunks in order; a line split
/// across chunks waits until its end arrives.
#[derive(Debug, Clone)]
pub struct Indexer {
    index: FileIndex,
    /// Start of a line whose end hasn't arrived yet.
    pending: Vec<u8>,
    /// A long line without its end yet, read in pieces (`pending` is empty).
    stream: Option<Box<stream::LineStream>>,
    line_no: u64,
    threshold: usize,
    keep: usize,
}

impl Default for Indexer {
    fn default() -> Self {
        Indexer::new("", PathBuf::new())
    }
}

impl Indexer {
    pub fn new(name: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        Indexer {
            index: FileIndex {
                name: name.into(),
                path: path.into(),
                ..FileIndex::default()
            },
            pending: Vec::new(),
            stream: None,
            line_no: 0,
            threshold: STREAM_THRESHOLD,
            keep: STREAM_KEEP,
        }
    }

    /// Lines longer than `threshold` are read in pieces, keeping `keep`
    /// bytes of each index field (tests make both tiny).
    pub fn with_stream_threshold(mut self, threshold: usize, keep: usize) -> Self {
        self.threshold = threshold;
        self.keep = keep;
        self
    }

    /// Feeds the next bytes of the file. Returns how many records were added.
    pub fn push(&mut self, mut chunk: &[u8]) -> usize {
        let before = self.index.records.len();
        if let Some(mut s) = self.stream.take() {
            match memchr::memchr(b'\n', chunk) {
                Some(nl) => {
                    s.feed(&chunk[..nl]);
                    self.add_streamed(*s, 1);
                    chunk = &chunk[nl + 1..];
                }
                None => {
                    s.feed(chunk);
                    self.stream = Some(s);
                    return 0;
                }
            }
        } else if !self.pending.is_empty() {
            match memchr::memchr(b'\n', chunk) {
                Some(nl) => {
                    let mut line = std::mem::take(&mut self.pending);
                    line.extend_from_slice(&chunk[..nl]);
                    self.add_line(&line, 1);
                    chunk = &chunk[nl + 1..];
                }
                None => {
                    self.hold(chunk);
                    return 0;
                }
            }
        }
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', chunk) {
            self.add_line(&chunk[start..nl], 1);
            start = nl + 1;
        }
        self.hold(&chunk[start..]);
        self.index.records.len() - before
    }

    /// Keeps the start of an unfinished line; past the threshold it goes on
    /// in pieces and the bytes held so far are let go.
    fn hold(&mut self, bytes: &[u8]) {
        if self.pending.len() + bytes.len() <= self.threshold {
            self.pending.extend_from_slice(bytes);
            return;
        }
        let mut s = stream::LineStream::new(self.keep);
        s.feed(&std::mem::take(&mut self.pending));
        s.feed(bytes);
        self.stream = Some(Box::new(s));
    }

    /// The file ended: a last line without a newline is a line too.
    pub fn finish(&mut self) -> usize {
        let before = self.index.records.len();
        if let Some(s) = self.stream.take() {
            self.add_streamed(*s, 0);
        } else if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.add_line(&line, 0);
        }
        self.index.records.len() - before
    }

    /// Adds the records of an indexer that read the bytes right after this
    /// one's, starting at file offset `start`.
    fn append(&mut self, part: Indexer, start: u64) {
        let lines_before = self.line_no;
        let Indexer {
            index,
            pending,
            stream,
            line_no,
            ..
        } = part;
        self.index
            .records
            .extend(index.records.into_vec().into_iter().map(|mut r| {
                r.shift(start, u32::try_from(lines_before).unwrap_or(u32::MAX));
                r
            }));
        for mut w in index.warnings {
            w.line += lines_before;
            self.index.add_warning(w);
        }
        self.index.dropped_warnings += index.dropped_warnings;
        self.index.bytes = start + index.bytes;
        self.line_no += line_no;
        self.pending = pending;
        self.stream = stream;
    }

    /// Bytes of an incomplete last line held back (or, for a long one, read).
    pub fn pending_len(&self) -> usize {
        match &self.stream {
            Some(s) => usize::try_from(s.raw_len()).unwrap_or(usize::MAX),
            None => self.pending.len(),
        }
    }

    pub fn index(&self) -> &FileIndex {
        &self.index
    }

    /// A rotation renamed the file: records keep their offsets, warnings
    /// and future lines take the new name.
    pub fn rename(&mut self, name: &str, path: &Path) {
        self.index.name = name.to_string();
        self.index.path = path.to_path_buf();
        for w in &mut self.index.warnings {
            w.file = name.to_string();
        }
    }

    pub fn into_index(self) -> FileIndex {
        self.index
    }

    fn add_line(&mut self, raw: &[u8], terminator: u64) {
        self.line_no += 1;
        let offset = self.index.bytes;
        self.index.bytes += raw.len() as u64 + terminator;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            return;
        }
        self.record(offset, line.len() as u64, || head::read_head(line));
    }

    /// A line read in pieces ended.
    fn add_streamed(&mut self, s: stream::LineStream, terminator: u64) {
        self.line_no += 1;
        let offset = self.index.bytes;
        self.index.bytes += s.raw_len() + terminator;
        if s.is_blank() {
            return;
        }
        let len = s.len();
        let mut note = None;
        self.record(offset, len, || {
            let out = s.finish();
            note = out.note;
            out.result
        });
        if let Some(message) = note {
            self.warn(message);
        }
    }

    fn warn(&mut self, message: String) {
        if self.index.warnings.len() >= MAX_WARNINGS {
            // Not even the message is built: 3 M bad lines stay cheap.
            self.index.dropped_warnings += 1;
            return;
        }
        let w = Warning {
            file: self.index.name.clone(),
            line: self.line_no,
            message,
        };
        self.index.add_warning(w);
    }

    /// Adds the record (or the warning) for the current line.
    fn record(
        &mut self,
        offset: u64,
        len: u64,
        read: impl FnOnce() -> std::result::Result<(head::Head, u64), String>,
    ) {
        let (Ok(len), Ok(line_no)) = (u32::try_from(len), u32::try_from(self.line_no)) else {
            self.warn("skipped a line over 4 GiB (or past line 4294967295)".to_string());
            return;
        };
        match read() {
            Ok((h, hash)) => self
                .index
                .records
                .push(RecordMeta::new(offset, len, line_no, hash, h)),
            Err(message) => self.warn(format!("skipped malformed line: {message}")),
        }
    }
}

const CHUNK: usize = 256 << 10;
/// Files at least this big are split at line boundaries and indexed on
/// several threads; smaller ones aren't worth a thread.
pub(crate) const PARALLEL_MIN: u64 = 32 << 20;

/// Indexes a whole file (as long as it is when opened). `name` is how
/// warnings and exports call it.
pub fn index_file(path: &Path, name: &str) -> Result<FileIndex> {
    let guard::Guarded { file, len } = open_indexed(path)?;
    let mut ix = index_prefix(&file, path, name, len)?;
    ix.finish();
    Ok(ix.into_index())
}

fn open_indexed(path: &Path) -> Result<guard::Guarded> {
    guard::open_regular(path).map_err(|e| match e {
        guard::GuardError::NotFound => Error::NotFound {
            path: path.to_owned(),
        },
        guard::GuardError::Io(e) => Error::io(path, e),
        other => Error::Other(format!("{}: {other}", path.display())),
    })
}

/// [`index_file`] for a file that may start with a byte-identical copy of
/// `parent`'s start, as a kimi-cli rotation writes one (the context up to
/// the checkpoint it went back to): the copy is found by comparing bytes,
/// and the parent's records and warnings for the lines wholly inside it are
/// taken as they are (same bytes, same offsets and line numbers, so the
/// same records); indexing starts at the first line that differs. The
/// result equals `index_file`'s. Records a rotation respelled are past the
/// first difference, so they are indexed (the graph still finds them shared
/// by their canonical hashes).
pub fn index_file_after(path: &Path, name: &str, parent: &FileIndex) -> Result<FileIndex> {
    let guard::Guarded { file, len } = open_indexed(path)?;
    let seed = match reuse_prefix(&file, len, name, path, parent) {
        Some(seed) => seed,
        None => Indexer::new(name, path),
    };
    let mut ix = index_from(&file, path, seed, len)?;
    ix.finish();
    Ok(ix.into_index())
}

/// An indexer holding `parent`'s records for the lines `file` shares with
/// it byte for byte, positioned at the first line it doesn't; `None` when
/// nothing can be taken (no shared line, the parent unreadable or changed
/// on disk since it was indexed, or warnings it only counted).
fn reuse_prefix(
    file: &File,
    len: u64,
    name: &str,
    path: &Path,
    parent: &FileIndex,
) -> Option<Indexer> {
    if parent.dropped_warnings > 0 || parent.records.is_empty() {
        return None;
    }
    let theirs = guard::open_regular(&parent.path).ok()?;
    let (end, lines) = identical_lines(file, &theirs.file, len.min(parent.bytes).min(theirs.len))?;
    let keep = parent.records.partition_point(|r| r.offset() < end);
    let last = parent.records.range(..keep).last()?;
    // The parent's file may have changed since it was indexed: its last
    // taken record must still be the line it was.
    let line = load_line(&parent.path, last).ok()?;
    if canonical_hash(&line) != last.hash() {
        return None;
    }
    let mut ix = Indexer::new(name, path);
    let rest = usize::try_from(len - end).unwrap_or(0);
    // Room for the rest at the parent's bytes a record.
    let per = (parent.bytes / parent.records.len() as u64).max(1) as usize;
    ix.index
        .records
        .reserve_exact(keep + rest / per + rest / per / 16);
    ix.index
        .records
        .extend(parent.records.range(..keep).cloned());
    for w in parent.warnings.iter().filter(|w| w.line <= lines) {
        ix.index.add_warning(Warning {
            file: name.to_string(),
            ..w.clone()
        });
    }
    ix.index.bytes = end;
    ix.line_no = lines;
    Some(ix)
}

/// The length of the equal run at the start of two slices of one length:
/// compared a block at a time (`memcmp`), bytes only in the block that differs.
fn same_run(x: &[u8], y: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let mut at = 0;
    for (p, q) in x.chunks(BLOCK).zip(y.chunks(BLOCK)) {
        if p != q {
            return at + p.iter().zip(q).position(|(a, b)| a != b).unwrap_or(p.len());
        }
        at += p.len();
    }
    at
}

/// How far two files are byte-identical from the start, in whole lines:
/// the offset just past the last newline before the first difference (or
/// `max`), and the number of lines up to it. `None` on a read error.
fn identical_lines(a: &File, b: &File, max: u64) -> Option<(u64, u64)> {
    use std::os::unix::fs::FileExt;
    let mut x = vec![0u8; CHUNK];
    let mut y = vec![0u8; CHUNK];
    let (mut at, mut end, mut lines) = (0u64, 0u64, 0u64);
    while at < max {
        let want = usize::try_from(max - at).map_or(CHUNK, |n| n.min(CHUNK));
        let n = a.read_at(&mut x[..want], at).ok()?;
        let m = b.read_at(&mut y[..n], at).ok()?;
        if n == 0 || m == 0 {
            break;
        }
        let same = same_run(&x[..m], &y[..m]);
        let run = &x[..same];
        if let Some(last) = memchr::memrchr(b'\n', run) {
            lines += memchr::memchr_iter(b'\n', run).count() as u64;
            end = at + last as u64 + 1;
        }
        if same < n {
            break;
        }
        at += n as u64;
    }
    Some((end, lines))
}

/// Indexes the first `len` bytes of an open file, on several threads when
/// it is big, leaving a last line without its newline pending as
/// [`Indexer::push`] would: a whole file's first read, or a follower's
/// (`Tail`), which goes on from `len` with the same indexer.
pub fn index_prefix(file: &File, path: &Path, name: &str, len: u64) -> Result<Indexer> {
    index_from(file, path, Indexer::new(name, path), len)
}

/// Goes on with `seed` (which has read the file up to a line start) to
/// `len`, on several threads when the rest is big.
fn index_from(file: &File, path: &Path, seed: Indexer, len: u64) -> Result<Indexer> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let from = seed.index.bytes;
    let span = len.saturating_sub(from);
    if span < PARALLEL_MIN || threads < 2 {
        return index_range(seed, file, path, from, len);
    }
    let mut bounds = vec![from];
    for k in 1..threads as u64 {
        let at = next_line_start(file, from + k * span / threads as u64, len)
            .map_err(|e| Error::io(path, e))?
            .unwrap_or(len);
        if at > *bounds.last().unwrap_or(&from) && at < len {
            bounds.push(at);
        }
    }
    bounds.push(len);
    let name = seed.index.name.clone();
    let failed = || Error::Other(format!("{}: indexing thread failed", path.display()));
    // The first piece goes on in the seed itself (its records grow in
    // place); the others are indexed on their own and moved after it.
    let (first, parts): (Result<Indexer>, Vec<Result<Indexer>>) = std::thread::scope(|scope| {
        let name = name.as_str();
        let handles: Vec<_> = bounds[1..]
            .windows(2)
            .map(|w| {
                let (start, end) = (w[0], w[1]);
                scope.spawn(move || index_range(Indexer::new(name, path), file, path, start, end))
            })
            .collect();
        let first = index_range(seed, file, path, from, bounds[1]);
        let parts = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(failed())))
            .collect();
        (first, parts)
    });
    let mut merged = first?;
    // One allocation of the final size: growing by doubling would hold up to
    // three copies of the index at the peak.
    // A sixteenth more (allocated, untouched) lets a live follower append a
    // while before its first move to a bigger buffer.
    let have = merged.index.records.len();
    let total = have
        + parts
            .iter()
            .flatten()
            .map(|p| p.index.records.len())
            .sum::<usize>();
    merged
        .index
        .records
        .reserve_exact(total + total / 16 - have);
    for (part, &start) in parts.into_iter().zip(&bounds[1..]) {
        merged.append(part?, start);
    }
    Ok(merged)
}

/// Runs `second` on a thread of its own while `first` runs here (a file's
/// two halves read at once): the first half's error, else the second's,
/// or one saying the second half panicked.
pub fn in_two_halves(
    first: impl FnOnce() -> Result<()>,
    second: impl FnOnce() -> Result<()> + Send,
) -> Result<()> {
    let (a, b) = std::thread::scope(|t| {
        let h = t.spawn(second);
        let a = first();
        let b = h
            .join()
            .unwrap_or_else(|_| Err(Error::Other("reading a half panicked".into())));
        (a, b)
    });
    a?;
    b
}

/// The start of the first line after byte `at`, if one starts before
/// `len`: where a file read in pieces (one per thread) is cut.
pub fn next_line_start(file: &File, at: u64, len: u64) -> std::io::Result<Option<u64>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 64 << 10];
    let mut pos = at;
    while pos < len {
        let want = buf.len().min((len - pos) as usize);
        let n = file.read_at(&mut buf[..want], pos)?;
        if n == 0 {
            break;
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            let cut = pos + i as u64 + 1;
            return Ok((cut < len).then_some(cut));
        }
        pos += n as u64;
    }
    Ok(None)
}

/// Bytes `from..to` of `file` in positional reads of at most `chunk` bytes
/// (threads reading pieces of one file share its descriptor), each handed
/// to `f` as it is read. Returns how many bytes were read: fewer than asked
/// when the file ended first.
pub fn read_range(
    file: &File,
    from: u64,
    to: u64,
    chunk: usize,
    mut f: impl FnMut(&[u8]),
) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; chunk];
    let mut at = from;
    while at < to {
        let want = usize::try_from(to - at).map_or(chunk, |n| n.min(chunk));
        let n = file.read_at(&mut buf[..want], at)?;
        if n == 0 {
            break;
        }
        f(&buf[..n]);
        at += n as u64;
    }
    Ok(at - from)
}

/// Feeds bytes `start..end` of a file to `ix` (offsets in it count from
/// where `ix` stands: `start` for a seed that read the file so far, 0 for a
/// piece to be appended); a last line without its newline stays pending
/// for the caller to finish.
fn index_range(mut ix: Indexer, file: &File, path: &Path, start: u64, end: u64) -> Result<Indexer> {
    read_range(file, start, end, CHUNK, |b| {
        ix.push(b);
    })
    .map_err(|e| Error::io(path, e))?;
    Ok(ix)
}

/// Lines longer than this are not compared by value (see
/// [`same_record_on_disk`]): a shared record kimi-cli rewrote is a short one.
const VALUE_COMPARE_MAX: u32 = 1 << 20;

/// Record `i` of `a` and record `j` of `b` differ in text (their hashes) but
/// may be the same record as kimi-cli's Python reads them: a repeated key,
/// another spelling of a string or number. Reads both lines from disk and
/// compares the parsed values; `false` when a line cannot be read, has
/// changed on disk since it was indexed, or is over 1 MiB.
pub fn same_record_on_disk(a: &FileIndex, i: usize, b: &FileIndex, j: usize) -> bool {
    let (Some(ra), Some(rb)) = (a.records.get(i), b.records.get(j)) else {
        return false;
    };
    if ra.role() != rb.role() || ra.len() > VALUE_COMPARE_MAX || rb.len() > VALUE_COMPARE_MAX {
        return false;
    }
    let read = |f: &FileIndex, r: &RecordMeta| {
        load_line(&f.path, r)
            .ok()
            .filter(|l| canonical_hash(l) == r.hash())
    };
    match (read(a, ra), read(b, rb)) {
        (Some(x), Some(y)) => hash::same_parsed(&x, &y),
        _ => false,
    }
}

/// Reads one record's line from disk.
pub fn load_line(path: &Path, meta: &RecordMeta) -> Result<Vec<u8>> {
    load_line_head(path, meta, usize::MAX)
}

/// Reads at most `max` bytes of one record's line: enough to preview a
/// record too big to parse on a keypress.
pub fn load_line_head(path: &Path, meta: &RecordMeta, max: usize) -> Result<Vec<u8>> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    file.seek(SeekFrom::Start(meta.offset()))
        .map_err(|e| Error::io(path, e))?;
    let len = usize::try_from(meta.len())
        .map_err(|_| Error::Other(format!("{}: line too long", path.display())))?
        .min(max);
    let mut line = vec![0u8; len];
    file.read_exact(&mut line).map_err(|e| Error::io(path, e))?;
    Ok(line)
}

/// Loads and parses one record's body. A line that changed on disk since it
/// was indexed is reported, not trusted.
pub fn load_body(path: &Path, meta: &RecordMeta) -> Result<Body> {
    let line = load_line(path, meta)?;
    if canonical_hash(&line) != meta.hash() {
        return Err(Error::Other(format!(
            "{}:{}: the line changed on disk since it was read",
            path.display(),
            meta.line()
        )));
    }
    let value = lenient::parse_value(&line)
        .map_err(|e| Error::Other(format!("{}:{}: {e}", path.display(), meta.line())))?;
    Ok(Body::from_value(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_bytes(chunks: &[&[u8]]) -> FileIndex {
        let mut ix = Indexer::new("context.jsonl", "/nowhere");
        for c in chunks {
            ix.push(c);
        }
        ix.finish();
        ix.into_index()
    }

    #[test]
    fn lines_split_across_chunks_and_crlf() {
        let whole = index_bytes(&[
            b"{\"role\":\"user\",\"content\":\"hi\"}\r\n\n{\"role\": \"_checkpoint\", \"id\": 0}",
        ]);
        let split = index_bytes(&[
            b"{\"role\":\"us",
            b"er\",\"content\":\"hi\"}\r",
            b"\n\n{\"role\": \"_check",
            b"point\", \"id\": 0}",
        ]);
        assert_eq!(whole, split);
        assert_eq!(whole.records.len(), 2);
        assert_eq!(whole.records[1].line(), 3);
        assert_eq!(whole.records[0].len(), 30);
        assert_eq!(whole.records[1].checkpoint(), Some(0));
    }

    #[test]
    fn malformed_lines_warn_with_line_numbers() {
        let ix = index_bytes(&[
            b"{\"role\":\"user\",\"content\":\"a\"}\nnot json\n[1]\n{\"content\":1}\n",
        ]);
        assert_eq!(ix.records.len(), 1);
        let lines: Vec<u64> = ix.warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, vec![2, 3, 4]);
    }

    /// A parent file and a child made from it by `edit`: the child indexed
    /// after its parent equals it indexed alone; returns how many of the
    /// parent's records were taken as they were.
    fn reuse_case(parent: &[u8], child: &[u8]) -> usize {
        let dir = tempfile::tempdir().unwrap();
        let (pp, cp) = (
            dir.path().join("context_1.jsonl"),
            dir.path().join("context.jsonl"),
        );
        std::fs::write(&pp, parent).unwrap();
        std::fs::write(&cp, child).unwrap();
        let p = index_file(&pp, "context_1.jsonl").unwrap();
        let alone = index_file(&cp, "context.jsonl").unwrap();
        assert_eq!(index_file_after(&cp, "context.jsonl", &p).unwrap(), alone);
        let g = guard::open_regular(&cp).unwrap();
        reuse_prefix(&g.file, g.len, "context.jsonl", &cp, &p)
            .map_or(0, |ix| ix.index.records.len())
    }

    fn family_lines(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..n {
            let line = match i % 6 {
                0 => format!("{{\"role\": \"_checkpoint\", \"id\": {}}}\n", i / 6),
                1 => format!("{{\"role\": \"user\", \"content\": \"<system>CHECKPOINT {}</system>\"}}\n", i / 6),
                2 => "not json\n".to_string(),
                3 => "\r\n".to_string(),
                4 => format!("{{\"role\":\"assistant\",\"content\":\"a{i}\",\"tool_calls\":[{{\"type\":\"function\",\"id\":\"c{i}\",\"function\":{{\"name\":\"Shell\",\"arguments\":\"{{}}\"}}}}]}}\r\n"),
                _ => format!("{{\"role\": \"tool\", \"content\": \"out\", \"tool_call_id\": \"c{}\"}}\n", i - 1),
            };
            out.extend_from_slice(line.as_bytes());
        }
        out
    }

    #[test]
    fn an_identical_copy_takes_every_record_but_an_unfinished_last_line() {
        let parent = family_lines(60);
        let records = index_bytes(&[&parent]).records.len();
        assert_eq!(reuse_case(&parent, &parent), records);
        let mut open = parent.clone();
        open.extend_from_slice(b"{\"role\": \"user\", \"content\": \"x\"}");
        // The parent's last line has no newline: the child may go on with it.
        let mut child = open.clone();
        child.extend_from_slice(b"yz\n");
        assert_eq!(reuse_case(&open, &child), records);
    }

    #[test]
    fn a_longer_copy_is_indexed_on_from_its_parents_end() {
        let parent = family_lines(60);
        let child = family_lines(200);
        assert_eq!(
            reuse_case(&parent, &child),
            index_bytes(&[&parent]).records.len()
        );
        assert_eq!(reuse_case(&[], &child), 0);
    }

    #[test]
    fn a_truncated_copy_takes_its_whole_lines_only() {
        let parent = family_lines(120);
        let cut = parent.len() / 2;
        let child = &parent[..cut];
        let whole = &child[..=memchr::memrchr(b'\n', child).unwrap()];
        assert_eq!(
            reuse_case(&parent, child),
            index_bytes(&[whole]).records.len()
        );
        assert_eq!(
            reuse_case(child, &parent),
            index_bytes(&[whole]).records.len()
        );
    }

    /// A record respelled in the copy (kimi-cli writes other spacing or key
    /// order) ends what is taken; it and the rest are indexed.
    #[test]
    fn a_respelled_record_ends_the_reused_prefix() {
        let parent = family_lines(60);
        let text = String::from_utf8(parent.clone()).unwrap();
        let child = text.replacen(
            "{\"role\": \"user\", \"content\": \"<system>CHECKPOINT 3</system>\"}",
            "{\"content\":\"<system>CHECKPOINT 3</system>\",\"role\":\"user\"}",
            1,
        );
        assert_ne!(child.as_bytes(), &parent[..]);
        let before = &text[..text
            .find("{\"role\": \"user\", \"content\": \"<system>CHECKPOINT 3")
            .unwrap()];
        assert_eq!(
            reuse_case(&parent, child.as_bytes()),
            index_bytes(&[before.as_bytes()]).records.len()
        );
    }

    /// A parent that changed on disk after it was indexed is not trusted.
    #[test]
    fn a_parent_rewritten_since_indexed_is_not_reused() {
        let dir = tempfile::tempdir().unwrap();
        let (pp, cp) = (
            dir.path().join("context_1.jsonl"),
            dir.path().join("context.jsonl"),
        );
        let text = family_lines(30);
        std::fs::write(&pp, &text).unwrap();
        let p = index_file(&pp, "context_1.jsonl").unwrap();
        let other = String::from_utf8(text)
            .unwrap()
            .replace("\"out\"", "\"OUT\"");
        std::fs::write(&pp, &other).unwrap();
        std::fs::write(&cp, &other).unwrap();
        let g = guard::open_regular(&cp).unwrap();
        assert!(reuse_prefix(&g.file, g.len, "context.jsonl", &cp, &p).is_none());
        assert_eq!(
            index_file_after(&cp, "context.jsonl", &p).unwrap(),
            index_file(&cp, "context.jsonl").unwrap()
        );
    }

    #[test]
    fn parallel_indexing_equals_one_pass() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("context.jsonl");
        let mut data = Vec::new();
        let mut i = 0;
        while data.len() < (PARALLEL_MIN as usize) + (8 << 20) {
            let filler = "x".repeat((i * 7919) % 30_000);
            let line = match i % 5 {
                0 => format!("{{\"role\": \"_checkpoint\", \"id\": {i}}}\n"),
                1 => "garbage line\n".to_string(),
                2 => "\n".to_string(),
                _ => format!("{{\"role\":\"user\",\"content\":\"{filler}\"}}\r\n"),
            };
            data.extend_from_slice(line.as_bytes());
            i += 1;
        }
        data.extend_from_slice(b"{\"role\":\"user\",\"content\":\"no newline\"}");
        std::fs::write(&path, &data).unwrap();
        let fast = index_file(&path, "context.jsonl").unwrap();
        let mut one = Indexer::new("context.jsonl", &path);
        one.push(&data);
        one.finish();
        assert_eq!(fast, one.into_index());
    }
}
