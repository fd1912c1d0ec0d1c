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

/// One file as read so far, to be read on from where it was left.
pub struct Kept {
    path: PathBuf,
    dev: u64,
    ino: u64,
    /// The last [`CHECK`] bytes before `scan.resume_at()` (`None`: the
    /// file can't be read on, read it whole next time).
    tail: Option<Vec<u8>>,
    pub scan: Arc<Scan>,
}

/// What [`Kept::catch_up`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caught {
    /// Read on from where it was left (maybe nothing new).
    Grew,
    /// Read again from the start (replaced, shorter or rewritten).
    Anew,
}

static CACHE: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

fn open(path: &Path) -> Result<guard::Guarded> {
    guard::open_regular(path).map_err(|e| match e {
        GuardError::NotFound => Error::NotFound {
            path: path.to_path_buf(),
        },
        GuardError::Io(e) => Error::io(path, e),
        other => Error::Other(format!("{}: {other}", path.display())),
    })
}

impl Kept {
    /// `path` read whole as `name` (a big file in two halves at once).
    pub fn read(path: &Path, name: &str) -> Result<Kept> {
        // The file's identity before reading it: if it is replaced
        // meanwhile, the next catch-up sees another inode and reads anew.
        let g = open(path)?;
        let meta = g.file.metadata().map_err(|e| Error::io(path, e))?;
        let scan = Scan::read(path, name)?;
        let mut file = g.file;
        let tail = scan.resume_at().and_then(|at| {
            let n = (at as usize).min(CHECK);
            let mut t = vec![0u8; n];
            let ok = file.seek(SeekFrom::Start(at - n as u64)).is_ok()
                && file.read_exact(&mut t).is_ok();
            ok.then_some(t)
        });
        Ok(Kept {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
            tail,
            scan: Arc::new(scan),
        })
    }

    /// Reads what was appended since; the file is read whole again when
    /// it is another file (device and inode), shorter, or the bytes before
    /// the resume point changed. The scan must not be shared then (else it
    /// is copied first).
    pub fn catch_up(&mut self) -> Result<Caught> {
        let path = self.path.clone();
        let g = open(&path)?;
        let meta = g.file.metadata().map_err(|e| Error::io(&path, e))?;
        let (dev, ino) = (meta.dev(), meta.ino());
        let mut file = g.file;
        let at = self.scan.resume_at();
        let resumable = match (&self.tail, at) {
            (Some(tail), Some(at)) if self.dev == dev && self.ino == ino && g.len >= at => {
                let mut now = vec![0u8; tail.len()];
                file.seek(SeekFrom::Start(at - tail.len() as u64)).is_ok()
                    && file.read_exact(&mut now).is_ok()
                    && &now == tail
            }
            _ => false,
        };
        let mut caught = Caught::Grew;
        if resumable {
            let s = Arc::make_mut(&mut self.scan);
            let from = s.resume_at().unwrap_or(g.len);
            file.seek(SeekFrom::Start(from))
                .map_err(|e| Error::io(&path, e))?;
            feed(s, (&mut file).take(g.len - from), &path)?;
            if !s.resumable {
                caught = Caught::Anew;
            }
        } else {
            caught = Caught::Anew;
        }
        if caught == Caught::Anew {
            let mut s = Scan::new(self.scan.name.clone(), &path);
            file.seek(SeekFrom::Start(0))
                .map_err(|e| Error::io(&path, e))?;
            feed(&mut s, (&mut file).take(g.len), &path)?;
            self.scan = Arc::new(s);
        }
        (self.dev, self.ino) = (dev, ino);
        self.tail = self.scan.resume_at().and_then(|at| {
            let n = (at as usize).min(CHECK);
            let mut t = vec![0u8; n];
            let ok = file.seek(SeekFrom::Start(at - n as u64)).is_ok()
                && file.read_exact(&mut t).is_ok();
            ok.then_some(t)
        });
        Ok(caught)
    }
}

/// Feeds all of `r` to `s`, then ends it.
fn feed(s: &mut Scan, mut r: impl Read, path: &Path) -> Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = r.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        s.feed(&buf[..n]);
    }
    s.finish();
    Ok(())
}

/// `path` read as `name`, reusing what was read of it before.
pub fn scan(path: &Path, name: &str) -> Result<Arc<Scan>> {
    let kept = {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .iter()
            .position(|s| s.path == path)
            .map(|i| cache.remove(i))
    };
    let kept = match kept {
        Some(mut k) if k.scan.name == name => {
            k.catch_up()?;
            k
        }
        _ => Kept::read(path, name)?,
    };
    let scan = Arc::clone(&kept.scan);
    if kept.tail.is_some() {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= SLOTS {
            cache.remove(0);
        }
        cache.push(kept);
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
