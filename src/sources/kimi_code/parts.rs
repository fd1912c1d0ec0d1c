//! A Kimi Code session as the world-line builder takes it: each agent's
//! branches are its world lines (`main` first, then in edge order), each
//! the view of one branch (its base's records up to the fork line, then its
//! own), forking where the source says and why (`undo`, turns, fork line);
//! compactions and folded undos as marks; subagents linked by the parent's
//! tool call id; `/fork` lineage.

use super::{records, AgentWire, CodeSession, ForkLink, WireTree};
use crate::sources::{
    AgentParts, ForkKind, LineFork, LineInfo, LineMark, Lineage, LinkKind, ParentLink, Pos,
    SessionLink, SessionParts, StatedFork, SubagentMeta, Tool,
};
use crate::text::sanitize_line;

/// Rebuilds the parts of a read session; `forks` are the sessions forked
/// from it (found beside it on disk).
pub fn session_parts(cs: &CodeSession, forks: Vec<ForkLink>) -> SessionParts {
    let agents = cs
        .agents
        .iter()
        .enumerate()
        .map(|(i, a)| agent_parts(cs, i, a))
        .collect();
    let bucket = cs.dir.parent().map(|p| p.to_path_buf()).unwrap_or_default();
    // Both wires hold the same bytes up to the fork line: count here.
    let main = cs.agents.first();
    let link = |f: ForkLink| {
        let (records, source_line) = match (main, f.line) {
            (Some(m), Some(line)) => records_upto(m, line),
            _ => (0, 0),
        };
        SessionLink {
            dir: bucket.join(&f.session),
            records,
            session: f.session,
            kind: LinkKind::Fork,
            after: f.line.map(Pos::line),
            source_line,
            source_file: main.map(|m| m.wire.name.clone()).unwrap_or_default(),
        }
    };
    SessionParts {
        dir: cs.dir.clone(),
        id: cs.id.clone(),
        title: cs.state.title.clone(),
        agents,
        lineage: Lineage {
            forked_from: cs.forked_from().map(link),
            forks: forks.into_iter().map(link).collect(),
        },
        tool: Tool::KimiCode,
    }
}

/// Records of the conversation at `line` (the view of the branch that
/// wrote it, up to it), and that branch.
fn records_upto(a: &AgentWire, line: u32) -> (usize, usize) {
    let b = a.tree.owner_of(line).unwrap_or(a.tree.active);
    let (ix, _) = records::branch_view(&a.wire, &a.tree, b, None);
    (
        ix.records.iter().take_while(|r| r.line() <= line).count(),
        b,
    )
}

/// World lines one agent shows at most. A branch's view shares its
/// base's records (`Records::prefix`), so records cost O(wire) however many
/// branches there are; but each world line costs some KB beyond its records
/// (its graph node, row, track and map lane), so 100 000 tiny branches are
/// bounded here: past this, `main`, the current branch and the newest are
/// shown, and a warning says how many were left out.
pub const MAX_BRANCHES: usize = 10_000;

/// Which branches to build: all when there are at most `budget`, else
/// `main`, the current branch, then the newest.
fn branches_to_build(t: &WireTree, budget: usize) -> Vec<bool> {
    let n = t.branches.len();
    if n <= budget {
        return vec![true; n];
    }
    let mut keep = vec![false; n];
    let mut used = 0usize;
    for b in [0, t.active] {
        if b < n && !keep[b] {
            keep[b] = true;
            used += 1;
        }
    }
    for b in (0..n).rev() {
        if used >= budget {
            break;
        }
        if !keep[b] {
            keep[b] = true;
            used += 1;
        }
    }
    keep
}

/// The nearest kept ancestor of branch `b`, and the last line `b`'s view
/// shares with it (the lowest fork line on the way up).
fn kept_base(t: &WireTree, keep: &[bool], b: usize) -> Option<(usize, u32)> {
    let (mut p, mut line) = (t.branches[b].parent?, t.branches[b].fork_line?);
    let mut at = b;
    for _ in 0..t.branches.len() {
        if p >= at {
            return None;
        }
        if keep[p] {
            return Some((p, line));
        }
        at = p;
        line = line.min(t.branches[p].fork_line?);
        p = t.branches[p].parent?;
    }
    None
}

fn agent_parts(cs: &CodeSession, ai: usize, a: &AgentWire) -> AgentParts {
    agent_parts_within(cs, ai, a, MAX_BRANCHES)
}

fn agent_parts_within(cs: &CodeSession, ai: usize, a: &AgentWire, budget: usize) -> AgentParts {
    let t = &a.tree;
    let keep = branches_to_build(t, budget);
    // Old branch index → world line index.
    let mut index = vec![None; t.branches.len()];
    let mut kept = 0;
    for (b, k) in keep.iter().enumerate() {
        if *k {
            index[b] = Some(kept);
            kept += 1;
        }
    }
    // A branch left out is shown by its nearest kept ancestor.
    let shown = |b: usize| -> Option<usize> {
        let mut b = b;
        for _ in 0..=t.branches.len() {
            if let Some(i) = index.get(b).copied().flatten() {
                return Some(i);
            }
            b = t.branches.get(b)?.parent.filter(|&p| p < b)?;
        }
        None
    };
    let mut files: Vec<crate::read::FileIndex> = Vec::with_capacity(kept);
    let mut forks = Vec::with_capacity(kept);
    let mut lines = Vec::with_capacity(kept);
    let mut times = Vec::with_capacity(kept);
    for (bi, b) in t.branches.iter().enumerate() {
        if !keep[bi] {
            continue;
        }
        // The base's records up to the fork line: a prefix of both views,
        // stored once (the view shares the base's).
        let base = kept_base(t, &keep, bi)
            .and_then(|(p, fl)| Some((index[p]?, fl)))
            .filter(|&(p, _)| p < files.len());
        let (file, when) =
            records::branch_view(&a.wire, t, bi, base.map(|(p, fl)| (&files[p], fl)));
        let fork = match base {
            Some((p, fl)) => LineFork::Explicit {
                parent: p,
                shared: files[p].records.partition_point(|r| r.line() <= fl),
            },
            None => LineFork::Root,
        };
        lines.push(LineInfo {
            // Branch names come from the file: never raw on a terminal.
            label: format!("branch {}", sanitize_line(&b.name, 40)),
            branch: Some(b.name.clone()),
            fork: b.parent.map(|p| StatedFork {
                // An undo worldline made to deliver a D-Mail is one.
                kind: if b.dmail.is_some() {
                    ForkKind::Dmail
                } else if b.reason.as_deref() == Some("undo") {
                    ForkKind::Undo
                } else {
                    ForkKind::Unknown
                },
                after: b.fork_line.map(Pos::line),
                turns: b.turns,
                inferred: b.inferred,
                origin: b
                    .fork_line
                    .and_then(|l| t.owner_of(l))
                    .or(Some(p))
                    .and_then(shown),
            }),
            prompt: b.dmail.clone(),
            ..LineInfo::default()
        });
        files.push(file);
        forks.push(fork);
        times.push(when);
    }
    let left_out = t.branches.len() - kept;
    let budget_warning = (left_out > 0).then(|| crate::model::Warning {
        file: a.wire.name.clone(),
        line: 0,
        message: format!(
            "{left_out} of {} branches not shown: over the {budget} world lines shown per agent \
             (main, the current branch and the newest are shown)",
            t.branches.len(),
        ),
    });
    let link = (ai > 0).then(|| cs.spawn_link(&a.id)).flatten();
    let meta = (ai > 0).then(|| SubagentMeta {
        agent_id: a.id.clone(),
        subagent_type: cs
            .state
            .agent(&a.id)
            .and_then(|s| s.profile.clone())
            .or_else(|| link.as_ref().and_then(|l| l.name.clone())),
        description: link.as_ref().and_then(|l| l.description.clone()),
        status: None,
        created_at: None,
    });
    let mark = |world_line, line, count| LineMark {
        world_line,
        at: Pos::line(line),
        count,
        first_kept: None,
    };
    AgentParts {
        dir: a.dir.clone(),
        files,
        forks,
        meta,
        link: link
            .as_ref()
            .and_then(|l| l.tool_call_id.clone())
            .map_or(ParentLink::None, ParentLink::ToolCallId),
        lines,
        current: index[t.active],
        compactions: t
            .compactions
            .iter()
            .filter_map(|m| Some(mark(index[m.branch]?, m.line, None)))
            .collect(),
        folded_undos: t
            .folded_undos
            .iter()
            .filter_map(|f| Some(mark(index[f.branch]?, f.line, Some(f.count))))
            .collect(),
        parent_line: link.and_then(|l| l.line),
        times,
        // The wire's, once: every branch is a view of the same file; the
        // main agent's also say why `state.json` was not read.
        warnings: a
            .wire
            .warnings
            .iter()
            .cloned()
            .chain(budget_warning)
            .chain(
                (ai == 0)
                    .then(|| cs.state.problem.clone())
                    .flatten()
                    .map(|why| crate::model::Warning {
                        file: "state.json".to_string(),
                        line: 0,
                        message: why,
                    }),
            )
            .collect(),
        labels: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::kimi_code::{AgentWire, SessionState, WireIndex};

    /// `rounds` of: two prompts, then an undo edge of the last one (each
    /// branch's view one prompt longer than its base's).
    pub(crate) fn undo_wire(rounds: usize) -> String {
        let mut lines = vec![r#"{"type":"metadata","protocol_version":"1.5"}"#.to_string()];
        let user = |i: usize| {
            format!(
                r#"{{"type":"context.append_message","message":{{"role":"user","content":[{{"type":"text","text":"p{i}"}}],"origin":{{"kind":"user"}}}}}}"#
            )
        };
        let mut active = "main".to_string();
        for i in 0..rounds {
            lines.push(user(2 * i));
            lines.push(user(2 * i + 1));
            let at = lines.len() + 1;
            lines.push(format!(
                r#"{{"type":"agent.switched","branch":"b{n}","reason":"undo","base":{{"branch":"{active}","line":{base}}},"turns":1,"legacyUndoLine":{u}}}"#,
                n = i + 1,
                base = at - 2,
                u = at + 1
            ));
            lines.push(r#"{"type":"context.undo","count":1}"#.to_string());
            active = format!("b{}", i + 1);
        }
        lines.join("\n") + "\n"
    }

    fn session(wire: &str) -> CodeSession {
        let w = WireIndex::parse("agents/main/wire.jsonl", "/x".as_ref(), wire.as_bytes());
        let a = AgentWire::from_wire("main", "/x/agents/main".into(), w);
        CodeSession::from_parts("/x".as_ref(), SessionState::default(), vec![a])
    }

    #[test]
    fn branch_views_store_only_their_own_records() {
        let cs = session(&undo_wire(200));
        let a = &cs.agents[0];
        let parts = agent_parts_within(&cs, 0, a, usize::MAX);
        let views: usize = parts.files.iter().map(|f| f.records.len()).sum();
        let stored: usize = parts.files.iter().map(|f| f.records.stored()).sum();
        let records = a
            .wire
            .entries
            .iter()
            .filter(|e| records::record_meta(e).is_some())
            .count();
        // 201 views, each its base's records and one more prompt, stored
        // once: a view holds its base's records without copying them.
        assert!(
            views > 10 * records,
            "{views} in views of {records} records"
        );
        assert!(stored <= records, "{stored} stored of {records} records");
        // And each is the whole view, as read from its chain alone.
        for (b, f) in parts.files.iter().enumerate() {
            let (whole, _) = records::branch_index(&a.wire, &a.tree, b);
            assert_eq!(f.records, whole.records, "branch {b}");
        }
    }

    #[test]
    fn over_the_budget_the_newest_branches_are_kept_with_a_warning() {
        let cs = session(&undo_wire(200));
        let a = &cs.agents[0];
        let all = agent_parts_within(&cs, 0, a, usize::MAX);
        assert_eq!(all.files.len(), 201);
        assert!(all.warnings.is_empty());
        let some = agent_parts_within(&cs, 0, a, 25);
        assert!(agent_parts_within(&cs, 0, a, 201).warnings.is_empty());
        let n = some.files.len();
        assert_eq!(n, 25);
        assert_eq!(some.lines[0].branch.as_deref(), Some("main"));
        assert_eq!(some.current, Some(n - 1));
        assert!(some.warnings[0]
            .message
            .contains(&format!("{} of 201 branches not shown", 201 - n)));
        // Every kept branch shares a real prefix with the parent it names.
        for (i, f) in some.forks.iter().enumerate() {
            if let LineFork::Explicit { parent, shared } = *f {
                assert!(parent < i);
                assert_eq!(
                    some.files[i].records.prefix(shared),
                    some.files[parent].records.prefix(shared),
                    "line {i}"
                );
                assert!(shared > 0);
            }
        }
    }
}
