//! A Kimi Code session as the world-line builder takes it: each agent's
//! branches are its world lines (`main` first, then in edge order), each
//! the view of one branch (its base's records up to the fork line, then its
//! own), forking where the source says and why (`undo`, turns, fork line);
//! compactions and folded undos as marks; subagents linked by the parent's
//! tool call id; `/fork` lineage.

use super::{records, AgentWire, CodeSession, ForkLink};
use crate::sources::{
    AgentParts, ForkKind, LineFork, LineInfo, LineMark, Lineage, LinkKind, ParentLink, SessionLink,
    SessionParts, StatedFork, SubagentMeta, Tool,
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
            line: f.line,
            source_line,
            source_file: main.map(|m| m.wire.name.clone()).unwrap_or_default(),
            after: None,
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
    let (ix, _) = records::branch_index(&a.wire, &a.tree, b);
    (
        ix.records.iter().take_while(|r| r.line() <= line).count(),
        b,
    )
}

fn agent_parts(cs: &CodeSession, ai: usize, a: &AgentWire) -> AgentParts {
    let t = &a.tree;
    let mut files = Vec::with_capacity(t.branches.len());
    let mut forks = Vec::with_capacity(t.branches.len());
    let mut lines = Vec::with_capacity(t.branches.len());
    let mut times = Vec::with_capacity(t.branches.len());
    for (bi, b) in t.branches.iter().enumerate() {
        let (file, when) = records::branch_index(&a.wire, t, bi);
        // The base's records up to the fork line: a prefix of both views.
        let fork = match (b.parent, b.fork_line) {
            (Some(p), Some(fl)) => {
                let shared = files.get(p).map_or(0, |pf: &crate::read::FileIndex| {
                    pf.records.iter().take_while(|r| r.line() <= fl).count()
                });
                LineFork::Explicit { parent: p, shared }
            }
            _ => LineFork::Root,
        };
        lines.push(LineInfo {
            // Branch names come from the file: never raw on a terminal.
            label: format!("branch {}", sanitize_line(&b.name, 40)),
            branch: Some(b.name.clone()),
            fork: b.parent.map(|p| StatedFork {
                kind: if b.reason.as_deref() == Some("undo") {
                    ForkKind::Undo
                } else {
                    ForkKind::Unknown
                },
                line: b.fork_line,
                turns: b.turns,
                inferred: b.inferred,
                origin: b.fork_line.and_then(|l| t.owner_of(l)).or(Some(p)),
            }),
            ..LineInfo::default()
        });
        files.push(file);
        forks.push(fork);
        times.push(when);
    }
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
        line,
        count,
        entry: None,
        first_kept: None,
    };
    AgentParts {
        dir: a.dir.clone(),
        files,
        forks,
        wire: None,
        meta,
        link: link
            .as_ref()
            .and_then(|l| l.tool_call_id.clone())
            .map_or(ParentLink::None, ParentLink::ToolCallId),
        lines,
        current: Some(t.active),
        compactions: t
            .compactions
            .iter()
            .map(|m| mark(m.branch, m.line, None))
            .collect(),
        folded_undos: t
            .folded_undos
            .iter()
            .map(|f| mark(f.branch, f.line, Some(f.count)))
            .collect(),
        parent_line: link.and_then(|l| l.line),
        times,
        // The wire's, once: every branch is a view of the same file.
        warnings: a.wire.warnings.clone(),
        labels: Vec::new(),
    }
}
