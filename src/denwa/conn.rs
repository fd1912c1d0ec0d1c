//! One client connection: read request lines, answer each in order.

use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::protocol::{
    body_of, encode_reply, error_reply, parse_request, Hello, Request, Status, MAX_LINE,
};
use super::renji::{DMail, DenwaRenji};

/// A client that stops reading its replies costs the server at most this long
/// per reply before its connection is dropped.
pub(super) const WRITE_TIMEOUT: Duration = Duration::from_secs(3);

/// What every connection needs: the agent's DenwaRenji, the hello reply and
/// the server's limits.
pub(super) struct Shared {
    pub renji: Arc<Mutex<DenwaRenji>>,
    pub hello: Hello,
    pub limits: ServerLimits,
}

/// A server's bounds on its clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// A connection that sends no complete request for this long is closed.
    pub idle_timeout: Duration,
    /// Simultaneous connections (per uid: only the server's own is served).
    pub max_connections: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            idle_timeout: IDLE_TIMEOUT,
            max_connections: super::accept::MAX_CONNECTIONS,
        }
    }
}

/// Default idle timeout: generous for a person at a prompt between
/// requests, short next to a lock-out.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// When a connection started waiting for its next request; `None` while it
/// is answering one. The accept loop evicts the longest-idle first.
pub(super) struct Activity {
    epoch: Instant,
    /// Milliseconds since `epoch` + 1, or 0 while busy.
    idle_since: AtomicU64,
}

impl Activity {
    pub(super) fn new() -> Activity {
        let a = Activity {
            epoch: Instant::now(),
            idle_since: AtomicU64::new(0),
        };
        a.set_idle(true);
        a
    }

    fn set_idle(&self, idle: bool) {
        let v = if idle {
            u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
        } else {
            0
        };
        self.idle_since.store(v, Ordering::Relaxed);
    }

    /// An instant comparable across connections: when it went idle.
    pub(super) fn idle_since(&self) -> Option<Instant> {
        match self.idle_since.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(self.epoch + Duration::from_millis(ms - 1)),
        }
    }
}

enum LineRead {
    Line,
    TooLong,
    Eof,
}

/// Serves one connection until the client closes it, sends an over-long line,
/// stops reading replies, or the server shuts the socket down.
pub(super) fn serve(stream: UnixStream, shared: &Shared, activity: &Activity) {
    let timeouts = stream
        .set_write_timeout(Some(WRITE_TIMEOUT))
        .and_then(|()| stream.set_read_timeout(Some(shared.limits.idle_timeout)));
    if timeouts.is_err() {
        return;
    }
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut reader, &mut line) {
            Ok(LineRead::Line) => {
                activity.set_idle(false);
                let reply = answer(&line, shared);
                if send_all(&mut writer, &reply).is_err() {
                    return;
                }
                activity.set_idle(true);
            }
            Ok(LineRead::TooLong) => {
                let msg = format!("request line longer than {MAX_LINE} bytes; closing");
                let _ = send_all(&mut writer, &error_reply(&msg, None));
                let _ = writer.shutdown(std::net::Shutdown::Both);
                return;
            }
            // Err includes the idle timeout (EAGAIN from SO_RCVTIMEO).
            Ok(LineRead::Eof) | Err(_) => return,
        }
    }
}

/// Writes a whole reply. On Linux through `send(MSG_NOSIGNAL)`: a host
/// process that has not ignored SIGPIPE must not die because a client left.
/// The socket's write timeout (SO_SNDTIMEO) applies either way.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn send_all(stream: &mut UnixStream, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
        let n = unsafe {
            libc::send(
                stream.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let n = usize::try_from(n).unwrap_or(0);
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        buf = &buf[n.min(buf.len())..];
    }
    Ok(())
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn send_all(stream: &mut UnixStream, buf: &[u8]) -> io::Result<()> {
    use std::io::Write;
    stream.write_all(buf)
}

/// Reads one line, newline stripped, never buffering more than `MAX_LINE + 1`
/// bytes. A final line without a newline still counts as a request.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<LineRead> {
    let limit = MAX_LINE as u64 + 1;
    let n = reader.take(limit).read_until(b'\n', line)?;
    if n == 0 {
        return Ok(LineRead::Eof);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        return Ok(LineRead::Line);
    }
    if line.len() > MAX_LINE {
        return Ok(LineRead::TooLong);
    }
    Ok(LineRead::Line)
}

/// The reply line for one request line.
pub(super) fn answer(line: &[u8], shared: &Shared) -> Vec<u8> {
    let parsed = parse_request(line);
    let id = parsed.id.as_ref();
    let request = match parsed.request {
        Ok(r) => r,
        Err(e) => return error_reply(&e, id),
    };
    match request {
        Request::Hello => encode_reply(true, body_of(&shared.hello), id),
        Request::Status => {
            let status = {
                let renji = lock(&shared.renji);
                Status {
                    n_checkpoints: renji.n_checkpoints(),
                    pending: renji.pending().cloned(),
                }
            };
            encode_reply(true, body_of(&status), id)
        }
        Request::SendDMail {
            message,
            checkpoint_id,
        } => {
            // The lock is held only for the check-and-set, never across I/O.
            let result = lock(&shared.renji).send_dmail(DMail {
                message,
                checkpoint_id,
            });
            match result {
                Ok(()) => encode_reply(true, Default::default(), id),
                Err(e) => error_reply(&e.to_string(), id),
            }
        }
    }
}

/// A panic elsewhere while holding the lock leaves DenwaRenji's two plain
/// fields consistent, so a poisoned lock is still usable.
fn lock(renji: &Mutex<DenwaRenji>) -> std::sync::MutexGuard<'_, DenwaRenji> {
    renji.lock().unwrap_or_else(|e| e.into_inner())
}

/// The uid of the process on the other end of the socket.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes and sized for SO_PEERCRED.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// The uid of the process on the other end of the socket.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(super) fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    let mut uid: libc::uid_t = 0;
    let mut gid: libc::gid_t = 0;
    // SAFETY: both out-pointers are valid for writes.
    let r = unsafe { libc::getpeereid(stream.as_raw_fd(), &mut uid, &mut gid) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(uid)
}
