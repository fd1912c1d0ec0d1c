//! Codex CLI (npm `@openai/codex`): its on-disk contract. A session as
//! worldline shows it is one thread: its rollout files (the first, and one
//! per generation a `thread/revert` wrote), its subagent threads, and its
//! place among forks (`forked_from`/`forks`; a fork is a thread of its own
//! whose file points into its source by ordinal). Where threads live
//! (`home`), one file read (`rollout`), world lines of a thread (`thread`),
//! records and bodies (`records`), compressed rollouts (`zst`), and the
//! parts the builder takes (`parts`).

mod fast;
pub mod follow;
pub mod home;
pub mod parts;
pub mod records;
pub mod rollout;
mod split;
pub mod thread;
mod zst;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub use home::Home;
pub use rollout::Rollout;

use crate::error::{Error, Result};
use crate::sources::{Reading, SessionParts, SessionSummary, Tool};

/// The Codex home a rollout is in (`<home>/sessions/YYYY/MM/DD/<file>` or
/// `<home>/archived_sessions/<file>`), else `$CODEX_HOME`'s.
pub fn home_of(path: &Path) -> Home {
    let dir = path.parent();
    if let Some(a) = dir.filter(|d| d.file_name().is_some_and(|n| n == "archived_sessions")) {
        if let Some(root) = a.parent() {
            return Home {
                root: root.to_path_buf(),
            };
        }
    }
    let up3 = dir
        .and_then(Path::parent)
        .and_then(Path::parent)
        .and_then(Path::parent);
    match up3 {
        Some(s) if s.file_name().is_some_and(|n| n == "sessions") => Home {
            root: s.parent().map(Path::to_path_buf).unwrap_or_default(),
        },
        _ => Home::from_env(),
    }
}

/// The files of the thread whose (any) file is `path`, first generation
/// first: those beside it (where Codex writes them), else anywhere in its
/// home.
pub fn generations_of(path: &Path) -> Vec<PathBuf> {
    let Some(name) = home::parse_name(path) else {
        return vec![path.to_path_buf()];
    };
    let mut files: Vec<(home::RolloutName, PathBuf)> = path
        .parent()
        .and_then(|d| std::fs::read_dir(d).ok())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| Some((home::parse_name(&p)?, p)))
        .filter(|(n, _)| n.thread == name.thread)
        .collect();
    if files.is_empty() {
        return vec![path.to_path_buf()];
    }
    files.sort_by(|a, b| home::order(&a.0, &b.0));
    files.into_iter().map(|(_, p)| p).collect()
}

/// The first file of thread `id`: beside `near`, else in its home.
pub fn find_thread(near: &Path, id: &str) -> Option<PathBuf> {
    let first_of = |files: Vec<PathBuf>| {
        files
            .into_iter()
            .find(|p| home::parse_name(p).is_some_and(|n| n.thread == id && n.generation.is_none()))
    };
    let beside = near
        .parent()
        .and_then(|d| std::fs::read_dir(d).ok())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    first_of(beside).or_else(|| first_of(home_of(near).thread_files(id)))
}

/// Reads every file of the thread whose first file is `first`.
pub fn read_generations(first: &Path) -> Result<Vec<Rollout>> {
    let mut out = Vec::new();
    for (i, p) in generations_of(first).iter().enumerate() {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match Rollout::read(p, &name) {
            Ok(r) => out.push(r),
            // The first file is the session; a later one unreadable is
            // said and left out.
            Err(e) if i == 0 => return Err(e),
            Err(e) => {
                if let Some(f) = out.first_mut() {
                    f.warnings.push(crate::model::Warning {
                        file: name,
                        line: 0,
                        message: format!("generation not read: {e}"),
                    });
                }
                break;
            }
        }
    }
    if out.is_empty() {
        return Err(Error::Other(format!(
            "{}: not a Codex rollout",
            first.display()
        )));
    }
    Ok(out)
}

/// Is `path` a Codex rollout: its name, and a first line that is a
/// `session_meta`?
pub fn is_rollout(path: &Path) -> bool {
    path.is_file()
        && home::parse_name(path).is_some()
        && home::head_lines(path, 4 << 20, 1).is_some_and(|r| {
            r.entries
                .first()
                .is_some_and(|e| e.kind == rollout::Kind::Meta)
        })
}

/// A thread's row for `list`: its head (cwd, first prompt), world lines
/// counted from its files without building them.
pub fn summarize(first: &Path) -> SessionSummary {
    let files = generations_of(first);
    let head = home::head_lines(first, 8 << 20, 400);
    let meta = head
        .as_ref()
        .and_then(|h| h.meta.clone())
        .unwrap_or_default();
    let title = head.as_ref().and_then(|h| {
        h.entries
            .iter()
            .find_map(|e| h.prompt(e))
            .map(str::to_string)
    });
    // Counted in the bytes, not parsed: a legacy rollback marker, a
    // completed spawn_agent call.
    let (mut rollbacks, mut subagents) = (0, 0);
    for bytes in files
        .iter()
        .filter(|p| !home::is_zst(p))
        .filter_map(|p| crate::read::guard::read_capped(p, 1 << 30).ok())
    {
        rollbacks += memchr::memmem::find_iter(&bytes, b"\"thread_rolled_back\"").count();
        subagents += memchr::memmem::find_iter(&bytes, b"\"tool\":\"spawn_agent\"").count();
    }
    let modified = files
        .iter()
        .filter_map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .max()
        .unwrap_or(std::time::UNIX_EPOCH);
    let forked_from = meta
        .forked_from_id
        .clone()
        .or_else(|| {
            meta.base
                .as_ref()
                .filter(|b| b.0 != meta.id)
                .map(|b| b.0.clone())
        })
        .or_else(|| head.as_ref().and_then(|h| h.copied_from.clone()));
    SessionSummary {
        id: home::parse_name(first)
            .map(|n| n.thread)
            .unwrap_or_else(|| meta.id.clone()),
        tool: Tool::Codex.as_str(),
        dir: first.to_path_buf(),
        work_dir: meta.cwd.clone(),
        title,
        world_lines: files.len() + rollbacks,
        subagents,
        modified: modified
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        size: files
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum(),
        fork_kind: forked_from.as_ref().map(|_| "fork".to_string()),
        forked_from,
    }
}

/// Codex as a [`crate::sources::Source`].
pub struct Codex;

impl crate::sources::Source for Codex {
    fn tool(&self) -> Tool {
        Tool::Codex
    }

    fn recognise(&self, path: &Path) -> bool {
        is_rollout(path)
    }

    /// A later generation's file → its thread's first; a subagent's → its
    /// parent thread's, when that is there.
    fn session_of(&self, path: &Path) -> Option<PathBuf> {
        if !is_rollout(path) {
            return None;
        }
        let first = generations_of(path).into_iter().next()?;
        if let Some(parent) = home::head(&first).and_then(|m| m.parent_thread) {
            if let Some(p) = find_thread(&first, &parent) {
                return Some(p);
            }
        }
        Some(first)
    }

    fn parts(&self, path: &Path, _reading: Reading) -> Result<SessionParts> {
        parts::session_parts(path)
    }

    fn load_body(
        &self,
        path: &Path,
        meta: &crate::model::RecordMeta,
    ) -> Result<crate::model::Body> {
        records::load_body(path, meta)
    }

    fn load_line_head(
        &self,
        path: &Path,
        meta: &crate::model::RecordMeta,
        max: usize,
    ) -> Result<Vec<u8>> {
        records::load_line(path, meta, max)
    }

    fn sessions_here(&self, cwd: &Path) -> Vec<PathBuf> {
        let here = cwd.to_string_lossy();
        Home::from_env()
            .threads()
            .into_iter()
            .filter(|p| home::head(p).and_then(|m| m.cwd).as_deref() == Some(here.as_ref()))
            .collect()
    }

    fn all_sessions(&self) -> Vec<PathBuf> {
        Home::from_env().threads()
    }

    fn session_id(&self, path: &Path) -> String {
        home::parse_name(path).map(|n| n.thread).unwrap_or_else(|| {
            path.file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
    }

    fn summarize(&self, path: &Path) -> SessionSummary {
        summarize(path)
    }

    fn modified(&self, path: &Path) -> SystemTime {
        generations_of(path)
            .iter()
            .filter_map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
            .max()
            .unwrap_or(std::time::UNIX_EPOCH)
    }

    fn work_dir_of(&self, path: &Path) -> Option<String> {
        home::head(path)?.cwd
    }

    /// The thread's directory (a new generation or a subagent's file
    /// appears there) and its files.
    fn live_paths(&self, path: &Path) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = path.parent().map(Path::to_path_buf).into_iter().collect();
        out.extend(generations_of(path));
        out
    }

    /// The thread's files are kept indexed: an append is parsed alone.
    fn follower(&self, path: &Path) -> Box<dyn crate::sources::follow::Follower> {
        Box::new(follow::CodexFollower::new(path))
    }

    /// Rollouts only grow: replayed record by record. A fork's source
    /// thread is copied whole first, so the copy still finds it.
    fn replay_style(&self, path: &Path) -> crate::sources::ReplayStyle {
        if generations_of(path).iter().any(|p| home::is_zst(p)) {
            return crate::sources::ReplayStyle::Unsupported(
                "a compressed (.zst) rollout is not replayed; decompress it first".into(),
            );
        }
        let head = home::head_of(path);
        let source = head.as_ref().and_then(|h| {
            let m = &h.meta;
            m.forked_from_id
                .clone()
                .or_else(|| m.base.as_ref().filter(|b| b.0 != m.id).map(|b| b.0.clone()))
                .or_else(|| h.copied_from.clone())
        });
        let side_files = source
            .and_then(|src| find_thread(path, &src))
            .map(|first| generations_of(&first))
            .unwrap_or_default();
        crate::sources::ReplayStyle::Appends { side_files }
    }

    fn home_hint(&self) -> String {
        Home::from_env().sessions_root().display().to_string()
    }

    /// A marked position is where a turn began (`task_started`).
    fn checkpoint_word(&self) -> &'static str {
        "turn"
    }
}
