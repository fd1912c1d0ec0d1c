//! The one way worldline opens a file it did not write: without blocking,
//! regular files only, at most a size cap. A FIFO, a device (`/dev/zero`,
//! `/dev/urandom`), a directory or a socket under a session file's name is
//! refused at once with a reason, instead of hanging `open()` or `read()` or
//! growing without end.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Caps for the small metadata files (bytes). Real ones are a few KB.
pub const STATE_JSON_CAP: u64 = 4 << 20;
pub const META_JSON_CAP: u64 = 1 << 20;
pub const DENWA_JSON_CAP: u64 = 64 << 10;
pub const KIMI_JSON_CAP: u64 = 16 << 20;
/// An index of sessions (`session_index.jsonl`): a line per session, so
/// 100 000 sessions fit with room to spare.
pub const INDEX_CAP: u64 = 64 << 20;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("no such file")]
    NotFound,
    #[error("is a {0}, not a regular file; not read")]
    NotRegular(&'static str),
    #[error("is {len} bytes, over the {cap}-byte limit for this file; not read")]
    TooBig { len: u64, cap: u64 },
    #[error("{0}")]
    Io(std::io::Error),
}

impl GuardError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, GuardError::NotFound)
    }
}

/// A regular file opened for reading, and its length when opened. Reads
/// should stop at `len`: a file that grows while read is read as it was.
pub struct Guarded {
    pub file: File,
    pub len: u64,
}

/// Opens `path` with `O_NONBLOCK` (so a FIFO without a writer cannot block
/// the `open`), checks with `fstat` on the opened descriptor (no race with a
/// rename) that it is a regular file, then turns blocking back on.
pub fn open_regular(path: &Path) -> Result<Guarded, GuardError> {
    open_with(path, 0)
}

/// [`open_regular`], refusing a symbolic link as the last component
/// (`O_NOFOLLOW`), as world-line files are: a side file inside a session
/// is not followed elsewhere either.
pub fn open_regular_nofollow(path: &Path) -> Result<Guarded, GuardError> {
    open_with(path, libc::O_NOFOLLOW)
}

fn open_with(path: &Path, flags: libc::c_int) -> Result<Guarded, GuardError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | flags)
        .open(path)
        .map_err(|e| match e.kind() {
            ErrorKind::NotFound => GuardError::NotFound,
            _ if e.raw_os_error() == Some(libc::ELOOP) && flags & libc::O_NOFOLLOW != 0 => {
                GuardError::NotRegular("symbolic link (not followed)")
            }
            _ => GuardError::Io(e),
        })?;
    let meta = file.metadata().map_err(GuardError::Io)?;
    let ft = meta.file_type();
    if !ft.is_file() {
        let kind = if ft.is_dir() {
            "directory"
        } else if ft.is_fifo() {
            "FIFO"
        } else if ft.is_char_device() {
            "character device"
        } else if ft.is_block_device() {
            "block device"
        } else if ft.is_socket() {
            "socket"
        } else {
            "special file"
        };
        return Err(GuardError::NotRegular(kind));
    }
    clear_nonblock(&file).map_err(GuardError::Io)?;
    Ok(Guarded {
        file,
        len: meta.len(),
    })
}

fn clear_nonblock(file: &File) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own; F_GETFL/F_SETFL take no pointers.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Reads a whole small file through [`open_regular`], refusing one over
/// `cap` bytes (checked on the length and again while reading, so a file
/// that grows meanwhile cannot get past it).
pub fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, GuardError> {
    read_guarded(open_regular(path)?, cap)
}

/// [`read_capped`] through [`open_regular_nofollow`].
pub fn read_capped_nofollow(path: &Path, cap: u64) -> Result<Vec<u8>, GuardError> {
    read_guarded(open_regular_nofollow(path)?, cap)
}

fn read_guarded(g: Guarded, cap: u64) -> Result<Vec<u8>, GuardError> {
    if g.len > cap {
        return Err(GuardError::TooBig { len: g.len, cap });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(g.len).unwrap_or(0));
    g.file
        .take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(GuardError::Io)?;
    if bytes.len() as u64 > cap {
        return Err(GuardError::TooBig {
            len: bytes.len() as u64,
            cap,
        });
    }
    Ok(bytes)
}

/// [`read_capped`] parsed as JSON: `Ok(None)` when the file does not exist,
/// `Err(reason)` (for a warning naming the file) when it is a special file,
/// too big, or not JSON (a torn write): its contents are then unknown.
pub fn read_json(path: &Path, cap: u64) -> Result<Option<serde_json::Value>, String> {
    json_of(read_capped(path, cap))
}

/// [`read_json`] refusing a symbolic link ([`open_regular_nofollow`]).
pub fn read_json_nofollow(path: &Path, cap: u64) -> Result<Option<serde_json::Value>, String> {
    json_of(read_capped_nofollow(path, cap))
}

fn json_of(read: Result<Vec<u8>, GuardError>) -> Result<Option<serde_json::Value>, String> {
    match read {
        Ok(bytes) => super::lenient::parse_value(&bytes)
            .map(Some)
            .map_err(|e| format!("not valid JSON ({e}); ignored")),
        Err(GuardError::NotFound) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn special_files_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("state.json");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t = Instant::now();
        for p in [
            fifo.as_path(),
            Path::new("/dev/zero"),
            Path::new("/dev/urandom"),
            dir.path(),
        ] {
            assert!(
                matches!(read_capped(p, 1 << 20), Err(GuardError::NotRegular(_))),
                "{p:?}"
            );
        }
        assert!(t.elapsed() < Duration::from_secs(1));
        assert!(read_capped(&dir.path().join("none"), 10)
            .unwrap_err()
            .is_not_found());
        let big = dir.path().join("big");
        std::fs::write(&big, [b'x'; 11]).unwrap();
        assert!(matches!(
            read_capped(&big, 10),
            Err(GuardError::TooBig { len: 11, cap: 10 })
        ));
        assert_eq!(read_capped(&big, 11).unwrap().len(), 11);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&big, &link).unwrap();
        assert_eq!(read_capped(&link, 11).unwrap().len(), 11);
        assert!(matches!(
            read_capped_nofollow(&link, 11),
            Err(GuardError::NotRegular("symbolic link (not followed)"))
        ));
    }
}

/// The first line of a file as a reader recognising formats sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum FirstLine {
    /// The file is empty (or only whitespace so far).
    Empty,
    /// A whole first line that parses as JSON.
    Json(serde_json::Value),
    /// A whole first line that is not JSON.
    NotJson,
    /// No line end within the bytes looked at: the start of a long line.
    Partial(Vec<u8>),
}

/// Looks at the first non-blank line of `path` within its first `max`
/// bytes, through [`open_regular`]: how a source recognises its format by
/// content without reading a session.
pub fn first_line(path: &Path, max: usize) -> Result<FirstLine, GuardError> {
    let g = open_regular(path)?;
    let mut buf = Vec::with_capacity(max.min(g.len as usize));
    g.file
        .take(max as u64)
        .read_to_end(&mut buf)
        .map_err(GuardError::Io)?;
    let start = buf
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(buf.len());
    let rest = &buf[start..];
    if rest.is_empty() {
        return Ok(FirstLine::Empty);
    }
    match rest.iter().position(|&b| b == b'\n') {
        Some(end) => Ok(serde_json::from_slice(&rest[..end])
            .map(FirstLine::Json)
            .unwrap_or(FirstLine::NotJson)),
        None if (buf.len() as u64) < g.len || buf.len() >= max => {
            Ok(FirstLine::Partial(rest.to_vec()))
        }
        // The whole file is one line without its end: a torn first write.
        None => Ok(serde_json::from_slice(rest)
            .map(FirstLine::Json)
            .unwrap_or(FirstLine::Partial(rest.to_vec()))),
    }
}
