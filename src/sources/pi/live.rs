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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::test_util::follow_in_pieces;
    use crate::worldline::Session;

    /// Writes `bytes` to `path` in random pieces (lines cut anywhere);
    /// after each, the follower's snapshot (built from the last one) is
    /// the session read whole. Returns (snapshots, grown, rebuilt).
    fn follow(path: &Path, bytes: &[u8], seed: u64, max: usize) -> (usize, usize, usize) {
        std::fs::write(path, b"").unwrap();
        let mut f = PiFollower::new(path);
        let whole = || Session::build(super::super::parts(path, Reading::default()).unwrap());
        let n = follow_in_pieces(&mut f, &[(path, bytes)], seed, max, &whole, &|_, _| true);
        (
            n,
            f.kept.as_ref().map_or(0, |k| k.grown),
            f.kept.as_ref().map_or(0, |k| k.rebuilt),
        )
    }

    #[test]
    fn every_fixture_followed_in_pieces_reads_as_whole_and_mostly_grows() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut grown, mut rebuilt) = (0, 0);
        for (k, src) in crate::sources::test_util::fixture_files("pi")
            .iter()
            .enumerate()
        {
            let bytes = std::fs::read(src).unwrap();
            let dir = tmp.path().join(format!("f{k}"));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(src.file_name().unwrap());
            for seed in [1u64, 7, 99] {
                for max in [40, 400, 4000] {
                    let (_, g, r) = follow(&path, &bytes, seed * 31 + max as u64, max);
                    grown += g;
                    rebuilt += r;
                }
            }
        }
        assert!(grown > 2 * rebuilt, "{grown} grown, {rebuilt} built whole");
    }

    #[test]
    fn a_session_with_branches_labels_and_bad_lines_followed_in_pieces_reads_as_whole() {
        let mut text =
            String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/w\"}\n");
        let mut last = "null".to_string();
        let mut ends: Vec<String> = Vec::new();
        for i in 0..80 {
            if i % 13 == 12 {
                last = ends[ends.len() - 3].clone();
            }
            let me = format!("\"e{i}\"");
            let (ty, rest) = match i % 5 {
                0 => ("message", "\"message\":{\"role\":\"user\",\"content\":\"hi\"}".to_string()),
                1 => ("message", format!("\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"toolCall\",\"id\":\"c{i}\",\"name\":\"bash\"}}]}}")),
                2 => ("message", format!("\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"c{}\",\"content\":[]}}", i - 1)),
                3 => ("label", "\"targetId\":\"e0\",\"label\":\"x\"".to_string()),
                _ => ("model_change", "\"provider\":\"p\",\"modelId\":\"m\"".to_string()),
            };
            text.push_str(&format!("{{\"type\":\"{ty}\",\"id\":{me},\"parentId\":{last},\"timestamp\":\"2026-12-04T12:00:00Z\",{rest}}}\n"));
            if i % 17 == 16 {
                text.push_str(
                    "not json\n{\"type\":\"message\",\"id\":\"e3\",\"parentId\":\"zz\"}\n",
                );
            }
            ends.push(me.clone());
            last = me;
        }
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("2026-12-04T12-00-00-000Z_s.jsonl");
        for seed in [3u64, 5, 11] {
            for max in [30, 300] {
                let (n, grown, rebuilt) = follow(&path, text.as_bytes(), seed, max);
                assert!(
                    n > 10 && grown > 2 * rebuilt,
                    "seed {seed}: {n} snapshots, {grown} grown, {rebuilt} built whole"
                );
            }
        }
    }
}
