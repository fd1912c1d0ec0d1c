//! Claude Code (npm `@anthropic-ai/claude-code`): its on-disk contract.
//! Where sessions live (`home`), one `.jsonl` read into entries (`scan`),
//! the conversation tree and its world lines (`tree`), the records each
//! line shows and their bodies (`records`), the session as parts with its
//! subagents (`parts`), and sessions made from sessions (`lineage`). World
//! lines here are root-to-leaf paths of one append-only file's
//! `uuid`/`parentUuid` tree: a rewind just points the next entry back.

pub mod cache;
mod fast;
pub mod follow;
pub mod grow;
pub mod home;
pub mod lineage;
pub mod parts;
pub mod records;
pub mod scan;
pub mod tree;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

pub use home::Home;

use crate::error::Result;
use crate::sources::{Reading, SessionParts, SessionSummary, Source, Tool};

/// Does `path` look like a Claude Code session by its content: a line
/// names its `sessionId`, and the file sits in a project folder or a line
/// has Claude Code's `parentUuid` or one of its bookkeeping types. An empty
/// file counts inside a project folder (a session not written yet).
fn looks_like_session(path: &Path) -> bool {
    use std::io::Read;
    let Ok(g) = crate::read::guard::open_regular(path) else {
        return false;
    };
    let mut buf = vec![0u8; 64 << 10];
    let mut f = g.file.take(64 << 10);
    let Ok(n) = f.read(&mut buf) else {
        return false;
    };
    let head = &buf[..n];
    if n == 0 {
        return home::is_session_name(path);
    }
    let has = |p: &[u8]| memchr::memmem::find(head, p).is_some();
    // In a project folder a first bookkeeping line (`mode`) is enough.
    has(b"\"sessionId\"")
        && (home::is_session_name(path)
            || has(b"\"parentUuid\"")
            || has(b"\"type\":\"queue-operation\"")
            || has(b"\"type\":\"last-prompt\"")
            || has(b"\"type\":\"custom-title\"")
            || has(b"\"type\":\"file-history-snapshot\""))
}

/// A session's row for `list` and the picker.
pub fn summarize(path: &Path) -> SessionSummary {
    let id = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let read = parts::Read::of(path, &format!("{id}.jsonl")).ok();
    let forked = read
        .as_ref()
        .map(|r| lineage::find(path, &r.scan).forked_from)
        .unwrap_or_default();
    SessionSummary {
        tool: "claude-code",
        dir: path.to_path_buf(),
        work_dir: read.as_ref().and_then(|r| r.scan.cwd.clone()),
        title: read.as_ref().and_then(parts::Read::title),
        world_lines: read.as_ref().map_or(0, |r| r.tree.lines.len()),
        subagents: home::subagent_files(path).len(),
        modified: modified(path)
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        size: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
            + home::subagent_files(path)
                .iter()
                .filter_map(|(_, p)| std::fs::metadata(p).ok())
                .map(|m| m.len())
                .sum::<u64>(),
        forked_from: forked.as_ref().map(|l| l.session.clone()),
        fork_kind: forked.map(|_| "fork".to_string()),
        id,
    }
}

/// Last change to the session file or any subagent transcript.
pub fn modified(path: &Path) -> SystemTime {
    std::iter::once(path.to_path_buf())
        .chain(home::subagent_files(path).into_iter().map(|(_, p)| p))
        .filter_map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .max()
        .unwrap_or(UNIX_EPOCH)
}

/// Claude Code as a [`Source`].
pub struct ClaudeCode;

impl Source for ClaudeCode {
    fn tool(&self) -> Tool {
        Tool::ClaudeCode
    }

    fn recognise(&self, path: &Path) -> bool {
        // By content, wherever it is: a replayed copy lives outside
        // `projects/`.
        path.extension().is_some_and(|e| e == "jsonl") && path.is_file() && looks_like_session(path)
    }

    fn session_of(&self, path: &Path) -> Option<PathBuf> {
        // A subagent's transcript opens its session.
        if let Some(s) = home::session_of_subagent(path).filter(|s| self.recognise(s)) {
            return Some(s);
        }
        self.recognise(path).then(|| path.to_path_buf())
    }

    fn parts(&self, path: &Path, reading: Reading) -> Result<SessionParts> {
        parts::session_parts(path, reading.times)
    }

    fn load_body(
        &self,
        path: &Path,
        meta: &crate::model::RecordMeta,
    ) -> Result<crate::model::Body> {
        records::load_body(path, meta)
    }

    fn sessions_here(&self, cwd: &Path) -> Vec<PathBuf> {
        Home::from_env().sessions_of(&cwd.to_string_lossy())
    }

    fn all_sessions(&self) -> Vec<PathBuf> {
        Home::from_env().all_sessions()
    }

    fn summarize(&self, path: &Path) -> SessionSummary {
        summarize(path)
    }

    fn modified(&self, path: &Path) -> SystemTime {
        modified(path)
    }

    fn work_dir_of(&self, path: &Path) -> Option<String> {
        lineage::head(path).and_then(|h| h.cwd)
    }

    fn live_paths(&self, path: &Path) -> Vec<PathBuf> {
        let mut out = vec![path.to_path_buf()];
        if let Some(folder) = path.parent() {
            // New `/branch` and `--fork-session` files appear here.
            out.push(folder.to_path_buf());
        }
        out.push(home::side_dir(path));
        out.push(home::subagents_dir(path));
        out
    }

    /// Transcripts only grow; subagent metas and the custom title are
    /// copied first.
    fn replay_style(&self, path: &Path) -> crate::sources::ReplayStyle {
        let mut side_files: Vec<PathBuf> = home::subagent_files(path)
            .into_iter()
            .map(|(id, _)| home::subagent_meta(path, &id))
            .filter(|p| p.is_file())
            .collect();
        let title = home::side_dir(path).join("custom-title.json");
        if title.is_file() {
            side_files.push(title);
        }
        crate::sources::ReplayStyle::Appends { side_files }
    }

    /// Appends cost what was appended (see [`follow`]).
    fn follower(&self, path: &Path) -> Box<dyn crate::sources::Follower> {
        Box::new(follow::ClaudeFollower::new(path))
    }

    fn home_hint(&self) -> String {
        Home::from_env().projects().display().to_string()
    }
}
