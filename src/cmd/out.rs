//! The one output policy: everything a command prints goes through here,
//! and a closed stdout (the reader went away, as `| head` does) becomes
//! [`Closed`], which the top level turns into a quiet exit 0.

use std::io::Write;

/// stdout was closed by its reader.
#[derive(Debug, thiserror::Error)]
#[error("stdout closed")]
pub struct Closed;

fn map(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Closed.into()
    } else {
        e.into()
    }
}

/// Writes `text` to stdout and flushes it.
pub fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(map)
}

/// Writes one line and flushes it (streams: one event per line).
pub fn line(out: &mut impl Write, text: &str) -> anyhow::Result<()> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(map)
}

/// Whether stdout is a pipe whose reader has gone: a stream that has
/// nothing new to write would otherwise only notice on its next event
/// (`watch | head -1` on a quiet session would wait forever), as GNU
/// `tail -f` learned to avoid.
pub fn reader_gone() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, a zero timeout; poll reports POLLERR on a
    // pipe's write end once its read end is closed.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n > 0 && fd.revents & libc::POLLERR != 0
}
