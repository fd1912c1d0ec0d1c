//! A whole session rebuilt: the main agent's and each subagent's world lines
//! in one petgraph graph, with D-Mail links, subagent links and wire times.
//! `Session::load` does the reading; `Session::from_parts` is pure, so the
//! live tail and tests build from indexes they already hold.

pub mod code;
pub mod family;
pub mod graph;
pub mod map;
pub mod names;
pub mod wire;

use std::path::{Path, PathBuf};

use petgraph::graph::NodeIndex;
use serde::Serialize;

pub use family::{DMailAttempt, Family, Fork, ForkKind, LinePart, Sender, WorldLine};
pub use graph::{Edge, Graph, Node, NodeKind, RecordRef};
pub use wire::{TurnTiming, WireLog};

use crate::error::{Error, Result};
use crate::model::{Body, Marker, RecordMeta, Warning};
use crate::read::{self, FileIndex};
use crate::session;

/// `subagents/<agent_id>/meta.json`, leniently.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SubagentMeta {
    pub agent_id: String,
    pub subagent_type: Option<String>,
    pub description: Option<String>,
    pub status: Option<String>,
    pub created_at: Option<f64>,
}

impl SubagentMeta {
    pub fn read(dir: &Path) -> SubagentMeta {
        let agent_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let doc: serde_json::Value = std::fs::read(dir.join("meta.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let s = |k: &str| doc.get(k).and_then(|v| v.as_str()).map(str::to_string);
        SubagentMeta {
            agent_id: s("agent_id").unwrap_or(agent_id),
            subagent_type: s("subagent_type"),
            description: s("description"),
            status: s("status"),
            created_at: doc.get("created_at").and_then(|v| v.as_f64()),
        }
    }
}

/// The files of one agent, as read from disk (or kept by a live tail).
#[derive(Debug, Clone, Default)]
pub struct AgentFiles {
    /// The agent's directory (the session dir, or `subagents/<id>`).
    pub dir: PathBuf,
    pub files: Vec<FileIndex>,
    pub wire: Option<WireLog>,
    /// `None` for the main agent.
    pub meta: Option<SubagentMeta>,
}

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

/// A marked event on a world line: its wire line, and for a folded undo
/// the turns it undid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineMark {
    pub world_line: usize,
    pub line: u32,
    pub count: Option<u32>,
}

/// Which agent wrote a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Tool {
    #[default]
    #[serde(rename = "kimi-cli")]
    KimiCli,
    #[serde(rename = "kimi-code")]
    KimiCode,
}

impl Tool {
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::KimiCli => "kimi-cli",
            Tool::KimiCode => "kimi-code",
        }
    }
}

/// One session made from another (a Kimi Code `/fork`): `line` is the last
/// source wire line it copied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lineage {
    pub session: String,
    pub line: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct Session {
    pub dir: PathBuf,
    pub id: String,
    pub title: Option<String>,
    pub tool: Tool,
    pub forked_from: Option<Lineage>,
    pub forks: Vec<Lineage>,
    /// `agents[0]` is the main agent; the rest are subagents.
    pub agents: Vec<Agent>,
    pub graph: Graph,
    pub warnings: Vec<Warning>,
}

impl Session {
    /// Reads a session directory and rebuilds it.
    pub fn load(dir: &Path) -> Result<Session> {
        if crate::sources::kimi_code::home::is_session_dir(dir) {
            return code::load(dir);
        }
        let main = read_agent(dir, dir, None)?;
        if main.files.is_empty() {
            return Err(Error::NoContextFile {
                path: dir.to_path_buf(),
            });
        }
        let mut subs = Vec::new();
        for sub_dir in subagent_dirs(dir) {
            let meta = SubagentMeta::read(&sub_dir);
            subs.push(read_agent(dir, &sub_dir, Some(meta))?);
        }
        Ok(Session::from_parts(dir, session::title(dir), main, subs))
    }

    /// Rebuilds from files already indexed (pure).
    pub fn from_parts(
        dir: &Path,
        title: Option<String>,
        main: AgentFiles,
        subagents: Vec<AgentFiles>,
    ) -> Session {
        let mut graph = Graph::default();
        let mut agents = Vec::with_capacity(1 + subagents.len());
        let mut warnings = Vec::new();
        for (i, af) in std::iter::once(main).chain(subagents).enumerate() {
            for f in &af.files {
                warnings.extend(f.warnings.iter().cloned());
            }
            let family = family::build_family(i, af.files, &mut graph);
            if let Some(w) = &af.wire {
                wire::join_times(&family, w, &mut graph);
            }
            agents.push(Agent {
                dir: af.dir,
                family,
                meta: af.meta,
                parent_call: None,
                parent_tool_call_id: None,
                parent_line: None,
                turns: af.wire.map(|w| w.turns).unwrap_or_default(),
                compactions: Vec::new(),
                folded_undos: Vec::new(),
            });
        }
        link_subagents(&mut agents, &mut graph);
        Session {
            id: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            title,
            tool: Tool::KimiCli,
            forked_from: None,
            forks: Vec::new(),
            dir: dir.to_path_buf(),
            agents,
            graph,
            warnings,
        }
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

fn subagent_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.join("subagents")) else {
        return Vec::new();
    };
    let mut dirs: Vec<(f64, PathBuf)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .map(|p| (SubagentMeta::read(&p).created_at.unwrap_or(f64::MAX), p))
        .collect();
    dirs.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    dirs.into_iter().map(|(_, p)| p).collect()
}

/// How an agent's files are named relative to the session dir: `""` for the
/// main agent, `"subagents/<id>/"` for a subagent.
pub fn agent_prefix(session_dir: &Path, dir: &Path) -> String {
    dir.strip_prefix(session_dir)
        .ok()
        .filter(|p| !p.as_os_str().is_empty())
        .map(|p| format!("{}/", p.display()))
        .unwrap_or_default()
}

/// Indexes one agent's context files. File names are relative to the
/// session dir so warnings from subagents say where they are.
pub fn read_agent(
    session_dir: &Path,
    dir: &Path,
    meta: Option<SubagentMeta>,
) -> Result<AgentFiles> {
    let prefix = agent_prefix(session_dir, dir);
    let mut files = Vec::new();
    for cf in session::context_files(dir)? {
        files.push(read::index_file(&cf.path, &format!("{prefix}{}", cf.name))?);
    }
    Ok(AgentFiles {
        dir: dir.to_path_buf(),
        files,
        wire: WireLog::read(&dir.join("wire.jsonl")),
        meta,
    })
}

/// Attaches each subagent to the parent's Agent call whose result names it.
fn link_subagents(agents: &mut [Agent], graph: &mut Graph) {
    for sub in 1..agents.len() {
        let Some(id) = agents[sub].meta.as_ref().map(|m| m.agent_id.clone()) else {
            continue;
        };
        let Some((call, call_id)) = find_agent_call(&agents[0].family, &id) else {
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

/// The Agent call (and its id) whose tool result says `agent_id: <id>`.
fn find_agent_call(main: &Family, agent_id: &str) -> Option<(RecordRef, String)> {
    for (i, file) in main.files.iter().enumerate() {
        for rec in &file.records {
            let Some(Marker::AgentResult(found)) = rec.marker.as_deref() else {
                continue;
            };
            let Some(call_id) = rec.tool_call_id.as_deref() else {
                continue;
            };
            if found != agent_id {
                continue;
            }
            let call = file
                .records
                .iter()
                .position(|r| r.tool_calls.iter().any(|c| c.id == call_id))?;
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
