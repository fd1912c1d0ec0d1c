//! Following a Codex thread live: like the generic re-reader (stamp the
//! paths `live_paths` names, read again when one changes), but the
//! thread's own rollout files are kept indexed between refreshes and only
//! their new bytes are parsed, so an append costs its own bytes to read
//! plus rebuilding the world lines from the index (no parsing of the
//! thread's past). A file that shrank or was replaced (another inode) is
//! read again from its start.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::rollout::{Feeder, Rollout};
use super::{generations_of, home, parts};
use crate::sources::follow::{stamps_of, Follower, Refresh, Stamp};
use crate::sources::SessionParts;

/// One rollout file as read so far.
struct Kept {
    ino: u64,
    rollout: Rollout,
    feeder: Feeder,
}

pub struct CodexFollower {
    first: PathBuf,
    stamps: Vec<Stamp>,
    dirs: Vec<PathBuf>,
    kept: Vec<(PathBuf, Kept)>,
    latest: Option<SessionParts>,
}

impl CodexFollower {
    pub fn new(first: &Path) -> CodexFollower {
        CodexFollower {
            first: first.to_path_buf(),
            stamps: Vec::new(),
            dirs: Vec::new(),
            kept: Vec::new(),
            latest: None,
        }
    }

    /// Brings one file's index up to its current length.
    /// The index stays kept (taken out by `refresh` while it builds).
    fn catch_up(&mut self, path: &Path) -> crate::Result<()> {
        let md = std::fs::metadata(path).map_err(|e| crate::Error::io(path, e))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // A compressed rollout is read whole: no appends to one.
        if home::is_zst(path) {
            let rollout = Rollout::read(path, &name)?;
            self.kept.retain(|(p, _)| p != path);
            self.kept.push((
                path.to_path_buf(),
                Kept {
                    ino: md.ino(),
                    rollout,
                    feeder: Feeder::default(),
                },
            ));
            return Ok(());
        }
        let at = self.kept.iter().position(|(p, _)| p == path);
        let reuse = at.is_some_and(|i| {
            let k = &self.kept[i].1;
            k.ino == md.ino() && md.len() >= k.rollout.bytes
        });
        let mut kept = match (at, reuse) {
            (Some(i), true) => self.kept.swap_remove(i).1,
            (Some(i), false) => {
                self.kept.swap_remove(i);
                fresh(path, &name, md.ino())
            }
            (None, _) => fresh(path, &name, md.ino()),
        };
        let g = crate::read::guard::open_regular(path)
            .map_err(|e| crate::Error::Other(format!("{}: {e}", path.display())))?;
        let mut file = g.file;
        let from = kept.rollout.bytes + kept.feeder_pending();
        if g.len > from {
            file.seek(SeekFrom::Start(from))
                .map_err(|e| crate::Error::io(path, e))?;
            let mut buf = vec![0u8; 1 << 20];
            let mut left = g.len - from;
            while left > 0 {
                let want = buf.len().min(left as usize);
                let n = file
                    .read(&mut buf[..want])
                    .map_err(|e| crate::Error::io(path, e))?;
                if n == 0 {
                    break;
                }
                kept.feeder.feed(&mut kept.rollout, &buf[..n]);
                left -= n as u64;
            }
        }
        self.kept.push((path.to_path_buf(), kept));
        Ok(())
    }
}

fn fresh(path: &Path, name: &str, ino: u64) -> Kept {
    Kept {
        ino,
        rollout: Rollout::new(path, name),
        feeder: Feeder::default(),
    }
}

impl Kept {
    /// Bytes of a line read but not complete yet (held by the feeder).
    fn feeder_pending(&self) -> u64 {
        self.feeder.pending_len() as u64
    }
}

impl Follower for CodexFollower {
    fn refresh(&mut self, _now: Instant, errors: &mut Vec<String>) -> Refresh {
        if !self.first.exists() {
            return Refresh::deleted();
        }
        let paths =
            <super::Codex as crate::sources::Source>::live_paths(&super::Codex, &self.first);
        let (stamps, dirs) = stamps_of(paths, 0);
        self.dirs = dirs;
        if stamps == self.stamps && self.latest.is_some() {
            return Refresh::default();
        }
        self.stamps = stamps;
        let mut live: Vec<PathBuf> = Vec::new();
        for p in generations_of(&self.first) {
            match self.catch_up(&p) {
                Ok(()) => live.push(p),
                Err(e) if live.is_empty() => {
                    errors.push(e.to_string());
                    return Refresh::default();
                }
                Err(_) => break,
            }
        }
        // Files no longer part of the thread are forgotten.
        self.kept.retain(|(p, _)| live.contains(p));
        // The kept indexes are lent to the build, not cloned (a clone is
        // O(thread) per append), and taken back after.
        let gens: Vec<Rollout> = live
            .iter()
            .filter_map(|p| {
                let k = self.kept.iter_mut().find(|(q, _)| q == p)?;
                Some(std::mem::take(&mut k.1.rollout))
            })
            .collect();
        let main = parts::ThreadRead::from_gens(&self.first, gens);
        self.latest = Some(parts::assemble(&self.first, &main));
        for r in main.gens {
            if let Some(k) = self.kept.iter_mut().find(|(q, _)| *q == r.path) {
                k.1.rollout = r;
            }
        }
        Refresh {
            changed: true,
            deleted: false,
        }
    }

    fn parts(&mut self) -> Option<(SessionParts, bool)> {
        self.latest.clone().map(|p| (p, true))
    }

    fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }
}
