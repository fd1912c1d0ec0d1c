//! Kimi Code CLI (npm `@moonshot-ai/kimi-code`): its on-disk contract.
//! Where sessions live (`home`), `state.json` (`state`), each agent's
//! `wire.jsonl` indexed (`wire`), the branches inside a wire (`tree`), the
//! records each branch shows and their bodies (`records`), and lineage
//! between sessions (`/fork`). World lines here are branches inside one
//! append-only file, not files.

pub mod dmail;
pub mod home;
pub mod live;
pub mod parts;
pub mod records;
pub mod server;
pub mod state;
pub mod tree;
pub mod wire;

use std::path::{Path, PathBuf};

pub use home::{work_dir_key, Home};
pub use state::SessionState;
pub use tree::{Branch, WireTree};
pub use wire::{Entry, EntryKind, WireIndex};

use crate::error::{Error, Result};

/// One agent's wire, read, and its branch tree.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentWire {
    /// `main`, `agent-0`, …
    pub id: String,
    pub dir: PathBuf,
    pub wire: WireIndex,
    pub tree: WireTree,
}

impl AgentWire {
    pub fn from_wire(id: &str, dir: PathBuf, wire: WireIndex) -> AgentWire {
        let tree = tree::build(&wire.entries, wire.lines);
        AgentWire {
            id: id.to_string(),
            dir,
            wire,
            tree,
        }
    }
}

/// Where a subagent came from: the parent's Agent call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnLink {
    pub parent_agent: String,
    pub tool_call_id: Option<String>,
    /// The line of that `tool.call` in the parent's wire.
    pub line: Option<u32>,
    pub name: Option<String>,
    pub description: Option<String>,
}

/// A session as read: `agents[0]` is `main`.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeSession {
    pub dir: PathBuf,
    pub id: String,
    pub state: SessionState,
    pub agents: Vec<AgentWire>,
}

/// Lineage between sessions: `line` is the last source wire line the
/// fork copied (its `forked` line is the next one).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ForkLink {
    pub session: String,
    pub line: Option<u32>,
}

impl CodeSession {
    /// Reads a session directory (`agents/main/wire.jsonl` must exist).
    pub fn read(dir: &Path) -> Result<CodeSession> {
        if !home::is_session_dir(dir) {
            return Err(Error::NoContextFile {
                path: dir.to_path_buf(),
            });
        }
        let mut agents = Vec::new();
        for id in home::agent_ids(dir) {
            let agent_dir = home::agent_dir(dir, &id);
            let wire = WireIndex::read(&home::agent_wire(dir, &id), &home::agent_wire_name(&id))?;
            agents.push(AgentWire::from_wire(&id, agent_dir, wire));
        }
        Ok(CodeSession::from_parts(
            dir,
            SessionState::read(dir),
            agents,
        ))
    }

    /// Pure: from wires already indexed (the live tail keeps them).
    pub fn from_parts(dir: &Path, state: SessionState, agents: Vec<AgentWire>) -> CodeSession {
        let dir_name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        CodeSession {
            dir: dir.to_path_buf(),
            id: dir_name,
            state,
            agents,
        }
    }

    pub fn agent(&self, id: &str) -> Option<&AgentWire> {
        self.agents.iter().find(|a| a.id == id)
    }

    /// The parent's call that spawned `id`: `subagent.spawned` (2.1.0), else
    /// an Agent result naming it (0.42).
    pub fn spawn_link(&self, id: &str) -> Option<SpawnLink> {
        let parent_agent = self
            .state
            .agent(id)
            .and_then(|a| a.parent_agent.clone())
            .unwrap_or_else(|| "main".to_string());
        let parent = self.agent(&parent_agent)?;
        let mut link = SpawnLink {
            parent_agent: parent_agent.clone(),
            tool_call_id: None,
            line: None,
            name: None,
            description: None,
        };
        for e in &parent.wire.entries {
            match &e.kind {
                EntryKind::Spawned {
                    agent_id,
                    name,
                    description,
                    parent_tool_call_id,
                } if agent_id == id => {
                    link.tool_call_id = parent_tool_call_id.clone();
                    link.name = name.clone();
                    link.description = description.clone();
                    break;
                }
                EntryKind::ToolResult {
                    tool_call_id,
                    agent: Some(a),
                } if a == id && link.tool_call_id.is_none() => {
                    link.tool_call_id = Some(tool_call_id.clone());
                }
                _ => {}
            }
        }
        link.line = link.tool_call_id.as_ref().and_then(|call| {
            parent
                .wire
                .call_lines
                .iter()
                .find(|(c, _)| c == call)
                .map(|&(_, l)| l)
        });
        Some(link)
    }

    /// `state.json.forkedFrom`, with the source line the copy ends at.
    pub fn forked_from(&self) -> Option<ForkLink> {
        let source = self.state.forked_from.clone()?;
        let line = self
            .agents
            .first()
            .and_then(|m| m.tree.forked.last())
            .map(|f| f.line.saturating_sub(1));
        Some(ForkLink {
            session: source,
            line,
        })
    }

    /// Sessions beside this one (same bucket) forked from it.
    pub fn forks(&self) -> Vec<ForkLink> {
        let mut out = self.fork_candidates();
        for f in &mut out {
            f.line = self.fork_line_of(&f.session);
        }
        out
    }

    /// Sessions beside this one whose `state.json` names it as their
    /// source, by id; their lines are not read yet.
    pub fn fork_candidates(&self) -> Vec<ForkLink> {
        let Some(bucket) = self.dir.parent() else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(bucket) else {
            return Vec::new();
        };
        let mut out: Vec<ForkLink> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p != &self.dir && home::is_session_dir(p))
            .filter(|p| SessionState::read(p).forked_from.as_deref() == Some(self.id.as_str()))
            .filter_map(|p| {
                Some(ForkLink {
                    session: p.file_name()?.to_string_lossy().into_owned(),
                    line: None,
                })
            })
            .collect();
        out.sort_by(|a, b| a.session.cmp(&b.session));
        out
    }

    /// The last source line a sibling fork copied: its last `forked` line − 1.
    pub fn fork_line_of(&self, fork_id: &str) -> Option<u32> {
        let wire = home::agent_wire(&self.dir.parent()?.join(fork_id), "main");
        last_forked_line(&wire).map(|l| l.saturating_sub(1))
    }
}

/// Everything about one session, read from disk.
pub fn parts(dir: &Path) -> Result<crate::sources::SessionParts> {
    let cs = CodeSession::read(dir)?;
    let forks = cs.forks();
    Ok(parts::session_parts(&cs, forks))
}

/// Last change to the session: `state.json` or any agent's wire.
pub fn modified(dir: &Path) -> std::time::SystemTime {
    let wires = home::agent_ids(dir)
        .into_iter()
        .map(|id| home::agent_wire(dir, &id));
    std::iter::once(dir.join("state.json"))
        .chain(wires)
        .filter_map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .max()
        .unwrap_or(std::time::UNIX_EPOCH)
}

/// A session's row for `list` and the picker: branches are counted from
/// the main wire's edges (or old undos) without building them.
pub fn summarize(
    dir: &Path,
    work_dirs: &std::collections::HashMap<String, String>,
) -> crate::sources::SessionSummary {
    summarize_checked(dir, work_dirs).0
}

/// [`summarize`], with a warning for a `state.json` that exists but was
/// not read (a FIFO, a device, a symlink, too big, not JSON).
pub fn summarize_checked(
    dir: &Path,
    work_dirs: &std::collections::HashMap<String, String>,
) -> (
    crate::sources::SessionSummary,
    Option<crate::model::Warning>,
) {
    let state = SessionState::read(dir);
    let warning = state.problem.clone().map(|message| crate::model::Warning {
        file: dir.join("state.json").to_string_lossy().into_owned(),
        line: 0,
        message,
    });
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let bucket = dir.parent().map(name).unwrap_or_default();
    let row = crate::sources::SessionSummary {
        id: name(dir),
        tool: "kimi-code",
        dir: dir.to_path_buf(),
        work_dir: work_dirs.get(&bucket).cloned().or(state.cwd.clone()),
        title: state.title.clone(),
        world_lines: home::count_branches(&home::agent_wire(dir, "main")),
        subagents: home::agent_ids(dir).len().saturating_sub(1),
        modified: modified(dir)
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        size: dir_size(dir),
        forked_from: state.forked_from.clone(),
        fork_kind: state.forked_from.as_ref().map(|_| "fork".to_string()),
    };
    (row, warning)
}

fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The last `forked` line of a wire, read without keeping it.
fn last_forked_line(wire: &Path) -> Option<u32> {
    let w = WireIndex::read(wire, "").ok()?;
    w.entries
        .iter()
        .rev()
        .find(|e| e.kind == EntryKind::Forked)
        .map(|e| e.line)
}

#[cfg(test)]
mod fixture_tests;

/// Kimi Code as a [`crate::sources::Source`].
pub struct KimiCode;

impl crate::sources::Source for KimiCode {
    fn tool(&self) -> crate::sources::Tool {
        crate::sources::Tool::KimiCode
    }

    fn recognise(&self, path: &Path) -> bool {
        home::is_session_dir(path)
    }

    fn session_of(&self, path: &Path) -> Option<PathBuf> {
        if home::is_session_dir(path) {
            return Some(path.to_path_buf());
        }
        // `<dir>/agents/<id>/wire.jsonl`
        let agents = path.parent()?.parent()?;
        let dir = agents.parent()?;
        (agents.file_name()? == "agents" && home::is_session_dir(dir)).then(|| dir.to_path_buf())
    }

    fn parts(
        &self,
        path: &Path,
        _reading: crate::sources::Reading,
    ) -> Result<crate::sources::SessionParts> {
        parts(path)
    }

    fn load_body(
        &self,
        path: &Path,
        meta: &crate::model::RecordMeta,
    ) -> Result<crate::model::Body> {
        records::load_body(path, meta)
    }

    fn sessions_here(&self, cwd: &Path) -> Vec<PathBuf> {
        Home::from_env().sessions_of(&cwd.to_string_lossy())
    }

    fn all_sessions(&self) -> Vec<PathBuf> {
        Home::from_env().all_sessions()
    }

    fn session_id(&self, path: &Path) -> String {
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    fn summarize(&self, path: &Path) -> crate::sources::SessionSummary {
        summarize(path, &Home::from_env().work_dirs())
    }

    fn modified(&self, path: &Path) -> std::time::SystemTime {
        modified(path)
    }

    fn work_dir_of(&self, path: &Path) -> Option<String> {
        SessionState::read(path).cwd
    }

    fn live_paths(&self, path: &Path) -> Vec<PathBuf> {
        vec![path.to_path_buf(), home::agents_dir(path)]
    }

    fn follower(&self, path: &Path) -> Box<dyn crate::sources::Follower> {
        Box::new(live::CodeState::new(path))
    }

    /// Wires only grow; `state.json` (title, agents) is copied first.
    fn replay_style(&self, path: &Path) -> crate::sources::ReplayStyle {
        crate::sources::ReplayStyle::Appends {
            side_files: vec![path.join("state.json")],
        }
    }

    fn home_hint(&self) -> String {
        Home::from_env().sessions_root().display().to_string()
    }

    fn dmail_route(&self, _path: &Path) -> crate::denwa::DMailRoute {
        crate::denwa::DMailRoute::Turns
    }

    fn turns_reachable(&self, path: &Path) -> std::result::Result<(), String> {
        server::reachable(&Home::of_session(path))
    }

    fn turns_status(
        &self,
        path: &Path,
    ) -> std::result::Result<crate::denwa::TurnsStatus, crate::denwa::TurnsError> {
        dmail::status(&Home::of_session(path), path)
    }

    fn send_turns_back(
        &self,
        path: &Path,
        back: crate::denwa::Back,
        message: &str,
        load: bool,
    ) -> std::result::Result<crate::denwa::TurnsSent, crate::denwa::TurnsError> {
        dmail::send(&Home::of_session(path), path, back, message, load)
    }
}
