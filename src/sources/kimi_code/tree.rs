//! The branch tree inside one wire (pure: entries in, branches out).
//!
//! 2.1.0 writes its branches as `agent.switched` edges: lines before the
//! first edge are `main`, lines after an edge belong to its branch, and
//! `base.line` is the last line shared with the base. Wires of ≤ 0.42 hold
//! only `context.undo {count}`: each starts a branch whose fork point is
//! found by walking back over the active chain's user prompts. In a wire that
//! has edges, an undo without its edge is folded (already applied), not a
//! branch.

use super::wire::{Entry, EntryKind};
use crate::model::Role;

/// Inclusive ranges of wire lines.
pub type Ranges = Vec<(u32, u32)>;

#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    pub name: String,
    pub parent: Option<usize>,
    /// The last line shared with the parent.
    pub fork_line: Option<u32>,
    pub reason: Option<String>,
    pub turns: Option<u32>,
    /// The `agent.switched` line, or the `context.undo` line when inferred.
    pub edge_line: Option<u32>,
    pub inferred: bool,
    /// The branch's own lines (several when the agent switched back to it).
    pub segments: Ranges,
    /// Its first prompt was a D-Mail worldline sent: the message.
    pub dmail: Option<String>,
    /// Its first prompt has been seen.
    prompted: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub branch: usize,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Folded {
    pub branch: usize,
    pub line: u32,
    pub count: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WireTree {
    /// `main` first, then in edge order.
    pub branches: Vec<Branch>,
    /// The branch the agent sees now.
    pub active: usize,
    pub compactions: Vec<Mark>,
    pub folded_undos: Vec<Folded>,
    /// `forked` lines: where a `/fork` copied this wire.
    pub forked: Vec<Mark>,
    pub line_count: u32,
    /// Every segment as (first line, last line, branch), in line order
    /// (segments are closed in wire order), for [`WireTree::owner_of`].
    owners: Vec<(u32, u32, usize)>,
}

impl WireTree {
    /// The lines a branch sees: its base's chain up to the fork line, then
    /// its own segments.
    pub fn chain(&self, b: usize) -> Ranges {
        let mut out = Ranges::new();
        self.chain_into(b, u32::MAX, &mut out, 0);
        merge(out)
    }

    /// The lines of [`WireTree::chain`] after line `after`: the part of
    /// `b`'s view past a base that holds the rest. The walk up stops where
    /// the fork lines reach `after`, so a deep chain of branches costs each
    /// branch its own part, not its depth.
    pub fn chain_after(&self, mut b: usize, after: u32) -> Ranges {
        let mut out = Ranges::new();
        let mut upto = u32::MAX;
        for _ in 0..=self.branches.len() {
            let Some(br) = self.branches.get(b) else {
                break;
            };
            for &(a, z) in &br.segments {
                let (a, z) = (a.max(after.saturating_add(1)), z.min(upto));
                if a <= z {
                    out.push((a, z));
                }
            }
            match (br.parent, br.fork_line) {
                (Some(p), Some(fork)) if p != b => {
                    upto = fork.min(upto);
                    if upto <= after {
                        break;
                    }
                    b = p;
                }
                _ => break,
            }
        }
        merge(out)
    }

    /// Walks up from `b` (a loop, not recursion: a chain of 30 000
    /// branches must not overflow the stack), each ancestor cut at the
    /// fork line below it.
    fn chain_into(&self, mut b: usize, mut upto: u32, out: &mut Ranges, _depth: usize) {
        // Parents always come earlier, so this ends; the guard is for odd files.
        for _ in 0..=self.branches.len() {
            let Some(br) = self.branches.get(b) else {
                return;
            };
            for &(a, z) in &br.segments {
                if a <= upto && a <= z {
                    out.push((a, z.min(upto)));
                }
            }
            match (br.parent, br.fork_line) {
                (Some(p), Some(fork)) if p != b => {
                    upto = fork.min(upto);
                    b = p;
                }
                _ => return,
            }
        }
    }

    pub fn branch_by_name(&self, name: &str) -> Option<usize> {
        self.branches.iter().position(|b| b.name == name)
    }

    /// The branch whose own segment holds `line` (a binary search).
    pub fn owner_of(&self, line: u32) -> Option<usize> {
        let i = self.owners.partition_point(|&(a, _, _)| a <= line);
        let &(a, z, b) = self.owners.get(i.checked_sub(1)?)?;
        (a <= line && line <= z).then_some(b)
    }
}

fn merge(mut r: Ranges) -> Ranges {
    r.sort_unstable();
    let mut out: Ranges = Vec::with_capacity(r.len());
    for (a, z) in r {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(z),
            _ => out.push((a, z)),
        }
    }
    out
}

fn main_branch() -> Branch {
    Branch {
        name: "main".to_string(),
        parent: None,
        fork_line: None,
        reason: None,
        turns: None,
        edge_line: None,
        inferred: false,
        segments: Ranges::new(),
        dmail: None,
        prompted: false,
    }
}

/// Builds the tree of one wire from its entries and line count.
pub fn build(entries: &[Entry], line_count: u32) -> WireTree {
    let has_edges = entries
        .iter()
        .any(|e| matches!(e.kind, EntryKind::Switched { .. }));
    let mut t = WireTree {
        branches: vec![main_branch()],
        active: 0,
        compactions: Vec::new(),
        folded_undos: Vec::new(),
        forked: Vec::new(),
        line_count,
        owners: Vec::new(),
    };
    // Branch by name: a map, so 100 000 edges are not 10^10 comparisons.
    let mut names: std::collections::HashMap<String, usize> =
        std::collections::HashMap::from([("main".to_string(), 0)]);
    let mut seg_start = 1u32;
    let mut last_edge: Option<(u32, Option<u32>)> = None;
    for (i, e) in entries.iter().enumerate() {
        match &e.kind {
            EntryKind::Switched {
                branch,
                base,
                reason,
                turns,
                legacy_undo_line,
            } => {
                close(&mut t, seg_start, e.line);
                last_edge = Some((e.line, *legacy_undo_line));
                seg_start = e.line + 1;
                if let Some(&existing) = names.get(branch) {
                    t.active = existing;
                    continue;
                }
                let (parent, fork_line) = match base {
                    Some((name, line)) => (
                        names.get(name).copied().unwrap_or(t.active),
                        (*line).min(e.line.saturating_sub(1)),
                    ),
                    None => (t.active, e.line.saturating_sub(1)),
                };
                names.insert(branch.clone(), t.branches.len());
                t.branches.push(Branch {
                    name: branch.clone(),
                    parent: Some(parent),
                    fork_line: Some(fork_line),
                    reason: reason.clone(),
                    turns: *turns,
                    edge_line: Some(e.line),
                    inferred: false,
                    segments: Ranges::new(),
                    dmail: None,
                    prompted: false,
                });
                t.active = t.branches.len() - 1;
            }
            EntryKind::Undo { count } if has_edges => {
                let paired = last_edge.is_some_and(|(edge, legacy)| match legacy {
                    Some(l) => l == e.line,
                    None => edge + 1 == e.line,
                });
                if !paired {
                    t.folded_undos.push(Folded {
                        branch: t.active,
                        line: e.line,
                        count: *count,
                    });
                }
            }
            EntryKind::Undo { count } => {
                close(&mut t, seg_start, e.line);
                seg_start = e.line + 1;
                let chain = t.chain(t.active);
                let fork_line = undo_fork_line(&entries[..i], &chain, *count, e.line);
                let parent = t.owner_of(fork_line).unwrap_or(0);
                let name = format!("b{}", t.branches.len());
                names.entry(name.clone()).or_insert(t.branches.len());
                t.branches.push(Branch {
                    name,
                    parent: Some(parent),
                    fork_line: Some(fork_line),
                    reason: Some("undo".to_string()),
                    turns: Some(*count),
                    edge_line: Some(e.line),
                    inferred: true,
                    segments: Ranges::new(),
                    dmail: None,
                    prompted: false,
                });
                t.active = t.branches.len() - 1;
            }
            EntryKind::Compaction => t.compactions.push(Mark {
                branch: t.active,
                line: e.line,
            }),
            EntryKind::Message {
                role: Role::User,
                injection: false,
                dmail,
                ..
            } => {
                let b = &mut t.branches[t.active];
                if !b.prompted {
                    b.prompted = true;
                    if b.parent.is_some() {
                        b.dmail = dmail.clone();
                    }
                }
            }
            EntryKind::Forked => t.forked.push(Mark {
                branch: t.active,
                line: e.line,
            }),
            _ => {}
        }
    }
    close(&mut t, seg_start, line_count + 1);
    t
}

/// Ends the active branch's current segment before line `end`.
fn close(t: &mut WireTree, start: u32, end: u32) {
    if start < end {
        t.branches[t.active].segments.push((start, end - 1));
        t.owners.push((start, end - 1, t.active));
    }
}

/// Kimi Code ≤ 0.42's undo walk: back over the active chain's messages,
/// skipping injections and stopping at a compaction or a clear, until
/// `count` real user prompts are passed. The fork line is the chain line
/// before the oldest removed prompt.
fn undo_fork_line(before: &[Entry], chain: &Ranges, count: u32, undo_line: u32) -> u32 {
    // `chain` is merged and sorted: a binary search per line.
    let on_chain = |l: u32| {
        let i = chain.partition_point(|&(a, _)| a <= l);
        i > 0 && l <= chain[i - 1].1
    };
    let mut oldest = None;
    let mut passed = 0;
    for e in before.iter().rev().filter(|e| on_chain(e.line)) {
        match &e.kind {
            EntryKind::Compaction | EntryKind::Clear => break,
            EntryKind::Message {
                role: Role::User,
                injection: false,
                ..
            } => {
                oldest = Some(e.line);
                passed += 1;
                if passed >= count {
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(oldest) = oldest else {
        // Nothing to remove: the branch starts where the line was.
        return previous_on_chain(chain, undo_line);
    };
    previous_on_chain(chain, oldest)
}

/// The last chain line before `line` (0 when there is none).
fn previous_on_chain(chain: &Ranges, line: u32) -> u32 {
    chain
        .iter()
        .rev()
        .find_map(|&(a, z)| (a < line).then(|| z.min(line - 1)))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u32, kind: EntryKind) -> Entry {
        Entry {
            line,
            offset: 0,
            len: 0,
            hash: 0,
            time: None,
            kind,
        }
    }

    fn user(line: u32) -> Entry {
        at(
            line,
            EntryKind::Message {
                role: Role::User,
                injection: false,
                tool_calls: Vec::new(),
                tool_call_id: None,
                dmail: None,
            },
        )
    }

    fn edge(line: u32, name: &str, base: &str, base_line: u32) -> Entry {
        at(
            line,
            EntryKind::Switched {
                branch: name.into(),
                base: Some((base.into(), base_line)),
                reason: Some("undo".into()),
                turns: Some(1),
                legacy_undo_line: Some(line + 1),
            },
        )
    }

    #[test]
    fn consecutive_undos_do_not_chain() {
        let e = vec![
            user(3),
            user(6),
            edge(9, "b1", "main", 5),
            at(10, EntryKind::Undo { count: 1 }),
            edge(11, "b2", "main", 2),
            at(12, EntryKind::Undo { count: 1 }),
            user(13),
        ];
        let t = build(&e, 14);
        assert_eq!(t.branches.len(), 3);
        assert_eq!(t.branches[2].parent, Some(0));
        assert_eq!(t.chain(2), vec![(1, 2), (12, 14)]);
        assert_eq!(t.chain(1), vec![(1, 5), (10, 10)]);
        assert!(t.folded_undos.is_empty());
        assert_eq!(t.active, 2);
    }

    #[test]
    fn a_branch_whose_first_prompt_is_a_dmail_says_so() {
        let dmail = |line: u32, text: Option<&str>| {
            at(
                line,
                EntryKind::Message {
                    role: Role::User,
                    injection: false,
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                    dmail: text.map(str::to_string),
                },
            )
        };
        let e = vec![
            dmail(3, Some("on main: not a branch's first")),
            user(6),
            edge(9, "b1", "main", 5),
            at(10, EntryKind::Undo { count: 1 }),
            dmail(12, Some("back!")),
            dmail(14, Some("later prompts don't count")),
            edge(15, "b2", "b1", 13),
            at(16, EntryKind::Undo { count: 1 }),
            user(17),
            dmail(18, Some("not first")),
        ];
        let t = build(&e, 19);
        assert_eq!(t.branches[0].dmail, None);
        assert_eq!(t.branches[1].dmail.as_deref(), Some("back!"));
        assert_eq!(t.branches[2].dmail, None);
    }

    #[test]
    fn a_mixed_wire_folds_its_old_undos() {
        let e = vec![
            user(3),
            at(5, EntryKind::Undo { count: 1 }),
            user(6),
            edge(8, "b1", "main", 6),
            at(9, EntryKind::Undo { count: 1 }),
        ];
        let t = build(&e, 10);
        assert_eq!(t.branches.len(), 2);
        assert_eq!(t.branches[1].name, "b1");
        assert_eq!(
            t.folded_undos,
            vec![Folded {
                branch: 0,
                line: 5,
                count: 1
            }]
        );
    }

    #[test]
    fn an_old_undo_stops_at_a_compaction_and_skips_injections() {
        let inj = at(
            7,
            EntryKind::Message {
                role: Role::User,
                injection: true,
                tool_calls: Vec::new(),
                tool_call_id: None,
                dmail: None,
            },
        );
        let e = vec![
            user(3),
            at(4, EntryKind::Compaction),
            user(6),
            inj,
            at(9, EntryKind::Undo { count: 5 }),
        ];
        let t = build(&e, 10);
        assert_eq!(t.branches[1].fork_line, Some(5));
        assert!(t.branches[1].inferred);
        assert_eq!(t.compactions, vec![Mark { branch: 0, line: 4 }]);
    }
}
