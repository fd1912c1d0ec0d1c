//! An exclusive lock file next to the socket, so two servers racing to start
//! for one session cannot both decide the socket is stale and replace it.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::error::DenwaError;

pub(super) struct LockFile {
    path: PathBuf,
    // Held only for its lock, released when dropped.
    _file: File,
}

impl LockFile {
    /// `Ok(None)` when another server holds the lock.
    pub(super) fn try_acquire(path: &Path) -> Result<Option<LockFile>, DenwaError> {
        // A holder shutting down unlinks the file; if that happened between our
        // open and our lock we hold a dead inode, so check and try again.
        for _ in 0..8 {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(path)
                .map_err(|e| DenwaError::io(path, e))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => return Ok(None),
                Err(TryLockError::Error(e)) => return Err(DenwaError::io(path, e)),
            }
            let mine = file.metadata().map_err(|e| DenwaError::io(path, e))?;
            match fs::metadata(path) {
                Ok(m) if m.dev() == mine.dev() && m.ino() == mine.ino() => {
                    return Ok(Some(LockFile {
                        path: path.to_owned(),
                        _file: file,
                    }))
                }
                _ => continue,
            }
        }
        Err(DenwaError::Config {
            path: path.to_owned(),
            detail: "lock file keeps changing under us".into(),
        })
    }
}

impl Drop for LockFile {
    /// Unlinks the file while still holding the lock; the lock goes with the
    /// descriptor right after.
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}
