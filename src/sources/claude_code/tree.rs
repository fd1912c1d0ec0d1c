//! The conversation tree of one Claude Code file and its world lines
//! (pure: entries in, lines out).
//!
//! Entries hang off `parentUuid`; a compact boundary (`parentUuid: null`)
//! hangs off its preserved tail, else its logical parent, so a compaction
//! stays on its line. A world line is a root-to-leaf path, with two kinds
//! of leaf that are not world lines: the N-1 results of N parallel tool
//! calls that get no children (folded into the line that holds the result
//! written last, the one Claude Code continues from), and the extra
//! `tool_use` entries of that message on the way to them (kept inside the
//! record of the call the line goes through). Lines are ordered by the file
//! line of their first entry not on an earlier line; at a branch point the
//! child written first continues its parent's line. `current` is the line
//! holding the last entry written: what `claude --resume` continues.
//!
//! Bad files don't stop it: a duplicate uuid keeps its first entry, a
//! `parentUuid` pointing nowhere starts a new root, a cycle is cut; each
//! is a warning.

use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use super::scan::{boundary_links, Entry, Extra, Id, Kind};

/// A world line found in the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Entry index of its first entry not on its parent line.
    pub start: usize,
    /// Entry index of its last entry.
    pub leaf: usize,
    pub parent: Option<usize>,
    /// Entry index of the last entry shared with the parent.
    pub after: Option<usize>,
    /// Starts with a compact boundary ("summarize from here").
    pub summarize: bool,
    /// Its records, root first.
    pub records: Vec<Rec>,
    /// Records both it and its parent hold.
    pub shared: usize,
    /// The first prompt typed on its own part.
    pub prompt: Option<usize>,
}

/// One record of a world line: entry `entry`, and when the line goes
/// through one of several parallel `tool_use` entries, the last of the
/// others (`upto`) whose lines it spans.
/// Entry indexes are kept in 32 bits, as the tree's tables keep them: a
/// line of a million records is 8 MB of these, not 16.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rec {
    entry: u32,
    upto: u32,
}

impl Rec {
    /// Entry `entry` spanning the others up to `upto` (itself: none);
    /// indexes past 32 bits are not made (a file holds fewer entries).
    pub fn new(entry: usize, upto: usize) -> Rec {
        Rec {
            entry: entry as u32,
            upto: upto as u32,
        }
    }

    pub fn entry(self) -> usize {
        self.entry as usize
    }

    pub fn upto(self) -> usize {
        self.upto as usize
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tree {
    pub lines: Vec<Line>,
    pub current: Option<usize>,
    /// Compact boundaries that are marks on a line: (line, entry index).
    pub compactions: Vec<(usize, usize)>,
    /// (file line, message).
    pub warnings: Vec<(u32, String)>,
}

/// Uuids are random: their low bits are a hash already.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u128(&mut self, v: u128) {
        self.0 = (v as u64) ^ ((v >> 64) as u64).rotate_left(17);
    }
}

pub type IdMap<V> = HashMap<Id, V, BuildHasherDefault<IdHasher>>;

const NONE: u32 = u32::MAX;

/// Builds the world lines of `entries` (in file order; `extras` is the
/// scan's, which their [`Entry::extra`] index).
pub fn build(entries: &[Entry], extras: &[Extra]) -> Tree {
    let n = entries.len();
    let mut tree = Tree::default();
    if n == 0 {
        return tree;
    }
    let mut index: IdMap<u32> = IdMap::default();
    index.reserve(n);
    let mut dup = vec![false; n];
    for (i, e) in entries.iter().enumerate() {
        match index.get(&e.id) {
            Some(&first) => {
                dup[i] = true;
                tree.warnings.push((
                    e.line,
                    format!(
                        "duplicate uuid (first at line {}); this entry is ignored",
                        entries[first as usize].line
                    ),
                ));
            }
            None => {
                index.insert(e.id, i as u32);
            }
        }
    }
    let find = |id: Id| -> Option<u32> { (id != 0).then(|| index.get(&id).copied()).flatten() };
    // Parents.
    let mut parent = vec![NONE; n];
    for (i, e) in entries.iter().enumerate() {
        if dup[i] {
            continue;
        }
        let p = if e.kind == Kind::Boundary && e.parent == 0 {
            // Only an entry written before it: a `--fork-session` copy
            // starts with the boundary and re-parents its tail below it.
            let (tail, logical) = boundary_links(e, extras);
            let before = |x: Option<u32>| x.filter(|&x| (x as usize) < i);
            before(find(tail)).or_else(|| before(find(logical)))
        } else if e.parent != 0 {
            let p = find(e.parent);
            if p.is_none() {
                tree.warnings.push((
                    e.line,
                    "parentUuid points to no entry in this file; shown as a new root".into(),
                ));
            }
            p
        } else {
            None
        };
        if let Some(p) = p.filter(|&p| p as usize != i) {
            parent[i] = p;
        }
    }
    // The biggest table here (~66 B per entry), not needed past parents:
    // freed before the lines' own tables are made, it bounds the peak.
    drop(index);
    cut_cycles(entries, &dup, &mut parent, &mut tree.warnings);
    // Children, in file order (CSR).
    let mut first_child = vec![0u32; n + 1];
    for &p in &parent {
        if p != NONE {
            first_child[p as usize + 1] += 1;
        }
    }
    for i in 0..n {
        first_child[i + 1] += first_child[i];
    }
    let mut fill = first_child.clone();
    let mut children = vec![0u32; first_child[n] as usize];
    for (i, &p) in parent.iter().enumerate() {
        if p != NONE {
            children[fill[p as usize] as usize] = i as u32;
            fill[p as usize] += 1;
        }
    }
    drop(fill);
    let kids = |i: usize| &children[first_child[i] as usize..first_child[i + 1] as usize];
    // Parents before children (each entry at most once: no regrowth).
    let mut order: Vec<u32> = Vec::with_capacity(n);
    order.extend(
        (0..n)
            .filter(|&i| !dup[i] && parent[i] == NONE)
            .map(|i| i as u32),
    );
    let mut k = 0;
    while k < order.len() {
        let i = order[k] as usize;
        order.extend_from_slice(kids(i));
        k += 1;
    }
    // Parallel results: per API message, the result written last goes on;
    // the others, when nothing hangs off them, fold into its line.
    let msg_of_parent = |i: usize| -> u64 {
        match parent[i] {
            NONE => 0,
            p if entries[p as usize].kind == Kind::Assistant => entries[p as usize].msg,
            _ => 0,
        }
    };
    let mut last_result: HashMap<u64, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        if !dup[i] && e.kind == Kind::Result {
            let m = msg_of_parent(i);
            if m != 0 {
                last_result.insert(m, i);
            }
        }
    }
    // While the results come in, the calls written after the one answered
    // last are leaves too: fold them the same way.
    let mut folded = vec![false; n];
    for (i, e) in entries.iter().enumerate() {
        if dup[i] || !kids(i).is_empty() {
            continue;
        }
        folded[i] = match e.kind {
            Kind::Result => {
                let m = msg_of_parent(i);
                m != 0 && last_result.get(&m) != Some(&i)
            }
            Kind::Assistant => e.msg != 0 && e.calls && last_result.contains_key(&e.msg),
            _ => false,
        };
    }
    drop(last_result);
    // Entries on some world line.
    let mut live = vec![false; n];
    for &i in order.iter().rev() {
        let i = i as usize;
        if kids(i).is_empty() && !folded[i] {
            live[i] = true;
        }
        if live[i] && parent[i] != NONE {
            live[parent[i] as usize] = true;
        }
    }
    let primary = |i: usize| kids(i).iter().map(|&c| c as usize).find(|&c| live[c]);
    // Starts: live roots and live children that don't continue their
    // parent's line.
    let mut starts: Vec<usize> = Vec::new();
    for &i in &order {
        let i = i as usize;
        if !live[i] {
            continue;
        }
        let p = parent[i];
        if p == NONE || primary(p as usize) != Some(i) {
            starts.push(i);
        }
    }
    drop(order);
    let mut owner = vec![NONE; n];
    // Entry indexes in 32 bits, as the tables above.
    let mut segs: Vec<Vec<u32>> = Vec::with_capacity(starts.len());
    for (s, &start) in starts.iter().enumerate() {
        let mut seg = vec![start as u32];
        owner[start] = s as u32;
        let mut x = start;
        while let Some(c) = primary(x) {
            owner[c] = s as u32;
            seg.push(c as u32);
            x = c;
        }
        segs.push(seg);
    }
    // The lines' tables come next: what made the segments goes first.
    drop((children, first_child));
    // Order: by the file line of each start, parents first.
    let parent_start = |s: usize| -> Option<usize> {
        let p = parent[starts[s]];
        (p != NONE).then(|| owner[p as usize] as usize)
    };
    let mut waiting: Vec<Vec<usize>> = vec![Vec::new(); starts.len()];
    let mut heap = BinaryHeap::new();
    for (s, &start) in starts.iter().enumerate() {
        match parent_start(s) {
            Some(ps) if ps != s => waiting[ps].push(s),
            _ => heap.push(std::cmp::Reverse((start, s))),
        }
    }
    let mut rank = vec![usize::MAX; starts.len()];
    let mut sorted = Vec::with_capacity(starts.len());
    while let Some(std::cmp::Reverse((_, s))) = heap.pop() {
        rank[s] = sorted.len();
        sorted.push(s);
        for &c in &waiting[s] {
            heap.push(std::cmp::Reverse((starts[c], c)));
        }
    }
    // Folded results and the calls on the way to them, by where they
    // join a line.
    let mut upto: Vec<u32> = vec![NONE; n];
    let mut extras: HashMap<usize, Vec<usize>> = HashMap::new();
    for i in 0..n {
        if !folded[i] {
            continue;
        }
        let mut chain = Vec::new();
        let mut x = parent[i];
        // (The leaf itself goes last: absorbed when it is a call.)
        while x != NONE && !live[x as usize] {
            chain.push(x as usize);
            x = parent[x as usize];
        }
        if x == NONE {
            tree.warnings.push((
                entries[i].line,
                "a tool result on no world line (its call was not found)".into(),
            ));
            continue;
        }
        let at = x as usize;
        let absorbs = |c: usize| {
            entries[at].kind == Kind::Assistant
                && entries[c].kind == Kind::Assistant
                && entries[c].msg == entries[at].msg
                && c > at
        };
        chain.push(i);
        for c in chain {
            if absorbs(c) {
                if upto[at] == NONE || (upto[at] as usize) < c {
                    upto[at] = c as u32;
                }
            } else {
                extras.entry(at).or_default().push(c);
            }
        }
    }
    for v in extras.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    // The lines.
    let mut paths: Vec<Vec<u32>> = vec![Vec::new(); starts.len()];
    for &s in &sorted {
        let mut path = match parent_start(s) {
            Some(ps) if rank[ps] < rank[s] => {
                let p = parent[starts[s]] as usize;
                let pp = &paths[ps];
                let at = pp
                    .iter()
                    .position(|&x| x as usize == p)
                    .map_or(0, |k| k + 1);
                pp[..at].to_vec()
            }
            _ => Vec::new(),
        };
        path.extend_from_slice(&segs[s]);
        paths[s] = path;
    }
    let mut records_of: Vec<Vec<Rec>> = vec![Vec::new(); starts.len()];
    for &s in &sorted {
        records_of[s] = records(&paths[s], entries, &upto, &extras);
    }
    let shared_of: Vec<usize> = (0..starts.len())
        .map(|s| {
            parent_start(s)
                .filter(|&ps| rank[ps] < rank[s])
                .map_or(0, |ps| {
                    records_of[ps]
                        .iter()
                        .zip(&records_of[s])
                        .take_while(|(a, b)| a == b)
                        .count()
                })
        })
        .collect();
    for &s in &sorted {
        let start = starts[s];
        let ps = parent_start(s).filter(|&ps| rank[ps] < rank[s]);
        let shared = shared_of[s];
        let seg = &segs[s];
        let summarize = ps.is_some() && entries[start].kind == Kind::Boundary;
        tree.lines.push(Line {
            start,
            leaf: seg.last().map_or(start, |&l| l as usize),
            parent: ps.map(|ps| rank[ps]),
            after: ps.map(|_| parent[start] as usize),
            summarize,
            records: std::mem::take(&mut records_of[s]),
            shared,
            prompt: seg
                .iter()
                .map(|&i| i as usize)
                .find(|&i| entries[i].kind == Kind::Prompt),
        });
    }
    // Marks: every compaction on a line, but a "summarize from here" that
    // starts a branch (that is the branch's reason).
    for (i, e) in entries.iter().enumerate() {
        if e.kind == Kind::Boundary && live[i] {
            let s = owner[i] as usize;
            let branch_start = starts[s] == i && tree.lines[rank[s]].summarize;
            if !branch_start {
                tree.compactions.push((rank[s], i));
            }
        }
    }
    // Current: the line of the last entry written.
    let last = (0..n).rev().find(|&i| !dup[i]);
    tree.current = last.and_then(|mut x| {
        while !live[x] {
            match parent[x] {
                NONE => return None,
                p => x = p as usize,
            }
        }
        Some(rank[owner[x] as usize])
    });
    tree
}

/// A path's records: each entry (spanning the parallel calls it stands
/// for), with the folded results joined at `at` placed among the path's
/// entries in file order.
fn records(
    path: &[u32],
    entries: &[Entry],
    upto: &[u32],
    extras: &HashMap<usize, Vec<usize>>,
) -> Vec<Rec> {
    let mut out = Vec::with_capacity(path.len());
    let mut pending: BinaryHeap<std::cmp::Reverse<usize>> = BinaryHeap::new();
    let rec = |i: usize| {
        Rec::new(
            i,
            match upto[i] {
                NONE => i,
                u => u as usize,
            },
        )
    };
    for i in path.iter().map(|&i| i as usize) {
        while let Some(&std::cmp::Reverse(x)) = pending.peek() {
            if entries[x].line > entries[i].line {
                break;
            }
            pending.pop();
            out.push(rec(x));
        }
        out.push(rec(i));
        if let Some(v) = extras.get(&i) {
            pending.extend(v.iter().map(|&x| std::cmp::Reverse(x)));
        }
    }
    while let Some(std::cmp::Reverse(x)) = pending.pop() {
        out.push(rec(x));
    }
    out
}

/// Breaks every cycle of `parent` links (a file edited by hand) at the
/// entry that closes it, which becomes a root.
fn cut_cycles(
    entries: &[Entry],
    dup: &[bool],
    parent: &mut [u32],
    warnings: &mut Vec<(u32, String)>,
) {
    // 0: not seen, 1: on the walk now, 2: done.
    let mut state = vec![0u8; parent.len()];
    let mut walk = Vec::new();
    for i in 0..parent.len() {
        if dup[i] || state[i] != 0 {
            continue;
        }
        let mut x = i;
        loop {
            state[x] = 1;
            walk.push(x);
            let p = parent[x];
            if p == NONE || state[p as usize] == 2 {
                break;
            }
            if state[p as usize] == 1 {
                warnings.push((
                    entries[x].line,
                    "parentUuid closes a cycle; cut here, shown as a new root".into(),
                ));
                parent[x] = NONE;
                break;
            }
            x = p as usize;
        }
        for &w in &walk {
            state[w] = 2;
        }
        walk.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::super::scan::{uuid_text, Scan};
    use super::*;

    fn u(n: u32) -> String {
        uuid_text(u128::from(n))
    }

    /// A line: `kind` is `p` (prompt), `a` (assistant of message `m`),
    /// `r` (a tool result), `b` (compact boundary with tail `m`), `s`
    /// (summary from here).
    fn line(kind: char, id: u32, parent: Option<u32>, m: u32) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{}\"", u(p)));
        match kind {
            'p' => format!(
                r#"{{"type":"user","uuid":"{}","parentUuid":{parent},"message":{{"role":"user","content":"prompt {id}"}}}}"#,
                u(id)
            ),
            'a' => format!(
                r#"{{"type":"assistant","uuid":"{}","parentUuid":{parent},"message":{{"id":"msg_{m}","role":"assistant","content":[{{"type":"tool_use","id":"t{id}","name":"Bash","input":{{}}}}]}}}}"#,
                u(id)
            ),
            'r' => format!(
                r#"{{"type":"user","uuid":"{}","parentUuid":{parent},"message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{m}","content":"ok"}}]}}}}"#,
                u(id)
            ),
            'b' => format!(
                r#"{{"type":"system","subtype":"compact_boundary","uuid":"{}","parentUuid":null,"logicalParentUuid":"{}","compactMetadata":{{"preservedSegment":{{"tailUuid":"{}"}}}}}}"#,
                u(id),
                u(m),
                u(m)
            ),
            's' => format!(
                r#"{{"type":"user","uuid":"{}","parentUuid":{parent},"isCompactSummary":true,"summarizeMetadata":{{"direction":"from"}},"message":{{"role":"user","content":"summary"}}}}"#,
                u(id)
            ),
            _ => unreachable!(),
        }
    }

    fn tree_of(lines: &[String]) -> (Scan, Tree) {
        let scan = Scan::parse("t.jsonl", (lines.join("\n") + "\n").as_bytes());
        let t = build(&scan.entries, &scan.extras);
        (scan, t)
    }

    fn ids(scan: &Scan, l: &Line) -> Vec<u32> {
        l.records
            .iter()
            .map(|r| scan.entries[r.entry()].id as u32)
            .collect()
    }

    #[test]
    fn parallel_results_fold_into_the_line_that_goes_on() {
        // One message with three calls (2→3→4); results 5 (of 2), 6 (of
        // 4), then 7 (of 3), which the next reply hangs off.
        let (scan, t) = tree_of(&[
            line('p', 1, None, 0),
            line('a', 2, Some(1), 9),
            line('a', 3, Some(2), 9),
            line('a', 4, Some(3), 9),
            line('r', 5, Some(2), 2),
            line('r', 6, Some(4), 4),
            line('r', 7, Some(3), 3),
            line('p', 8, Some(7), 0),
        ]);
        assert_eq!(t.lines.len(), 1, "{t:?}");
        assert_eq!(ids(&scan, &t.lines[0]), [1, 2, 3, 5, 6, 7, 8]);
        // The record of call 3 stands for call 4 too.
        assert_eq!(t.lines[0].records[2].upto(), 3);
        assert_eq!(t.current, Some(0));
        assert!(t.warnings.is_empty());
    }

    #[test]
    fn parallel_calls_make_no_branch_while_their_results_come_in() {
        let all = [
            line('p', 1, None, 0),
            line('a', 2, Some(1), 9),
            line('a', 3, Some(2), 9),
            line('a', 4, Some(3), 9),
            line('r', 5, Some(2), 2),
            line('r', 6, Some(4), 4),
            line('r', 7, Some(3), 3),
        ];
        for n in 1..=all.len() {
            let (_, t) = tree_of(&all[..n]);
            assert_eq!(t.lines.len(), 1, "after {n} lines: {t:?}");
            assert_eq!(
                t.lines[0]
                    .records
                    .iter()
                    .map(|r| r.upto() - r.entry() + 1)
                    .sum::<usize>(),
                n
            );
        }
    }

    #[test]
    fn rewinds_branch_and_the_last_entry_is_current() {
        let (scan, t) = tree_of(&[
            line('p', 1, None, 0),
            line('p', 2, Some(1), 0),
            line('p', 3, Some(2), 0),
            line('p', 4, Some(1), 0), // rewound to after 1
            line('p', 5, Some(2), 0), // rewound to after 2 (line 1's)
        ]);
        assert_eq!(t.lines.len(), 3);
        assert_eq!(ids(&scan, &t.lines[1]), [1, 4]);
        assert_eq!(t.lines[1].parent, Some(0));
        assert_eq!(t.lines[1].shared, 1);
        assert_eq!(ids(&scan, &t.lines[2]), [1, 2, 5]);
        assert_eq!(t.lines[2].after, Some(1));
        assert_eq!(t.current, Some(2));
    }

    #[test]
    fn compactions_are_marks_but_summarize_from_here_is_a_branch() {
        let (scan, t) = tree_of(&[
            line('p', 1, None, 0),
            line('p', 2, Some(1), 0),
            line('b', 3, None, 2), // /compact after 2
            line('p', 4, Some(3), 0),
            line('b', 5, None, 3), // "summarize from here" back to 3
            line('s', 6, Some(5), 0),
            line('p', 7, Some(6), 0),
        ]);
        assert_eq!(t.lines.len(), 2, "{t:?}");
        assert_eq!(ids(&scan, &t.lines[0]), [1, 2, 3, 4]);
        assert!(t.lines[1].summarize);
        assert_eq!(ids(&scan, &t.lines[1]), [1, 2, 3, 5, 6, 7]);
        assert_eq!(t.compactions, [(0, 2)]);
        assert_eq!(t.current, Some(1));
    }

    #[test]
    fn bad_links_warn_and_lose_no_line() {
        let mut lines = vec![
            line('p', 1, None, 0),
            line('p', 2, Some(1), 0),
            line('p', 2, Some(1), 0),  // duplicate uuid
            line('p', 3, Some(99), 0), // parent nowhere
            line('p', 4, Some(5), 0),  // 4 ↔ 5: a cycle
            line('p', 5, Some(4), 0),
        ];
        lines.push("{not json".into());
        let (scan, t) = tree_of(&lines);
        assert_eq!(scan.warnings.len(), 1);
        assert_eq!(scan.warnings[0].line, 7);
        let msgs: Vec<&str> = t.warnings.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(t.warnings.len(), 3, "{msgs:?}");
        assert_eq!(t.lines.len(), 3, "{t:?}");
        let leaves: Vec<u32> = t
            .lines
            .iter()
            .map(|l| scan.entries[l.leaf].id as u32)
            .collect();
        // The cycle is cut where the walk closed it: 5 becomes a root.
        assert_eq!(leaves, [2, 3, 4]);
    }

    #[test]
    fn a_copy_starting_at_its_boundary_is_one_line() {
        // `--fork-session` after `/compact`: the boundary's tail (3) comes
        // after it, re-parented below the summary.
        let (scan, t) = tree_of(&[
            line('b', 1, None, 3),
            line('s', 2, Some(1), 0),
            line('p', 3, Some(2), 0),
            line('p', 4, Some(3), 0),
        ]);
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
        assert_eq!(t.lines.len(), 1);
        assert_eq!(ids(&scan, &t.lines[0]), [1, 2, 3, 4]);
        assert_eq!(t.compactions, [(0, 0)]);
    }
}
