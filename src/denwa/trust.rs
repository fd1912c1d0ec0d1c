//! Who a client may talk to. `denwa.json` is just a file in a session
//! directory, and a session directory may come from anyone (an archive, a
//! shared machine), so the socket it names is trusted only when it is an
//! absolute path to a socket owned by this user, in a directory only this
//! user can enter, served by a process of this user (`SO_PEERCRED`). A D-Mail
//! is never written to a socket that failed any of these.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::Path;

use super::error::DenwaError;

pub(super) fn my_uid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

fn untrusted(path: &Path, detail: impl Into<String>) -> DenwaError {
    DenwaError::Untrusted {
        path: path.to_owned(),
        detail: detail.into(),
    }
}

/// The socket path itself: absolute, a socket (not a symlink to one), ours,
/// and its directory a real directory of ours with no group or other access.
pub(super) fn check_socket_path(socket: &Path) -> Result<(), DenwaError> {
    if !socket.is_absolute() {
        return Err(untrusted(
            socket,
            "the socket path is relative (it would be resolved against this process's directory)",
        ));
    }
    let meta = match std::fs::symlink_metadata(socket) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(DenwaError::NotLive {
                path: socket.to_owned(),
            })
        }
        Err(e) => return Err(DenwaError::io(socket, e)),
    };
    if !meta.file_type().is_socket() {
        return Err(untrusted(
            socket,
            "not a socket (a symlink or another file)",
        ));
    }
    let uid = my_uid();
    if meta.uid() != uid {
        return Err(untrusted(
            socket,
            format!(
                "the socket belongs to uid {}, not to this user (uid {uid})",
                meta.uid()
            ),
        ));
    }
    let dir = socket.parent().unwrap_or(Path::new("/"));
    let dmeta = std::fs::symlink_metadata(dir).map_err(|e| DenwaError::io(dir, e))?;
    if !dmeta.is_dir() {
        return Err(untrusted(
            dir,
            "the socket's directory is not a real directory",
        ));
    }
    if dmeta.uid() != uid {
        return Err(untrusted(
            dir,
            format!(
                "the socket's directory belongs to uid {}, not to this user",
                dmeta.uid()
            ),
        ));
    }
    if dmeta.mode() & 0o077 != 0 {
        return Err(untrusted(
            dir,
            format!(
                "the socket's directory is not private (mode {:o}, expected 0700)",
                dmeta.mode() & 0o777
            ),
        ));
    }
    Ok(())
}

/// The process at the other end runs as this user.
pub(super) fn check_peer(stream: &UnixStream, socket: &Path) -> Result<(), DenwaError> {
    let uid = my_uid();
    match super::conn::peer_uid(stream) {
        Ok(peer) if peer == uid => Ok(()),
        Ok(peer) => Err(untrusted(
            socket,
            format!("the server runs as uid {peer}, not as this user (uid {uid})"),
        )),
        Err(e) => Err(untrusted(
            socket,
            format!("cannot tell who the server is: {e}"),
        )),
    }
}

/// Is `pid` a live process this user owns? Not pid 1 (init serves no
/// D-Mails, and as root `kill(1, 0)` always succeeds), not another user's
/// (`EPERM`), and on Linux its `/proc` entry must be ours.
pub(super) fn pid_ours(pid: i64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 1 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match std::fs::metadata(format!("/proc/{pid}")) {
        Ok(m) => m.uid() == my_uid(),
        // No procfs (not Linux, or hidden): kill's permission check stands.
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids() {
        assert!(pid_ours(i64::from(std::process::id())));
        for pid in [0, 1, -1, i64::MAX] {
            assert!(!pid_ours(pid), "{pid}");
        }
    }
}
