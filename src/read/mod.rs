//! Reading context files: line scanning, lenient parsing and the per-record
//! index. Memory follows the number of records, not bytes: bodies stay on
//! disk and load on demand.

pub mod guard;
mod hash;
pub mod head;
pub mod lenient;
mod records;
pub mod scan;
mod stream;
mod tail;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub use hash::canonical_hash;
pub use records::Records;
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
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(w);
        } else {
            self.dropped_warnings += 1;
        }
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

const CHUNK: usize = 1 << 20;
/// Files at least this big are split at line boundaries and indexed on
/// several threads; smaller ones aren't worth a thread.
pub(crate) const PARALLEL_MIN: u64 = 32 << 20;

/// Indexes a whole file (as long as it is when opened). `name` is how
/// warnings and exports call it.
pub fn index_file(path: &Path, name: &str) -> Result<FileIndex> {
    let guard::Guarded { file, len } = guard::open_regular(path).map_err(|e| match e {
        guard::GuardError::NotFound => Error::NotFound {
            path: path.to_owned(),
        },
        guard::GuardError::Io(e) => Error::io(path, e),
        other => Error::Other(format!("{}: {other}", path.display())),
    })?;
    let mut ix = index_prefix(&file, path, name, len)?;
    ix.finish();
    Ok(ix.into_index())
}

/// Indexes the first `len` bytes of an open file, on several threads when
/// it is big, leaving a last line without its newline pending as
/// [`Indexer::push`] would: a whole file's first read, or a follower's
/// (`Tail`), which goes on from `len` with the same indexer.
pub fn index_prefix(file: &File, path: &Path, name: &str, len: u64) -> Result<Indexer> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    if len < PARALLEL_MIN || threads < 2 {
        return index_range(file, path, name, 0, len);
    }
    let mut bounds = vec![0];
    for k in 1..threads as u64 {
        let at = next_line_start(file, path, k * len / threads as u64, len)?;
        if at > *bounds.last().unwrap_or(&0) && at < len {
            bounds.push(at);
        }
    }
    bounds.push(len);
    let parts: Vec<Result<Indexer>> = std::thread::scope(|scope| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| {
                let (start, end) = (w[0], w[1]);
                scope.spawn(move || index_range(file, path, name, start, end))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::Other(format!(
                        "{}: indexing thread failed",
                        path.display()
                    )))
                })
            })
            .collect()
    });
    let mut merged = Indexer::new(name, path);
    // One allocation of the final size: growing by doubling would hold up to
    // three copies of the index at the peak.
    // A sixteenth more (allocated, untouched) lets a live follower append a
    // while before its first move to a bigger buffer.
    let total: usize = parts.iter().flatten().map(|p| p.index.records.len()).sum();
    merged.index.records.reserve_exact(total + total / 16);
    for (part, &start) in parts.into_iter().zip(&bounds) {
        merged.append(part?, start);
    }
    Ok(merged)
}

/// The offset just past the first newline at or after `from` (or `len`).
fn next_line_start(file: &File, path: &Path, mut from: u64, len: u64) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 64 << 10];
    while from < len {
        let n = file
            .read_at(&mut buf, from)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        if let Some(k) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok(from + k as u64 + 1);
        }
        from += n as u64;
    }
    Ok(len)
}

/// Indexes bytes `start..end` of a file; a last line without its newline
/// stays pending for the caller to finish.
fn index_range(file: &File, path: &Path, name: &str, start: u64, end: u64) -> Result<Indexer> {
    use std::os::unix::fs::FileExt;
    let mut ix = Indexer::new(name, path);
    let mut buf = vec![0u8; CHUNK];
    let mut at = start;
    while at < end {
        let want = usize::try_from(end - at).map_or(CHUNK, |n| n.min(CHUNK));
        let n = file
            .read_at(&mut buf[..want], at)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        ix.push(&buf[..n]);
        at += n as u64;
    }
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
