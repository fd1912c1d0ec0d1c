//! `.jsonl.zst` rollouts: record offsets are into the decompressed text, so
//! a body is read by decompressing up to it. The last file decompressed is
//! kept (up to [`KEEP`] bytes) so browsing one session decompresses once.
//! `ruzstd` decodes: pure Rust (no C toolchain, no `unsafe` FFI on session
//! bytes), and a reader needs only its decoder.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::read::guard;

/// Decompressed bytes kept for the last file read.
const KEEP: usize = 512 << 20;

type Kept = Option<(PathBuf, u64, Arc<Vec<u8>>)>;
static LAST: Mutex<Kept> = Mutex::new(None);

fn stamp(path: &Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

/// `len` bytes at decompressed `offset` of the file.
pub fn range(path: &Path, offset: u64, len: usize) -> Result<Vec<u8>> {
    let err = |m: String| Error::Other(format!("{}: {m}", path.display()));
    let at = stamp(path);
    if let Ok(kept) = LAST.lock() {
        if let Some((p, t, bytes)) = kept.as_ref() {
            if p == path && *t == at {
                return slice(bytes, offset, len).ok_or_else(|| err("record past the end".into()));
            }
        }
    }
    let g = guard::open_regular(path).map_err(|e| err(e.to_string()))?;
    let mut dec = ruzstd::decoding::StreamingDecoder::new(g.file.take(g.len))
        .map_err(|e| err(format!("not zstd: {e}")))?;
    let end = offset.saturating_add(len as u64);
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    // Read the whole file when it is small enough to keep, else only up to
    // the record.
    loop {
        let n = dec.read(&mut buf).map_err(|e| err(e.to_string()))?;
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        if out.len() > KEEP && out.len() as u64 >= end {
            break;
        }
    }
    let got = slice(&out, offset, len).ok_or_else(|| err("record past the end".into()));
    if out.len() <= KEEP {
        if let Ok(mut kept) = LAST.lock() {
            *kept = Some((path.to_path_buf(), at, Arc::new(out)));
        }
    }
    got
}

fn slice(bytes: &[u8], offset: u64, len: usize) -> Option<Vec<u8>> {
    let start = usize::try_from(offset).ok()?;
    bytes
        .get(start..start.checked_add(len)?)
        .map(<[u8]>::to_vec)
}
