//! Which files form a kimi-cli session, in every release's layout, and in
//! which order (the one place these rules live; loading, the live tail and
//! listing all ask here).
//!
//! | releases | main world lines | subagents |
//! | --- | --- | --- |
//! | 0.35–0.58 | flat: `<md5>/<sid>.jsonl`, `<sid>_N.jsonl` | `<sid>_sub_N.jsonl` (+ `_M`) |
//! | 0.59–1.24 | `<sid>/context.jsonl`, `context_N.jsonl` | `context_sub_N.jsonl` (+ `_M`) |
//! | 1.25–1.52 | same | `subagents/<agent_id>/context*.jsonl` |
//!
//! A rotation takes the next free `_N` of its own stem, so every family is
//! `<stem>.jsonl` (current) plus `<stem>_N.jsonl` (smaller N = older).

use std::path::{Path, PathBuf};

use crate::sources::{ParentLink, SubagentMeta};

pub const CONTEXT_STEM: &str = "context";
pub const SUFFIX: &str = ".jsonl";
pub const WIRE: &str = "wire.jsonl";
pub const STATE: &str = "state.json";
pub const META: &str = "meta.json";
pub const SUBAGENTS: &str = "subagents";

/// How one session is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// 0.59+: a directory per session.
    Dir { dir: PathBuf },
    /// 0.35–0.58: files named by the session id in the work-dir folder.
    Flat { folder: PathBuf, sid: String },
}

impl Layout {
    /// The layout of a session path as [`flat_path`] and session dirs name
    /// them: a directory is a session dir; anything else is the flat main
    /// file `<folder>/<sid>.jsonl` (which may be missing mid-rotation).
    pub fn of(path: &Path) -> Layout {
        if path.is_dir() {
            return Layout::Dir {
                dir: path.to_path_buf(),
            };
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sid = flat_name(&name).map_or(name.clone(), |f| f.sid.to_string());
        Layout::Flat {
            folder: parent_or_dot(path),
            sid,
        }
    }

    /// The directory whose listing holds the main agent's files.
    pub fn folder(&self) -> &Path {
        match self {
            Layout::Dir { dir } => dir,
            Layout::Flat { folder, .. } => folder,
        }
    }

    /// The stem of the main agent's family.
    pub fn stem(&self) -> &str {
        match self {
            Layout::Dir { .. } => CONTEXT_STEM,
            Layout::Flat { sid, .. } => sid,
        }
    }

    /// The session's id: its directory's or its main file's name.
    pub fn id(&self) -> String {
        match self {
            Layout::Dir { dir } => file_name(dir),
            Layout::Flat { sid, .. } => sid.clone(),
        }
    }

    /// The path users and the other layers name the session by.
    pub fn path(&self) -> PathBuf {
        match self {
            Layout::Dir { dir } => dir.clone(),
            Layout::Flat { folder, sid } => flat_path(folder, sid),
        }
    }

    /// A file of the session directory (`state.json`, `wire.jsonl`); flat
    /// sessions have none.
    pub fn side_file(&self, name: &str) -> Option<PathBuf> {
        match self {
            Layout::Dir { dir } => Some(dir.join(name)),
            Layout::Flat { .. } => None,
        }
    }

    /// The main agent's family.
    pub fn main(&self) -> AgentSpec {
        AgentSpec {
            dir: self.folder().to_path_buf(),
            stem: self.stem().to_string(),
            prefix: String::new(),
            wire: self.side_file(WIRE),
            meta: MetaSource::Main,
            link: ParentLink::None,
            order: SubOrder::Main,
        }
    }

    /// Is this a name of one of this session's files (any family)?
    pub fn owns(&self, name: &str) -> bool {
        match self {
            Layout::Dir { .. } => true,
            Layout::Flat { sid, .. } => flat_name(name).is_some_and(|f| f.sid == sid),
        }
    }
}

pub fn flat_path(folder: &Path, sid: &str) -> PathBuf {
    folder.join(format!("{sid}{SUFFIX}"))
}

fn parent_or_dot(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

pub fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `None` for `<stem>.jsonl`, `Some(N)` for `<stem>_N.jsonl`; anything else
/// is not of this family (`context_sub_1.jsonl` is not `context`'s).
pub fn rotation_of(name: &str, stem: &str) -> Option<Option<u64>> {
    let rest = name.strip_prefix(stem)?.strip_suffix(SUFFIX)?;
    if rest.is_empty() {
        return Some(None);
    }
    let n = rest.strip_prefix('_')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse::<u64>().ok().map(Some)
}

/// Why a name that looks like one of `stem`'s rotations is not one, when
/// it is that close: `<stem>_<x>.jsonl` with one `_`-free part `x` that is
/// not a rotation number (`+3`, `x`, `1a`) or too big for 64 bits. Names of
/// other families (`context_sub_1.jsonl`) are not near misses.
pub fn near_miss(name: &str, stem: &str) -> Option<String> {
    let rest = name
        .strip_prefix(stem)?
        .strip_prefix('_')?
        .strip_suffix(SUFFIX)?;
    if rest.is_empty() || rest.contains('_') || rotation_of(name, stem).is_some() {
        return None;
    }
    Some(if rest.bytes().all(|b| b.is_ascii_digit()) {
        "rotation number does not fit in 64 bits; skipped".to_string()
    } else {
        format!("not a rotation name ({stem}_<digits>{SUFFIX}, as kimi-cli matches them); skipped")
    })
}

/// The name of a family's current file (`<stem>.jsonl`), from the names
/// of its world-line files: the one every other name rotates, else (only
/// rotations left) the newest with its `_N` taken off. One file alone is
/// its own current file.
pub fn current_name(names: &[&str]) -> Option<String> {
    let stem_of = |n: &str| n.strip_suffix(SUFFIX).map(str::to_string);
    if let [one] = names {
        return Some(one.to_string());
    }
    for n in names {
        let Some(stem) = stem_of(n) else { continue };
        if names.iter().all(|o| rotation_of(o, &stem).is_some()) {
            return Some(n.to_string());
        }
    }
    let last = stem_of(names.last()?)?;
    let (stem, n) = last.rsplit_once('_')?;
    n.parse::<u64>().ok()?;
    Some(format!("{stem}{SUFFIX}"))
}

/// Order of a family's files: `_1 … _N`, then the current file.
pub fn family_order(rotation: Option<u64>) -> u128 {
    // Past every u64: `context_18446744073709551615.jsonl` is an old world
    // line like any other, never mistaken for the current file.
    rotation.map_or(u128::from(u64::MAX) + 1, u128::from)
}

/// Which of a family's files (sorted by [`family_order`]) are world lines.
/// The empty placeholder that reserves the next rotated name (the newest
/// `_N`, empty, while the current file still exists) is about to become the
/// old world line, not a new one: it is left out.
pub fn world_line_files<T>(
    sorted: &[T],
    rotation: impl Fn(&T) -> Option<u64>,
    is_empty: impl Fn(&T) -> bool,
) -> Vec<usize> {
    let n = sorted.len();
    let has_current = sorted.last().is_some_and(|f| rotation(f).is_none());
    (0..n)
        .filter(|&i| !(has_current && n >= 2 && i == n - 2 && is_empty(&sorted[i])))
        .collect()
}

/// A flat (0.35–0.58) file name, split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlatName<'a> {
    pub sid: &'a str,
    /// `Some(N)` for a subagent's file `<sid>_sub_N…`.
    pub sub: Option<u64>,
    pub rotation: Option<u64>,
}

/// `<sid>.jsonl`, `<sid>_N.jsonl`, `<sid>_sub_N.jsonl`, `<sid>_sub_N_M.jsonl`.
/// Session ids are uuids (no `_`), so the first `_` ends the id.
pub fn flat_name(name: &str) -> Option<FlatName<'_>> {
    let stem = name.strip_suffix(SUFFIX)?;
    let (sid, rest) = stem.split_once('_').unwrap_or((stem, ""));
    if sid.is_empty() || sid == CONTEXT_STEM || sid == "wire" {
        return None;
    }
    let num = |s: &str| {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u64>().ok())
            .flatten()
    };
    if rest.is_empty() {
        return Some(FlatName {
            sid,
            sub: None,
            rotation: None,
        });
    }
    if let Some(sub) = rest.strip_prefix("sub_") {
        let (n, m) = sub
            .split_once('_')
            .map_or((sub, None), |(n, m)| (n, Some(m)));
        return Some(FlatName {
            sid,
            sub: Some(num(n)?),
            rotation: match m {
                Some(m) => Some(num(m)?),
                None => None,
            },
        });
    }
    Some(FlatName {
        sid,
        sub: None,
        rotation: Some(num(rest)?),
    })
}

/// Where a subagent's meta comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaSource {
    Main,
    /// `subagents/<id>/meta.json` (1.25+).
    File(PathBuf),
    /// Older subagents have no meta file: what their names say.
    Fixed(SubagentMeta),
}

/// Subagents in start order: numbered families (≤ 1.24) by their number,
/// then `subagents/` directories by `created_at`, then path.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub enum SubOrder {
    Main,
    Numbered(u64),
    Created(f64),
}

/// One agent's family of context files and its side files.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    /// The directory holding the family.
    pub dir: PathBuf,
    pub stem: String,
    /// Prefix of the names shown for its files (`subagents/<id>/`).
    pub prefix: String,
    pub wire: Option<PathBuf>,
    pub meta: MetaSource,
    pub link: ParentLink,
    pub order: SubOrder,
}

impl AgentSpec {
    /// A key that tells agents apart (families can share a directory).
    pub fn key(&self) -> (PathBuf, String) {
        (self.dir.clone(), self.stem.clone())
    }

    pub fn meta_file(&self) -> Option<&Path> {
        match &self.meta {
            MetaSource::File(p) => Some(p),
            _ => None,
        }
    }
}

/// Sorts subagents into start order. `created` gives a `subagents/`
/// directory's `created_at` (from its meta).
pub fn sort_subagents<T>(subs: &mut [T], spec: impl Fn(&T) -> (&AgentSpec, Option<f64>)) {
    let key = |t: &T| {
        let (s, created) = spec(t);
        let rank = match s.order {
            SubOrder::Main => (0, 0.0),
            SubOrder::Numbered(n) => (1, n as f64),
            SubOrder::Created(_) => (2, created.unwrap_or(f64::MAX)),
        };
        (rank, s.dir.clone(), s.stem.clone())
    };
    subs.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0 .0
            .cmp(&kb.0 .0)
            .then(ka.0 .1.total_cmp(&kb.0 .1))
            .then_with(|| ka.1.cmp(&kb.1))
            .then_with(|| ka.2.cmp(&kb.2))
    });
}

/// Every subagent family of a session, in all three forms, unordered
/// (see [`sort_subagents`]). Also returns the directories a watcher should
/// cover beyond the session's own folder.
pub fn subagents(layout: &Layout) -> (Vec<AgentSpec>, Vec<PathBuf>) {
    let (specs, dirs, _) = subagents_checked(layout);
    (specs, dirs)
}

/// [`subagents`], and a `subagents/` that exists but cannot be listed (its
/// subagents would otherwise vanish without a word).
pub fn subagents_checked(layout: &Layout) -> (Vec<AgentSpec>, Vec<PathBuf>, Vec<super::Skipped>) {
    let mut unreadable = Vec::new();
    let mut out = Vec::new();
    let mut dirs = Vec::new();
    let folder = layout.folder();
    let stem = layout.stem();
    // `<stem>_sub_N.jsonl` / `<stem>_sub_N_M.jsonl` beside the main family.
    let sub_prefix = format!("{stem}_sub_");
    // A set: 20 000 numbered subagents must not be 4·10^8 comparisons.
    let mut numbers: std::collections::BTreeSet<u64> = std::collections::BTreeSet::new();
    if let Ok(listing) = super::listing::list(folder) {
        for e in listing.like(stem) {
            let name = &e.name;
            let Some(rest) = name.strip_prefix(&sub_prefix) else {
                continue;
            };
            let Some(rest) = rest.strip_suffix(SUFFIX) else {
                continue;
            };
            let n = rest.split_once('_').map_or(rest, |(n, _)| n);
            if let Ok(n) = n.parse::<u64>() {
                numbers.insert(n);
            }
        }
    }
    for n in &numbers {
        out.push(AgentSpec {
            dir: folder.to_path_buf(),
            stem: format!("{sub_prefix}{n}"),
            prefix: String::new(),
            wire: None,
            meta: MetaSource::Fixed(SubagentMeta {
                agent_id: format!("sub_{n}"),
                ..SubagentMeta::default()
            }),
            // `sub_N` is the N-th (1-based) Task/Agent call, whatever
            // numbers are missing beside it: linked by N, not by position.
            link: ParentLink::Nth(usize::try_from(n.saturating_sub(1)).unwrap_or(usize::MAX)),
            order: SubOrder::Numbered(*n),
        });
    }
    // `subagents/<agent_id>/` (1.25+).
    if let Layout::Dir { dir } = layout {
        let root = dir.join(SUBAGENTS);
        let listing = std::fs::read_dir(&root);
        if let Err(e) = &listing {
            if e.kind() != std::io::ErrorKind::NotFound {
                unreadable.push(super::Skipped {
                    name: SUBAGENTS.to_string(),
                    why: format!("cannot be listed ({e}); its subagents are not shown"),
                });
            }
        }
        if let Ok(entries) = listing {
            dirs.push(root.clone());
            for e in entries.flatten() {
                let p = e.path();
                if !p.is_dir() {
                    continue;
                }
                let id = file_name(&p);
                dirs.push(p.clone());
                out.push(AgentSpec {
                    prefix: format!("{SUBAGENTS}/{id}/"),
                    stem: CONTEXT_STEM.to_string(),
                    wire: Some(p.join(WIRE)),
                    meta: MetaSource::File(p.join(META)),
                    link: ParentLink::AgentId(id),
                    order: SubOrder::Created(0.0),
                    dir: p,
                });
            }
        }
    }
    (out, dirs, unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_names_of_every_stem() {
        assert_eq!(rotation_of("context.jsonl", "context"), Some(None));
        assert_eq!(rotation_of("context_12.jsonl", "context"), Some(Some(12)));
        assert_eq!(rotation_of("context_x.jsonl", "context"), None);
        assert_eq!(rotation_of("context_sub_1.jsonl", "context"), None);
        assert_eq!(rotation_of("wire.jsonl", "context"), None);
        assert_eq!(
            rotation_of("context_sub_1_2.jsonl", "context_sub_1"),
            Some(Some(2))
        );
        assert_eq!(rotation_of("context_sub_12.jsonl", "context_sub_1"), None);
        assert_eq!(rotation_of("abc_3.jsonl", "abc"), Some(Some(3)));
    }

    #[test]
    fn the_current_name_of_every_family() {
        assert_eq!(
            current_name(&["context_1.jsonl", "context.jsonl"]).as_deref(),
            Some("context.jsonl")
        );
        assert_eq!(
            current_name(&["context_sub_1_1.jsonl", "context_sub_1.jsonl"]).as_deref(),
            Some("context_sub_1.jsonl")
        );
        assert_eq!(
            current_name(&["context_1.jsonl", "context_2.jsonl"]).as_deref(),
            Some("context.jsonl")
        );
        assert_eq!(
            current_name(&["context_sub_1.jsonl"]).as_deref(),
            Some("context_sub_1.jsonl")
        );
    }

    #[test]
    fn flat_names() {
        let f = |s| flat_name(s).map(|f| (f.sid.to_string(), f.sub, f.rotation));
        assert_eq!(f("ab-1.jsonl"), Some(("ab-1".into(), None, None)));
        assert_eq!(f("ab-1_2.jsonl"), Some(("ab-1".into(), None, Some(2))));
        assert_eq!(f("ab-1_sub_3.jsonl"), Some(("ab-1".into(), Some(3), None)));
        assert_eq!(
            f("ab-1_sub_3_4.jsonl"),
            Some(("ab-1".into(), Some(3), Some(4)))
        );
        assert_eq!(f("ab-1_x.jsonl"), None);
        assert_eq!(f("context_1.jsonl"), None);
        assert_eq!(f("kimi.json"), None);
    }

    #[test]
    fn the_reserving_placeholder_is_no_world_line() {
        // (rotation, empty), sorted oldest first.
        let files = [(Some(1), false), (Some(2), true), (None, false)];
        let keep = world_line_files(&files, |f| f.0, |f| f.1);
        assert_eq!(keep, [0, 2]);
        // Without a current file the newest rotation is the current line.
        let files = [(Some(1), false), (Some(2), true)];
        assert_eq!(world_line_files(&files, |f| f.0, |f| f.1), [0, 1]);
    }
}
