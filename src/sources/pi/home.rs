//! Where Pi keeps sessions: `$PI_CODING_AGENT_DIR` (else `~/.pi/agent`)
//! `/sessions/--<cwd, / as ->--/<time>_<id>.jsonl`, or one flat folder
//! `$PI_CODING_AGENT_SESSION_DIR`; recognising a file as Pi's by its name
//! and its first line; the cheap reads `list` needs (header, title).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::read::guard::{self, FirstLine};

/// A Pi agent dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    pub dir: PathBuf,
    /// `PI_CODING_AGENT_SESSION_DIR`: every cwd's sessions in one folder.
    pub session_dir: Option<PathBuf>,
}

impl Home {
    pub fn from_env() -> Home {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let dir = var("PI_CODING_AGENT_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                var("HOME")
                    .map(PathBuf::from)
                    .unwrap_or_default()
                    .join(".pi/agent")
            });
        Home {
            dir,
            session_dir: var("PI_CODING_AGENT_SESSION_DIR").map(PathBuf::from),
        }
    }

    pub fn sessions_root(&self) -> PathBuf {
        self.dir.join("sessions")
    }

    /// The folder Pi writes a work dir's sessions to.
    pub fn bucket(&self, cwd: &str) -> PathBuf {
        self.sessions_root().join(cwd_key(cwd))
    }

    /// Session files of a work dir.
    pub fn sessions_of(&self, cwd: &str) -> Vec<PathBuf> {
        let mut out = sessions_in(&self.bucket(cwd));
        if let Some(flat) = &self.session_dir {
            out.extend(
                sessions_in(flat)
                    .into_iter()
                    .filter(|p| read_header(p).and_then(|h| h.cwd).as_deref() == Some(cwd)),
            );
        }
        out.sort();
        out.dedup();
        out
    }

    /// Every session file.
    pub fn all_sessions(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(self.sessions_root())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .flat_map(|d| sessions_in(&d))
            .collect();
        if let Some(flat) = &self.session_dir {
            out.extend(sessions_in(flat));
        }
        out.sort();
        out.dedup();
        out
    }
}

/// `--home-user-proj--` for `/home/user/proj`, as Pi's
/// `getDefaultSessionDirPath` names it.
pub fn cwd_key(cwd: &str) -> String {
    let trimmed = cwd
        .strip_prefix('/')
        .or_else(|| cwd.strip_prefix('\\'))
        .unwrap_or(cwd);
    let safe: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{safe}--")
}

/// Pi session files directly in `dir`.
pub fn sessions_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_session_file(p))
        .collect();
    out.sort();
    out
}

/// The id in a file name `<time>_<id>.jsonl` (the part after the last `_`).
pub fn id_of_name(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_string_lossy();
    let (_, id) = stem.rsplit_once('_')?;
    (!id.is_empty()).then(|| id.to_string())
}

/// Bytes read to recognise a file: the header is a few hundred.
const HEAD: usize = 64 << 10;

/// A Pi session file: `*.jsonl`, whose first line is Pi's header
/// (`"type":"session"`) or, in a file that lost it, a Pi entry (`id` and
/// `parentId`, which no other agent writes).
pub fn is_session_file(path: &Path) -> bool {
    if path.extension().is_none_or(|e| e != "jsonl") {
        return false;
    }
    match guard::first_line(path, HEAD) {
        Ok(FirstLine::Json(v)) => {
            let ty = v.get("type").and_then(Value::as_str);
            (ty == Some("session") && v.get("cwd").is_some() && v.get("id").is_some())
                || (ty.is_some() && v.get("id").is_some() && v.get("parentId").is_some())
        }
        // A first entry longer than the head: Pi's spelling of its fields.
        Ok(FirstLine::Partial(line)) => {
            line.len() >= HEAD
                && line.starts_with(b"{\"type\":\"")
                && memchr::memmem::find(&line, b"\"parentId\":").is_some()
        }
        _ => false,
    }
}

/// The header, read from the first line alone.
pub fn read_header(path: &Path) -> Option<super::file::Header> {
    let Ok(FirstLine::Json(v)) = guard::first_line(path, HEAD) else {
        return None;
    };
    (v.get("type").and_then(Value::as_str) == Some("session")).then(|| {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        super::file::Header {
            id: s("id"),
            version: v.get("version").and_then(Value::as_u64).unwrap_or(1),
            cwd: s("cwd"),
            parent_session: s("parentSession"),
            timestamp: v
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(super::file::parse_iso),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_keys_are_pis() {
        assert_eq!(cwd_key("/home/user/compact"), "--home-user-compact--");
        assert_eq!(cwd_key("C:\\x\\y"), "--C--x-y--");
    }

    #[test]
    fn names_give_ids() {
        let p = Path::new("/s/2026-12-04T12-44-43-727Z_01a24115-e54e-7160-9c98-e78065b00df0.jsonl");
        assert_eq!(
            id_of_name(p).as_deref(),
            Some("01a24115-e54e-7160-9c98-e78065b00df0")
        );
    }
}
