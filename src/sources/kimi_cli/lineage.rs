//! Sessions made from sessions (kimi-cli 1.30+). `/fork` and `/undo` write a
//! new session directory in the same work-dir folder whose `context.jsonl`
//! is a copy of a prefix of the source's current context, titled
//! `Fork: <source title>` / `Undo: <source title>`. Nothing else names the
//! source, so the link is the title plus the shared prefix: a `/fork` copy
//! can be byte-identical to its source, and the title tells which is which.
//! Several candidates: the one whose current context the copy is a prefix
//! of, then the longest shared prefix, then the newest one older than the
//! fork.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::layout::{self, Layout};
use super::{family_files, is_session};
use crate::model::shared_prefix;
use crate::read::{self, FileIndex};
use crate::sources::{Lineage, LinkKind, SessionLink};

const PREFIXES: [(&str, LinkKind); 2] = [("Fork: ", LinkKind::Fork), ("Undo: ", LinkKind::Undo)];

/// `Fork: X` → (fork, X).
pub fn parse_title(title: &str) -> Option<(LinkKind, &str)> {
    PREFIXES
        .iter()
        .find_map(|(p, k)| title.strip_prefix(p).map(|rest| (*k, rest)))
}

/// A sibling session: its path, id and title.
#[derive(Clone)]
struct Sibling {
    path: PathBuf,
    id: String,
    title: Option<String>,
}

/// Directories of the same work-dir folder, except `me`, with their titles
/// (whether each is a session is asked only of those whose title matters).
fn siblings(me: &Path) -> Vec<Sibling> {
    let Some(folder) = me.parent() else {
        return Vec::new();
    };
    let Ok(listing) = super::listing::list(folder) else {
        return Vec::new();
    };
    listing
        .all
        .iter()
        // The listing's file type first: a stat per sibling per session
        // would be quadratic again; a symlink is followed as before.
        .filter(|e| match e.file_type {
            Some(t) if t.is_symlink() => e.path.is_dir(),
            Some(t) => t.is_dir(),
            None => false,
        })
        .map(|e| e.path.clone())
        .filter(|p| p != me)
        .map(|p| Sibling {
            id: layout::file_name(&p),
            title: super::listing::title(&p),
            path: p,
        })
        .collect()
}

fn main_files(path: &Path) -> Vec<FileIndex> {
    let Ok(files) = family_files(path, layout::CONTEXT_STEM) else {
        return Vec::new();
    };
    files
        .iter()
        .filter_map(|f| read::index_file(&f.path, &f.name).ok())
        .collect()
}

/// When a session directory came to be, as well as the file system says.
fn born(path: &Path) -> Option<SystemTime> {
    let m = std::fs::metadata(path).ok()?;
    m.created().or_else(|_| m.modified()).ok()
}

/// How well a candidate source explains a copy: (the copy is a prefix of
/// its current world line, records shared with its best world line, that
/// world line — the newest of equals, as the copy is of the current one).
fn fit(copy: &FileIndex, source: &[FileIndex]) -> Option<(bool, usize, usize)> {
    let current = source.last()?;
    let (line, shared) = source
        .iter()
        .enumerate()
        .map(|(i, f)| (i, shared_prefix(&f.records, &copy.records)))
        .max_by_key(|&(i, n)| (n, i))?;
    let prefix_of_current = shared_prefix(&current.records, &copy.records) == copy.records.len();
    // An empty copy (an `/undo` of the first turn) fits by title alone.
    (shared > 0 || copy.records.is_empty()).then_some((prefix_of_current, shared, line))
}

/// Picks the source among candidates, each with its files.
fn pick(
    me: &Path,
    kind: LinkKind,
    copy: &FileIndex,
    candidates: Vec<(Sibling, Cow<'_, [FileIndex]>)>,
) -> Option<SessionLink> {
    let my_birth = born(me);
    candidates
        .into_iter()
        .filter_map(|(s, files)| {
            let (prefix, shared, line) = fit(copy, &files)?;
            let b = born(&s.path);
            let older = match (b, my_birth) {
                (Some(b), Some(m)) => b <= m,
                _ => true,
            };
            let file = files[line].name.clone();
            Some(((prefix, shared, older, b), s, shared, line, file))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, s, shared, line, file)| SessionLink {
            session: s.id,
            dir: s.path,
            records: shared,
            kind,
            source_line: line,
            source_file: file,
            after: None,
        })
}

/// The source of the session at `path` (a directory session titled
/// `Fork: …` or `Undo: …`), reading what it needs.
pub fn source_of(path: &Path) -> Option<SessionLink> {
    if !path.is_dir() {
        return None;
    }
    let title = super::listing::title(path)?;
    let (kind, source_title) = parse_title(&title)?;
    let copy = main_files(path).into_iter().next()?;
    // Only the siblings titled like the source can be it.
    let folder = path.parent()?;
    let sibs = super::listing::dirs_titled(folder, source_title)
        .into_iter()
        .filter(|p| p != path)
        .map(|p| Sibling {
            id: layout::file_name(&p),
            title: Some(source_title.to_string()),
            path: p,
        })
        .collect();
    source_among(path, kind, source_title, &copy, sibs, None)
}

/// The source of `me` among `siblings` titled `source_title`; `known` is
/// one candidate already read (by its path), borrowed rather than read again.
fn source_among(
    me: &Path,
    kind: LinkKind,
    source_title: &str,
    copy: &FileIndex,
    siblings: Vec<Sibling>,
    known: Option<(&Path, &[FileIndex])>,
) -> Option<SessionLink> {
    let candidates: Vec<(Sibling, Cow<'_, [FileIndex]>)> = siblings
        .into_iter()
        .filter(|s| s.path != me && s.title.as_deref() == Some(source_title))
        .filter(|s| known.is_some_and(|(p, _)| p == s.path) || is_session(&s.path))
        .map(|s| {
            let files = match known {
                Some((p, f)) if p == s.path => Cow::Borrowed(f),
                _ => Cow::Owned(main_files(&s.path)),
            };
            (s, files)
        })
        .collect();
    pick(me, kind, copy, candidates)
}

/// A session's lineage: where it came from and what was made from it.
/// `files` are its own main world lines, already read.
pub fn of(layout: &Layout, title: Option<&str>, files: &[FileIndex]) -> Lineage {
    let Layout::Dir { dir } = layout else {
        return Lineage::default();
    };
    let Some(title) = title else {
        return Lineage::default();
    };
    let sibs = siblings(dir);
    if sibs.is_empty() {
        return Lineage::default();
    }
    let forked_from = parse_title(title).and_then(|(kind, source_title)| {
        let copy = files.first()?;
        source_among(dir, kind, source_title, copy, sibs.clone(), None)
    });
    let mut forks = Vec::new();
    for s in &sibs {
        let Some((kind, source_title)) = s.title.as_deref().and_then(parse_title) else {
            continue;
        };
        if source_title != title {
            continue;
        }
        let Some(copy) = main_files(&s.path).into_iter().next() else {
            continue;
        };
        // The fork's other candidates are my siblings titled like me, and me.
        let mut cands: Vec<Sibling> = sibs
            .iter()
            .filter(|o| o.title.as_deref() == Some(title))
            .cloned()
            .collect();
        cands.push(Sibling {
            path: dir.clone(),
            id: layout.id(),
            title: Some(title.to_string()),
        });
        let src = source_among(&s.path, kind, title, &copy, cands, Some((dir, files)));
        if src.is_some_and(|l| l.dir == *dir) {
            let (records, line) = fit(&copy, files).map_or((0, 0), |f| (f.1, f.2));
            forks.push(SessionLink {
                session: s.id.clone(),
                dir: s.path.clone(),
                records,
                kind,
                source_line: line,
                source_file: files.get(line).map(|f| f.name.clone()).unwrap_or_default(),
                after: None,
            });
        }
    }
    forks.sort_by(|a, b| {
        a.records
            .cmp(&b.records)
            .then_with(|| a.session.cmp(&b.session))
    });
    Lineage { forked_from, forks }
}

/// Reorders list rows so each fork follows the session it came from
/// (rows otherwise keep their order).
pub fn forks_under_sources<T: ListRow>(rows: Vec<T>) -> Vec<T> {
    let ids: Vec<String> = rows.iter().map(|r| r.id().to_string()).collect();
    let parent_of = |r: &T| {
        r.source()
            .filter(|s| ids.iter().any(|i| i == s))
            .map(str::to_string)
    };
    let (mut roots, mut children): (Vec<Option<T>>, Vec<Option<T>>) = (Vec::new(), Vec::new());
    for r in rows {
        if parent_of(&r).is_some() {
            children.push(Some(r));
        } else {
            roots.push(Some(r));
        }
    }
    let mut out = Vec::new();
    fn place<T: ListRow>(row: T, children: &mut [Option<T>], out: &mut Vec<T>) {
        let id = row.id().to_string();
        out.push(row);
        for k in 0..children.len() {
            if children[k]
                .as_ref()
                .is_some_and(|c| c.source() == Some(&id))
            {
                if let Some(c) = children[k].take() {
                    place(c, children, out);
                }
            }
        }
    }
    for r in roots.iter_mut().filter_map(Option::take) {
        place(r, &mut children, &mut out);
    }
    // A cycle of forks (impossible on disk, but titles are data): keep them.
    out.extend(children.into_iter().flatten());
    out
}

/// What [`forks_under_sources`] needs of a row.
pub trait ListRow {
    fn id(&self) -> &str;
    fn source(&self) -> Option<&str>;
}

impl ListRow for super::SessionSummary {
    fn id(&self) -> &str {
        &self.id
    }
    fn source(&self) -> Option<&str> {
        self.forked_from.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Row(&'static str, Option<&'static str>);
    impl ListRow for Row {
        fn id(&self) -> &str {
            self.0
        }
        fn source(&self) -> Option<&str> {
            self.1
        }
    }

    #[test]
    fn forks_follow_their_source() {
        let rows = vec![
            Row("f2", Some("a")),
            Row("b", None),
            Row("a", None),
            Row("ff", Some("f2")),
            Row("x", Some("gone")),
        ];
        let ids: Vec<&str> = forks_under_sources(rows).iter().map(|r| r.0).collect();
        assert_eq!(ids, ["b", "a", "f2", "ff", "x"]);
    }

    #[test]
    fn titles() {
        assert_eq!(parse_title("Fork: one"), Some((LinkKind::Fork, "one")));
        assert_eq!(
            parse_title("Undo: Fork: one"),
            Some((LinkKind::Undo, "Fork: one"))
        );
        assert_eq!(parse_title("one"), None);
    }
}
