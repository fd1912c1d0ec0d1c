//! Kimi Code sessions as world lines (pure but for `load`): each agent's
//! branches are its world lines, `main` first then in edge order; a branch
//! forks from its base at its fork line, named `undo` with the turns it
//! undid; compactions and folded undos are marks on their world line, not
//! forks; subagents hang off the Agent call that ran them.

use std::path::Path;

use super::family::{build_from_parts, Family, Fork, ForkKind, LinePart};
use super::graph::{Edge, Graph, RecordRef};
use super::{Agent, LineMark, Lineage, Session, SubagentMeta, Tool};
use crate::error::Result;
use crate::sources::kimi_code::{records, AgentParts, CodeSession, ForkLink};
use crate::text::sanitize_line;

/// Reads a Kimi Code session directory and rebuilds it.
pub fn load(dir: &Path) -> Result<Session> {
    let cs = CodeSession::read(dir)?;
    let forks = cs.forks();
    Ok(from_code(&cs, forks))
}

fn lineage(f: ForkLink) -> Lineage {
    Lineage {
        session: f.session,
        line: f.line,
    }
}

/// Rebuilds a session from its read parts; `forks` are the sessions forked
/// from it (found beside it on disk).
pub fn from_code(cs: &CodeSession, forks: Vec<ForkLink>) -> Session {
    let mut graph = Graph::default();
    let mut agents = Vec::with_capacity(cs.agents.len());
    let mut warnings = Vec::new();
    for (ai, a) in cs.agents.iter().enumerate() {
        warnings.extend(a.wire.warnings.iter().cloned());
        let family = agent_family(ai, a, &mut graph);
        let t = &a.tree;
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
        agents.push(Agent {
            dir: a.dir.clone(),
            family,
            meta,
            parent_call: None,
            parent_tool_call_id: link.as_ref().and_then(|l| l.tool_call_id.clone()),
            parent_line: link.as_ref().and_then(|l| l.line),
            turns: Vec::new(),
            compactions: t
                .compactions
                .iter()
                .map(|m| LineMark {
                    world_line: m.branch,
                    line: m.line,
                    count: None,
                })
                .collect(),
            folded_undos: t
                .folded_undos
                .iter()
                .map(|f| LineMark {
                    world_line: f.branch,
                    line: f.line,
                    count: Some(f.count),
                })
                .collect(),
        });
    }
    for sub in 1..agents.len() {
        link_subagent(cs, &mut agents, sub, &mut graph);
    }
    Session {
        dir: cs.dir.clone(),
        id: cs.id.clone(),
        title: cs.state.title.clone(),
        tool: Tool::KimiCode,
        forked_from: cs.forked_from().map(lineage),
        forks: forks.into_iter().map(lineage).collect(),
        agents,
        graph,
        warnings,
    }
}

/// One agent's branches as world lines.
fn agent_family(ai: usize, a: &AgentParts, graph: &mut Graph) -> Family {
    let t = &a.tree;
    let mut parts: Vec<LinePart> = Vec::with_capacity(t.branches.len());
    let mut times = Vec::with_capacity(t.branches.len());
    for (bi, b) in t.branches.iter().enumerate() {
        let (file, when) = records::branch_index(&a.wire, t, bi);
        // The base's records up to the fork line: a prefix of both views.
        let shared = match (b.parent.and_then(|p| parts.get(p)), b.fork_line) {
            (Some(p), Some(fl)) => p.file.records.iter().take_while(|r| r.line <= fl).count(),
            _ => 0,
        };
        let fork = b.parent.map(|p| Fork {
            kind: match b.reason.as_deref() {
                Some("undo") => ForkKind::Undo,
                _ => ForkKind::Unknown,
            },
            checkpoint: None,
            message: None,
            origin: b.fork_line.and_then(|l| t.owner_of(l)).or(Some(p)),
            sender: None,
            turns: b.turns,
            line: b.fork_line,
            inferred: b.inferred,
        });
        parts.push(LinePart {
            file,
            // Branch names come from the file: never raw on a terminal.
            label: format!("branch {}", sanitize_line(&b.name, 40)),
            branch: Some(b.name.clone()),
            parent: b.parent,
            shared,
            fork,
            current: bi == t.active,
        });
        times.push(when);
    }
    let family = build_from_parts(ai, parts, graph);
    for (l, when) in family.lines.iter().zip(&times) {
        for (&n, &time) in l.nodes.iter().zip(when).skip(l.shared) {
            graph[n].time = time;
        }
    }
    family
}

/// Finds the parent's record holding the Agent call and links it to the
/// subagent's first record.
fn link_subagent(cs: &CodeSession, agents: &mut [Agent], sub: usize, graph: &mut Graph) {
    let Some(call_id) = agents[sub].parent_tool_call_id.clone() else {
        return;
    };
    let Some(link) = cs.spawn_link(&cs.agents[sub].id) else {
        return;
    };
    let Some(parent) = cs.agents.iter().position(|a| a.id == link.parent_agent) else {
        return;
    };
    if parent == sub {
        return;
    }
    let fam = &agents[parent].family;
    let found = fam.lines.iter().enumerate().find_map(|(i, _)| {
        let r = fam.files[i]
            .records
            .iter()
            .position(|m| m.tool_calls.iter().any(|c| c.id == call_id))?;
        Some(fam.lines[i].nodes[r])
    });
    let Some(node) = found else { return };
    let owner: RecordRef = graph[node].owner;
    agents[sub].parent_call = Some(owner);
    if let Some(&first) = agents[sub]
        .family
        .lines
        .first()
        .and_then(|l| l.nodes.first())
    {
        graph.add_edge(node, first, Edge::Subagent);
    }
}
