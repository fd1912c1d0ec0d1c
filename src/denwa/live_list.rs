//! This user's live sessions: every socket in the socket directory that
//! answers denwa/1, with the session directory it serves, its agent and its
//! DenwaRenji state (`worldline send --status` without a session). A host
//! that writes its session somewhere no listing looks (the demo's temporary
//! directory) registers it in a side file next to its socket, so the
//! session can be found, listed and named by id while it runs.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::client::DenwaClient;
use super::protocol::{Hello, Status};
use crate::text::{sanitize_message, sanitize_path};

/// The side file beside a socket naming the session directory it serves.
const SIDE: &str = "session";

/// Longest side file read (a path, one line).
const SIDE_CAP: u64 = 8 * 1024;

/// One session whose DenwaRenji answered.
#[derive(Debug, Clone)]
pub struct LiveSession {
    pub socket: PathBuf,
    /// The session directory, when its host registered it or a known
    /// session's `denwa.json` names this socket.
    pub dir: Option<PathBuf>,
    pub hello: Hello,
    pub status: Status,
}

fn side_of(socket: &Path) -> PathBuf {
    socket.with_extension(SIDE)
}

/// Names `session_dir` as the session `socket` serves (written atomically,
/// owner-only). Best effort: a session that can't be registered is still
/// served, only not listed.
pub fn register(socket: &Path, session_dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let dir = std::path::absolute(session_dir)?;
    let side = side_of(socket);
    let tmp = side.with_extension(format!("{SIDE}.{}", std::process::id()));
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(dir.as_os_str().as_encoded_bytes())?;
    f.write_all(b"\n")?;
    drop(f);
    fs::rename(&tmp, &side)
}

/// Removes what `register` wrote.
pub fn unregister(socket: &Path) {
    let _ = fs::remove_file(side_of(socket));
}

/// The session directory registered for `socket`: only from a side file
/// of ours, a regular file, of a sane size, naming an existing directory.
fn registered(socket: &Path) -> Option<PathBuf> {
    let side = side_of(socket);
    let meta = fs::symlink_metadata(&side).ok()?;
    // SAFETY: getuid cannot fail.
    let me = unsafe { libc::getuid() };
    if !meta.file_type().is_file() || meta.uid() != me || meta.len() > SIDE_CAP {
        return None;
    }
    let text = fs::read_to_string(&side).ok()?;
    let dir = PathBuf::from(text.trim_end_matches('\n'));
    (dir.is_absolute() && dir.is_dir()).then_some(dir)
}

/// Session directories hosts registered for sockets in `socket_dir` (live
/// or not: callers that need liveness ask the socket).
pub fn registered_dirs(socket_dir: &Path) -> Vec<PathBuf> {
    sockets(socket_dir)
        .iter()
        .filter_map(|s| registered(s))
        .collect()
}

fn sockets(socket_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(socket_dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_socket()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Every socket in `socket_dir` that answers, with its state. `known`
/// names the session directory of a socket no host registered (a session
/// whose `denwa.json` names it), when it can.
pub fn live_sessions(
    socket_dir: &Path,
    known: &dyn Fn(&Path) -> Option<PathBuf>,
) -> Vec<LiveSession> {
    sockets(socket_dir)
        .into_iter()
        .filter_map(|socket| {
            // A socket left behind by a dead host refuses: not live.
            let mut client = DenwaClient::connect_socket(&socket).ok()?;
            let hello = client.server_hello().clone();
            let status = client.status().ok()?;
            let dir = registered(&socket).or_else(|| known(&socket));
            Some(LiveSession {
                socket,
                dir,
                hello,
                status,
            })
        })
        .collect()
}

/// What `worldline send --status` prints without a session: one block a
/// live session, its path first (what `send` and `worldline` take).
pub fn live_text(list: &[LiveSession]) -> String {
    if list.is_empty() {
        return "no live sessions: nothing of yours serves D-Mails right now\n".to_string();
    }
    let mut out = String::new();
    for s in list {
        let place = match &s.dir {
            Some(d) => sanitize_path(d),
            None => format!("(session {})", sanitize_message(&s.hello.session)),
        };
        let pending = match &s.status.pending {
            None => "no pending D-Mail".to_string(),
            Some(d) => format!("a D-Mail pending for checkpoint {}", d.checkpoint_id),
        };
        let checkpoints = match s.status.n_checkpoints {
            0 => "no checkpoints yet".to_string(),
            n => format!("checkpoints 0..={}", n - 1),
        };
        out.push_str(&format!(
            "{place}\n  agent {} · {} · {pending} · served by {} at {}\n",
            sanitize_message(&s.hello.agent),
            checkpoints,
            sanitize_message(&s.hello.server),
            sanitize_path(&s.socket),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_dir_is_read_back_and_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let socket = tmp.path().join("abc.sock");
        let session = tmp.path().join("session");
        fs::create_dir(&session).unwrap();
        register(&socket, &session).unwrap();
        assert_eq!(registered(&socket), Some(session.clone()));
        unregister(&socket);
        assert_eq!(registered(&socket), None);
        // Anything but an existing absolute directory is ignored.
        fs::write(side_of(&socket), "relative/path\n").unwrap();
        assert_eq!(registered(&socket), None);
    }

    #[test]
    fn nothing_live_says_so() {
        assert!(live_text(&[]).starts_with("no live sessions"));
    }
}
