//! Where Claude Code keeps sessions: the config dir (`$CLAUDE_CONFIG_DIR`,
//! else `~/.claude`), one folder per work dir under `projects/` named by
//! its key, and in it `<sessionId>.jsonl` with a `<sessionId>/` folder
//! beside it for subagents (`subagents/agent-<id>.jsonl` + `.meta.json`).

use std::path::{Path, PathBuf};

/// A Claude Code config dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    pub dir: PathBuf,
}

impl Home {
    pub fn from_env() -> Home {
        let dir = std::env::var_os("CLAUDE_CONFIG_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .unwrap_or_default()
                    .join(".claude")
            });
        Home { dir }
    }

    pub fn projects(&self) -> PathBuf {
        self.dir.join("projects")
    }

    /// The folder of a work dir's sessions.
    pub fn project(&self, cwd: &str) -> PathBuf {
        self.projects().join(project_key(cwd))
    }

    /// Sessions of a work dir.
    pub fn sessions_of(&self, cwd: &str) -> Vec<PathBuf> {
        sessions_in(&self.project(cwd))
    }

    /// Every session under `projects/`.
    pub fn all_sessions(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.projects()) else {
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
}

/// `/home/user/cc_fork_at` → `-home-user-cc-fork-at`: every character but
/// ASCII letters and digits becomes `-`.
pub fn project_key(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Session files in a project folder, sorted.
pub fn sessions_in(project: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(project) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_session_name(p) && p.is_file())
        .collect();
    out.sort();
    out
}

/// `<id>.jsonl` directly in a project folder (`projects/<key>/`).
pub fn is_session_name(path: &Path) -> bool {
    let ext = path.extension().is_some_and(|e| e == "jsonl");
    let in_projects = path
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .is_some_and(|n| n == "projects");
    ext && in_projects
}

/// The folder beside a session file (`<id>/`).
pub fn side_dir(session: &Path) -> PathBuf {
    session.with_extension("")
}

/// `<id>/subagents/`.
pub fn subagents_dir(session: &Path) -> PathBuf {
    side_dir(session).join("subagents")
}

/// Subagent transcripts of a session: `(agent id, file)`, by name.
pub fn subagent_files(session: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(subagents_dir(session)) else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name
                .strip_prefix("agent-")?
                .strip_suffix(".jsonl")?
                .to_string();
            Some((id, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// `agent-<id>.meta.json` beside a subagent's transcript.
pub fn subagent_meta(session: &Path, id: &str) -> PathBuf {
    subagents_dir(session).join(format!("agent-{id}.meta.json"))
}

/// The session a subagent transcript belongs to:
/// `<project>/<id>/subagents/agent-x.jsonl` → `<project>/<id>.jsonl`.
pub fn session_of_subagent(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy();
    if !(name.starts_with("agent-") && name.ends_with(".jsonl")) {
        return None;
    }
    let subagents = path.parent()?;
    if subagents.file_name()? != "subagents" {
        return None;
    }
    let side = subagents.parent()?;
    let id = side.file_name()?.to_string_lossy();
    Some(side.parent()?.join(format!("{id}.jsonl")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_replace_every_other_character() {
        assert_eq!(
            project_key("/home/user/cc_fork_at"),
            "-home-user-cc-fork-at"
        );
        assert_eq!(project_key("/a/b.c d/é"), "-a-b-c-d--");
    }

    #[test]
    fn subagent_paths() {
        let p = Path::new("/c/projects/-x/S/subagents/agent-a1.jsonl");
        assert_eq!(
            session_of_subagent(p),
            Some(PathBuf::from("/c/projects/-x/S.jsonl"))
        );
        assert!(is_session_name(Path::new("/c/projects/-x/S.jsonl")));
        assert!(!is_session_name(p));
    }
}
