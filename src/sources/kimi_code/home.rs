//! Where Kimi Code keeps sessions: the data home (`$KIMI_CODE_HOME`, else
//! `~/.kimi-code`), `session_index.jsonl`, and the work-dir buckets
//! `sessions/wd_<slug>_<12 hex of sha256>/session_<uuid>/`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::read::guard;

/// A Kimi Code data home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    pub dir: PathBuf,
}

impl Home {
    pub fn from_env() -> Home {
        let dir = std::env::var_os("KIMI_CODE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .unwrap_or_default()
                    .join(".kimi-code")
            });
        Home { dir }
    }

    /// The home a session directory lives in
    /// (`<home>/sessions/<bucket>/<id>`), else the one from the environment.
    pub fn of_session(dir: &Path) -> Home {
        dir.parent()
            .and_then(Path::parent)
            .filter(|s| s.file_name().is_some_and(|n| n == "sessions"))
            .and_then(Path::parent)
            .map(|d| Home {
                dir: d.to_path_buf(),
            })
            .unwrap_or_else(Home::from_env)
    }

    pub fn sessions_root(&self) -> PathBuf {
        self.dir.join("sessions")
    }

    /// The bucket Kimi Code itself reads for a work dir.
    pub fn bucket(&self, work_dir: &str) -> PathBuf {
        self.sessions_root().join(work_dir_key(work_dir))
    }

    /// `session_index.jsonl`, last line per session winning; lines that
    /// aren't entries are skipped.
    pub fn index(&self) -> Vec<IndexEntry> {
        let Ok(text) =
            guard::read_capped_nofollow(&self.dir.join("session_index.jsonl"), guard::INDEX_CAP)
        else {
            return Vec::new();
        };
        // Last line per id wins: a map of positions keeps it linear.
        let mut out: Vec<Option<IndexEntry>> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        for line in text.split(|&b| b == b'\n') {
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            let Some(id) = s("sessionId") else { continue };
            let entry = IndexEntry {
                id,
                dir: s("sessionDir").map(PathBuf::from),
                work_dir: s("workDir"),
            };
            if let Some(old) = at.insert(entry.id.clone(), out.len()) {
                out[old] = None;
            }
            out.push(Some(entry));
        }
        out.into_iter().flatten().collect()
    }

    /// Session directories of one work dir: its bucket, plus those the index
    /// files under it (a moved home keeps its old bucket names).
    pub fn sessions_of(&self, work_dir: &str) -> Vec<PathBuf> {
        let mut dirs = sessions_in(&self.bucket(work_dir));
        let mut seen: std::collections::HashSet<PathBuf> = dirs.iter().cloned().collect();
        let index = self.index();
        // The buckets, listed once: an index of 100 000 lines must not
        // list the sessions root 100 000 times.
        let buckets: Vec<PathBuf> = std::fs::read_dir(self.sessions_root())
            .map(|r| r.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        for e in index
            .iter()
            .filter(|e| e.work_dir.as_deref() == Some(work_dir))
        {
            if e.id.is_empty() || e.id.contains('/') {
                continue;
            }
            if let Some(d) = buckets
                .iter()
                .map(|b| b.join(&e.id))
                .find(|p| is_session_dir(p))
            {
                if seen.insert(d.clone()) {
                    dirs.push(d);
                }
            }
        }
        dirs.sort();
        dirs
    }

    /// Every session directory under `sessions/`.
    pub fn all_sessions(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.sessions_root()) else {
            return Vec::new();
        };
        let mut out: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .flat_map(|p| sessions_in(&p))
            .collect();
        out.sort();
        out
    }

    /// A session directory by id, in any bucket.
    pub fn find(&self, id: &str) -> Option<PathBuf> {
        if id.is_empty() || id.contains('/') {
            return None;
        }
        let Ok(entries) = std::fs::read_dir(self.sessions_root()) else {
            return None;
        };
        entries
            .flatten()
            .map(|e| e.path().join(id))
            .find(|p| is_session_dir(p))
    }

    /// Why `session_index.jsonl` or `workspaces.json` exist but are not
    /// read (a FIFO, a device, a symlink, over the cap): warnings for `list`.
    pub fn side_warnings(&self) -> Vec<crate::model::Warning> {
        [
            ("session_index.jsonl", guard::INDEX_CAP),
            ("workspaces.json", guard::STATE_JSON_CAP),
        ]
        .into_iter()
        .filter_map(|(name, cap)| {
            let path = self.dir.join(name);
            let why = match guard::open_regular_nofollow(&path) {
                Ok(g) if g.len > cap => guard::GuardError::TooBig { len: g.len, cap },
                Ok(_) => return None,
                Err(e) if e.is_not_found() => return None,
                Err(e) => e,
            };
            Some(crate::model::Warning {
                file: path.to_string_lossy().into_owned(),
                line: 0,
                message: why.to_string(),
            })
        })
        .collect()
    }

    /// Work dirs by bucket name, from the index and `workspaces.json`.
    pub fn work_dirs(&self) -> HashMap<String, String> {
        let mut map = HashMap::new();
        for e in self.index() {
            let (Some(dir), Some(wd)) = (e.dir, e.work_dir) else {
                continue;
            };
            if let Some(bucket) = dir.parent().and_then(Path::file_name) {
                map.insert(bucket.to_string_lossy().into_owned(), wd);
            }
        }
        if let Ok(Some(ws)) =
            guard::read_json_nofollow(&self.dir.join("workspaces.json"), guard::STATE_JSON_CAP)
        {
            for (key, w) in ws
                .get("workspaces")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if let Some(root) = w.get("root").and_then(Value::as_str) {
                    map.entry(key.clone()).or_insert_with(|| root.to_string());
                }
            }
        }
        map
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    pub id: String,
    pub dir: Option<PathBuf>,
    pub work_dir: Option<String>,
}

/// `wd_<slug>_<hash12>` as Kimi Code's `encodeWorkDirKey` makes it: forward
/// slashes, trailing ones dropped, the last component slugged (lowercase,
/// runs of other characters as `-`, at most 40), then sha256 of the path.
pub fn work_dir_key(work_dir: &str) -> String {
    let normalized = work_dir.replace('\\', "/");
    let normalized = normalized.trim_end_matches('/');
    let last = normalized.rsplit('/').next().unwrap_or(normalized);
    let digest = Sha256::digest(normalized.as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("wd_{}_{hex}", slug(last))
}

fn slug(name: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in name.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-') {
            out.push(c);
            dash = false;
        } else if !dash {
            out.push('-');
            dash = true;
        }
    }
    let trimmed: String = out.trim_matches('-').chars().take(40).collect();
    let trimmed = trimmed.trim_matches('-');
    match trimmed {
        "" | "." | ".." => "workspace".to_string(),
        s => s.to_string(),
    }
}

/// The directory of a session's agents, and each one's wire in its own.
const AGENTS: &str = "agents";
const WIRE: &str = "wire.jsonl";

/// Where agent `id`'s wire is in a session directory, relative to it.
pub fn agent_wire_name(id: &str) -> String {
    format!("agents/{id}/{WIRE}")
}

/// The directory holding a session's agents.
pub fn agents_dir(session_dir: &Path) -> PathBuf {
    session_dir.join(AGENTS)
}

/// Agent `id`'s directory in a session directory.
pub fn agent_dir(session_dir: &Path, id: &str) -> PathBuf {
    agents_dir(session_dir).join(id)
}

/// Agent `id`'s wire.
pub fn agent_wire(session_dir: &Path, id: &str) -> PathBuf {
    agent_dir(session_dir, id).join(WIRE)
}

/// A Kimi Code session directory: `agents/main/wire.jsonl` inside.
pub fn is_session_dir(dir: &Path) -> bool {
    agent_wire(dir, "main").is_file()
}

fn sessions_in(bucket: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(bucket) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_session_dir(p))
        .collect();
    out.sort();
    out
}

/// World lines of a wire, counted without building them: one per
/// `agent.switched` edge plus `main`, or, in a wire without edges, one per
/// `context.undo`. A streaming scan, so listing stays cheap on big wires.
pub fn count_branches(wire: &Path) -> usize {
    use std::io::Read;
    const EDGE: &[u8] = b"\"type\":\"agent.switched\"";
    const UNDO: &[u8] = b"\"type\":\"context.undo\"";
    let Ok(guard::Guarded { file: f, len }) = guard::open_regular(wire) else {
        return 0;
    };
    // Read as it was when opened: a wire growing meanwhile can't hold us.
    let mut f = f.take(len);
    let (mut edges, mut undos) = (0, 0);
    let mut buf = vec![0u8; 1 << 20];
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        carry.extend_from_slice(&buf[..n]);
        edges += memchr::memmem::find_iter(&carry, EDGE).count();
        undos += memchr::memmem::find_iter(&carry, UNDO).count();
        // Keep a tail shorter than a pattern, so a match split across reads
        // is found once.
        let keep = carry.len().min(EDGE.len().max(UNDO.len()) - 1);
        carry.drain(..carry.len() - keep);
    }
    1 + if edges > 0 { edges } else { undos }
}

/// Agent ids with a wire: `main` first, then `agent-N` by number.
pub fn agent_ids(session_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(agents_dir(session_dir)) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().join(WIRE).is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort_by_key(|id| {
        let n = id
            .strip_prefix("agent-")
            .and_then(|n| n.parse::<u64>().ok());
        (id != "main", n.is_none(), n, id.clone())
    });
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_dir_keys_follow_kimi_code() {
        // `printf /home/user/project | sha256sum` starts 9dad1e4e08b0.
        assert_eq!(
            work_dir_key("/home/user/project/"),
            "wd_project_9dad1e4e08b0"
        );
        assert_eq!(work_dir_key("C:\\x\\Proj"), work_dir_key("C:/x/Proj"));
        assert_eq!(slug("My Project (2)"), "my-project-2");
        assert_eq!(slug("???"), "workspace");
        assert_eq!(slug(&"a".repeat(50)).len(), 40);
    }

    #[test]
    fn agents_sort_main_first_then_by_number() {
        let tmp = tempfile::tempdir().unwrap();
        for id in ["agent-10", "main", "agent-2", "x"] {
            let d = tmp.path().join("agents").join(id);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("wire.jsonl"), "").unwrap();
        }
        assert_eq!(agent_ids(tmp.path()), ["main", "agent-2", "agent-10", "x"]);
    }
}
