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
use super::scan::{Kind, Scan};
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
    /// Reads a file (on from where it was left, when read before).
    pub fn of(path: &Path, name: &str) -> Result<Read> {
        let scan = super::cache::scan(path, name)?;
        let tree = tree::build(&scan.entries);
        Ok(Read { scan, tree })
    }

    /// The session's title: the last `custom-title`, else the first prompt.
    pub fn title(&self) -> Option<String> {
        self.scan
            .title
            .clone()
            .or_else(|| {
                self.scan
                    .entries
                    .iter()
                    .find(|e| e.kind == Kind::Prompt)
                    .and_then(|e| e.text().map(str::to_string))
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
            .find_map(|(l, line)| Some((l, line.records.iter().position(|r| r.entry == i)?)))
    }
}

/// Everything about the session at `path` (its `.jsonl`).
pub fn session_parts(path: &Path) -> Result<SessionParts> {
    let id = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = format!("{id}.jsonl");
    let main = Read::of(path, &name)?;
    let mut agents = vec![agent_parts(&main, path)];
    let mut subs: Vec<(Option<u32>, AgentParts)> = Vec::new();
    let mut have = Vec::new();
    for (agent_id, file) in home::subagent_files(path) {
        let rel = format!("{id}/subagents/agent-{agent_id}.jsonl");
        let read = match Read::of(&file, &rel) {
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
        let mut a = agent_parts(&read, &file);
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
                let x = e.extra()?;
                (x.agent.as_deref() == Some(agent_id.as_str()))
                    .then(|| x.result_of.clone())
                    .flatten()
            })
        });
        let call_line = call.as_ref().and_then(|c| {
            main.scan
                .entries
                .iter()
                .find(|e| e.calls().iter().any(|h| &h.id == c))
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
        if let Some(agent) = e.extra().and_then(|x| x.agent.as_deref()) {
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

/// One file's world lines.
pub fn agent_parts(read: &Read, path: &Path) -> AgentParts {
    let t = &read.tree;
    let mut files = Vec::with_capacity(t.lines.len());
    let mut forks = Vec::with_capacity(t.lines.len());
    let mut lines = Vec::with_capacity(t.lines.len());
    let mut times = Vec::with_capacity(t.lines.len());
    for l in &t.lines {
        let (file, when) = records::line_index(&read.scan, l);
        files.push(file);
        times.push(when);
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
            .and_then(|i| read.scan.entries[i].text())
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
        times: times.into_iter().map(Into::into).collect(),
        labels: Vec::new(),
    }
}
