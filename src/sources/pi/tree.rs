//! The world lines of a Pi entry tree: its root-to-leaf paths. Every entry
//! is a node (labels and model changes sit inside the chain), but a side
//! subtree of bookkeeping only is no world line; at a line's tip such a
//! subtree is its tail (the latest one written). Lines are ordered by the
//! file position of each one's first entry not on an earlier line, a line
//! going on through the earliest child at every branch point; a line's
//! parent is the earliest line holding its fork point. `current` is the
//! line holding the file's last entry (where Pi resumes).

use super::file::{PiFile, NONE as ROOT};

/// One world line: its own entries (`start..` down to `leaf`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The first entry not on an earlier line.
    pub start: u32,
    pub leaf: u32,
    /// The fork point (the parent of `start`); `None`: a root line.
    pub after: Option<u32>,
    /// The earliest line holding `after`.
    pub parent: Option<usize>,
}

/// The tree's world lines and where each entry sits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    pub lines: Vec<Line>,
    /// Per entry: the earliest line holding it (`u32::MAX`: on no line).
    pub owner: Vec<u32>,
    /// Per entry: its position on a path from its root (0 for a root).
    pub depth: Vec<u32>,
    pub current: Option<usize>,
}

const NONE: u32 = u32::MAX;

impl Tree {
    pub fn owner_of(&self, entry: u32) -> Option<usize> {
        self.owner
            .get(entry as usize)
            .filter(|&&o| o != NONE)
            .map(|&o| o as usize)
    }

    /// The entries of line `k`, root first.
    pub fn path(&self, f: &PiFile, k: usize) -> Vec<u32> {
        let Some(l) = self.lines.get(k) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(self.depth[l.leaf as usize] as usize + 1);
        let mut n = Some(l.leaf);
        while let Some(i) = n {
            out.push(i);
            n = f.parent(i);
        }
        out.reverse();
        out
    }

    /// Takes the entries of `f` after the first `n0` (the ones this tree
    /// was built from) when each hangs off a line's leaf: that line grows
    /// by it and becomes current, as building the tree whole would make it
    /// (a leaf has no children, so no choice between children changes,
    /// nor the order of the lines' starts). `false`, and the tree as it
    /// was: something else changed, build it whole.
    pub fn grow(&mut self, f: &PiFile, n0: usize) -> bool {
        let n = f.len();
        if n0 != self.owner.len() || n < n0 {
            return false;
        }
        let mut leaves: Vec<u32> = self.lines.iter().map(|l| l.leaf).collect();
        let mut current = self.current;
        for i in n0..n {
            let Some(p) = f.parent(i as u32) else {
                return false;
            };
            let Some(k) = leaves.iter().position(|&l| l == p) else {
                return false;
            };
            leaves[k] = i as u32;
            current = Some(k);
        }
        for i in n0..n {
            let p = f.parent(i as u32).unwrap_or_default();
            self.depth.push(self.depth[p as usize] + 1);
            self.owner.push(self.owner[p as usize]);
        }
        for (l, leaf) in self.lines.iter_mut().zip(leaves) {
            l.leaf = leaf;
        }
        self.current = current;
        true
    }
}

/// Builds the world lines of `entries` (parents always earlier, as
/// [`super::file::PiFile`] resolves them).
pub fn build(f: &PiFile) -> Tree {
    let parents = f.parents();
    let kinds = f.kinds();
    let parent = |i: usize| Some(parents[i]).filter(|&p| p != ROOT);
    let n = parents.len();
    // Per subtree: does it hold anything but bookkeeping, and its latest
    // entry (children come after parents: one pass backwards).
    let mut content = vec![false; n];
    let mut latest = vec![0u32; n];
    for i in (0..n).rev() {
        content[i] |= !kinds[i].is_bookkeeping();
        latest[i] = latest[i].max(i as u32);
        if let Some(p) = parent(i) {
            let p = p as usize;
            content[p] |= content[i];
            latest[p] = latest[p].max(latest[i]);
        }
    }
    // Forwards: each entry's depth, the roots, and where a line goes on
    // from each entry: its earliest child with content, else (a tip) the
    // child whose subtree was written last; its later children with
    // content start lines of their own. One array, not lists of children:
    // a million entries cost 4 MB here.
    let mut depth = vec![0u32; n];
    let mut next = vec![NONE; n];
    let mut starts: Vec<u32> = Vec::new();
    let mut roots: Vec<u32> = Vec::new();
    for i in 0..n {
        let Some(p) = parent(i) else {
            roots.push(i as u32);
            continue;
        };
        depth[i] = depth[p as usize] + 1;
        let (p, cur) = (p as usize, next[p as usize]);
        let cur_content = cur != NONE && content[cur as usize];
        if content[i] {
            if cur_content {
                starts.push(i as u32);
            } else {
                next[p] = i as u32;
            }
        } else if cur == NONE || (!cur_content && latest[i] > latest[cur as usize]) {
            next[p] = i as u32;
        }
    }
    push_branches(&roots, &content, &latest, &mut starts);
    // Every entry with content is on a line, so each such child is a
    // start; a line's start comes after the start of the line it leaves.
    starts.sort_unstable();
    // In `latest`'s pages, already touched (a million fresh ones cost more
    // than filling these).
    let mut owner = latest;
    owner.fill(NONE);
    let mut lines = Vec::new();
    for start in starts {
        let k = lines.len() as u32;
        let after = parent(start as usize);
        let parent = after.and_then(|a| {
            let o = owner[a as usize];
            (o != NONE).then_some(o as usize)
        });
        let mut at = start;
        loop {
            owner[at as usize] = k;
            match next[at as usize] {
                NONE => break,
                c => at = c,
            }
        }
        lines.push(Line {
            start,
            leaf: at,
            after,
            parent,
        });
    }
    // Pi resumes at the file's last entry; one in a side subtree of
    // bookkeeping sits on the line of its nearest ancestor on one.
    let mut current = None;
    let mut at = n.checked_sub(1).map(|i| i as u32);
    while let Some(i) = at {
        if owner[i as usize] != NONE {
            current = Some(owner[i as usize] as usize);
            break;
        }
        at = parent(i as usize);
    }
    Tree {
        lines,
        owner,
        depth,
        current,
    }
}

/// Roots that start lines: those holding content, else (no content
/// anywhere) the one whose subtree was written last.
fn push_branches(roots: &[u32], content: &[bool], latest: &[u32], starts: &mut Vec<u32>) {
    let before = starts.len();
    starts.extend(roots.iter().filter(|&&r| content[r as usize]));
    if starts.len() == before {
        starts.extend(roots.iter().max_by_key(|&&r| latest[r as usize]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::pi::file::PiFile;
    use std::path::Path;

    /// `id:parent:type` triples (`-` no parent; `m` message, `l` label,
    /// `b` model change).
    fn tree(spec: &str) -> (PiFile, Tree) {
        let mut text = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n");
        for item in spec.split_whitespace() {
            let mut it = item.split(':');
            let (id, parent, ty) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
            let parent = if parent == "-" {
                "null".to_string()
            } else {
                format!("\"{parent}\"")
            };
            let ty = match ty {
                "l" => "label",
                "b" => "model_change",
                _ => "message",
            };
            text.push_str(&format!(
                "{{\"type\":\"{ty}\",\"id\":\"{id}\",\"parentId\":{parent}}}\n"
            ));
        }
        let f = PiFile::parse("s.jsonl", Path::new("s.jsonl"), text.as_bytes());
        let t = build(&f);
        (f, t)
    }

    fn leaves(f: &PiFile, t: &Tree) -> Vec<String> {
        t.lines.iter().map(|l| f.id(l.leaf).to_string()).collect()
    }

    #[test]
    fn lines_are_ordered_by_their_first_own_entry() {
        // r─a─a1, a─a2 (written last), r─b (written before a2).
        let (f, t) = tree("r:-:b a:r:m a1:a:m b:r:m a2:a:m");
        assert_eq!(leaves(&f, &t), ["a1", "b", "a2"]);
        assert_eq!(t.lines[1].parent, Some(0));
        assert_eq!(t.lines[2].after, Some(1));
        assert_eq!(t.current, Some(2));
    }

    #[test]
    fn bookkeeping_side_subtrees_are_no_lines_but_tails_are_kept() {
        // A label hanging off an interior node, a label inside the chain,
        // and a tail label at the tip.
        let (f, t) = tree("r:-:m a:r:m side:r:l mid:a:l b:mid:m tail:b:l");
        assert_eq!(leaves(&f, &t), ["tail"]);
        assert_eq!(t.path(&f, 0).len(), 5);
        assert_eq!(t.owner_of(2), None);
        assert_eq!(t.current, Some(0));
        // The last entry in a side subtree: resumed on its ancestor's line.
        let (_, t) = tree("r:-:m a:r:m b:a:m side:a:l");
        assert_eq!(t.lines.len(), 1);
        assert_eq!(t.current, Some(0));
    }

    #[test]
    fn several_roots_and_empty_files() {
        let (f, t) = tree("r:-:m a:r:m s:-:m");
        assert_eq!(leaves(&f, &t), ["a", "s"]);
        assert_eq!(t.lines[1].parent, None);
        let (_, t) = tree("");
        assert!(t.lines.is_empty());
        assert_eq!(t.current, None);
        let (f, t) = tree("r:-:b");
        assert_eq!(leaves(&f, &t), ["r"]);
        // No content anywhere: the root whose subtree was written last,
        // not the last root.
        let (f, t) = tree("r1:-:b r2:-:b x:r1:b");
        assert_eq!(leaves(&f, &t), ["x"]);
        assert_eq!(t.current, Some(0));
    }
}
