//! Finding kimi-cli sessions: the share dir, `kimi.json`, `md5(cwd)` work-dir
//! folders (holding session directories and, before 0.59, flat session
//! files), lookup by path, id or id prefix, and the summary `worldline
//! list` and the picker show.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use md5::{Digest, Md5};
use serde::Serialize;

use super::layout::{self, file_name, flat_name, flat_path, Layout};
use super::{family_files, is_session, lineage, listing, meta};
use crate::error::{Error, Result};
use crate::model::Warning;
use crate::read::guard;

/// Where to look: the share dir and the directory the user is in.
#[derive(Debug, Clone)]
pub struct Locator {
    pub share_dir: PathBuf,
    pub cwd: PathBuf,
}

impl Locator {
    /// `$KIMI_SHARE_DIR`, else `~/.kimi`; the process's current directory.
    pub fn from_env() -> Locator {
        let share_dir = std::env::var_os("KIMI_SHARE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .unwrap_or_default()
                    .join(".kimi")
            });
        let cwd = std::env::current_dir().unwrap_or_default();
        Locator { share_dir, cwd }
    }

    pub fn sessions_root(&self) -> PathBuf {
        self.share_dir.join("sessions")
    }

    /// `sessions/md5(cwd)/`, where kimi-cli keeps this directory's sessions.
    pub fn cwd_sessions(&self) -> PathBuf {
        self.sessions_root()
            .join(work_dir_hash(&self.cwd.to_string_lossy()))
    }
}

/// kimi-cli names a work dir's session folder by the md5 of its path.
pub fn work_dir_hash(path: &str) -> String {
    let digest = Md5::digest(path.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Turns what the user typed into a session path.
pub fn resolve(arg: Option<&str>, loc: &Locator) -> Result<PathBuf> {
    match arg {
        Some(a) => resolve_arg(a, loc),
        None => resolve_default(loc),
    }
}

fn newest(paths: Vec<PathBuf>) -> Option<PathBuf> {
    paths.into_iter().max_by_key(|p| modified(p))
}

fn resolve_arg(arg: &str, loc: &Locator) -> Result<PathBuf> {
    let path = Path::new(arg);
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.is_dir() {
            if is_session(path) {
                return Ok(path.to_path_buf());
            }
            // A work-dir folder of flat sessions: its newest one.
            return newest(flat_sessions_in(path)).ok_or_else(|| Error::NoContextFile {
                path: path.to_path_buf(),
            });
        }
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if is_session(parent) {
            return Ok(parent.to_path_buf());
        }
        if let Some(f) = flat_name(&file_name(path)) {
            let main = flat_path(parent, f.sid);
            if is_session(&main) {
                return Ok(main);
            }
        }
        return Err(Error::NoContextFile {
            path: parent.to_path_buf(),
        });
    }
    if arg.contains('/') || arg.ends_with(".jsonl") {
        return Err(Error::NotFound {
            path: path.to_path_buf(),
        });
    }
    resolve_id(arg, loc)
}

fn resolve_id(prefix: &str, loc: &Locator) -> Result<PathBuf> {
    let all = session_dirs(&loc.sessions_root());
    let id = |p: &PathBuf| Layout::of(p).id();
    if let Some(exact) = all.iter().find(|p| id(p) == prefix) {
        return Ok(exact.clone());
    }
    let matches: Vec<&PathBuf> = all.iter().filter(|p| id(p).starts_with(prefix)).collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(Error::NoSession {
            query: prefix.to_string(),
            hint: format!(
                " (not a path, and no session id starts with it under {})",
                loc.sessions_root().display()
            ),
        }),
        many => Err(Error::AmbiguousSession {
            prefix: prefix.to_string(),
            candidates: many.iter().map(|p| id(p)).collect::<Vec<_>>().join(", "),
        }),
    }
}

fn resolve_default(loc: &Locator) -> Result<PathBuf> {
    newest(sessions_in(&loc.cwd_sessions()))
        .or_else(|| newest(session_dirs(&loc.sessions_root())))
        .ok_or_else(|| Error::NoSession {
            query: loc.cwd.display().to_string(),
            hint: format!(
                ": no sessions under {} (set KIMI_SHARE_DIR, pass a session path, or try `worldline demo`)",
                loc.sessions_root().display()
            ),
        })
}

/// Flat (0.35–0.58) sessions in a work-dir folder, by their main file path.
fn flat_sessions_in(folder: &Path) -> Vec<PathBuf> {
    let Ok(listing) = listing::list(folder) else {
        return Vec::new();
    };
    let mut sids: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for e in &listing.all {
        let Some(f) = flat_name(&e.name) else {
            continue;
        };
        if f.sub.is_none() && !seen.contains(f.sid) && e.path.is_file() {
            seen.insert(f.sid.to_string());
            sids.push(f.sid.to_string());
        }
    }
    sids.into_iter()
        .map(|sid| flat_path(folder, &sid))
        .filter(|p| is_session(p))
        .collect()
}

/// Sessions directly inside one work-dir folder: session directories and
/// flat sessions.
pub fn sessions_in(work_dir_folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(work_dir_folder) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && is_session(p))
        .collect();
    out.extend(flat_sessions_in(work_dir_folder));
    out
}

/// Every session under `sessions/`, sorted by path.
pub fn session_dirs(sessions_root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(sessions_root) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|e| sessions_in(&e.path()))
        .collect();
    out.sort();
    out
}

/// The session's own files (a flat session shares its folder): their
/// paths and `lstat`s.
fn own_entries(path: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let l = Layout::of(path);
    let Ok(listing) = listing::list(l.folder()) else {
        return Vec::new();
    };
    let take = |e: &listing::Entry| Some((e.path.clone(), e.metadata.clone()?));
    match &l {
        Layout::Dir { .. } => listing.all.iter().filter_map(take).collect(),
        Layout::Flat { .. } => listing
            .like(l.stem())
            .filter(|e| l.owns(&e.name))
            .filter_map(take)
            .collect(),
    }
}

/// Last change to any of the session's files.
pub fn modified(path: &Path) -> SystemTime {
    own_entries(path)
        .iter()
        .filter_map(|(_, m)| m.modified().ok())
        .max()
        .unwrap_or(UNIX_EPOCH)
}

fn size_of(entries: Vec<(PathBuf, std::fs::Metadata)>) -> u64 {
    entries
        .iter()
        .map(|(p, m)| {
            if m.is_dir() {
                size_of(
                    std::fs::read_dir(p)
                        .map(|r| {
                            r.flatten()
                                .filter_map(|e| Some((e.path(), e.metadata().ok()?)))
                                .collect()
                        })
                        .unwrap_or_default(),
                )
            } else {
                m.len()
            }
        })
        .sum()
}

/// `state.json`'s title of a session; flat sessions have none.
pub fn title(path: &Path) -> Option<String> {
    Layout::of(path)
        .side_file(layout::STATE)
        .and_then(|p| meta::title(&p))
}

/// Work dirs known to `kimi.json`, by the folder name kimi-cli gives them.
pub fn work_dirs(share_dir: &Path) -> HashMap<String, String> {
    work_dirs_checked(share_dir).0
}

/// [`work_dirs`], and why `kimi.json` was not read when it exists but is a
/// FIFO, a device, too big or not JSON.
pub fn work_dirs_checked(share_dir: &Path) -> (HashMap<String, String>, Option<String>) {
    let mut map = HashMap::new();
    let doc = match guard::read_json(&share_dir.join("kimi.json"), guard::KIMI_JSON_CAP) {
        Ok(Some(doc)) => doc,
        Ok(None) => return (map, None),
        Err(why) => return (map, Some(why)),
    };
    for wd in doc
        .get("work_dirs")
        .and_then(|w| w.as_array())
        .into_iter()
        .flatten()
    {
        let Some(path) = wd.get("path").and_then(|p| p.as_str()) else {
            continue;
        };
        let hash = work_dir_hash(path);
        let key = match wd.get("kaos").and_then(|k| k.as_str()) {
            Some(kaos) if kaos != "local" => format!("{kaos}_{hash}"),
            _ => hash,
        };
        map.insert(key, path.to_string());
    }
    (map, None)
}

/// The work dir a session belongs to, from `kimi.json` (the share dir is
/// two levels above its work-dir folder).
pub fn work_dir_of(path: &Path) -> Option<String> {
    let folder = Layout::of(path).folder().to_path_buf();
    let folder = match Layout::of(path) {
        Layout::Dir { .. } => folder.parent()?.to_path_buf(),
        Layout::Flat { .. } => folder,
    };
    let share = folder.parent()?.parent()?;
    work_dirs(share).remove(&file_name(&folder))
}

/// One row of `worldline list` and of the picker.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSummary {
    pub id: String,
    /// `kimi-cli` or `kimi-code`.
    pub tool: &'static str,
    /// Not UTF-8 in a name must not fail the whole listing.
    #[serde(serialize_with = "lossy_path")]
    pub dir: PathBuf,
    pub work_dir: Option<String>,
    pub title: Option<String>,
    pub world_lines: usize,
    pub subagents: usize,
    /// Unix seconds.
    pub modified: u64,
    pub size: u64,
    /// The session this one was made from by `/fork` or `/undo`.
    pub forked_from: Option<String>,
    /// `"fork"` or `"undo"` when `forked_from` is set.
    pub fork_kind: Option<String>,
}

fn lossy_path<S: serde::Serializer>(p: &Path, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

pub fn summarize(path: &Path, work_dirs: &HashMap<String, String>) -> SessionSummary {
    summarize_checked(path, work_dirs).0
}

/// [`summarize`], with a warning for a `state.json` that could not be read.
pub fn summarize_checked(
    path: &Path,
    work_dirs: &HashMap<String, String>,
) -> (SessionSummary, Option<Warning>) {
    let l = Layout::of(path);
    let state = l.side_file(layout::STATE);
    let (title, problem) = state.as_deref().map_or((None, None), meta::title_checked);
    let warning = problem.map(|message| Warning {
        file: state.unwrap_or_default().to_string_lossy().into_owned(),
        line: 0,
        message,
    });
    let files = family_files(l.folder(), l.stem()).unwrap_or_default();
    let work_folder = match &l {
        Layout::Dir { dir } => dir.parent().map(file_name).unwrap_or_default(),
        Layout::Flat { folder, .. } => file_name(folder),
    };
    let row = SessionSummary {
        id: l.id(),
        tool: "kimi-cli",
        dir: path.to_path_buf(),
        work_dir: work_dirs.get(&work_folder).cloned(),
        title,
        world_lines: files.len(),
        subagents: layout::subagents(&l).0.len(),
        modified: modified(path)
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        size: size_of(own_entries(path)),
        forked_from: None,
        fork_kind: None,
    };
    (row, warning)
}

/// Sessions of the current directory (or all), newest first, each fork
/// right after the session it came from.
pub fn list(loc: &Locator, all: bool) -> Vec<SessionSummary> {
    list_checked(loc, all).0
}

/// [`list`], and warnings for the side files (`kimi.json`, a session's
/// `state.json`) that exist but could not be read.
pub fn list_checked(loc: &Locator, all: bool) -> (Vec<SessionSummary>, Vec<Warning>) {
    // Each folder listed once for the whole listing (see `listing`).
    listing::cached(|| list_uncached(loc, all))
}

fn list_uncached(loc: &Locator, all: bool) -> (Vec<SessionSummary>, Vec<Warning>) {
    let dirs = if all {
        session_dirs(&loc.sessions_root())
    } else {
        sessions_in(&loc.cwd_sessions())
    };
    let (wd, kimi_problem) = work_dirs_checked(&loc.share_dir);
    let mut warnings: Vec<Warning> = kimi_problem
        .map(|message| Warning {
            file: loc
                .share_dir
                .join("kimi.json")
                .to_string_lossy()
                .into_owned(),
            line: 0,
            message,
        })
        .into_iter()
        .collect();
    let mut out: Vec<SessionSummary> = Vec::with_capacity(dirs.len());
    for d in &dirs {
        let (row, w) = summarize_checked(d, &wd);
        out.push(row);
        warnings.extend(w);
    }
    out.sort_by(|a, b| b.modified.cmp(&a.modified).then(a.id.cmp(&b.id)));
    for row in &mut out {
        if let Some(link) = lineage::source_of(&row.dir) {
            row.forked_from = Some(link.session);
            row.fork_kind = Some(link.kind.as_str().to_string());
        }
    }
    (lineage::forks_under_sources(out), warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_of_work_dir_matches_kimi() {
        assert_eq!(work_dir_hash(""), "d41d8cd98f00b204e9800998ecf8427e");
    }
}
