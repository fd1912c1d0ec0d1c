//! A folder's entries, listed once per `list`: flat sessions (0.35–0.58)
//! share one folder, and every question about one of them (is it a
//! session, its files, its subagents, its size) used to list that folder
//! again — 10 000 sessions made 10^8 entries and minutes. Inside
//! [`cached`] a folder is read once and its entries are grouped by the name
//! before the first `_` or `.` (a flat session id, `context`), so each
//! session sees only its own names. Outside it nothing is kept: `tree` and
//! the follower always see the folder as it is now.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::{FileType, Metadata};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// One directory entry, read once.
#[derive(Debug)]
pub struct Entry {
    pub name: String,
    pub path: PathBuf,
    /// Not following symlinks, as `DirEntry::file_type` does.
    pub file_type: Option<FileType>,
    /// `lstat`, as `DirEntry::metadata` does.
    pub metadata: Option<Metadata>,
}

/// A folder's entries and their groups.
#[derive(Debug, Default)]
pub struct Listing {
    pub all: Vec<Entry>,
    /// By the name before its first `_` or `.` (a flat session's id).
    groups: HashMap<String, Vec<usize>>,
    /// By the stem whose family a name can belong to: `x.jsonl` → `x`,
    /// `x_N.jsonl` → `x_N` and `x` (its own current file, or a rotation).
    families: HashMap<String, Vec<usize>>,
}

impl Listing {
    fn read(dir: &Path) -> std::io::Result<Listing> {
        let mut out = Listing::default();
        for e in std::fs::read_dir(dir)?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let i = out.all.len();
            out.groups
                .entry(key(&name).to_string())
                .or_default()
                .push(i);
            if let Some(stem) = name.strip_suffix(super::layout::SUFFIX) {
                out.families.entry(stem.to_string()).or_default().push(i);
                if let Some((base, _)) = stem.rsplit_once('_') {
                    out.families.entry(base.to_string()).or_default().push(i);
                }
            }
            out.all.push(Entry {
                path: e.path(),
                file_type: e.file_type().ok(),
                metadata: e.metadata().ok(),
                name,
            });
        }
        Ok(out)
    }

    /// Entries whose name starts like `stem` (same part before the first
    /// `_` or `.`): every name `stem`, `stem_N`, `stem_sub_N` can take.
    pub fn like(&self, stem: &str) -> impl Iterator<Item = &Entry> {
        self.groups
            .get(key(stem))
            .into_iter()
            .flatten()
            .map(|&i| &self.all[i])
    }

    /// Entries that can be of `stem`'s family: `stem.jsonl` and
    /// `stem_<anything without _>.jsonl` (rotations and near misses).
    pub fn family(&self, stem: &str) -> impl Iterator<Item = &Entry> {
        self.families
            .get(stem)
            .into_iter()
            .flatten()
            .map(|&i| &self.all[i])
    }
}

fn key(name: &str) -> &str {
    name.split(['_', '.']).next().unwrap_or(name)
}

/// A folder's directories by their `state.json` title.
type ByTitle = HashMap<String, Vec<PathBuf>>;

thread_local! {
    static CACHE: RefCell<Option<HashMap<PathBuf, Rc<Listing>>>> = const { RefCell::new(None) };
    /// `state.json` titles by session directory, inside [`cached`]: fork
    /// detection reads every sibling's title for each session titled like
    /// a fork (2 000 of them made 4·10^6 reads).
    static TITLES: RefCell<Option<HashMap<PathBuf, Option<String>>>> = const { RefCell::new(None) };
    /// Per folder, its directories by title (see [`dirs_titled`]); emptied
    /// when [`cached`] ends.
    static BY_TITLE: RefCell<HashMap<PathBuf, Rc<ByTitle>>> =
        RefCell::new(HashMap::new());
}

/// The directories of `folder` (symlinks followed) by their `state.json`
/// title; inside [`cached`] built once per folder, so finding the session
/// titled `X` for each of 2 000 `Fork: X` sessions is a lookup, not a scan.
pub fn dirs_titled(folder: &Path, title: &str) -> Vec<PathBuf> {
    let build = || -> Rc<ByTitle> {
        let mut map: HashMap<String, Vec<PathBuf>> = HashMap::new();
        let Ok(l) = list(folder) else {
            return Rc::new(map);
        };
        for e in &l.all {
            let is_dir = match e.file_type {
                Some(t) if t.is_symlink() => e.path.is_dir(),
                Some(t) => t.is_dir(),
                None => false,
            };
            if let Some(t) = is_dir.then(|| self::title(&e.path)).flatten() {
                map.entry(t).or_default().push(e.path.clone());
            }
        }
        Rc::new(map)
    };
    let caching = CACHE.with(|c| c.borrow().is_some());
    let map = if caching {
        let hit = BY_TITLE.with(|m| m.borrow().get(folder).cloned());
        match hit {
            Some(m) => m,
            None => {
                let m = build();
                BY_TITLE.with(|b| b.borrow_mut().insert(folder.to_path_buf(), Rc::clone(&m)));
                m
            }
        }
    } else {
        build()
    };
    map.get(title).cloned().unwrap_or_default()
}

/// A session directory's `state.json` title ([`super::meta::title`]),
/// read once inside [`cached`].
pub fn title(session_dir: &Path) -> Option<String> {
    let read = || super::meta::title(&session_dir.join(super::layout::STATE));
    let hit = TITLES.with(|t| t.borrow().as_ref().map(|m| m.get(session_dir).cloned()));
    match hit {
        Some(Some(title)) => title,
        Some(None) => {
            let title = read();
            TITLES.with(|t| {
                if let Some(m) = t.borrow_mut().as_mut() {
                    m.insert(session_dir.to_path_buf(), title.clone());
                }
            });
            title
        }
        None => read(),
    }
}

/// `dir`'s entries: from the cache inside [`cached`], else read now.
pub fn list(dir: &Path) -> std::io::Result<Rc<Listing>> {
    let hit = CACHE.with(|c| c.borrow().as_ref().map(|m| m.get(dir).cloned()));
    match hit {
        Some(Some(l)) => Ok(l),
        Some(None) => {
            let l = Rc::new(Listing::read(dir)?);
            CACHE.with(|c| {
                if let Some(m) = c.borrow_mut().as_mut() {
                    m.insert(dir.to_path_buf(), Rc::clone(&l));
                }
            });
            Ok(l)
        }
        None => Ok(Rc::new(Listing::read(dir)?)),
    }
}

/// Runs `f` with folder listings kept until it returns (nested calls share
/// the outer cache).
pub fn cached<T>(f: impl FnOnce() -> T) -> T {
    let outer = CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let had = c.is_some();
        if !had {
            *c = Some(HashMap::new());
            TITLES.with(|t| *t.borrow_mut() = Some(HashMap::new()));
        }
        had
    });
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            if !self.0 {
                CACHE.with(|c| *c.borrow_mut() = None);
                TITLES.with(|t| *t.borrow_mut() = None);
                BY_TITLE.with(|b| b.borrow_mut().clear());
            }
        }
    }
    let _reset = Reset(outer);
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_the_name_before_the_first_underscore_or_dot() {
        let tmp = tempfile::tempdir().unwrap();
        for n in [
            "a.jsonl",
            "a_1.jsonl",
            "a_sub_2.jsonl",
            "b.jsonl",
            "ab.jsonl",
        ] {
            std::fs::write(tmp.path().join(n), "").unwrap();
        }
        let l = list(tmp.path()).unwrap();
        let mut like: Vec<&str> = l.like("a").map(|e| e.name.as_str()).collect();
        like.sort_unstable();
        assert_eq!(like, ["a.jsonl", "a_1.jsonl", "a_sub_2.jsonl"]);
        assert_eq!(l.like("a_sub_2").count(), 3);
        let mut fam: Vec<&str> = l.family("a").map(|e| e.name.as_str()).collect();
        fam.sort_unstable();
        assert_eq!(fam, ["a.jsonl", "a_1.jsonl"]);
        assert_eq!(l.family("a_sub_2").count(), 1);
        // Cached only inside `cached`: a file made meanwhile shows there
        // only after it.
        cached(|| {
            assert_eq!(list(tmp.path()).unwrap().all.len(), 5);
            std::fs::write(tmp.path().join("c.jsonl"), "").unwrap();
            assert_eq!(list(tmp.path()).unwrap().all.len(), 5);
        });
        assert_eq!(list(tmp.path()).unwrap().all.len(), 6);
    }
}
