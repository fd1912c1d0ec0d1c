//! A whole session rebuilt: the main agent's and each subagent's world lines
//! in one petgraph graph, with D-Mail links, subagent links, wire times and
//! lineage to other sessions. `Session::build` is pure: it takes the
//! [`SessionParts`] a source found (`crate::sources`) and touches no file,
//! so the live tail and tests build from indexes they already hold.

pub mod family;
pub mod graph;
pub mod map;
pub mod names;
pub mod revert;
pub mod wire;

use std::path::{Path, PathBuf};

use petgraph::graph::NodeIndex;

pub use family::{DMailAttempt, Family, Fork, ForkKind, Sender, WorldLine};
pub use graph::{Edge, Graph, Node, NodeKind, RecordRef};
pub use wire::{TurnTiming, WireLog};

pub use crate::sources::{
    AgentFiles, AgentParts, LineFork, LineMark, Lineage, LinkKind, ParentLink, SessionLink,
    SessionParts, SubagentMeta, Tool,
};

use crate::error::{Error, Result};
use crate::model::{Body, Marker, RecordMeta, Warning};
use crate::read;

#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub dir: PathBuf,
    pub family: Family,
    pub meta: Option<SubagentMeta>,
    /// The parent's Agent tool call that ran this subagent.
    pub parent_call: Option<RecordRef>,
    pub parent_tool_call_id: Option<String>,
    /// The line of that call in the parent's wire (Kimi Code).
    pub parent_line: Option<u32>,
    pub turns: Vec<TurnTiming>,
    /// Compactions that are marks on a world line, not forks (Kimi Code).
    pub compactions: Vec<LineMark>,
    /// Old undos a newer Kimi Code treats as already applied.
    pub folded_undos: Vec<LineMark>,
}

#[derive(Debug, Clone)]
pub struct Session {
    pub dir: PathBuf,
    pub id: String,
    pub title: Option<String>,
    pub tool: Tool,
    /// `agents[0]` is the main agent; the rest are subagents.
    pub agents: Vec<Agent>,
    pub graph: Graph,
    pub warnings: Vec<Warning>,
    /// The session this one was made from (`/fork`, `/undo`).
    pub forked_from: Option<SessionLink>,
    /// Sessions made from this one, fewest shared records first.
    pub forks: Vec<SessionLink>,
}

impl Session {
    /// Reads a session through its source and rebuilds it.
    pub fn load(path: &Path) -> Result<Session> {
        Ok(Session::build(crate::sources::parts(path)?))
    }

    /// Rebuilds one agent's parts and subagents without lineage (pure).
    pub fn from_parts(
        dir: &Path,
        title: Option<String>,
        main: AgentParts,
        subagents: Vec<AgentParts>,
    ) -> Session {
        Session::build(SessionParts {
            dir: dir.to_path_buf(),
            id: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            title,
            agents: std::iter::once(main).chain(subagents).collect(),
            lineage: Lineage::default(),
            tool: Tool::KimiCli,
        })
    }

    /// Rebuilds a session from what a source found (pure).
    pub fn build(parts: SessionParts) -> Session {
        let mut graph = Graph::default();
        let mut agents = Vec::with_capacity(parts.agents.len());
        let mut links = Vec::with_capacity(parts.agents.len());
        let mut warnings = Vec::new();
        for (i, af) in parts.agents.into_iter().enumerate() {
            for f in &af.files {
                warnings.extend(f.reported_warnings());
            }
            warnings.extend(af.warnings.iter().cloned());
            let mut family = family::build_family(i, af.files, &af.forks, &mut graph);
            family::apply_stated(&mut family, &af.lines, af.current);
            if let Some(w) = &af.wire {
                wire::join_times(&family, w, &mut graph);
            }
            // Times the source read with the records, on the records each
            // world line owns.
            for (l, when) in family.lines.iter().zip(&af.times) {
                for (&n, &t) in l.nodes.iter().zip(when).skip(l.shared) {
                    if t.is_some() {
                        graph[n].time = t;
                    }
                }
            }
            links.push(af.link);
            agents.push(Agent {
                dir: af.dir,
                family,
                meta: af.meta,
                parent_call: None,
                parent_tool_call_id: None,
                parent_line: af.parent_line,
                turns: af.wire.map(|w| w.turns).unwrap_or_default(),
                compactions: af.compactions,
                folded_undos: af.folded_undos,
            });
        }
        if agents.is_empty() {
            agents.push(Agent {
                dir: parts.dir.clone(),
                family: family::build_family(0, Vec::new(), &[], &mut graph),
                meta: None,
                parent_call: None,
                parent_tool_call_id: None,
                parent_line: None,
                turns: Vec::new(),
                compactions: Vec::new(),
                folded_undos: Vec::new(),
            });
        }
        link_subagents(&mut agents, &links, &mut graph);
        Session {
            id: parts.id,
            title: parts.title,
            tool: parts.tool,
            dir: parts.dir,
            agents,
            graph,
            warnings,
            forked_from: parts.lineage.forked_from,
            forks: parts.lineage.forks,
        }
    }

    /// Where in this session a lineage link leaves or arrives: for one of
    /// `forks`, the last record the fork copied (on the world line it was
    /// copied from); for `forked_from`, this session's last copied record.
    /// `None` when nothing is shared (an `/undo` of the first turn).
    pub fn fork_point(&self, link: &SessionLink) -> Option<RecordRef> {
        let record = link.records.checked_sub(1)?;
        // A kimi-cli fork is one file (its first world line); a Kimi Code
        // fork copies every branch byte for byte, so the shared records sit
        // on the same branch in both sessions.
        let line = if self.forked_from.as_ref() == Some(link) && self.tool == Tool::KimiCli {
            0
        } else {
            link.source_line
        };
        let r = RecordRef {
            agent: 0,
            line,
            record,
        };
        self.record(r).map(|_| r)
    }

    pub fn main(&self) -> &Family {
        &self.agents[0].family
    }

    pub fn record(&self, r: RecordRef) -> Option<&RecordMeta> {
        self.agents.get(r.agent)?.family.record(r)
    }

    /// Loads the full body of a record from disk.
    pub fn body(&self, r: RecordRef) -> Result<Body> {
        let family = &self
            .agents
            .get(r.agent)
            .ok_or_else(|| Error::Other(format!("no agent {}", r.agent)))?
            .family;
        let file = family
            .files
            .get(r.line)
            .ok_or_else(|| Error::Other(format!("no world line {}", r.line)))?;
        let meta = file
            .records
            .get(r.record)
            .ok_or_else(|| Error::Other(format!("{}: no record {}", file.name, r.record)))?;
        match self.tool {
            Tool::KimiCli => read::load_body(&file.path, meta),
            Tool::KimiCode => crate::sources::kimi_code::records::load_body(&file.path, meta),
        }
    }

    /// The first `max` bytes of a record's line, raw.
    pub fn line_head(&self, r: RecordRef, max: usize) -> Result<Vec<u8>> {
        let file = self
            .agents
            .get(r.agent)
            .and_then(|a| a.family.files.get(r.line))
            .ok_or_else(|| Error::Other(format!("no world line {}", r.line)))?;
        let meta = file
            .records
            .get(r.record)
            .ok_or_else(|| Error::Other(format!("{}: no record {}", file.name, r.record)))?;
        read::load_line_head(&file.path, meta, max)
    }

    /// The nodes of one world line, root first.
    pub fn walk(&self, agent: usize, line: usize) -> &[NodeIndex] {
        self.agents
            .get(agent)
            .and_then(|a| a.family.lines.get(line))
            .map(|l| l.nodes.as_slice())
            .unwrap_or(&[])
    }
}

/// Attaches each subagent to the parent's call that ran it, as its source
/// says to find it.
fn link_subagents(agents: &mut [Agent], links: &[ParentLink], graph: &mut Graph) {
    for sub in 1..agents.len() {
        let found = match links.get(sub) {
            Some(ParentLink::AgentId(id)) => find_agent_call(&agents[0].family, id),
            Some(ParentLink::Nth(n)) => nth_agent_call(&agents[0].family, graph, *n),
            Some(ParentLink::ToolCallId(id)) => find_call(&agents[0].family, id),
            Some(ParentLink::None) | None => None,
        };
        let Some((call, call_id)) = found else {
            continue;
        };
        agents[sub].parent_call = Some(call);
        agents[sub].parent_tool_call_id = Some(call_id);
        let parent_node = agents[0].family.lines[call.line].nodes[call.record];
        if let Some(&first) = agents[sub]
            .family
            .lines
            .first()
            .and_then(|l| l.nodes.first())
        {
            graph.add_edge(parent_node, first, Edge::Subagent);
        }
    }
}

/// Tool names that start a subagent (`Task` until kimi-cli 1.24).
const AGENT_TOOLS: [&str; 2] = ["Agent", "Task"];

/// The `n`-th subagent call of the main agent, in the order calls were
/// written (each record counted once, where it was first written).
fn nth_agent_call(main: &Family, g: &Graph, n: usize) -> Option<(RecordRef, String)> {
    let mut seen = 0;
    for (i, line) in main.lines.iter().enumerate() {
        for (r, &node) in line.nodes.iter().enumerate() {
            if g[node].owner.line != i {
                continue;
            }
            for call in &main.files[i].records[r].tool_calls() {
                if !AGENT_TOOLS.contains(&call.name()) {
                    continue;
                }
                if seen == n {
                    let at = RecordRef {
                        agent: main.agent,
                        line: i,
                        record: r,
                    };
                    return Some((at, call.id().unwrap_or_default().to_string()));
                }
                seen += 1;
            }
        }
    }
    None
}

/// The record holding the tool call `call_id`.
fn find_call(main: &Family, call_id: &str) -> Option<(RecordRef, String)> {
    main.files.iter().enumerate().find_map(|(i, file)| {
        let r = file
            .records
            .iter()
            .position(|r| r.tool_calls().iter().any(|c| c.is(call_id)))?;
        Some((
            RecordRef {
                agent: main.agent,
                line: i,
                record: r,
            },
            call_id.to_string(),
        ))
    })
}

/// The Agent call (and its id) whose tool result says `agent_id: <id>`.
fn find_agent_call(main: &Family, agent_id: &str) -> Option<(RecordRef, String)> {
    for (i, file) in main.files.iter().enumerate() {
        for rec in &file.records {
            let marker = rec.marker();
            let Some(Marker::AgentResult(found)) = marker.as_deref() else {
                continue;
            };
            let Some(call_id) = rec.tool_call_id() else {
                continue;
            };
            if found != agent_id {
                continue;
            }
            let call = file
                .records
                .iter()
                .position(|r| r.tool_calls().iter().any(|c| c.is(call_id)))?;
            return Some((
                RecordRef {
                    agent: main.agent,
                    line: i,
                    record: call,
                },
                call_id.to_string(),
            ));
        }
    }
    None
}
