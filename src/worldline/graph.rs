//! The divergence graph: one node per world-line segment (the records a
//! world line wrote itself, `[shared..len)`); `Fork` edges go from the
//! segment holding a world line's fork point to that world line's segment,
//! `DMail` edges from the segment holding a SendDMail call to the world line
//! its injection starts, `Subagent` edges from the segment holding an Agent
//! call to the subagent's first world line. Record-level walks (a record's
//! predecessor, its path from the root) go through [`Family::owner`].

use petgraph::graph::DiGraph;

use super::family::Family;

/// Where a record lives: agent (0 = main, then subagents), world line (its
/// file's position, oldest first) and record position in that file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordRef {
    pub agent: usize,
    pub line: usize,
    pub record: usize,
}

/// One world line's own records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub agent: usize,
    pub line: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Edge {
    /// To a world line from the segment holding its last shared record
    /// (`record`, the same index in both world lines).
    Fork { record: usize },
    /// From the segment holding the SendDMail call (`call`) to the world
    /// line whose first own record is the D-Mail injection it caused.
    DMail { call: usize },
    /// From the parent's segment holding the Agent call (`call`) to the
    /// subagent's first world line.
    Subagent { call: usize },
}

pub type Graph = DiGraph<Segment, Edge>;

/// Same nodes and edges in the same order.
pub fn same_graph(a: &Graph, b: &Graph) -> bool {
    let nodes = |g: &Graph| g.raw_nodes().iter().map(|n| n.weight).collect::<Vec<_>>();
    let edges = |g: &Graph| {
        g.raw_edges()
            .iter()
            .map(|e| (e.source(), e.target(), e.weight))
            .collect::<Vec<_>>()
    };
    nodes(a) == nodes(b) && edges(a) == edges(b)
}

/// The record before `r` on its world line (its owner's form), `None` for
/// a root.
pub fn predecessor(f: &Family, r: RecordRef) -> Option<RecordRef> {
    f.owner(r.line, r.record.checked_sub(1)?)
}

/// Records from the root of `r`'s world line down to `r`, root first, each
/// named by the world line that wrote it.
pub fn path_from_root(f: &Family, r: RecordRef) -> Vec<RecordRef> {
    if r.record >= f.line_len(r.line) {
        return Vec::new();
    }
    let mut path = Vec::with_capacity(r.record + 1);
    // Segment by segment, from `r` up: each ancestor's own part down to
    // where its child forks.
    let mut line = r.line;
    let mut upto = r.record + 1;
    loop {
        let l = &f.lines[line];
        let from = l.shared.min(upto);
        path.extend((from..upto).rev().map(|record| RecordRef {
            agent: f.agent,
            line,
            record,
        }));
        upto = from;
        match l.parent {
            Some(p) if upto > 0 => line = p,
            _ => break,
        }
    }
    path.reverse();
    path
}

/// The last record two records share on their paths from the root.
pub fn lowest_common_ancestor(f: &Family, a: RecordRef, b: RecordRef) -> Option<RecordRef> {
    let pa = path_from_root(f, a);
    let pb = path_from_root(f, b);
    pa.iter()
        .zip(pb.iter())
        .take_while(|(x, y)| x == y)
        .last()
        .map(|(x, _)| *x)
}

/// Records where world lines part: records followed by more than one
/// record (the next of their own world line, the first own record of each
/// world line forking there).
pub fn fork_points(f: &Family) -> Vec<RecordRef> {
    let mut out: Vec<(RecordRef, usize)> = Vec::new();
    for (i, l) in f.lines.iter().enumerate() {
        if l.shared >= f.line_len(i) {
            continue;
        }
        let Some(at) = l.shared.checked_sub(1).and_then(|k| f.owner(i, k)) else {
            continue;
        };
        match out.iter_mut().find(|(r, _)| *r == at) {
            Some((_, n)) => *n += 1,
            None => {
                let next = usize::from(at.record + 1 < f.line_len(at.line));
                out.push((at, next + 1));
            }
        }
    }
    out.sort();
    out.into_iter()
        .filter(|&(_, n)| n > 1)
        .map(|(r, _)| r)
        .collect()
}
