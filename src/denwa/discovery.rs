//! Where sockets live and how a client finds them: the short socket path, the
//! `denwa.json` announcement in the session directory, and liveness checks.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::DenwaError;
use super::protocol::PROTOCOL;

/// Name of the announcement file in a session (or subagent) directory.
pub const DENWA_JSON: &str = "denwa.json";

/// `sun_path` holds 108 bytes including the terminating NUL.
pub const MAX_SOCKET_PATH: usize = 107;

/// Longest id kept verbatim in a socket file name.
const MAX_NAME: usize = 64;

/// Contents of `denwa.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announcement {
    pub protocol: String,
    pub socket: PathBuf,
    pub pid: i64,
    /// `"main"` or the subagent's id.
    pub agent: String,
}

/// The directory holding the sockets: `<runtime_dir>/worldline`, or
/// `/tmp/worldline-<uid>` without a runtime dir.
pub fn socket_dir(runtime_dir: Option<&Path>) -> PathBuf {
    match runtime_dir {
        Some(r) => r.join("worldline"),
        // SAFETY: getuid cannot fail.
        None => PathBuf::from(format!("/tmp/worldline-{}", unsafe { libc::getuid() })),
    }
}

/// `$XDG_RUNTIME_DIR` when set to an absolute path (the spec says to ignore a
/// relative one).
pub fn env_runtime_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// Socket path per the protocol doc, reading `$XDG_RUNTIME_DIR`.
pub fn socket_path_for(session_id: &str, agent: Option<&str>) -> PathBuf {
    socket_path_in(env_runtime_dir().as_deref(), session_id, agent)
}

/// Env-free variant of [`socket_path_for`]: `runtime_dir` plays the part of
/// `$XDG_RUNTIME_DIR` (`None`: the `/tmp/worldline-<uid>` fallback).
///
/// Ids are made filesystem-safe; if the result would not fit in `sun_path`,
/// the name is shortened to a prefix plus a hash (clients read the real path
/// from `denwa.json`, so any deterministic name works).
pub fn socket_path_in(
    runtime_dir: Option<&Path>,
    session_id: &str,
    agent: Option<&str>,
) -> PathBuf {
    let dir = socket_dir(runtime_dir);
    let name = match agent {
        None => format!("{}.sock", safe_name(session_id)),
        Some(a) => format!("{}-{}.sock", safe_name(session_id), safe_name(a)),
    };
    let path = dir.join(name);
    if path.as_os_str().len() <= MAX_SOCKET_PATH {
        return path;
    }
    let key = match agent {
        None => session_id.to_owned(),
        Some(a) => format!("{session_id}\0{a}"),
    };
    let prefix: String = safe_name(session_id).chars().take(8).collect();
    dir.join(format!("{prefix}-{:016x}.sock", hash(&key)))
}

/// Keeps `[A-Za-z0-9_-]` ids as they are; anything else (dots, slashes, very
/// long ids) becomes a sanitised prefix plus a hash of the original, so two
/// different ids never share a name.
pub fn safe_name(id: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !id.is_empty() && id.len() <= MAX_NAME && id.chars().all(plain) {
        return id.to_owned();
    }
    let prefix: String = id
        .chars()
        .take(40)
        .map(|c| if plain(c) { c } else { '_' })
        .collect();
    format!("{prefix}~{:016x}", hash(id))
}

fn hash(s: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(s.as_bytes())
}

/// Creates the socket directory with mode 0700 (or tightens it), refusing one
/// that is a symlink or belongs to another user: `/tmp` is shared.
pub fn ensure_socket_dir(dir: &Path) -> Result<(), DenwaError> {
    match fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) => return Err(DenwaError::io(dir, e)),
    }
    let meta = fs::symlink_metadata(dir).map_err(|e| DenwaError::io(dir, e))?;
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != uid {
        return Err(DenwaError::Config {
            path: dir.to_owned(),
            detail: "socket directory is not a directory owned by this user".into(),
        });
    }
    if meta.mode() & 0o777 != 0o700 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| DenwaError::io(dir, e))?;
    }
    Ok(())
}

/// Where a server for `agent` announces itself: the session directory, or
/// `subagents/<agent_id>/` inside it.
pub fn announce_dir(session_dir: &Path, agent: Option<&str>) -> PathBuf {
    match agent {
        None => session_dir.to_owned(),
        Some(a) => session_dir.join("subagents").join(a),
    }
}

/// Writes `denwa.json` atomically (temp file in the same dir + rename) so a
/// client never reads half a file.
pub fn write_announcement(dir: &Path, ann: &Announcement) -> Result<PathBuf, DenwaError> {
    use std::io::Write;
    let path = dir.join(DENWA_JSON);
    let mut tmp = tempfile::Builder::new()
        .prefix(".denwa.json.")
        .tempfile_in(dir)
        .map_err(|e| DenwaError::io(dir, e))?;
    let mut bytes = serde_json::to_vec(ann).map_err(|e| DenwaError::Protocol {
        path: path.clone(),
        detail: e.to_string(),
    })?;
    bytes.push(b'\n');
    tmp.write_all(&bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| DenwaError::io(tmp.path(), e))?;
    tmp.persist(&path)
        .map_err(|e| DenwaError::io(&path, e.error))?;
    Ok(path)
}

/// Reads `<dir>/denwa.json` through the read guard (a FIFO, a device or a
/// huge file there is refused at once, never waited on). A missing file
/// means the session is not live.
pub fn read_announcement(dir: &Path) -> Result<Announcement, DenwaError> {
    use crate::read::guard::{self, GuardError};
    let path = dir.join(DENWA_JSON);
    let bytes = match guard::read_capped(&path, guard::DENWA_JSON_CAP) {
        Ok(b) => b,
        Err(GuardError::NotFound) => {
            return Err(DenwaError::NotLive {
                path: dir.to_owned(),
            })
        }
        Err(GuardError::Io(e)) => return Err(DenwaError::io(&path, e)),
        Err(e) => {
            return Err(DenwaError::Protocol {
                path,
                detail: e.to_string(),
            })
        }
    };
    let ann: Announcement = serde_json::from_slice(&bytes).map_err(|e| DenwaError::Protocol {
        path: path.clone(),
        detail: format!("malformed {DENWA_JSON}: {e}"),
    })?;
    if ann.protocol != PROTOCOL {
        return Err(DenwaError::Protocol {
            path,
            detail: format!(
                "unsupported protocol {:?} (expected {PROTOCOL:?})",
                ann.protocol
            ),
        });
    }
    Ok(ann)
}

/// Is there a live DenwaRenji for this session dir? `denwa.json` present,
/// its pid a live process of this user and its socket one the client would
/// trust. Cheap: no connection is made (the client checks the peer).
pub fn is_live(session_dir: &Path) -> bool {
    match read_announcement(session_dir) {
        Ok(ann) => {
            super::trust::pid_ours(ann.pid) && super::trust::check_socket_path(&ann.socket).is_ok()
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let uuid = "0a1b2c3d-0000-4000-8000-00000000abcd";
        assert_eq!(safe_name(uuid), uuid);
        let odd = safe_name("../x/y");
        assert!(odd.starts_with("___x_y~"), "{odd}");
        assert_ne!(safe_name("a/b"), safe_name("a_b"));
        assert!(!safe_name("").is_empty());
        let p = socket_path_in(Some(Path::new("/run/user/1000")), uuid, Some("sub1"));
        assert_eq!(
            p,
            Path::new("/run/user/1000/worldline").join(format!("{uuid}-sub1.sock"))
        );
        let deep = "/x".repeat(40);
        let p = socket_path_in(Some(Path::new(&deep)), uuid, None);
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("0a1b2c3d-") && name.len() == 30, "{name}");
    }
}
