//! Incremental reading of a file that is still being written: reads from the
//! last offset, holds back a half-written last line, and notices truncation
//! (size shrank) and replacement (a new inode) by starting over.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{FileIndex, Indexer};
use crate::error::{Error, Result};

/// What one `poll` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailChange {
    Unchanged,
    /// New complete records were added at the end (the count).
    Appended(usize),
    /// The file was truncated or replaced; the index was rebuilt from scratch.
    Reset,
    /// The file is gone; the index keeps what was read.
    Missing,
}

#[derive(Debug, Clone)]
pub struct Tail {
    path: PathBuf,
    indexer: Indexer,
    /// Bytes of the file read so far (including a held-back partial line).
    read_to: u64,
    file_id: Option<(u64, u64)>,
}

const CHUNK: usize = 1 << 20;

impl Tail {
    pub fn new(path: impl Into<PathBuf>, name: impl Into<String>) -> Self {
        let path = path.into();
        Tail {
            indexer: Indexer::new(name, path.clone()),
            path,
            read_to: 0,
            file_id: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn index(&self) -> &FileIndex {
        self.indexer.index()
    }

    /// The file was renamed (a rotation): keep what was read, follow the new path.
    pub fn rename(&mut self, path: impl Into<PathBuf>, name: impl Into<String>) {
        self.path = path.into();
        self.indexer.rename(&name.into(), &self.path);
    }

    /// Reads whatever is new. A half-written last line stays pending.
    pub fn poll(&mut self) -> Result<TailChange> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TailChange::Missing),
            Err(e) => return Err(Error::io(&self.path, e)),
        };
        let id = (meta.dev(), meta.ino());
        let mut reset = false;
        if self.file_id.is_some_and(|old| old != id) || meta.len() < self.read_to {
            let name = self.indexer.index().name.clone();
            self.indexer = Indexer::new(name, self.path.clone());
            self.read_to = 0;
            reset = true;
        }
        self.file_id = Some(id);
        if meta.len() == self.read_to {
            return Ok(if reset {
                TailChange::Reset
            } else {
                TailChange::Unchanged
            });
        }
        let mut file = File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        file.seek(SeekFrom::Start(self.read_to))
            .map_err(|e| Error::io(&self.path, e))?;
        let mut added = 0;
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = file.read(&mut buf).map_err(|e| Error::io(&self.path, e))?;
            if n == 0 {
                break;
            }
            self.read_to += n as u64;
            added += self.indexer.push(&buf[..n]);
        }
        Ok(if reset {
            TailChange::Reset
        } else if added > 0 {
            TailChange::Appended(added)
        } else {
            TailChange::Unchanged
        })
    }

    /// Bytes of a half-written last line waiting for its end.
    pub fn pending_len(&self) -> usize {
        self.indexer.pending_len()
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
        assert_eq!(tail.index().records[1].line, 2);
        f.set_len(0).unwrap();
        assert_eq!(tail.poll().unwrap(), TailChange::Reset);
        assert!(tail.index().records.is_empty());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(tail.poll().unwrap(), TailChange::Missing);
    }
}
