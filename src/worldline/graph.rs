//! The divergence graph: one node per distinct record, shared by every world
//! line whose file holds it; `Next` and `Fork` edges form a tree rooted at
//! the system prompt, `DMail` edges link a SendDMail call to the injection it
//! caused, `Subagent` edges link an Agent call to the subagent's first record.

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use petgraph::Direction;

use crate::model::Role;

/// Where a record lives: agent (0 = main, then subagents), world line (its
/// file's position, oldest first) and record position in that file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordRef {
    pub agent: usize,
    pub line: usize,
    pub record: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    SystemPrompt,
    Checkpoint(i64),
    Usage(u64),
    Message(Role),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The world line that first wrote this record, and where.
    pub owner: RecordRef,
    pub kind: NodeKind,
    /// Unix seconds, from wire.jsonl where it could be joined.
    pub time: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Edge {
    /// The next record of the same world line.
    Next,
    /// From the last shared record to a world line's first own record.
    Fork,
    /// From the SendDMail call to the D-Mail injection it caused.
    DMail,
    /// From the parent's Agent call to the subagent's first record.
    Subagent,
}

pub type Graph = DiGraph<Node, Edge>;

/// The record before this one on its world line (through `Next` or `Fork`).
pub fn predecessor(g: &Graph, n: NodeIndex) -> Option<NodeIndex> {
    g.edges_directed(n, Direction::Incoming)
        .find(|e| matches!(e.weight(), Edge::Next | Edge::Fork))
        .map(|e| e.source())
}

/// Records from the root of `n`'s agent down to `n`, root first.
pub fn path_from_root(g: &Graph, n: NodeIndex) -> Vec<NodeIndex> {
    let mut path = vec![n];
    let mut cur = n;
    while let Some(p) = predecessor(g, cur) {
        path.push(p);
        cur = p;
    }
    path.reverse();
    path
}

/// The last record two records share on their paths from the root.
pub fn lowest_common_ancestor(g: &Graph, a: NodeIndex, b: NodeIndex) -> Option<NodeIndex> {
    let pa = path_from_root(g, a);
    let pb = path_from_root(g, b);
    pa.iter()
        .zip(pb.iter())
        .take_while(|(x, y)| x == y)
        .last()
        .map(|(x, _)| *x)
}

/// Records where world lines part: nodes with more than one outgoing
/// `Next`/`Fork` edge.
pub fn fork_points(g: &Graph) -> Vec<NodeIndex> {
    g.node_indices()
        .filter(|&n| {
            g.edges_directed(n, Direction::Outgoing)
                .filter(|e| matches!(e.weight(), Edge::Next | Edge::Fork))
                .count()
                > 1
        })
        .collect()
}
