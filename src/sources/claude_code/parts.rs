//! A Claude Code session as the world-line builder takes it: the main
//! file's world lines (each named by its leaf, forking as a rewind or a
//! "summarize from here" after the last shared entry, with the prompt that
//! started it), compactions as marks, subagents from `<id>/subagents/`
//! hung off the parent's Agent call by its id, and lineage to `/branch`
//! and `--fork-session` files.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::lineage::{self, Link};
use super::scan::Scan;
use super::tree::{self, Tree};
use super::{home, records};
use crate::error::Result;
use crate::model::Warning;
use crate::sources::{
    AgentParts, ForkKind, LineFork, LineInfo, LineMark, Lineage, LinkKind, ParentLink, Pos,
    SessionLink, SessionParts, StatedFork, SubagentMeta, Tool,
};
use crate::text::sanitize_line;

/// A file read and its tree.
pub struct Read {
    pub scan: Arc<Scan>,
    pub tree: Tree,
}

impl Read {
    /// Reads a file whole (nothing kept: opening a session once must not
    /// leave its parsed file behind).
    pub fn of(path: &Path, name: &str) -> Result<Read> {
        let scan = Arc::new(Scan::read(path, name)?);
        let tree = tree::build(&scan.entries, &scan.extras);
        Ok(Read { scan, tree })
    }

    /// Reads a file on from where it was left, when read before (kept for
    /// the next read: a live follower's subagents).
    pub fn cached(path: &Path, name: &str) -> Result<Read> {
        let scan = super::cache::scan(path, name)?;
        let tree = tree::build(&scan.entries, &scan.extras);
        Ok(Read { scan, tree })
    }

    /// The session's title: the last `custom-title`, else the first prompt.
    pub fn title(&self) -> Option<String> {
        self.scan
            .title
            .clone()
            .or_else(|| {
                let e = self.scan.entries.get(self.scan.first_prompt?)?;
                self.scan.text(e).map(str::to_string)
            })
            .map(|t| sanitize_line(&t, 200))
    }

    fn id_text(&self, i: usize) -> String {
        self.scan.id_text(self.scan.entries[i].id)
    }

    /// World line and record of entry `i`, on the first line holding it.
    fn record_of(&self, i: usize) -> Option<(usize, usize)> {
        self.tree
            .lines
            .iter()
            .enumerate()
            .find_map(|(l, line)| Some((l, line.records.iter().position(|r| r.entry() == i)?)))
    }
}

/// Everything about the session at `path` (its `.jsonl`); record times
/// only with `times`.
pub fn session_parts(path: &Path, times: bool) -> Result<SessionParts> {
    let name = main_name(path);
    let main = Read::of(path, &name)?;
    let first = agent_parts(&main, path, times);
    let big = main.scan.bytes >= RELEASE_FROM;
    let parts = assemble(path, &main, first, times, Read::of);
    drop(main);
    if big {
        release_freed();
    }
    parts
}

/// Files from this size on leave enough freed behind to hand back.
const RELEASE_FROM: u64 = 32 << 20;

/// Hands the memory a big read freed back to the system. Reading a file
/// of a million entries frees several times what its session keeps, and
/// glibc keeps up to 64 MB of free heap resident (a threshold it raises
/// itself after big allocations): as much again as the session holds.
fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// `<id>.jsonl`, as warnings name the main file.
pub fn main_name(path: &Path) -> String {
    let id = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{id}.jsonl")
}

/// The session's parts around its main file's (`first`, made from
/// `main`): subagents (read with `read`), lineage, title.
pub fn assemble(
    path: &Path,
    main: &Read,
    first: AgentParts,
    times: bool,
    read: fn(&Path, &str) -> Result<Read>,
) -> Result<SessionParts> {
    let id = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = format!("{id}.jsonl");
    let mut agents = vec![first];
    let mut subs: Vec<(Option<u32>, AgentParts)> = Vec::new();
    let mut have = Vec::new();
    for (agent_id, file) in home::subagent_files(path) {
        let rel = format!("{id}/subagents/agent-{agent_id}.jsonl");
        let read = match read(&file, &rel) {
            Ok(r) => r,
            Err(e) => {
                agents[0].warnings.push(Warning {
                    file: rel,
                    line: 0,
                    message: format!("subagent transcript not read: {e}"),
                });
                continue;
            }
        };
        let mut a = agent_parts(&read, &file, times);
        let meta = crate::read::guard::read_json(
            &home::subagent_meta(path, &agent_id),
            crate::read::guard::META_JSON_CAP,
        );
        let meta = match meta {
            Ok(m) => m,
            Err(why) => {
                a.warnings.push(Warning {
                    file: format!("{id}/subagents/agent-{agent_id}.meta.json"),
                    line: 0,
                    message: why,
                });
                None
            }
        };
        let field = |k: &str| {
            meta.as_ref()
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        // The Agent call: the meta names it; else the parent's result
        // naming this agent.
        let call = field("toolUseId").or_else(|| {
            main.scan.entries.iter().find_map(|e| {
                (main.scan.agent(e) == Some(agent_id.as_str()))
                    .then(|| main.scan.result_of(e).map(str::to_string))
                    .flatten()
            })
        });
        let call_line = call.as_ref().and_then(|c| {
            main.scan
                .entries
                .iter()
                .find(|e| main.scan.calls(e).any(|(id, _)| id == c))
                .map(|e| e.line)
        });
        a.link = call.map_or(ParentLink::None, ParentLink::ToolCallId);
        a.meta = Some(SubagentMeta {
            agent_id: agent_id.clone(),
            subagent_type: field("agentType"),
            description: field("description"),
            status: meta
                .as_ref()
                .and_then(|m| m.get("finished"))
                .and_then(Value::as_bool)
                .map(|f| if f { "finished" } else { "running" }.to_string()),
            created_at: read
                .scan
                .entries
                .first()
                .map(|e| e.time)
                .filter(|t| !t.is_nan()),
        });
        a.parent_line = call_line;
        have.push(agent_id);
        subs.push((call_line, a));
    }
    let found = lineage::find(path, &main.scan);
    // Agents the parent ran whose transcript is missing; a fork's copied
    // entries name its source's agents, whose files stay there.
    let copied = found
        .forked_from
        .as_ref()
        .and_then(|l| l.after)
        .and_then(|a| main.scan.entries.iter().position(|e| e.id == a))
        .map_or(0, |i| i + 1);
    for e in &main.scan.entries[copied..] {
        if let Some(agent) = main.scan.agent(e) {
            if !have.iter().any(|h| h == agent) {
                have.push(agent.to_string());
                agents[0].warnings.push(Warning {
                    file: name.clone(),
                    line: e.line.into(),
                    message: format!(
                        "subagent {} ran here but {id}/subagents/agent-{}.jsonl is missing",
                        sanitize_line(agent, 40),
                        sanitize_line(agent, 40)
                    ),
                });
            }
        }
    }
    // Start order: where the parent called them.
    subs.sort_by_key(|(line, a)| {
        (
            line.is_none(),
            *line,
            a.meta.as_ref().map(|m| m.agent_id.clone()),
        )
    });
    agents.extend(subs.into_iter().map(|(_, a)| a));
    let link_to = |l: &Link| -> SessionLink {
        let entry = l
            .after
            .and_then(|a| main.scan.entries.iter().position(|e| e.id == a));
        let at = entry.and_then(|i| main.record_of(i));
        SessionLink {
            session: l.session.clone(),
            dir: l.path.clone(),
            records: at.map_or(0, |(_, r)| r + 1),
            kind: LinkKind::Fork,
            source_line: at.map_or(0, |(line, _)| line),
            source_file: name.clone(),
            after: l.after.map(|a| Pos {
                line: entry.map(|i| main.scan.entries[i].line),
                entry: Some(main.scan.id_text(a)),
            }),
        }
    };
    Ok(SessionParts {
        dir: path.to_path_buf(),
        id,
        title: main.title(),
        lineage: Lineage {
            forked_from: found.forked_from.as_ref().map(link_to),
            forks: found.forks.iter().map(link_to).collect(),
        },
        agents,
        tool: Tool::ClaudeCode,
    })
}

/// One file's world lines; each branch's records share its parent's.
pub fn agent_parts(read: &Read, path: &Path, timed: bool) -> AgentParts {
    let t = &read.tree;
    let mut files: Vec<crate::read::FileIndex> = Vec::with_capacity(t.lines.len());
    let mut times = Vec::with_capacity(t.lines.len());
    for l in &t.lines {
        let base = l.parent.and_then(|p| files.get(p)).map(|f| &f.records);
        let (file, when) = records::line_index(&read.scan, l, base, timed);
        files.push(file);
        times.push(when);
    }
    line_parts(read, path, files, times)
}

/// An agent's parts from its world lines' record indexes and times (one
/// of each per line of `read.tree`).
pub fn line_parts(
    read: &Read,
    path: &Path,
    files: Vec<crate::read::FileIndex>,
    times: Vec<crate::sources::Times>,
) -> AgentParts {
    let t = &read.tree;
    let mut forks = Vec::with_capacity(t.lines.len());
    let mut lines = Vec::with_capacity(t.lines.len());
    for l in &t.lines {
        forks.push(match l.parent {
            Some(p) => LineFork::Explicit {
                parent: p,
                shared: l.shared,
            },
            None => LineFork::Root,
        });
        let leaf = read.id_text(l.leaf);
        // Named by its first own entry: a line keeps its name as it grows
        // (its leaf moves), so a live follower sees the same line.
        let start = read.id_text(l.start);
        let kind = if l.summarize {
            ForkKind::Summarize
        } else {
            ForkKind::Rewind
        };
        let prompt = l
            .prompt
            .and_then(|i| read.scan.text(&read.scan.entries[i]))
            .map(|p| sanitize_line(p, 200));
        lines.push(LineInfo {
            label: format!("@{}", start.get(..8).unwrap_or(&start)),
            branch: None,
            fork: l.parent.map(|p| StatedFork {
                kind,
                after: l
                    .after
                    .map(|a| Pos::entry(read.scan.entries[a].line, read.id_text(a))),
                turns: None,
                inferred: false,
                origin: Some(p),
            }),
            leaf: Some(leaf),
            prompt,
        });
    }
    let mut warnings = read.scan.warnings.clone();
    warnings.extend(t.warnings.iter().map(|(line, message)| Warning {
        file: read.scan.name.clone(),
        line: (*line).into(),
        message: message.clone(),
    }));
    AgentParts {
        dir: path.to_path_buf(),
        files,
        forks,
        meta: None,
        link: ParentLink::None,
        warnings,
        lines,
        current: t.current,
        compactions: t
            .compactions
            .iter()
            .map(|&(world_line, i)| LineMark {
                world_line,
                at: Pos::entry(read.scan.entries[i].line, read.id_text(i)),
                count: None,
                first_kept: None,
            })
            .collect(),
        folded_undos: Vec::new(),
        parent_line: None,
        times,
        labels: Vec::new(),
    }
}
