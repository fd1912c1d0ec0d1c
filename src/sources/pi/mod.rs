//! Pi (npm `@earendil-works/pi-coding-agent`): its on-disk contract. Where
//! sessions live (`home`), one session file indexed (`file`), the world
//! lines of its entry tree (`tree`), the parts the builder takes (`parts`),
//! record bodies (`body`), and `/fork` lineage between files (here). World
//! lines are root-to-leaf paths of one append-only file, not files.

pub mod body;
mod fast;
mod fields;
pub mod file;
pub mod home;
mod ids;
pub mod live;
mod metas;
pub mod parts;
pub mod tree;

use std::path::{Path, PathBuf};

pub use file::PiFile;
pub use home::Home;

use crate::error::Result;
use crate::sources::{Lineage, LinkKind, Pos, Reading, SessionLink, SessionSummary};

/// Reads a session file and everything it links to.
pub fn parts(path: &Path, reading: Reading) -> Result<crate::sources::SessionParts> {
    let mut f = PiFile::read_for(path, reading.times)?;
    let t = tree::build(&f);
    let lineage = lineage(&f, &t, &Home::from_env());
    Ok(parts::session_parts(
        &mut f,
        &t,
        lineage,
        reading.times,
        &mut Vec::new(),
        true,
    ))
}

/// Where a fork came from: the last shared entry, the source's id, its
/// path (as found, else as the header says) and file name.
type Origin = (Option<String>, String, PathBuf, String);

/// What a live follower keeps: the file indexed so far, its tree, and
/// the sessions it links to as found (a fork's copied entries never
/// change).
pub struct Kept {
    file: PiFile,
    tree: tree::Tree,
    /// The source's `(after, session, path, file name)`, once looked for
    /// after the header came, and the entries read then.
    source: Option<(Option<Origin>, usize)>,
    /// Forks found beside it: path → `(after, session)`.
    forks: Vec<(PathBuf, Option<String>, String)>,
    /// Each world line's records as last handed out.
    lines: Vec<parts::LineCache>,
    /// Refreshes that grew the tree rather than building it whole, and
    /// those that built it whole.
    pub grown: usize,
    pub rebuilt: usize,
}

impl Kept {
    fn read(path: &Path) -> Result<Kept> {
        let file = PiFile::read(path)?;
        let tree = tree::build(&file);
        Ok(Kept {
            file,
            tree,
            source: None,
            forks: Vec::new(),
            lines: Vec::new(),
            grown: 0,
            rebuilt: 0,
        })
    }
}

/// [`parts`] for a live follower: only the bytes appended since the last
/// read are parsed (the file is read anew when it was replaced), the tree
/// grows by them when they hang off a line's leaf (else it is built again
/// from the index), and the linked sessions are read once each.
/// The second value says the file was read anew (nothing of the last
/// snapshot is known to hold).
pub fn parts_live(
    path: &Path,
    reading: Reading,
    state: &mut Option<Kept>,
) -> Result<(crate::sources::SessionParts, bool)> {
    let reuse = state.take().filter(|k| k.file.path == path);
    let mut anew = true;
    let mut kept = match reuse {
        Some(mut k) => {
            let n0 = k.file.len();
            match k.file.read_more()? {
                true => {
                    anew = false;
                    k.file.settle();
                    if k.file.len() != n0 {
                        if k.tree.grow(&k.file, n0) {
                            k.grown += 1;
                        } else {
                            k.tree = tree::build(&k.file);
                            k.rebuilt += 1;
                        }
                    }
                    k
                }
                false => Kept {
                    grown: k.grown,
                    rebuilt: k.rebuilt + 1,
                    ..Kept::read(path)?
                },
            }
        }
        None => Kept::read(path)?,
    };
    let home = Home::from_env();
    let Kept {
        file,
        tree: t,
        lines,
        source,
        forks: known,
        ..
    } = &mut kept;
    let f = &*file;
    // Looked for again while the fork's copied entries may still be
    // coming: no shared entry yet, or the last shared one was the last.
    let stale = match source {
        None => f.header.is_some(),
        Some((found, n)) => {
            f.len() != *n
                && found.as_ref().is_some_and(|(after, ..)| {
                    after.is_none() || after.as_deref() == n.checked_sub(1).map(|i| f.id(i as u32))
                })
        }
    };
    if stale {
        *source = Some((source_of(f, &home), f.len()));
    }
    let forked_from =
        source
            .clone()
            .and_then(|(found, _)| found)
            .map(|(after, session, dir, name)| {
                let mut l = link(f, t, after, session, dir);
                l.source_file = name;
                l
            });
    let mut forks = Vec::new();
    for p in forks_beside(f) {
        let found = known.iter().find(|(q, ..)| *q == p).cloned();
        let (after, session) = match found {
            Some((_, after, session)) => (after, session),
            None => {
                let Ok(fork) = PiFile::read(&p) else { continue };
                let got = (last_shared(&fork, f), parts::session_id(&fork));
                known.push((p.clone(), got.0.clone(), got.1.clone()));
                got
            }
        };
        forks.push(link(f, t, after, session, p));
    }
    let lineage = Lineage { forked_from, forks };
    let out = parts::session_parts(file, t, lineage, reading.times, lines, false);
    *state = Some(kept);
    Ok((out, anew))
}

/// Where a `/fork` file came from and which files were forked from this
/// one. `parentSession` is an absolute path that may have moved with the
/// corpus: a source is found there, else by its file name beside this
/// file or anywhere under the sessions root; the fork point is the last
/// entry of the fork whose id the source holds (Pi copies entries with
/// their ids).
pub fn lineage(f: &PiFile, t: &tree::Tree, home: &Home) -> Lineage {
    let forked_from = source_of(f, home).map(|(after, session, dir, name)| {
        let mut l = link(f, t, after, session, dir);
        l.source_file = name;
        l
    });
    let mut forks = Vec::new();
    for p in forks_beside(f) {
        let Ok(fork) = PiFile::read(&p) else { continue };
        let after = last_shared(&fork, f);
        forks.push(link(f, t, after, parts::session_id(&fork), p));
    }
    Lineage { forked_from, forks }
}

/// The session `f` was forked from: the last shared entry, its id, its
/// path (as found, else as the header says) and file name.
fn source_of(f: &PiFile, home: &Home) -> Option<Origin> {
    let ps = f.header.as_ref()?.parent_session.as_deref()?;
    let src = find_source(&f.path, ps, home);
    let src_file = src.as_deref().and_then(|p| PiFile::read(p).ok());
    let after = src_file.as_ref().and_then(|s| last_shared(f, s));
    let session = match &src_file {
        Some(s) => parts::session_id(s),
        None => home::id_of_name(Path::new(ps))?,
    };
    let name = src_file.map(|s| s.name).unwrap_or_default();
    Some((after, session, src.unwrap_or_else(|| ps.into()), name))
}

/// Session files beside `f` whose header names `f`'s file as their source.
fn forks_beside(f: &PiFile) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (f.path.parent(), f.path.file_name()) else {
        return Vec::new();
    };
    home::sessions_in(dir)
        .into_iter()
        .filter(|p| *p != f.path)
        .filter(|p| {
            home::read_header(p)
                .and_then(|h| h.parent_session)
                .is_some_and(|ps| Path::new(&ps).file_name() == Some(name))
        })
        .collect()
}

/// A link seen from `f`: where `after` sits in `f`'s own tree.
fn link(
    f: &PiFile,
    t: &tree::Tree,
    after: Option<String>,
    session: String,
    dir: PathBuf,
) -> SessionLink {
    let at = after.as_deref().and_then(|a| f.index_of(a));
    let (records, source_line) = at
        .and_then(|i| Some((t.depth[i as usize] as usize + 1, t.owner_of(i)?)))
        .unwrap_or((0, 0));
    SessionLink {
        session,
        source_file: f.name.clone(),
        dir,
        records,
        kind: LinkKind::Fork,
        source_line,
        after: after.map(|id| match at {
            Some(i) => Pos::entry(f.meta(i).line(), id),
            None => Pos::named(id),
        }),
    }
}

/// The last entry of `fork` (in its file order) whose id `source` holds.
fn last_shared(fork: &PiFile, source: &PiFile) -> Option<String> {
    (0..fork.len() as u32)
        .rev()
        .map(|i| fork.id(i))
        .find(|id| source.index_of(id).is_some())
        .map(str::to_string)
}

fn find_source(me: &Path, parent_session: &str, home: &Home) -> Option<PathBuf> {
    let given = Path::new(parent_session);
    if given != me && home::is_session_file(given) {
        return Some(given.to_path_buf());
    }
    let name = given.file_name()?;
    if let Some(beside) = me.parent().map(|d| d.join(name)) {
        if beside != me && home::is_session_file(&beside) {
            return Some(beside);
        }
    }
    home.all_sessions()
        .into_iter()
        .find(|p| p.file_name() == Some(name) && p != me)
}

/// Last change to the session file.
pub fn modified(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(std::time::UNIX_EPOCH)
}

/// A session's row for `list` and the picker.
pub fn summarize(path: &Path) -> SessionSummary {
    let f = PiFile::read(path).unwrap_or_else(|_| PiFile::new("", path));
    let t = tree::build(&f);
    let header = f.header.clone().unwrap_or_default();
    let forked_from = header
        .parent_session
        .as_deref()
        .and_then(|ps| home::id_of_name(Path::new(ps)));
    SessionSummary {
        id: Pi.id(path),
        tool: "pi",
        dir: path.to_path_buf(),
        work_dir: header.cwd.clone(),
        title: parts::title(&f),
        world_lines: t.lines.len(),
        subagents: 0,
        modified: modified(path)
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        size: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        fork_kind: forked_from.as_ref().map(|_| "fork".to_string()),
        forked_from,
    }
}

/// Pi as a [`crate::sources::Source`].
pub struct Pi;

impl Pi {
    fn id(&self, path: &Path) -> String {
        home::id_of_name(path).unwrap_or_else(|| {
            path.file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
    }
}

impl crate::sources::Source for Pi {
    fn tool(&self) -> crate::sources::Tool {
        crate::sources::Tool::Pi
    }

    fn recognise(&self, path: &Path) -> bool {
        home::is_session_file(path)
    }

    fn parts(
        &self,
        path: &Path,
        reading: crate::sources::Reading,
    ) -> Result<crate::sources::SessionParts> {
        parts(path, reading)
    }

    fn load_body(
        &self,
        path: &Path,
        meta: &crate::model::RecordMeta,
    ) -> Result<crate::model::Body> {
        body::load_body(path, meta)
    }

    fn sessions_here(&self, cwd: &Path) -> Vec<PathBuf> {
        Home::from_env().sessions_of(&cwd.to_string_lossy())
    }

    fn all_sessions(&self) -> Vec<PathBuf> {
        Home::from_env().all_sessions()
    }

    fn session_id(&self, path: &Path) -> String {
        self.id(path)
    }

    fn summarize(&self, path: &Path) -> SessionSummary {
        summarize(path)
    }

    fn modified(&self, path: &Path) -> std::time::SystemTime {
        modified(path)
    }

    fn work_dir_of(&self, path: &Path) -> Option<String> {
        home::read_header(path)?.cwd
    }

    fn live_paths(&self, path: &Path) -> Vec<PathBuf> {
        // The folder too: a `/fork` file appearing beside it is a new link.
        let mut out = vec![path.to_path_buf()];
        out.extend(path.parent().map(Path::to_path_buf));
        out
    }

    fn follower(&self, path: &Path) -> Box<dyn crate::sources::Follower> {
        Box::new(live::PiFollower::new(path))
    }

    fn home_hint(&self) -> String {
        Home::from_env().sessions_root().display().to_string()
    }
}
