//! Following a session as it is written, per source: what a refresh found
//! ([`Refresh`]), the [`Follower`] trait every source's follower implements
//! (read new bytes, say whether anything changed, hand over the parts so
//! far), and [`Rereader`], the follower of a source without one of its own:
//! it stamps the paths the source names and reads the session again when a
//! stamp changes. `crate::live` owns the thread, the watcher and building
//! snapshots; nothing here knows a terminal or a graph.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use super::{Reading, SessionParts, Source};

/// What a refresh found, for the follower loop.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Refresh {
    /// Something a snapshot shows changed.
    pub changed: bool,
    /// The session is gone.
    pub deleted: bool,
}

impl Refresh {
    /// The session is gone.
    pub fn deleted() -> Refresh {
        Refresh {
            changed: false,
            deleted: true,
        }
    }
}

/// Stamps of `paths` (each a file, or a directory looked into `depth`
/// levels; 0: its files only) in order, and the directories a watcher
/// should cover.
pub fn stamps_of(paths: Vec<PathBuf>, depth: usize) -> (Vec<Stamp>, Vec<PathBuf>) {
    let mut stamps = Vec::new();
    let mut dirs = Vec::new();
    for p in paths {
        match depth {
            0 => stamp(&p, &mut stamps, &mut dirs),
            d => stamp_tree(&p, d, &mut stamps, &mut dirs),
        }
    }
    stamps.sort();
    dirs.sort();
    dirs.dedup();
    (stamps, dirs)
}

/// What a refresh that read the session made: `Ok` becomes the latest
/// parts (changed), an error goes to `errors` (following goes on, the
/// last parts stay).
pub fn refreshed<T, E: std::fmt::Display>(
    latest: &mut Option<T>,
    made: Result<T, E>,
    errors: &mut Vec<String>,
) -> Refresh {
    match made {
        Ok(p) => {
            *latest = Some(p);
            Refresh {
                changed: true,
                deleted: false,
            }
        }
        Err(e) => {
            errors.push(e.to_string());
            Refresh::default()
        }
    }
}

/// A source's reader of one live session.
pub trait Follower: Send {
    /// Reads what was added since the last refresh; problems go to
    /// `errors` (following goes on).
    fn refresh(&mut self, now: Instant, errors: &mut Vec<String>) -> Refresh;

    /// `Some(t)`: the files are mid-change (a kimi-cli rotation): don't
    /// show them before `t`.
    fn settling_until(&self, _now: Instant) -> Option<Instant> {
        None
    }

    /// The session as read so far, and whether it must be built afresh
    /// rather than from the previous snapshot (a file was read again);
    /// `None` while there is nothing to show yet.
    fn parts(&mut self) -> Option<(SessionParts, bool)>;

    /// Directories a native watcher should cover.
    fn dirs(&self) -> &[PathBuf];
}

/// A file as last seen: path, size, modification time, inode.
pub type Stamp = (PathBuf, u64, Option<SystemTime>, u64);

/// How deep a watched directory is looked into (Claude Code keeps a
/// session's subagents at `<id>/subagents/agent-*.jsonl`).
const DEPTH: usize = 3;
/// Entries stamped per watched directory at most: a huge folder must not
/// make every batch slow.
const MAX_ENTRIES: usize = 4096;

/// Follows any source by reading the session again when one of its
/// [`Source::live_paths`] changes (size, time or inode). Correct for every
/// format, O(session) per change: a source whose appends must cost
/// O(appended) brings a follower of its own.
pub struct Rereader {
    path: PathBuf,
    source: &'static dyn Source,
    stamps: Vec<Stamp>,
    dirs: Vec<PathBuf>,
    /// Parts read in the last refresh that changed something.
    latest: Option<SessionParts>,
}

impl Rereader {
    pub fn new(path: &Path, source: &'static dyn Source) -> Rereader {
        Rereader {
            path: path.to_path_buf(),
            source,
            stamps: Vec::new(),
            dirs: Vec::new(),
            latest: None,
        }
    }
}

impl Follower for Rereader {
    fn refresh(&mut self, _now: Instant, errors: &mut Vec<String>) -> Refresh {
        if !self.path.exists() {
            return Refresh::deleted();
        }
        let (stamps, dirs) = stamps_of(self.source.live_paths(&self.path), DEPTH);
        self.dirs = dirs;
        if stamps == self.stamps && self.latest.is_some() {
            return Refresh::default();
        }
        self.stamps = stamps;
        let made = self.source.parts(&self.path, Reading::default());
        refreshed(&mut self.latest, made, errors)
    }

    fn parts(&mut self) -> Option<(SessionParts, bool)> {
        // Read anew: nothing of the previous snapshot is known to hold.
        self.latest.clone().map(|p| (p, true))
    }

    fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }
}

/// Stamps `p` and, for a directory, what is inside it down to `depth`;
/// directories go to `dirs` (to be watched), a file's parent too.
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

/// Stamps a file, or the files directly in a directory (a project folder,
/// a session's side folder, a day directory where files appear), and names
/// the directory a watcher should cover.
fn stamp(p: &Path, stamps: &mut Vec<Stamp>, dirs: &mut Vec<PathBuf>) {
    let Ok(m) = std::fs::symlink_metadata(p) else {
        dirs.extend(p.parent().map(Path::to_path_buf));
        return;
    };
    if m.is_dir() {
        dirs.push(p.to_path_buf());
        for e in std::fs::read_dir(p)
            .into_iter()
            .flatten()
            .flatten()
            .take(4096)
        {
            if let Ok(em) = e.metadata() {
                if em.is_file() {
                    stamps.push((e.path(), em.len(), em.modified().ok(), em.ino()));
                }
            }
        }
    } else {
        dirs.extend(p.parent().map(Path::to_path_buf));
        stamps.push((p.to_path_buf(), m.len(), m.modified().ok(), m.ino()));
    }
}
