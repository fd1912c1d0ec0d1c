//! Following a session of any registered source that has no follower of
//! its own: the files and directories the source names
//! ([`Source::live_paths`]) are stamped (size, time, inode) each batch; when
//! a stamp changes the session is read again through its source and the
//! snapshot built from the previous one. Correct for every format, O(session)
//! per change: a source that needs appends to cost O(appended) brings a
//! follower of its own.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::state::Refresh;
use crate::sources::{Reading, Source};
use crate::worldline::Session;

type Stamp = (PathBuf, u64, Option<SystemTime>, u64);

/// How deep a watched directory is looked into (Claude Code keeps a
/// session's subagents at `<id>/subagents/agent-*.jsonl`).
const DEPTH: usize = 3;
/// Entries stamped per watched directory at most: a huge folder must not
/// make every batch slow.
const MAX_ENTRIES: usize = 4096;

pub struct GenericState {
    path: PathBuf,
    source: &'static dyn Source,
    stamps: Vec<Stamp>,
    dirs: Vec<PathBuf>,
    /// Parts read in the last refresh, not yet built.
    pending: Option<crate::sources::SessionParts>,
    prev: Option<Arc<Session>>,
    /// What the source kept from its last read.
    kept: crate::sources::LiveState,
}

impl GenericState {
    pub fn new(path: &Path, source: &'static dyn Source) -> GenericState {
        GenericState {
            path: path.to_path_buf(),
            source,
            stamps: Vec::new(),
            dirs: Vec::new(),
            pending: None,
            prev: None,
            kept: None,
        }
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    pub fn refresh(&mut self, _now: Instant, errors: &mut Vec<String>) -> Refresh {
        if !self.path.exists() {
            return Refresh {
                changed: false,
                deleted: true,
            };
        }
        let mut stamps = Vec::new();
        let mut dirs = Vec::new();
        for p in self.source.live_paths(&self.path) {
            stamp_tree(&p, DEPTH, &mut stamps, &mut dirs);
        }
        stamps.sort();
        dirs.sort();
        dirs.dedup();
        self.dirs = dirs;
        if stamps == self.stamps && self.prev.is_some() {
            return Refresh {
                changed: false,
                deleted: false,
            };
        }
        self.stamps = stamps;
        match self
            .source
            .parts_live(&self.path, Reading::default(), &mut self.kept)
        {
            Ok(parts) => {
                self.pending = Some(parts);
                Refresh {
                    changed: true,
                    deleted: false,
                }
            }
            Err(e) => {
                errors.push(e.to_string());
                Refresh {
                    changed: false,
                    deleted: false,
                }
            }
        }
    }

    pub fn snapshot(&mut self) -> Option<Arc<Session>> {
        if let Some(parts) = self.pending.take() {
            let s = Arc::new(Session::build_from(parts, self.prev.as_deref()));
            self.prev = Some(s);
        }
        self.prev.clone()
    }

    pub fn snapshot_and_full(&mut self) -> Option<(Arc<Session>, Session)> {
        let parts = self.pending.take()?;
        let full = Session::build(parts.clone());
        let s = Arc::new(Session::build_from(parts, self.prev.as_deref()));
        self.prev = Some(s.clone());
        Some((s, full))
    }
}

/// Stamps `p` and, for a directory, what is inside it down to `depth`;
/// directories go to `dirs` (to be watched), a file's to its parent.
fn stamp_tree(p: &Path, depth: usize, stamps: &mut Vec<Stamp>, dirs: &mut Vec<PathBuf>) {
    let Ok(m) = std::fs::symlink_metadata(p) else {
        if let Some(parent) = p.parent() {
            dirs.push(parent.to_path_buf());
        }
        return;
    };
    if m.is_dir() {
        dirs.push(p.to_path_buf());
        if depth == 0 {
            return;
        }
        let Ok(entries) = std::fs::read_dir(p) else {
            return;
        };
        for e in entries.flatten().take(MAX_ENTRIES) {
            stamp_tree(&e.path(), depth - 1, stamps, dirs);
        }
    } else {
        if let Some(parent) = p.parent() {
            dirs.push(parent.to_path_buf());
        }
        stamps.push((p.to_path_buf(), m.len(), m.modified().ok(), m.ino()));
    }
}
