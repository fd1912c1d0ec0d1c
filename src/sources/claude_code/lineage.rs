//! Sessions made from sessions. `/branch` copies the current chain into a
//! new file and marks every copied entry `forkedFrom: {sessionId}`;
//! `--fork-session` copies it with the same uuids and no marker. Both start
//! with the source's root entry, so the files of a project folder that
//! share the first entry's uuid are one family: a file's source is the
//! marked one, else the family member that started earlier and shares
//! the most entries with it (the copy's own first lines are written after
//! the entries it copied). The fork point is the last shared entry.
//! `/clear` starts a fresh root: no link.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::scan::{Id, Scan};

/// Bytes read of a sibling file to find its first entry.
const HEAD_CAP: u64 = 1 << 20;

/// One end of a link, as found.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub session: String,
    pub path: PathBuf,
    /// The last entry both files hold.
    pub after: Option<Id>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    pub forked_from: Option<Link>,
    pub forks: Vec<Link>,
}

/// The first lines of a file up to its first entry.
pub fn head(path: &Path) -> Option<Scan> {
    let g = crate::read::guard::open_regular(path).ok()?;
    let mut scan = Scan::new("", path);
    let mut f = g.file.take(g.len.min(HEAD_CAP));
    let mut buf = vec![0u8; 64 << 10];
    while scan.entries.is_empty() {
        let n = f.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        scan.feed(&buf[..n]);
    }
    Some(scan)
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

struct Member {
    path: PathBuf,
    id: String,
    first_time: f64,
    marked: Option<String>,
    ids: HashSet<Id>,
    /// Entries in file order.
    order: Vec<Id>,
}

impl Member {
    fn of(scan: &Scan, path: &Path) -> Member {
        Member {
            path: path.to_path_buf(),
            id: stem(path),
            first_time: scan.first_time.unwrap_or(f64::INFINITY),
            marked: scan.forked_from.clone(),
            ids: scan.entries.iter().map(|e| e.id).collect(),
            order: scan.entries.iter().map(|e| e.id).collect(),
        }
    }

    fn shared_with(&self, other: &Member) -> usize {
        self.order
            .iter()
            .filter(|id| other.ids.contains(id))
            .count()
    }

    /// My last entry `other` holds too.
    fn last_shared(&self, other: &Member) -> Option<Id> {
        self.order
            .iter()
            .rev()
            .find(|id| other.ids.contains(id))
            .copied()
    }
}

/// Does this file start with copied entries (written before the file's
/// own first line: `--fork-session` keeps their timestamps)?
fn is_copy(scan: &Scan) -> bool {
    match (scan.entries.first(), scan.first_time) {
        (Some(e), Some(t)) => e.copied || e.time < t,
        (Some(e), None) => e.copied,
        _ => false,
    }
}

/// Links of the session `me` (already read as `scan`) among the files of
/// its project folder.
pub fn find(path: &Path, scan: &Scan) -> Found {
    let Some(root) = scan.entries.first().map(|e| e.id) else {
        return Found::default();
    };
    let Some(folder) = path.parent() else {
        return Found::default();
    };
    let copy = is_copy(scan);
    let my_id = stem(path);
    let my_start = scan.first_time.unwrap_or(f64::INFINITY);
    // A copy of mine starts with my root, or (made after a compaction)
    // with one of my compact boundaries: no need to index all my entries
    // to find it.
    let starts: Vec<Id> = std::iter::once(root)
        .chain(
            scan.entries
                .iter()
                .filter(|e| e.kind == super::scan::Kind::Boundary)
                .map(|e| e.id),
        )
        .collect();
    let mut related = Vec::new();
    for p in super::home::sessions_in(folder) {
        if p == path {
            continue;
        }
        let Some(h) = head(&p) else { continue };
        // My source, when I am a copy, started before me.
        let yes = h.entries.first().is_some_and(|e| starts.contains(&e.id))
            || h.forked_from.as_deref() == Some(my_id.as_str())
            || (copy && h.first_time.unwrap_or(f64::INFINITY) < my_start);
        if yes {
            related.push(p);
        }
    }
    if related.is_empty() && scan.forked_from.is_none() {
        return Found::default();
    }
    let mut family = vec![Member::of(scan, path)];
    for p in related {
        // Through the cache: a follower reads the family each time.
        if let Ok(s) = super::cache::scan(&p, &format!("{}.jsonl", stem(&p))) {
            family.push(Member::of(&s, &p));
        }
    }
    // A marked source may have lost its first entry to nothing; it is
    // named by id all the same.
    let source_of = |x: usize| -> Option<usize> {
        let m = &family[x];
        if let Some(s) = &m.marked {
            return family.iter().position(|o| &o.id == s);
        }
        (0..family.len())
            .filter(|&o| o != x && family[o].first_time < m.first_time)
            .map(|o| (m.shared_with(&family[o]), o))
            .filter(|&(n, _)| n > 0)
            .max_by(|a, b| {
                a.0.cmp(&b.0).then(
                    family[b.1]
                        .first_time
                        .partial_cmp(&family[a.1].first_time)
                        .unwrap_or(std::cmp::Ordering::Equal),
                )
            })
            .map(|(_, o)| o)
    };
    let link = |from: usize, to: usize| Link {
        session: family[to].id.clone(),
        path: family[to].path.clone(),
        after: family[from].last_shared(&family[to]),
    };
    let mut found = Found::default();
    match (source_of(0), &family[0].marked) {
        (Some(s), _) => found.forked_from = Some(link(0, s)),
        // The source file is gone or elsewhere: still named.
        (None, Some(s)) => {
            found.forked_from = Some(Link {
                session: s.clone(),
                path: folder.join(format!("{s}.jsonl")),
                after: scan.entries.iter().rev().find(|e| e.copied).map(|e| e.id),
            })
        }
        (None, None) => {}
    }
    for x in 1..family.len() {
        if source_of(x) == Some(0) {
            // The fork's last entry I hold.
            found.forks.push(Link {
                session: family[x].id.clone(),
                path: family[x].path.clone(),
                after: family[x].last_shared(&family[0]),
            });
        }
    }
    found.forks.sort_by(|a, b| a.session.cmp(&b.session));
    found
}
