//! A whole session rebuilt: the main agent's and each subagent's world lines
//! in one petgraph graph, with D-Mail links, subagent links, wire times and
//! lineage to other sessions. `Session::build` is pure: it takes the
//! [`SessionParts`] a source found (`crate::sources`) and touches no file,
//! so the live tail and tests build from indexes they already hold.

pub mod compare;
pub mod family;
pub mod graph;
pub mod map;
pub mod names;
pub mod revert;
pub mod tools;

use std::path::{Path, PathBuf};

pub use family::{DMailAttempt, Family, Fork, ForkKind, Sender, WorldLine};
pub use graph::{Edge, Graph, RecordRef, Segment};

pub use crate::sources::{
    AgentFiles, AgentParts, LineFork, LineMark, Lineage, LinkKind, ParentLink, Pos, SessionLink,
    SessionParts, SubagentMeta, Times, Tool,
};

use crate::error::{Error, Result};
use crate::model::{Body, Marker, RecordMeta, Warning};

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
    /// Compactions that are marks on a world line, not forks (Kimi Code).
    pub compactions: Vec<LineMark>,
    /// Old undos a newer Kimi Code treats as already applied.
    pub folded_undos: Vec<LineMark>,
    /// How its source said to find `parent_call`.
    pub link: ParentLink,
    /// Names users gave entries (Pi's labels).
    pub labels: Vec<crate::sources::EntryLabel>,
}

#[derive(Debug, Clone)]
pub struct Session {
    pub dir: PathBuf,
    pub id: String,
    pub title: Option<String>,
    pub tool: Tool,
    /// `agents[0]` is the main agent; the rest are subagents.
    pub agents: Vec<Agent>,
    /// One node per world-line segment (see [`graph`]).
    pub graph: Graph,
    pub warnings: Vec<Warning>,
    /// The session this one was made from (`/fork`, `/undo`).
    pub forked_from: Option<SessionLink>,
    /// Sessions made from this one, fewest shared records first.
    pub forks: Vec<SessionLink>,
}

impl PartialEq for Session {
    fn eq(&self, o: &Session) -> bool {
        self.dir == o.dir
            && self.id == o.id
            && self.title == o.title
            && self.tool == o.tool
            && self.agents == o.agents
            && graph::same_graph(&self.graph, &o.graph)
            && self.warnings == o.warnings
            && self.forked_from == o.forked_from
            && self.forks == o.forks
    }
}

impl Session {
    /// Reads a session through its source and rebuilds it.
    pub fn load(path: &Path) -> Result<Session> {
        Ok(Session::build(crate::sources::parts(path)?))
    }

    /// [`Session::load`] reading only what `reading` asks for (without
    /// times every record's time is `None`).
    pub fn load_with(path: &Path, reading: crate::sources::Reading) -> Result<Session> {
        Ok(Session::build(crate::sources::parts_with(path, reading)?))
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
            tool: Tool::default(),
        })
    }

    /// Rebuilds a session from what a source found (pure).
    pub fn build(parts: SessionParts) -> Session {
        Session::build_from(parts, None)
    }

    /// [`Session::build`], reusing what `prev` (built from earlier parts of
    /// the same session) derived from records that are still there: the
    /// follower's snapshot after an append costs the appended records and
    /// the world lines, not the session. Equal to `build(parts)` whenever
    /// each agent's wire log in `parts` continues the one `prev` was built
    /// from (a follower passes `None` after a wire was read again); records
    /// are checked ([`crate::read::Records::extends`]), and an agent or
    /// world line that did not just grow is rebuilt.
    pub fn build_from(parts: SessionParts, prev: Option<&Session>) -> Session {
        let prev = prev.filter(|p| p.tool == parts.tool && p.dir == parts.dir);
        let mut agents = Vec::with_capacity(parts.agents.len());
        let mut warnings = Vec::new();
        for (i, af) in parts.agents.into_iter().enumerate() {
            for f in &af.files {
                warnings.extend(f.reported_warnings());
            }
            warnings.extend(af.warnings.iter().cloned());
            // The same agent: subagents can share a directory, and their
            // order can change; a wire belongs to one agent.
            let id = |m: &Option<SubagentMeta>| m.as_ref().map(|m| m.agent_id.clone());
            let was = prev
                .and_then(|p| p.agents.get(i))
                .filter(|a| a.dir == af.dir && id(&a.meta) == id(&af.meta))
                .map(|a| &a.family);
            let mut family =
                family::build_family(i, af.files, &af.forks, &af.lines, af.current, was);
            // Times come from the source, for each world line's own records.
            for (l, t) in family.lines.iter_mut().zip(af.times) {
                l.times = t;
            }
            agents.push(Agent {
                dir: af.dir,
                family,
                meta: af.meta,
                parent_call: None,
                parent_tool_call_id: None,
                parent_line: af.parent_line,
                compactions: af.compactions,
                folded_undos: af.folded_undos,
                link: af.link,
                labels: af.labels,
            });
        }
        if agents.is_empty() {
            agents.push(Agent {
                dir: parts.dir.clone(),
                family: family::build_family(0, Vec::new(), &[], &[], None, None),
                meta: None,
                parent_call: None,
                parent_tool_call_id: None,
                parent_line: None,
                compactions: Vec::new(),
                folded_undos: Vec::new(),
                link: ParentLink::None,
                labels: Vec::new(),
            });
        }
        link_subagents(&mut agents, prev);
        let graph = build_graph(&mut agents);
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
        // Where the copy sits in the fork is its source's word (a kimi-cli
        // fork is one file; a Kimi Code fork copies every branch).
        let line = if self.forked_from.as_ref() == Some(link) {
            self.tool.source().copy_line(link)
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
        self.tool.source().load_body(&file.path, meta)
    }

    /// The first `max` bytes of a record's line, raw, through its source.
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
        self.tool.source().load_line_head(&file.path, meta, max)
    }

    /// The records of one world line, root first, each named by the world
    /// line that wrote it.
    pub fn walk(&self, agent: usize, line: usize) -> Vec<RecordRef> {
        let Some(f) = self.agents.get(agent).map(|a| &a.family) else {
            return Vec::new();
        };
        f.last_record(line)
            .map(|r| graph::path_from_root(f, r))
            .unwrap_or_default()
    }

    /// When record `r` was written (Unix seconds), where known.
    pub fn time(&self, r: RecordRef) -> Option<f64> {
        self.agents.get(r.agent)?.family.time(r)
    }
}

/// One node per world line; `Fork`, `DMail` and `Subagent` edges.
fn build_graph(agents: &mut [Agent]) -> Graph {
    let mut g = Graph::default();
    for (a, ag) in agents.iter_mut().enumerate() {
        for (line, l) in ag.family.lines.iter_mut().enumerate() {
            l.node = g.add_node(Segment { agent: a, line });
        }
    }
    for ag in agents.iter() {
        let f = &ag.family;
        for (i, l) in f.lines.iter().enumerate() {
            if let Some(at) = f.fork_record(i) {
                g.add_edge(
                    f.lines[at.line].node,
                    l.node,
                    Edge::Fork { record: at.record },
                );
            }
            let sender = l.fork.as_ref().and_then(|k| k.sender.as_ref());
            if let Some(s) = sender.filter(|_| l.shared < f.line_len(i)) {
                g.add_edge(
                    f.lines[s.call.line].node,
                    l.node,
                    Edge::DMail {
                        call: s.call.record,
                    },
                );
            }
        }
    }
    let main = &agents[0].family;
    for sub in &agents[1..] {
        let Some(call) = sub.parent_call.and_then(|c| main.owner_of(c)) else {
            continue;
        };
        if let Some(first) = sub
            .family
            .lines
            .first()
            .filter(|_| sub.family.line_len(0) > 0)
        {
            g.add_edge(
                main.lines[call.line].node,
                first.node,
                Edge::Subagent { call: call.record },
            );
        }
    }
    g
}

/// Attaches each subagent to the parent's call that ran it, as its source
/// says to find it. With `prev`, a subagent keeps the call it had unless
/// the main agent's records changed other than by appending, or an
/// appended record may name it.
fn link_subagents(agents: &mut [Agent], prev: Option<&Session>) {
    let main = &agents[0].family;
    let appended = prev.and_then(|p| appended_since(main, &p.agents.first()?.family));
    let mut found = Vec::with_capacity(agents.len());
    for sub in &agents[1..] {
        let kept = prev.zip(appended.as_ref()).and_then(|(p, new)| {
            let was = p
                .agents
                .iter()
                .skip(1)
                .find(|a| a.dir == sub.dir && a.link == sub.link)?;
            let old = was.parent_call.zip(was.parent_tool_call_id.clone());
            let new_records = || {
                new.iter()
                    .flat_map(|&(i, from)| main.files[i].records.range(from..))
            };
            let named = match &sub.link {
                ParentLink::AgentId(id) => new_records().any(|r| {
                    matches!(r.marker().as_deref(), Some(Marker::AgentResult(f)) if f == id)
                        || (old.is_none() && !r.tool_calls().is_empty())
                }),
                ParentLink::ToolCallId(id) => {
                    new_records().any(|r| r.tool_calls().iter().any(|c| c.is(id)))
                }
                // Counted from the kept list of calls: cheap.
                ParentLink::Nth(_) => true,
                ParentLink::None => false,
            };
            (!named).then_some(old)
        });
        found.push(match kept {
            Some(old) => old,
            None => match &sub.link {
                ParentLink::AgentId(id) => find_agent_call(main, id),
                ParentLink::Nth(n) => nth_agent_call(main, *n),
                ParentLink::ToolCallId(id) => find_call(main, id),
                ParentLink::None => None,
            },
        });
    }
    for (sub, f) in agents[1..].iter_mut().zip(found) {
        (sub.parent_call, sub.parent_tool_call_id) = f.unzip();
    }
}

/// Where `now` has records `prev` did not, when it only grew: per world
/// line, the first new own record. `None` when a world line changed.
fn appended_since(now: &Family, prev: &Family) -> Option<Vec<(usize, usize)>> {
    if now.lines.len() < prev.lines.len() {
        return None;
    }
    let mut out = Vec::new();
    for (i, l) in now.lines.iter().enumerate() {
        match prev.lines.get(i) {
            Some(w) => {
                let same = w.shared == l.shared
                    && w.parent == l.parent
                    && now.files[i].records.extends(&prev.files[i].records);
                if !same {
                    return None;
                }
                let from = prev.line_len(i).max(l.shared);
                if from < now.line_len(i) {
                    out.push((i, from));
                }
            }
            None => out.push((i, l.shared.min(now.line_len(i)))),
        }
    }
    Some(out)
}

/// The `n`-th subagent call of the main agent, in the order calls were
/// written (each record counted once, where it was first written).
fn nth_agent_call(main: &Family, n: usize) -> Option<(RecordRef, String)> {
    main.agent_calls
        .iter()
        .enumerate()
        .flat_map(|(line, calls)| calls.iter().map(move |c| (line, c)))
        .nth(n)
        .map(|(line, (record, id))| {
            let at = RecordRef {
                agent: main.agent,
                line,
                record: *record,
            };
            (at, id.clone())
        })
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
        for rec in file.records.iter() {
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
