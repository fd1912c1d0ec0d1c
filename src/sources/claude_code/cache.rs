//! The files read last, kept so reading a session again after an append
//! (a live follower re-reads through the source) parses only the appended
//! bytes: a file is taken up where it was left when it is the same file
//! (device and inode), no shorter, and the bytes before that point end as
//! they did. Anything else reads it whole again.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::scan::Scan;
use crate::error::{Error, Result};
use crate::read::guard::{self, GuardError};

/// Files kept (a session and its subagents).
const SLOTS: usize = 16;
/// Bytes before the resume point compared to catch a rewritten file.
const CHECK: usize = 256;

struct Slot {
    path: PathBuf,
    dev: u64,
    ino: u64,
    /// The last [`CHECK`] bytes before `scan.resume_at()`.
    tail: Vec<u8>,
    scan: Arc<Scan>,
}

static CACHE: Mutex<Vec<Slot>> = Mutex::new(Vec::new());

fn open(path: &Path) -> Result<guard::Guarded> {
    guard::open_regular(path).map_err(|e| match e {
        GuardError::NotFound => Error::NotFound {
            path: path.to_path_buf(),
        },
        GuardError::Io(e) => Error::io(path, e),
        other => Error::Other(format!("{}: {other}", path.display())),
    })
}

/// `path` read as `name`, reusing what was read of it before.
pub fn scan(path: &Path, name: &str) -> Result<Arc<Scan>> {
    let g = open(path)?;
    let meta = g.file.metadata().map_err(|e| Error::io(path, e))?;
    let (dev, ino) = (meta.dev(), meta.ino());
    let kept = {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .iter()
            .position(|s| s.path == path)
            .map(|i| cache.remove(i))
    };
    let mut file = g.file;
    let resumed = kept.and_then(|slot| {
        let at = slot.scan.resume_at()?;
        let same = slot.dev == dev && slot.ino == ino && slot.scan.name == name && g.len >= at;
        if !same {
            return None;
        }
        let start = at - slot.tail.len() as u64;
        let mut tail = vec![0u8; slot.tail.len()];
        file.seek(SeekFrom::Start(start)).ok()?;
        file.read_exact(&mut tail).ok()?;
        (tail == slot.tail).then_some(slot)
    });
    let scan = match resumed {
        Some(mut slot) => {
            let s = Arc::make_mut(&mut slot.scan);
            let mut rest = (&mut file).take(g.len - s.resume_at().unwrap_or(g.len));
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = rest.read(&mut buf).map_err(|e| Error::io(path, e))?;
                if n == 0 {
                    break;
                }
                s.feed(&buf[..n]);
            }
            s.finish();
            if s.resumable {
                slot.scan
            } else {
                Arc::new(Scan::read(path, name)?)
            }
        }
        None => Arc::new(Scan::read(path, name)?),
    };
    let tail = match scan.resume_at() {
        Some(at) => {
            let n = (at as usize).min(CHECK);
            let mut t = vec![0u8; n];
            let ok = file.seek(SeekFrom::Start(at - n as u64)).is_ok()
                && file.read_exact(&mut t).is_ok();
            ok.then_some(t)
        }
        None => None,
    };
    if let Some(tail) = tail {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= SLOTS {
            cache.remove(0);
        }
        cache.push(Slot {
            path: path.to_path_buf(),
            dev,
            ino,
            tail,
            scan: Arc::clone(&scan),
        });
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn entry(n: u32) -> String {
        format!(
            "{{\"type\":\"user\",\"uuid\":\"{}\",\"parentUuid\":null,\"message\":{{\"content\":\"p{n}\"}}}}\n",
            super::super::scan::uuid_text(u128::from(n))
        )
    }

    #[test]
    fn appends_are_read_on_from_where_they_were_left() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("s.jsonl");
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(entry(1).as_bytes()).unwrap();
        let e2 = entry(2);
        // A last line without its newline, then the rest of the file.
        f.write_all(e2.trim_end().as_bytes()).unwrap();
        assert_eq!(scan(&p, "s").unwrap().entries.len(), 2);
        f.write_all(b"\n").unwrap();
        f.write_all(&entry(3).as_bytes()[..30]).unwrap();
        let s = scan(&p, "s").unwrap();
        assert_eq!(s.entries.len(), 2);
        f.write_all(&entry(3).as_bytes()[30..]).unwrap();
        let s = scan(&p, "s").unwrap();
        let fresh = Scan::read(&p, "s").unwrap();
        // (Debug: times are NaN here, and NaN is not equal to itself.)
        assert_eq!(format!("{:?}", s.entries), format!("{:?}", fresh.entries));
        assert_eq!((s.bytes, s.lines), (fresh.bytes, fresh.lines));
        // Rewritten: read whole again.
        std::fs::write(&p, entry(9)).unwrap();
        assert_eq!(
            format!("{:?}", scan(&p, "s").unwrap().entries),
            format!("{:?}", Scan::read(&p, "s").unwrap().entries)
        );
    }
}
