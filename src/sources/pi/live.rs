//! Following a Pi session file: the file and its folder are stamped each
//! batch (a `/fork` file appearing beside it is a new link); on a change
//! only the appended bytes are parsed and the lines that only grew keep
//! their record storage ([`super::parts_live`]). A file replaced, shrunk
//! or rewritten is read anew.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use crate::sources::follow::{Follower, Refresh};
use crate::sources::{Reading, SessionParts};

type Stamp = (u64, Option<SystemTime>, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok(), m.ino()))
}

pub struct PiFollower {
    path: PathBuf,
    dirs: Vec<PathBuf>,
    stamps: (Option<Stamp>, Option<Stamp>),
    kept: Option<super::Kept>,
    latest: Option<(SessionParts, bool)>,
}

impl PiFollower {
    pub fn new(path: &Path) -> PiFollower {
        PiFollower {
            path: path.to_path_buf(),
            dirs: path.parent().map(Path::to_path_buf).into_iter().collect(),
            stamps: (None, None),
            kept: None,
            latest: None,
        }
    }
}

impl Follower for PiFollower {
    fn refresh(&mut self, _now: Instant, errors: &mut Vec<String>) -> Refresh {
        let file = stamp(&self.path);
        if file.is_none() {
            return Refresh {
                changed: false,
                deleted: true,
            };
        }
        let folder = self.path.parent().and_then(stamp);
        if (file, folder) == self.stamps && self.latest.is_some() {
            return Refresh::default();
        }
        self.stamps = (file, folder);
        let made = super::parts_live(&self.path, Reading::default(), &mut self.kept);
        crate::sources::follow::refreshed(&mut self.latest, made, errors)
    }

    fn parts(&mut self) -> Option<(SessionParts, bool)> {
        self.latest.clone()
    }

    fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }
}
