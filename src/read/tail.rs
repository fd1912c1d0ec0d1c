//! Incremental reading of a file that is still being written: reads from the
//! last offset, holds back a half-written last line, and notices truncation
//! (size shrank) and replacement (a new inode) by starting over.
//!
//! `Follow<S>` owns the position and the file identity; a `Sink` turns the
//! new bytes into whatever the caller keeps (`Tail` = context records).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{FileIndex, Indexer};
use crate::error::{Error, Result};

/// `(device, inode)`: what a file is, whatever it is called now.
pub type FileId = (u64, u64);

/// What one `poll` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailChange {
    Unchanged,
    /// New complete records or warnings (lines, for other sinks) were added.
    Appended(usize),
    /// The file was truncated or replaced; the index was rebuilt from scratch.
    Reset,
    /// The file is gone; the index keeps what was read.
    Missing,
    /// Only from `poll_same_file`: another file now has this name. Nothing
    /// was read; the caller may find the old file under a new name.
    Replaced,
}

/// Receives a file's bytes in order.
pub trait Sink {
    /// Feeds the next bytes; returns how many complete items were added.
    fn push(&mut self, chunk: &[u8]) -> usize;
    /// The file starts over (truncated or replaced).
    fn reset(&mut self);
    /// A first read of `len` bytes, for sinks with a faster way than being
    /// fed chunks; `None`: feed chunks. Same outcome as pushing the bytes.
    fn read_start(&mut self, _file: &File, _path: &Path, _len: u64) -> Option<Result<usize>> {
        None
    }
}

impl Sink for Indexer {
    /// Counts warnings too: a malformed line is news to show.
    fn push(&mut self, chunk: &[u8]) -> usize {
        let seen = |ix: &FileIndex| ix.warnings.len() as u64 + ix.dropped_warnings;
        let warnings = seen(self.index());
        let records = Indexer::push(self, chunk);
        records + usize::try_from(seen(self.index()) - warnings).unwrap_or(usize::MAX)
    }

    fn reset(&mut self) {
        let ix = self.index();
        *self = Indexer::new(ix.name.clone(), ix.path.clone());
    }

    /// A big file is indexed on several cores, as a whole open does: a
    /// followed session is read once at the speed of `Session::load`.
    fn read_start(&mut self, file: &File, path: &Path, len: u64) -> Option<Result<usize>> {
        if len < super::PARALLEL_MIN || !self.index().records.is_empty() {
            return None;
        }
        let name = self.index().name.clone();
        Some(super::index_prefix(file, path, &name, len).map(|ix| {
            let n = ix.index().records.len() + ix.index().warnings.len();
            *self = ix;
            n
        }))
    }
}

/// A read position in one followed file.
#[derive(Debug, Clone)]
pub struct Follow<S> {
    path: PathBuf,
    sink: S,
    /// Bytes of the file read so far (including a held-back partial line).
    read_to: u64,
    file_id: Option<FileId>,
}

/// Follows a context file into a `FileIndex`.
pub type Tail = Follow<Indexer>;

const CHUNK: usize = 1 << 20;

impl<S: Sink> Follow<S> {
    pub fn with_sink(path: impl Into<PathBuf>, sink: S) -> Self {
        Follow {
            path: path.into(),
            sink,
            read_to: 0,
            file_id: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The identity of the file last read, once one was.
    pub fn file_id(&self) -> Option<FileId> {
        self.file_id
    }

    /// Bytes consumed from the file, a pending partial line included.
    pub fn read_to(&self) -> u64 {
        self.read_to
    }

    /// Reads whatever is new. A file replaced under the same name is read
    /// from the start.
    pub fn poll(&mut self) -> Result<TailChange> {
        self.poll_inner(true)
    }

    /// Like `poll`, but a different file under the same name is left alone
    /// (`Replaced`): during a rotation the old file lives on under another
    /// name and nothing it holds should be read again.
    pub fn poll_same_file(&mut self) -> Result<TailChange> {
        self.poll_inner(false)
    }

    fn poll_inner(&mut self, follow_replacement: bool) -> Result<TailChange> {
        // Fast path: one stat. Only a change in size or identity opens it.
        match std::fs::metadata(&self.path) {
            Ok(m) if Some((m.dev(), m.ino())) == self.file_id && m.len() == self.read_to => {
                return Ok(TailChange::Unchanged)
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TailChange::Missing),
            Err(e) => return Err(Error::io(&self.path, e)),
        }
        // The identity that counts is the one of the handle we read from,
        // so a rename between the stat and the open cannot mix two files.
        // Through the guard: a FIFO or device under a followed name must not
        // block the open or feed bytes without end.
        let mut file = match super::guard::open_regular(&self.path) {
            Ok(g) => g.file,
            Err(super::guard::GuardError::NotFound) => return Ok(TailChange::Missing),
            Err(super::guard::GuardError::Io(e)) => return Err(Error::io(&self.path, e)),
            Err(e) => return Err(Error::Other(format!("{}: {e}", self.path.display()))),
        };
        let meta = file.metadata().map_err(|e| Error::io(&self.path, e))?;
        let id = (meta.dev(), meta.ino());
        let replaced = self.file_id.is_some_and(|old| old != id);
        if replaced && !follow_replacement {
            return Ok(TailChange::Replaced);
        }
        let reset = replaced || meta.len() < self.read_to;
        if reset {
            self.sink.reset();
            self.read_to = 0;
        }
        self.file_id = Some(id);
        let mut added = 0;
        if self.read_to == 0 && meta.len() > 0 {
            if let Some(n) = self.sink.read_start(&file, &self.path, meta.len()) {
                added = n?;
                self.read_to = meta.len();
            }
        }
        if meta.len() > self.read_to {
            added += self.read_from(&mut file, meta.len())?;
        }
        Ok(if reset {
            TailChange::Reset
        } else if added > 0 {
            TailChange::Appended(added)
        } else {
            TailChange::Unchanged
        })
    }

    /// Reads to the end of the file (which may have grown since `len`).
    fn read_from(&mut self, file: &mut File, len: u64) -> Result<usize> {
        file.seek(SeekFrom::Start(self.read_to))
            .map_err(|e| Error::io(&self.path, e))?;
        let want = usize::try_from(len - self.read_to).unwrap_or(CHUNK);
        let mut buf = vec![0u8; want.clamp(4096, CHUNK)];
        let mut added = 0;
        loop {
            let n = file.read(&mut buf).map_err(|e| Error::io(&self.path, e))?;
            if n == 0 {
                return Ok(added);
            }
            self.read_to += n as u64;
            added += self.sink.push(&buf[..n]);
        }
    }
}

impl Tail {
    pub fn new(path: impl Into<PathBuf>, name: impl Into<String>) -> Self {
        let path = path.into();
        let indexer = Indexer::new(name, path.clone());
        Follow::with_sink(path, indexer)
    }

    pub fn index(&self) -> &FileIndex {
        self.sink.index()
    }

    /// The file was renamed (a rotation): keep what was read, follow the new path.
    pub fn rename(&mut self, path: impl Into<PathBuf>, name: impl Into<String>) {
        self.path = path.into();
        self.sink.rename(&name.into(), &self.path);
    }

    /// Bytes of a half-written last line waiting for its end.
    pub fn pending_len(&self) -> usize {
        self.sink.pending_len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn follows_appends_partial_lines_and_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("context.jsonl");
        let mut f = File::create(&path).unwrap();
        let mut tail = Tail::new(&path, "context.jsonl");
        assert_eq!(tail.poll().unwrap(), TailChange::Unchanged);
        f.write_all(b"{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"us")
            .unwrap();
        assert_eq!(tail.poll().unwrap(), TailChange::Appended(1));
        assert!(tail.pending_len() > 0);
        f.write_all(b"er\",\"content\":\"b\"}\n").unwrap();
        assert_eq!(tail.poll().unwrap(), TailChange::Appended(1));
        assert_eq!(tail.index().records[1].line(), 2);
        f.set_len(0).unwrap();
        assert_eq!(tail.poll().unwrap(), TailChange::Reset);
        assert!(tail.index().records.is_empty());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(tail.poll().unwrap(), TailChange::Missing);
    }

    #[test]
    fn a_big_file_read_in_parallel_at_first_then_followed_equals_one_pass() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("context.jsonl");
        let mut data = Vec::new();
        let mut i = 0;
        while data.len() < (crate::read::PARALLEL_MIN as usize) + (4 << 20) {
            let line = match i % 4 {
                0 => format!("{{\"role\": \"_checkpoint\", \"id\": {i}}}\n"),
                1 => "garbage line\n".to_string(),
                _ => format!(
                    "{{\"role\":\"user\",\"content\":\"{}\"}}\n",
                    "y".repeat(i % 900)
                ),
            };
            data.extend_from_slice(line.as_bytes());
            i += 1;
        }
        // The first read ends inside a line: it must stay pending.
        let (first, rest) = (
            b"{\"role\":\"user\",\"con",
            b"tent\":\"b\"}\n{\"role\":\"user\"}\n",
        );
        data.extend_from_slice(first);
        std::fs::write(&path, &data).unwrap();
        let mut tail = Tail::new(&path, "context.jsonl");
        assert!(matches!(tail.poll().unwrap(), TailChange::Appended(_)));
        assert_eq!(tail.read_to(), data.len() as u64);
        assert_eq!(tail.pending_len(), first.len());
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(rest).unwrap();
        data.extend_from_slice(rest);
        assert_eq!(tail.poll().unwrap(), TailChange::Appended(2));
        let mut one = Indexer::new("context.jsonl", &path);
        one.push(&data);
        assert_eq!(tail.index(), one.index());
    }

    #[test]
    fn a_renamed_file_is_followed_and_a_new_one_is_not_mixed_in() {
        let dir = tempfile::tempdir().unwrap();
        let cur = dir.path().join("context.jsonl");
        let old = dir.path().join("context_1.jsonl");
        std::fs::write(&cur, b"{\"role\":\"user\",\"content\":\"a\"}\n").unwrap();
        let mut tail = Tail::new(&cur, "context.jsonl");
        assert_eq!(tail.poll().unwrap(), TailChange::Appended(1));
        std::fs::rename(&cur, &old).unwrap();
        std::fs::write(&cur, b"{\"role\":\"user\",\"content\":\"b\"}\n").unwrap();
        assert_eq!(tail.poll_same_file().unwrap(), TailChange::Replaced);
        assert_eq!(tail.index().records.len(), 1);
        tail.rename(&old, "context_1.jsonl");
        assert_eq!(tail.poll_same_file().unwrap(), TailChange::Unchanged);
        assert_eq!(tail.index().name, "context_1.jsonl");
        // Replaced in place: `poll` starts over.
        let mut t2 = Tail::new(&cur, "context.jsonl");
        t2.poll().unwrap();
        // Written aside and renamed over, so both inodes exist at once and
        // cannot be the same number.
        let tmp = dir.path().join("tmp");
        std::fs::write(&tmp, b"{\"role\":\"user\",\"content\":\"c\"}\n").unwrap();
        std::fs::rename(&tmp, &cur).unwrap();
        assert_eq!(t2.poll().unwrap(), TailChange::Reset);
        assert_eq!(t2.index().records.len(), 1);
    }
}
