//! Growing a file's tree ([`super::tree`]) as entries are appended, at the
//! cost of the turn being written rather than of the file.
//!
//! An append changes the tree only near the end of the current world
//! line: the entries of the last turn (after its last entry that is no
//! assistant reply or tool result) are where parallel calls and their
//! results fold. That window, with the appended entries, is built again
//! as a tree of its own (its first entry as the root) and put in place of
//! the line's last records, when that is provably what building the whole
//! file would give: every entry of the window hangs inside it, no other
//! world line shares it, its API messages start in it, it holds no
//! compaction, duplicate or entry an earlier line was waiting for, and it
//! builds as one line without a warning. Anything else (a rewind, a
//! compaction, a bad link) is `None`: build the whole tree.

use std::collections::HashMap;

use super::scan::{Entry, Extra, Kind};
use super::tree::{self, IdMap, Rec, Tree};

/// What growing needs to know about the entries read so far.
#[derive(Debug, Clone, Default)]
pub struct Growth {
    /// Entries the tree holds.
    n: usize,
    /// Entry index by uuid (the first, of duplicates).
    index: IdMap<u32>,
    /// `parentUuid`s that point to no entry (yet).
    dangling: IdMap<()>,
    /// Duplicate uuids: their entry indexes.
    dups: Vec<usize>,
    /// First assistant entry of each API message.
    msgs: HashMap<u64, usize>,
}

impl Growth {
    /// The state for `entries`, whose tree was just built whole.
    pub fn new(entries: &[Entry]) -> Growth {
        let mut g = Growth {
            n: entries.len(),
            ..Growth::default()
        };
        g.index.reserve(entries.len());
        for (i, e) in entries.iter().enumerate() {
            g.add(i, e);
        }
        for e in entries {
            if e.parent != 0 && !g.index.contains_key(&e.parent) {
                g.dangling.insert(e.parent, ());
            }
        }
        g
    }

    fn add(&mut self, i: usize, e: &Entry) -> bool {
        if self.index.contains_key(&e.id) {
            self.dups.push(i);
            return false;
        }
        self.index.insert(e.id, i as u32);
        if e.kind == Kind::Assistant && e.msg != 0 {
            self.msgs.entry(e.msg).or_insert(i);
        }
        true
    }

    /// Grows `tree` (built from the first entries this state knows) to all
    /// of `entries`. `Some(k)`: only the current world line changed, from
    /// its record `k` on; `None`: nothing was changed, build it whole (this
    /// state is stale then: make a new one).
    pub fn grow(&mut self, tree: &mut Tree, entries: &[Entry], extras: &[Extra]) -> Option<usize> {
        let n0 = self.n;
        let n = entries.len();
        if n < n0 {
            return None;
        }
        let c = tree.current?;
        let line = tree.lines.get(c)?;
        if n == n0 {
            return Some(line.records.len());
        }
        let recs = &line.records;
        // The window: the line's records after its last that is neither
        // a reply nor a result.
        let mut k0 = recs.len();
        while k0 > line.shared {
            let e = &entries[recs[k0 - 1].entry()];
            if matches!(e.kind, Kind::Assistant | Kind::Result) {
                k0 -= 1;
            } else {
                break;
            }
        }
        if k0 == 0 || k0 <= line.shared && line.parent.is_some() {
            return None;
        }
        let anchor = recs[k0 - 1].entry();
        let e0 = match recs.get(k0) {
            Some(r) => r.entry(),
            None => n0,
        };
        if anchor >= e0 || (k0 == recs.len() && anchor != line.leaf) {
            return None;
        }
        // The old part of the window is this line's alone, whole.
        let mut covered = 0;
        for r in &recs[k0..] {
            if r.entry() < e0 || r.upto() >= n0 {
                return None;
            }
            let e = &entries[r.entry()];
            covered += 1 + entries[r.entry() + 1..=r.upto()]
                .iter()
                .filter(|x| x.kind == Kind::Assistant && x.msg == e.msg)
                .count();
        }
        if covered != n0 - e0 || self.dups.last().is_some_and(|&d| d >= e0) {
            return None;
        }
        if tree
            .lines
            .iter()
            .any(|l| l.parent == Some(c) && l.shared > k0)
        {
            return None;
        }
        // The new entries: no duplicate, none an earlier entry waited for.
        for (i, e) in entries.iter().enumerate().skip(n0) {
            if self.dangling.contains_key(&e.id) || !self.add(i, e) {
                self.n = usize::MAX;
                return None;
            }
        }
        self.n = n;
        // Every entry of the window hangs inside it (its first off the
        // anchor), starts no message begun before it, and is no boundary.
        for (i, e) in entries.iter().enumerate().skip(e0) {
            let p = self.index.get(&e.parent).map(|&p| p as usize);
            let inside = if i == e0 {
                p == Some(anchor)
            } else {
                p.is_some_and(|p| p >= e0 && p < i)
            };
            let own_msg = e.kind != Kind::Assistant
                || e.msg == 0
                || self.msgs.get(&e.msg).is_some_and(|&f| f >= e0);
            if !inside || !own_msg || e.kind == Kind::Boundary {
                self.n = usize::MAX;
                return None;
            }
        }
        let mut part: Vec<Entry> = entries[e0..].to_vec();
        part[0].parent = 0;
        let sub = tree::build(&part, extras);
        let one = match sub.lines.as_slice() {
            [one] => one,
            _ => {
                self.n = usize::MAX;
                return None;
            }
        };
        if !sub.warnings.is_empty() || sub.current != Some(0) || !sub.compactions.is_empty() {
            self.n = usize::MAX;
            return None;
        }
        let line = &mut tree.lines[c];
        line.records.truncate(k0);
        line.records.extend(
            one.records
                .iter()
                .map(|r| Rec::new(r.entry() + e0, r.upto() + e0)),
        );
        line.leaf = one.leaf + e0;
        if line.prompt.is_none_or(|p| p >= e0) {
            line.prompt = one.prompt.map(|p| p + e0);
        }
        Some(k0)
    }
}
