//! Finding sessions of every source at once: what the user typed (a path,
//! an id, an id prefix, or nothing: the newest session of this directory),
//! `list`, and the picker. Each source keeps its own rules; this only asks
//! both and merges.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::kimi_cli;
use super::kimi_code::{self, Home};
pub use super::SessionSummary;
use super::{source_for, Source, Tool, SOURCES};
use crate::error::{Error, Result};
use crate::model::Warning;

/// Where both tools keep sessions, and the directory the user is in.
#[derive(Debug, Clone)]
pub struct Locator {
    pub cli: kimi_cli::Locator,
    pub code: Home,
}

impl Locator {
    /// `$KIMI_SHARE_DIR` (else `~/.kimi`), `$KIMI_CODE_HOME` (else
    /// `~/.kimi-code`), and the process's current directory.
    pub fn from_env() -> Locator {
        Locator {
            cli: kimi_cli::Locator::from_env(),
            code: Home::from_env(),
        }
    }

    fn cwd(&self) -> String {
        self.cli.cwd.to_string_lossy().into_owned()
    }

    /// Where this directory's sessions would be, for messages.
    pub fn here(&self) -> String {
        format!(
            "{} or {}",
            self.cli.cwd_sessions().display(),
            self.code.bucket(&self.cwd()).display()
        )
    }

    /// Where all sessions would be, for messages.
    pub fn everywhere(&self) -> String {
        format!(
            "{} or {}",
            self.cli.sessions_root().display(),
            self.code.sessions_root().display()
        )
    }
}

/// The sources registered beside the two kimi tools, whose lookups this
/// file still spells out: each is asked through [`Source`] alone.
fn registered() -> impl Iterator<Item = &'static dyn Source> {
    SOURCES
        .iter()
        .copied()
        .filter(|s| !matches!(s.tool(), Tool::KimiCli | Tool::KimiCode))
}

/// Is this a session of any agent?
pub fn is_session(path: &Path) -> bool {
    source_for(path).is_some()
}

/// Last change to a session of any agent.
pub fn modified(path: &Path) -> SystemTime {
    match source_for(path) {
        Some(s) => s.modified(path),
        None => kimi_cli::modified(path),
    }
}

/// A session's row for `list` and the picker, by the source that reads it.
pub fn summarize(path: &Path) -> SessionSummary {
    match source_for(path) {
        Some(s) => s.summarize(path),
        None => Tool::default().source().summarize(path),
    }
}

/// The work dir a session belongs to.
pub fn work_dir_of(path: &Path) -> Option<String> {
    source_for(path)?.work_dir_of(path)
}

fn newest(paths: Vec<PathBuf>) -> Option<PathBuf> {
    paths.into_iter().max_by_key(|p| modified(p))
}

/// Sessions of the current directory, of both tools.
pub fn sessions_here(loc: &Locator) -> Vec<PathBuf> {
    let mut out = kimi_cli::sessions_in(&loc.cli.cwd_sessions());
    out.extend(loc.code.sessions_of(&loc.cwd()));
    for s in registered() {
        out.extend(s.sessions_here(&loc.cli.cwd));
    }
    out
}

/// Sessions a live host registered beside its socket (the demo's, in a
/// temporary directory no listing looks in) that exist right now.
pub fn live_registered() -> Vec<PathBuf> {
    let dir = crate::denwa::socket_dir(crate::denwa::env_runtime_dir().as_deref());
    crate::denwa::live_list::registered_dirs(&dir)
        .into_iter()
        .filter(|d| source_for(d).is_some())
        .collect()
}

pub fn all_sessions(loc: &Locator) -> Vec<PathBuf> {
    let mut out = kimi_cli::share::session_dirs(&loc.cli.sessions_root());
    out.extend(loc.code.all_sessions());
    for s in registered() {
        out.extend(s.all_sessions());
    }
    out
}

/// Turns what the user typed into a session path.
pub fn resolve(arg: Option<&str>, loc: &Locator) -> Result<PathBuf> {
    let Some(arg) = arg else {
        return newest(sessions_here(loc))
            .or_else(|| newest(all_sessions(loc)))
            .ok_or_else(|| Error::NoSession {
                query: loc.cli.cwd.display().to_string(),
                hint: format!(
                    ": no sessions under {} (set KIMI_SHARE_DIR or KIMI_CODE_HOME, pass a session path, or try `worldline demo`)",
                    loc.everywhere()
                ),
            });
    };
    let path = Path::new(arg);
    if path.exists() {
        if kimi_code::home::is_session_dir(path) {
            return Ok(path.to_path_buf());
        }
        if let Some(dir) = code_session_of_wire(path) {
            return Ok(dir);
        }
        if let Some(found) = registered().find_map(|s| s.session_of(path)) {
            return Ok(found);
        }
        return match kimi_cli::resolve(Some(arg), &loc.cli) {
            // A file of no known format is named as such, not as a
            // directory without context files.
            Err(_) if path.is_file() => Err(Error::UnknownFormat {
                path: path.to_path_buf(),
                known: super::known_formats(),
            }),
            r => r,
        };
    }
    let mut code: Vec<PathBuf> = loc
        .code
        .all_sessions()
        .into_iter()
        .filter(|d| name(d).starts_with(arg))
        .collect();
    if let Some(exact) = code.iter().find(|d| name(d) == arg) {
        return Ok(exact.clone());
    }
    for s in registered() {
        let found: Vec<PathBuf> = s
            .all_sessions()
            .into_iter()
            .filter(|p| s.session_id(p).starts_with(arg))
            .collect();
        if let Some(exact) = found.iter().find(|p| s.session_id(p) == arg) {
            return Ok(exact.clone());
        }
        code.extend(found);
    }
    // A live session registered outside every home (the running demo).
    let live: Vec<PathBuf> = live_registered()
        .into_iter()
        .filter(|d| name(d).starts_with(arg) && !code.contains(d))
        .collect();
    code.extend(live);
    if let Some(exact) = code.iter().find(|d| name(d) == arg) {
        return Ok(exact.clone());
    }
    let cli = kimi_cli::resolve(Some(arg), &loc.cli);
    match (code.as_slice(), cli) {
        ([], cli) => cli,
        ([one], Err(Error::NoSession { .. })) => Ok(one.clone()),
        (many, cli) => Err(Error::AmbiguousSession {
            prefix: arg.to_string(),
            candidates: many
                .iter()
                .map(|d| name(d))
                .chain(cli.ok().map(|p| name(&p)))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

fn name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The session dir of a Kimi Code wire path (`<dir>/agents/<id>/wire.jsonl`).
fn code_session_of_wire(path: &Path) -> Option<PathBuf> {
    let agents = path.parent()?.parent()?;
    let dir = agents.parent()?;
    (agents.file_name()? == "agents" && kimi_code::home::is_session_dir(dir))
        .then(|| dir.to_path_buf())
}

/// Sessions of the current directory (or all) of both tools, newest
/// first, each fork under the session it was made from.
pub fn list(loc: &Locator, all: bool) -> Vec<SessionSummary> {
    list_checked(loc, all).0
}

/// `list`, with what could not be read on the way.
pub fn list_checked(loc: &Locator, all: bool) -> (Vec<SessionSummary>, Vec<Warning>) {
    let (mut rows, mut warnings) = kimi_cli::share::list_checked(&loc.cli, all);
    let dirs = if all {
        loc.code.all_sessions()
    } else {
        loc.code.sessions_of(&loc.cwd())
    };
    let work_dirs = loc.code.work_dirs();
    warnings.extend(loc.code.side_warnings());
    for d in &dirs {
        let (row, problem) = kimi_code::summarize_checked(d, &work_dirs);
        rows.push(row);
        warnings.extend(problem);
    }
    for s in registered() {
        let found = if all {
            s.all_sessions()
        } else {
            s.sessions_here(&loc.cli.cwd)
        };
        rows.extend(found.iter().map(|p| s.summarize(p)));
    }
    // Live sessions outside every home (the running demo) are listed too.
    for d in live_registered() {
        if !rows.iter().any(|r| r.dir == d) {
            rows.extend(source_for(&d).map(|s| s.summarize(&d)));
        }
    }
    rows.sort_by(|a, b| b.modified.cmp(&a.modified).then(a.id.cmp(&b.id)));
    (kimi_cli::lineage::forks_under_sources(rows), warnings)
}
