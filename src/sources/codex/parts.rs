//! A Codex thread as the world-line builder takes it: the thread's world
//! lines (generations and rollbacks, see `thread`), its subagent threads as
//! agents hung off the `spawn_agent` call that started them, compactions as
//! marks, and lineage: the thread it was forked from (`forked_from_id`,
//! after the source's record `forked_from_ordinal_exclusive - 1`) and the
//! threads forked from it. A fork's source's records are not the fork's:
//! they stay in the source session, and the fork's world line starts with
//! its own first record, linked by `forked_from`.

use std::path::{Path, PathBuf};

use super::records;
use super::rollout::{Kind, Rollout};
use super::thread::{self, Thread};
use super::{find_thread, generations_of, home, read_generations};
use crate::error::Result;
use crate::model::Warning;
use crate::read::FileIndex;
use crate::sources::{
    AgentParts, ForkKind, LineFork, LineInfo, LineMark, Lineage, LinkKind, ParentLink, Pos,
    SessionLink, SessionParts, StatedFork, SubagentMeta, Times, Tool,
};

/// One thread read: its files and world lines.
pub struct ThreadRead {
    pub id: String,
    pub gens: Vec<Rollout>,
    pub thread: Thread,
}

impl ThreadRead {
    pub fn read(first: &Path) -> Result<ThreadRead> {
        let gens = read_generations(first)?;
        Ok(ThreadRead::from_gens(first, gens))
    }

    pub fn from_gens(first: &Path, gens: Vec<Rollout>) -> ThreadRead {
        let id = gens
            .first()
            .and_then(|g| g.meta.as_ref())
            .map(|m| m.id.clone())
            .filter(|id| !id.is_empty())
            .or_else(|| home::parse_name(first).map(|n| n.thread))
            .unwrap_or_default();
        let thread = thread::build(&id, &gens);
        ThreadRead { id, gens, thread }
    }

    /// The first prompt of the thread's first file (its title).
    pub fn title(&self) -> Option<String> {
        self.gens.first()?.first_prompt().map(str::to_string)
    }
}

/// Everything worldline shows of the thread whose first file is `first`.
pub fn session_parts(first: &Path) -> Result<SessionParts> {
    let main = ThreadRead::read(first)?;
    Ok(assemble(first, &main))
}

/// Parts of a thread already read (the live follower re-reads files).
pub fn assemble(first: &Path, main: &ThreadRead) -> SessionParts {
    let mut warnings = Vec::new();
    let mut agents = vec![agent_parts(first, main, None, ParentLink::None)];
    for (call_id, sub_first) in subagents(first, main) {
        match ThreadRead::read(&sub_first) {
            Ok(sub) => {
                let m = sub
                    .gens
                    .first()
                    .and_then(|g| g.meta.clone())
                    .unwrap_or_default();
                let meta = SubagentMeta {
                    agent_id: sub.id.clone(),
                    subagent_type: m.role.clone(),
                    description: m.nickname.clone().or_else(|| sub.title()),
                    status: None,
                    created_at: m.timestamp.as_deref().and_then(super::rollout::parse_time),
                };
                let link = call_id.map_or(ParentLink::None, ParentLink::ToolCallId);
                agents.push(agent_parts(&sub_first, &sub, Some(meta), link));
            }
            Err(e) => warnings.push(Warning {
                file: name_of(&sub_first),
                line: 0,
                message: format!("subagent thread not read: {e}"),
            }),
        }
    }
    let lineage = lineage(first, main, &mut warnings);
    if let Some(a) = agents.first_mut() {
        a.warnings.extend(warnings);
    }
    SessionParts {
        dir: first.to_path_buf(),
        id: main.id.clone(),
        title: main.title(),
        agents,
        lineage,
        tool: Tool::Codex,
    }
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// One thread's world lines as an agent's parts.
fn agent_parts(
    first: &Path,
    t: &ThreadRead,
    meta: Option<SubagentMeta>,
    link: ParentLink,
) -> AgentParts {
    let mut warnings: Vec<Warning> = Vec::new();
    for g in &t.gens {
        warnings.extend(g.warnings.iter().cloned());
        if g.dropped_warnings > 0 {
            warnings.push(Warning {
                file: g.name.clone(),
                line: 0,
                message: format!(
                    "{} more warnings in this file not listed",
                    g.dropped_warnings
                ),
            });
        }
    }
    warnings.extend(t.thread.warnings.iter().cloned());
    let usable = t
        .gens
        .iter()
        .take(records::MAX_GENERATIONS)
        .take_while(|g| records::fits(g.bytes))
        .count();
    if usable < t.gens.len() {
        warnings.push(Warning {
            file: name_of(first),
            line: 0,
            message: format!(
                "only the first {usable} of {} files of this thread are shown",
                t.gens.len()
            ),
        });
    }
    // Turns numbered in file order per generation, after the turns its
    // base holds; kept for `task_started` entries only (a tenth of a
    // thread's lines), each record's index entry built where it is used.
    let base_turns = base_turns(t);
    let mut files: Vec<FileIndex> = Vec::new();
    let mut forks = Vec::new();
    let mut lines = Vec::new();
    let mut times = Vec::new();
    let mut index_of_line = Vec::new();
    for (l, line) in t.thread.lines.iter().enumerate() {
        // A line's records are in its own generation and earlier ones.
        if line.gen >= usable {
            continue;
        }
        index_of_line.push(l);
        let shown_parent = line
            .parent
            .and_then(|p| index_of_line.iter().position(|&x| x == p));
        let gen = &t.gens[line.gen];
        let recs = line_records(t, l, shown_parent.and_then(|p| files.get(p)), &base_turns);
        // Times of the line's own records only: the shared ones are its
        // parent's (change points, so a run of equal times is one).
        let mut when = Times::default();
        for (i, e) in gen.entries[line.own.clone()].iter().enumerate() {
            when.set(line.shared + i, e.time());
        }
        let ord = |a: Option<super::thread::At>| {
            a.and_then(|a| t.thread.entry(&t.gens, a))
                .map(|e| e.ordinal.to_string())
        };
        let prompt = gen.entries[line.own.clone()]
            .iter()
            .find_map(|e| gen.prompt(e))
            .map(str::to_string);
        let path_last = line
            .records()
            .checked_sub(1)
            .and_then(|i| t.thread.at(l, i));
        let parent = shown_parent;
        let info = LineInfo {
            label: match (parent, line.turns) {
                (None, _) => "thread".to_string(),
                (Some(_), Some(n)) => {
                    format!("rollback of {n} turn{}", if n == 1 { "" } else { "s" })
                }
                (Some(_), None) => {
                    format!("rollback (generation {})", line.gen + 1)
                }
            },
            branch: None,
            fork: parent.map(|p| StatedFork {
                kind: ForkKind::Rollback,
                after: parent
                    .filter(|_| line.shared > 0)
                    .and_then(|_| ord(t.thread.at(l, line.shared - 1)))
                    .map(Pos::named),
                turns: line.turns,
                inferred: false,
                // The world line that first holds the last shared record.
                origin: Some(owner(&t.thread, &index_of_line, p, line.shared)),
            }),
            leaf: ord(path_last),
            prompt: if parent.is_some() { prompt } else { None },
        };
        forks.push(match parent {
            None => LineFork::Root,
            Some(p) => LineFork::Explicit {
                parent: p,
                shared: line.shared,
            },
        });
        files.push(FileIndex {
            name: t.gens[line.gen].name.clone(),
            path: t.gens[line.gen].path.clone(),
            records: recs,
            warnings: Vec::new(),
            dropped_warnings: 0,
            bytes: t.gens[line.gen].bytes,
        });
        lines.push(info);
        times.push(when);
    }
    let shown = |l: usize| index_of_line.iter().position(|&x| x == l);
    let compactions = t
        .thread
        .compactions
        .iter()
        .filter_map(|&(l, at)| {
            let e = t.thread.entry(&t.gens, at)?;
            let line = t.gens[at.gen].records.get(at.entry)?.line();
            Some(LineMark {
                world_line: shown(l)?,
                at: Pos::entry(line, e.ordinal.to_string()),
                count: None,
                first_kept: None,
            })
        })
        .collect();
    AgentParts {
        dir: first.to_path_buf(),
        files,
        forks,
        meta,
        link,
        warnings,
        current: shown(t.thread.current),
        compactions,
        folded_undos: Vec::new(),
        parent_line: None,
        times,
        labels: Vec::new(),
        lines,
    }
}

/// Per generation: the turns its base holds (turns of a generation are
/// numbered on from there, in file order).
pub fn base_turns(t: &ThreadRead) -> Vec<i64> {
    let mut base_turns = vec![0i64; t.gens.len()];
    for (l, line) in t.thread.lines.iter().enumerate() {
        if line.parent.is_some() && line.turns.is_none() && l > 0 {
            base_turns[line.gen] = t
                .thread
                .path(l)
                .take(line.shared)
                .filter(|a| {
                    t.thread
                        .entry(&t.gens, *a)
                        .is_some_and(|e| e.kind == Kind::TurnStarted)
                })
                .count() as i64;
        }
    }
    base_turns
}

/// The index entries of world line `l` (its parent's, shown, is `parent`;
/// each generation's turns start at its `bases`). Storage is shared where the
/// entries are the same: a root line's are its file's own, a line of the
/// same file as its parent starts as the parent's prefix. A record of
/// another file than the line's is tagged with its generation.
pub fn line_records(
    t: &ThreadRead,
    l: usize,
    parent: Option<&FileIndex>,
    bases: &[i64],
) -> crate::read::Records {
    let line = &t.thread.lines[l];
    let gen = &t.gens[line.gen];
    let base = bases[line.gen];
    let own = || gen.records.range(line.own.clone());
    if line.parent.is_none() && base == 0 && line.own.start == 0 {
        return gen.records.prefix(line.own.end);
    }
    let same_file = line
        .parent
        .is_some_and(|p| t.thread.lines[p].gen == line.gen);
    let mut recs = match parent {
        Some(f) if same_file => f.records.prefix(line.shared),
        _ => {
            let mut recs = crate::read::Records::new();
            recs.reserve_exact(line.records());
            if let Some(p) = line.parent {
                let mut left = line.shared;
                for (g, run) in t.thread.runs(p) {
                    let take = run.len().min(left);
                    left -= take;
                    let file = &t.gens[g].records;
                    for m in file.range(run.start..run.start + take) {
                        let m = records::turned(m, bases[g]);
                        recs.push(if g == line.gen {
                            m
                        } else {
                            records::elsewhere(&m, g)
                        });
                    }
                }
            }
            recs
        }
    };
    recs.reserve_exact(line.own.len());
    for m in own() {
        recs.push(records::turned(m, base));
    }
    recs
}

/// The earliest world line (shown index) on the ancestry of `p` that holds
/// record `shared - 1` of `p`'s path.
fn owner(t: &Thread, shown: &[usize], p: usize, shared: usize) -> usize {
    let mut cur = shown.get(p).copied().unwrap_or(0);
    loop {
        let line = &t.lines[cur];
        match line.parent {
            Some(up) if line.shared >= shared => cur = up,
            _ => break,
        }
    }
    shown.iter().position(|&x| x == cur).unwrap_or(p)
}

/// Subagent threads started by this one: `(spawn call id, first file)`.
fn subagents(first: &Path, main: &ThreadRead) -> Vec<(Option<String>, PathBuf)> {
    let mut out: Vec<(Option<String>, PathBuf)> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for g in &main.gens {
        for (call_id, threads) in g.spawns() {
            for id in threads {
                if seen.contains(id) {
                    continue;
                }
                if let Some(p) = find_thread(first, id) {
                    seen.push(id.clone());
                    out.push((Some(call_id.clone()), p));
                }
            }
        }
    }
    // Subagent files beside the thread that no call named (older Codex).
    if let Some(dir) = first.parent() {
        let mut beside: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                home::parse_name(p)
                    .is_some_and(|n| n.generation.is_none() && !seen.contains(&n.thread))
            })
            .filter(|p| {
                home::head(p).is_some_and(|m| m.parent_thread.as_deref() == Some(main.id.as_str()))
            })
            .collect();
        beside.sort();
        out.extend(beside.into_iter().map(|p| (None, p)));
    }
    out
}

fn lineage(first: &Path, main: &ThreadRead, warnings: &mut Vec<Warning>) -> Lineage {
    let meta = main
        .gens
        .first()
        .and_then(|g| g.meta.clone())
        .unwrap_or_default();
    let base = meta.base.clone().filter(|(t, _)| *t != main.id);
    let copied = main.gens.first().and_then(|g| g.copied_from.clone());
    let source = meta
        .forked_from_id
        .clone()
        .or_else(|| base.as_ref().map(|b| b.0.clone()))
        .or_else(|| copied.clone());
    let forked_from = source.map(|src| {
        let dir = find_thread(first, &src);
        let end = meta
            .forked_from_ordinal_exclusive
            .or(base.as_ref().map(|b| b.1))
            .or_else(|| {
                let (fork, source) = (main.gens.first()?, dir.as_deref()?);
                copied_end(fork, source)
            });
        if dir.is_none() {
            warnings.push(Warning {
                file: name_of(first),
                line: 1,
                message: format!(
                    "forked from thread {src}, whose rollout is not here: showing the fork's own records"
                ),
            });
        }
        SessionLink {
            session: src,
            dir: dir.unwrap_or_default(),
            records: end.unwrap_or(0) as usize,
            kind: LinkKind::Fork,
            source_line: 0,
            source_file: String::new(),
            after: end
                .and_then(|n| n.checked_sub(1))
                .map(|n| Pos::named(n.to_string())),
        }
    });
    let forks = forks_of(first, &main.id)
        .into_iter()
        .map(|(id, p, end)| SessionLink {
            session: id,
            dir: p,
            records: end.unwrap_or(0) as usize,
            kind: LinkKind::Fork,
            source_line: 0,
            source_file: String::new(),
            after: end
                .and_then(|n| n.checked_sub(1))
                .map(|n| Pos::named(n.to_string())),
        })
        .collect();
    Lineage { forked_from, forks }
}

/// Threads forked from `id`: `(fork id, its first file, fork ordinal)`.
/// UUIDv7 ids sort by creation time, so only later threads are read.
fn forks_of(first: &Path, id: &str) -> Vec<(String, PathBuf, Option<u64>)> {
    let mut out: Vec<(String, PathBuf, Option<u64>)> = Vec::new();
    for p in super::home_of(first).rollout_files() {
        let Some(n) = home::parse_name(&p) else {
            continue;
        };
        if n.generation.is_some() || n.thread.as_str() <= id || out.iter().any(|o| o.0 == n.thread)
        {
            continue;
        }
        let Some(h) = home::head_of(&p) else {
            continue;
        };
        let m = h.meta.clone();
        let from_base = m.base.as_ref().filter(|b| b.0 == id).map(|b| b.1);
        if m.forked_from_id.as_deref() == Some(id) || from_base.is_some() {
            out.push((n.thread, p, m.forked_from_ordinal_exclusive.or(from_base)));
        } else if h.copied_from.as_deref() == Some(id) {
            let end = Rollout::read(&p, "")
                .ok()
                .and_then(|fork| copied_end(&fork, first));
            out.push((n.thread, p, end));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// An older Codex fork's copy of its source: the fork's lines from its
/// second (the source's `session_meta`) on, compared with the source's
/// from its first by type and payload (each copy has its own timestamp).
/// Returns the source record after the last one copied, as an ordinal end.
fn copied_end(fork: &Rollout, source_first: &Path) -> Option<u64> {
    use serde_json::Value;
    let source = Rollout::read(source_first, "").ok()?;
    if home::is_zst(&fork.path) || home::is_zst(source_first) {
        return None;
    }
    let cap = 1 << 30;
    let fb = crate::read::guard::read_capped(&fork.path, cap).ok()?;
    let sb = crate::read::guard::read_capped(source_first, cap).ok()?;
    let body = |bytes: &[u8], e: &crate::model::RecordMeta| -> Option<(Value, Value)> {
        let start = usize::try_from(e.offset()).ok()?;
        let line = bytes.get(start..start + e.len() as usize)?;
        let mut v: Value = crate::read::lenient::parse_value(line).ok()?;
        Some((v.get_mut("type")?.take(), v.get_mut("payload")?.take()))
    };
    let mut last = None;
    let pairs = fork.records.iter().skip(1).zip(source.records.iter());
    for ((f, s), e) in pairs.zip(&source.entries) {
        let (a, b) = (body(&fb, f), body(&sb, s));
        if a.is_none() || a != b {
            break;
        }
        last = Some(e.ordinal + 1);
    }
    last
}

/// The files of a thread in order, for callers that have only its first.
pub fn files_of(first: &Path) -> Vec<PathBuf> {
    generations_of(first)
}
