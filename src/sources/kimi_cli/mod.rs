//! kimi-cli's on-disk contract, every release from 0.35 to 1.52: the share
//! dir and lookup (`share`), which files form a session and in which order
//! (`layout`), side files (`meta`), and sessions made from sessions by
//! `/fork` and `/undo` (`lineage`). Loading hands the world-line builder a
//! [`SessionParts`]; the live tail (`crate::live`) asks the same rules.

pub mod forks;
pub mod layout;
pub mod lineage;
pub mod listing;
pub mod live;
pub mod meta;
pub mod share;
pub mod times;
pub mod wire;

use std::path::{Path, PathBuf};

pub use layout::{AgentSpec, Layout};
pub use share::{list, list_checked, modified, resolve, sessions_in, Locator, SessionSummary};

use super::{AgentParts, Reading, SessionParts, WireLog};
use crate::error::{Error, Result};
use crate::model::Warning;
use crate::read;

/// One context file of a family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub name: String,
    pub path: PathBuf,
    /// `N` of `<stem>_N.jsonl`; `None` for the current `<stem>.jsonl`.
    pub rotation: Option<u64>,
    pub len: u64,
}

/// A family's world-line files, oldest first (see [`layout::world_line_files`]).
pub fn family_files(dir: &Path, stem: &str) -> Result<Vec<ContextFile>> {
    Ok(family_files_checked(dir, stem)?.0)
}

/// A file of a family's directory that looked like a world line but was
/// not taken, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub name: String,
    pub why: String,
}

/// [`family_files`], saying what was skipped: names kimi-cli's own rule
/// (`^<stem>_(\d+)<suffix>$`, so `context_01` is rotation 1) does not
/// take although they look like it (`context_+3`, `context_x`), numbers
/// past 64 bits, a second file for one rotation number, and world-line
/// names that are not regular files (a directory, FIFO, socket or symlink,
/// which is not followed).
pub fn family_files_checked(dir: &Path, stem: &str) -> Result<(Vec<ContextFile>, Vec<Skipped>)> {
    let listing = listing::list(dir).map_err(|e| Error::io(dir, e))?;
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut skip = |name: &str, why: String| {
        skipped.push(Skipped {
            name: name.to_string(),
            why,
        })
    };
    // Only the names that can be this family's (a flat folder holds
    // thousands of other sessions' files).
    for entry in listing.family(stem) {
        let name = entry.name.clone();
        let Some(rotation) = layout::rotation_of(&name, stem) else {
            if let Some(why) = layout::near_miss(&name, stem) {
                skip(&name, why);
            }
            continue;
        };
        let Some(ft) = entry.file_type else { continue };
        if !ft.is_file() {
            let kind = if ft.is_symlink() {
                "a symbolic link (not followed)"
            } else if ft.is_dir() {
                "a directory"
            } else {
                "not a regular file (a FIFO, socket or device)"
            };
            skip(&name, format!("is {kind}; not read as a world line"));
            continue;
        }
        let Some(meta) = &entry.metadata else {
            continue;
        };
        files.push(ContextFile {
            name,
            path: entry.path.clone(),
            rotation,
            len: meta.len(),
        });
    }
    // The plain spelling first, so `context_1` wins over `context_01`.
    files.sort_by(|a, b| {
        layout::family_order(a.rotation)
            .cmp(&layout::family_order(b.rotation))
            .then(a.name.len().cmp(&b.name.len()))
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut unique: Vec<ContextFile> = Vec::with_capacity(files.len());
    for f in files {
        match unique.last() {
            Some(prev) if prev.rotation == f.rotation => skip(
                &f.name,
                format!("the same rotation number as {}; skipped", prev.name),
            ),
            _ => unique.push(f),
        }
    }
    let keep = layout::world_line_files(&unique, |f| f.rotation, |f| f.len == 0);
    let files = keep.into_iter().map(|i| unique[i].clone()).collect();
    skipped.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((files, skipped))
}

fn warning(file: String, message: String) -> Warning {
    Warning {
        file,
        line: 0,
        message,
    }
}

/// `path` made absolute, resolving `.` and `..` (canonical when it exists,
/// so `tree .` names the directory it is in).
fn absolute_session_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// Does this path name a session (a main world line exists, and its first
/// record is kimi-cli's: a JSON object with a string `role`)?
pub fn is_session(path: &Path) -> bool {
    let l = Layout::of(path);
    match family_files(l.folder(), l.stem()) {
        Ok(f) => f
            .first()
            .is_some_and(|first| looks_like_context(&first.path)),
        Err(_) => false,
    }
}

/// How far into a context file recognition looks for its first line.
const RECOGNISE_BYTES: usize = 8 << 10;

/// A context file's first record has a string `role` (every kimi-cli
/// record has one); an empty file is a session not written yet. Another
/// agent's JSON Lines (`type`, no `role`) is not kimi-cli's.
fn looks_like_context(path: &Path) -> bool {
    use crate::read::guard::{first_line, FirstLine};
    match first_line(path, RECOGNISE_BYTES) {
        Ok(FirstLine::Empty) => true,
        Ok(FirstLine::Json(v)) => v.get("role").is_some_and(|r| r.is_string()),
        // A torn or malformed first line: kimi-cli's reader warns about it.
        Ok(FirstLine::NotJson) => true,
        Ok(FirstLine::Partial(head)) => memchr::memmem::find(&head, b"\"role\"").is_some(),
        // Unreadable (a FIFO under the name): its reader says why.
        Err(_) => true,
    }
}

/// Indexes one agent's family, each world line forking from the one
/// before ([`forks`]). File names carry the spec's prefix so warnings from
/// subagents say where they are. What cannot be read beside
/// the context files (`wire.jsonl`, `meta.json`, skipped names) becomes a
/// warning, never a failure.
/// The wire is read only when `reading.times` asks for it; without it a
/// wire that cannot be read still gives its warning.
pub fn read_agent(spec: &AgentSpec, reading: Reading) -> Result<AgentParts> {
    let mut files = Vec::new();
    let (family, skipped) = family_files_checked(&spec.dir, &spec.stem)?;
    let mut warnings: Vec<Warning> = skipped
        .into_iter()
        .map(|s| warning(format!("{}{}", spec.prefix, s.name), s.why))
        .collect();
    // The wire is read beside the context files: both are big in a long run.
    let (indexed, wire) = std::thread::scope(|scope| {
        let wire = spec.wire.as_deref().map(|w| {
            scope.spawn(move || match reading.times {
                true => WireLog::read_checked(w),
                false => wire_unread(w),
            })
        });
        let indexed = index_family(&family, &spec.prefix, &mut files);
        let wire = wire.map(|h| {
            h.join()
                .unwrap_or_else(|_| Err("reading it failed".to_string()))
        });
        (indexed, wire)
    });
    indexed?;
    let wire = match wire {
        Some(Ok(w)) => w,
        Some(Err(why)) => {
            let name = format!("{}{}", spec.prefix, layout::WIRE);
            warnings.push(warning(name, format!("{why}; no times from it")));
            None
        }
        None => None,
    };
    let (meta, meta_problem) = meta::read_meta_checked(&spec.meta);
    if let Some(why) = meta_problem {
        warnings.push(warning(format!("{}{}", spec.prefix, layout::META), why));
    }
    let (forks, lines) = forks::infer(&files);
    let times = wire
        .as_ref()
        .map(|w| times::join(&files, &forks, w))
        .unwrap_or_default();
    Ok(AgentParts {
        dir: spec.dir.clone(),
        files,
        forks,
        lines,
        times,
        meta,
        link: spec.link.clone(),
        warnings,
        ..AgentParts::default()
    })
}

/// Indexes a family's files in order; each one after the first starts
/// from what it shares byte for byte with the one before (a rotation's
/// copied prefix, see [`read::index_file_after`]).
fn index_family(
    family: &[ContextFile],
    prefix: &str,
    files: &mut Vec<read::FileIndex>,
) -> Result<()> {
    for cf in family {
        let name = format!("{prefix}{}", cf.name);
        let ix = match files.last() {
            Some(parent) => read::index_file_after(&cf.path, &name, parent)?,
            None => read::index_file(&cf.path, &name)?,
        };
        files.push(ix);
    }
    Ok(())
}

/// A wire not read because no times are wanted: only whether it could be
/// (the same warning as reading it would give for a FIFO or a device).
fn wire_unread(path: &Path) -> std::result::Result<Option<WireLog>, String> {
    match crate::read::guard::open_regular(path) {
        Ok(_) => Ok(None),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// Everything about one session, read from disk.
///
/// A relative path (`tree .`) is made absolute first, so the session has
/// its real id and an absolute directory. The wire is read only when
/// `reading` asks for times.
pub fn parts(path: &Path, reading: Reading) -> Result<SessionParts> {
    // The folder is listed once for every agent (20 000 numbered
    // subagents each asking for their files would list it 20 000 times).
    listing::cached(|| parts_uncached(path, reading))
}

fn parts_uncached(path: &Path, reading: Reading) -> Result<SessionParts> {
    let path = &absolute_session_path(path);
    let layout = Layout::of(path);
    let mut main = read_agent(&layout.main(), reading)?;
    if main.files.is_empty() {
        return Err(Error::NoContextFile {
            path: path.to_path_buf(),
        });
    }
    let (specs, _, unreadable) = layout::subagents_checked(&layout);
    main.warnings
        .extend(unreadable.into_iter().map(|s| warning(s.name, s.why)));
    let mut subs = Vec::with_capacity(specs.len());
    for spec in &specs {
        // One subagent that cannot be read costs its own world lines only.
        match read_agent(spec, reading) {
            Ok(a) => subs.push((spec, a)),
            Err(e) => main.warnings.push(warning(
                spec.prefix.trim_end_matches('/').to_string(),
                format!("subagent not read: {e}"),
            )),
        }
    }
    layout::sort_subagents(&mut subs, |(s, a)| {
        (*s, a.meta.as_ref().and_then(|m| m.created_at))
    });
    let (title, state_problem) = match layout.side_file(layout::STATE) {
        Some(p) => meta::title_checked(&p),
        None => (None, None),
    };
    if let Some(why) = state_problem {
        main.warnings.push(warning(layout::STATE.to_string(), why));
    }
    let lineage = lineage::of(&layout, title.as_deref(), &main.files);
    Ok(SessionParts {
        dir: layout.path(),
        id: layout.id(),
        title,
        agents: std::iter::once(main)
            .chain(subs.into_iter().map(|(_, a)| a))
            .collect(),
        lineage,
        tool: super::Tool::KimiCli,
    })
}

/// kimi-cli as a [`super::Source`].
pub struct KimiCli;

impl super::Source for KimiCli {
    fn tool(&self) -> super::Tool {
        super::Tool::KimiCli
    }

    fn recognise(&self, path: &Path) -> bool {
        is_session(path)
    }

    fn parts(&self, path: &Path, reading: Reading) -> Result<SessionParts> {
        parts(path, reading)
    }

    fn load_body(
        &self,
        path: &Path,
        meta: &crate::model::RecordMeta,
    ) -> Result<crate::model::Body> {
        read::load_body(path, meta)
    }

    fn sessions_here(&self, cwd: &Path) -> Vec<PathBuf> {
        let loc = Locator {
            cwd: cwd.to_path_buf(),
            ..Locator::from_env()
        };
        sessions_in(&loc.cwd_sessions())
    }

    fn all_sessions(&self) -> Vec<PathBuf> {
        share::session_dirs(&Locator::from_env().sessions_root())
    }

    fn session_id(&self, path: &Path) -> String {
        Layout::of(path).id()
    }

    fn summarize(&self, path: &Path) -> SessionSummary {
        let loc = Locator::from_env();
        share::summarize(path, &share::work_dirs(&loc.share_dir))
    }

    fn modified(&self, path: &Path) -> std::time::SystemTime {
        modified(path)
    }

    fn work_dir_of(&self, path: &Path) -> Option<String> {
        share::work_dir_of(path)
    }

    fn live_paths(&self, path: &Path) -> Vec<PathBuf> {
        vec![Layout::of(path).folder().to_path_buf()]
    }

    fn follower(&self, path: &Path) -> Box<dyn super::Follower> {
        Box::new(live::SessionState::new(path))
    }

    fn home_hint(&self) -> String {
        Locator::from_env().sessions_root().display().to_string()
    }

    fn dmail_to_marks(&self) -> bool {
        true
    }

    fn dmail_route(&self, path: &Path) -> crate::denwa::DMailRoute {
        crate::denwa::DMailRoute::Checkpoints {
            dir: path.to_path_buf(),
        }
    }

    fn replay_style(&self, _path: &Path) -> super::ReplayStyle {
        super::ReplayStyle::Rotations {
            wire: layout::WIRE,
            current_name: layout::current_name,
        }
    }

    /// A `/fork` or `/undo` session is one file: its first world line.
    fn copy_line(&self, _link: &super::SessionLink) -> usize {
        0
    }
}
