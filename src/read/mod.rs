//! Reading context files: line scanning, lenient parsing and the per-record
//! index. Memory follows the number of records, not bytes: bodies stay on
//! disk and load on demand.

mod hash;
pub mod head;
pub mod lenient;
mod tail;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub use hash::canonical_hash;
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
    pub records: Vec<RecordMeta>,
    pub warnings: Vec<Warning>,
    /// Bytes consumed: every complete line (and the last one at EOF).
    pub bytes: u64,
}

impl FileIndex {
    pub fn checkpoints(&self) -> usize {
        self.records
            .iter()
            .filter(|r| r.checkpoint.is_some())
            .count()
    }
}

/// Turns bytes into records incrementally: feed chunks in order; a line split
/// across chunks waits until its end arrives.
#[derive(Debug, Clone, Default)]
pub struct Indexer {
    index: FileIndex,
    /// Start of a line whose end hasn't arrived yet.
    pending: Vec<u8>,
    line_no: u64,
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
            line_no: 0,
        }
    }

    /// Feeds the next bytes of the file. Returns how many records were added.
    pub fn push(&mut self, mut chunk: &[u8]) -> usize {
        let before = self.index.records.len();
        if !self.pending.is_empty() {
            match memchr::memchr(b'\n', chunk) {
                Some(nl) => {
                    let mut line = std::mem::take(&mut self.pending);
                    line.extend_from_slice(&chunk[..nl]);
                    self.add_line(&line, 1);
                    chunk = &chunk[nl + 1..];
                }
                None => {
                    self.pending.extend_from_slice(chunk);
                    return 0;
                }
            }
        }
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', chunk) {
            self.add_line(&chunk[start..nl], 1);
            start = nl + 1;
        }
        self.pending.extend_from_slice(&chunk[start..]);
        self.index.records.len() - before
    }

    /// The file ended: a last line without a newline is a line too.
    pub fn finish(&mut self) -> usize {
        if self.pending.is_empty() {
            return 0;
        }
        let line = std::mem::take(&mut self.pending);
        let before = self.index.records.len();
        self.add_line(&line, 0);
        self.index.records.len() - before
    }

    /// Bytes of an incomplete last line held back.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
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
        match head::read_head(line) {
            Ok(h) => self.index.records.push(RecordMeta {
                offset,
                len: line.len() as u64,
                line: self.line_no,
                role: h.role,
                hash: canonical_hash(line),
                checkpoint: h.checkpoint,
                tokens: h.tokens,
                tool_calls: h.tool_calls,
                tool_call_id: h.tool_call_id,
                marker: h.marker,
            }),
            Err(message) => self.index.warnings.push(Warning {
                file: self.index.name.clone(),
                line: self.line_no,
                message: format!("skipped malformed line: {message}"),
            }),
        }
    }
}

const CHUNK: usize = 1 << 20;

/// Indexes a whole file. `name` is how warnings and exports call it.
pub fn index_file(path: &Path, name: &str) -> Result<FileIndex> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut indexer = Indexer::new(name, path);
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        indexer.push(&buf[..n]);
    }
    indexer.finish();
    Ok(indexer.into_index())
}

/// Reads one record's line from disk.
pub fn load_line(path: &Path, meta: &RecordMeta) -> Result<Vec<u8>> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    file.seek(SeekFrom::Start(meta.offset))
        .map_err(|e| Error::io(path, e))?;
    let len = usize::try_from(meta.len)
        .map_err(|_| Error::Other(format!("{}: line too long", path.display())))?;
    let mut line = vec![0u8; len];
    file.read_exact(&mut line).map_err(|e| Error::io(path, e))?;
    Ok(line)
}

/// Loads and parses one record's body. A line that changed on disk since it
/// was indexed is reported, not trusted.
pub fn load_body(path: &Path, meta: &RecordMeta) -> Result<Body> {
    let line = load_line(path, meta)?;
    if canonical_hash(&line) != meta.hash {
        return Err(Error::Other(format!(
            "{}:{}: the line changed on disk since it was read",
            path.display(),
            meta.line
        )));
    }
    let value = lenient::parse_value(&line)
        .map_err(|e| Error::Other(format!("{}:{}: {e}", path.display(), meta.line)))?;
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
        assert_eq!(whole.records[1].line, 3);
        assert_eq!(whole.records[0].len, 30);
        assert_eq!(whole.records[1].checkpoint, Some(0));
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
}
