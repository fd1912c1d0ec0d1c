//! A Pi session as the world-line builder takes it: one world line per
//! root-to-leaf path of the entry tree ([`super::tree`]), each a view of
//! the one file (the path's entries, bookkeeping included), leaving its
//! parent at the fork point with the reason `/tree`; compactions as marks
//! on their line, labels on their targets, the title, and `/fork` lineage.

use super::file::{Kind, PiFile};
use super::tree::{self, Tree};
use crate::model::{Role, Warning};
use crate::read::{FileIndex, Records};
use crate::sources::{
    AgentParts, EntryLabel, ForkKind, LineFork, LineInfo, LineMark, Lineage, ParentLink, Pos,
    SessionParts, StatedFork, Times, Tool,
};

/// Characters of a prompt or summary kept as a world line's reason.
const PROMPT_CHARS: usize = 400;
/// A line's first own entries looked through for its reason.
const REASON_ENTRIES: usize = 64;

/// A world line's records as last handed out, kept by a live follower: a
/// line that only grew gets the new records pushed onto the same storage
/// (O(appended), and the builder sees it extend the last snapshot's).
#[derive(Debug, Clone, Default)]
pub struct LineCache {
    start: u32,
    leaf: u32,
    records: Records,
    times: Times,
    reason: Option<String>,
}

/// Builds the parts of a read file; `lineage` is found on disk beside it.
/// Without `times` (`tree --format json`) no record times are handed over.
/// `cache`: the lines of the last call on the same file (empty: none).
/// `take`: the file is read once (not followed): its record index entries
/// move into the world lines' records rather than being copied.
pub fn session_parts(
    f: &mut PiFile,
    tree: &Tree,
    lineage: Lineage,
    times: bool,
    cache: &mut Vec<LineCache>,
    take: bool,
) -> SessionParts {
    let want_times = times;
    let old = std::mem::take(cache);
    // What each line says first, while every entry's meta is at hand.
    let mut forks = Vec::with_capacity(tree.lines.len());
    let mut lines = Vec::with_capacity(tree.lines.len());
    for (k, l) in tree.lines.iter().enumerate() {
        forks.push(match (l.parent, l.after) {
            (Some(p), Some(a)) => LineFork::Explicit {
                parent: p,
                shared: tree.depth[a as usize] as usize + 1,
            },
            _ => LineFork::Root,
        });
        // What started it is among its first own entries: worked out
        // again only while none was found among fewer than those.
        let own = |leaf: u32| {
            let d = |i: u32| tree.depth.get(i as usize).copied().unwrap_or(0);
            (d(leaf) + 1).saturating_sub(d(l.start)) as usize
        };
        let prompt = match old.get(k).filter(|c| c.start == l.start) {
            Some(c) if c.reason.is_some() || own(c.leaf) >= REASON_ENTRIES => c.reason.clone(),
            _ if l.parent.is_some() => reason(f, &own_path(f, tree, l)),
            _ => None,
        };
        lines.push(LineInfo {
            // Named by its first own entry: a live line keeps its name
            // while it grows (its leaf moves on).
            label: format!("from {}", crate::text::sanitize_line(f.id(l.start), 16)),
            branch: None,
            fork: l.parent.map(|p| StatedFork {
                kind: ForkKind::Tree,
                after: l
                    .after
                    .map(|a| Pos::entry(f.meta(a).line(), f.id(a).to_string())),
                turns: None,
                inferred: false,
                origin: Some(p),
            }),
            leaf: Some(f.id(l.leaf).to_string()),
            prompt,
        });
    }
    let compactions = f
        .said
        .iter()
        .filter(|s| f.kind(s.entry) == Kind::Compaction)
        .filter_map(|s| {
            Some(LineMark {
                world_line: tree.owner_of(s.entry)?,
                at: Pos::entry(f.meta(s.entry).line(), f.id(s.entry).to_string()),
                count: None,
                first_kept: s.target.as_deref().map(str::to_string),
            })
        })
        .collect();
    let labels = labels(f, tree);
    let title = title(f);
    let id = session_id(f);
    if take {
        f.plan_takes(|i| tree.owner_of(i).is_some());
    }
    let mut files = Vec::with_capacity(tree.lines.len());
    let mut times = Vec::with_capacity(tree.lines.len());
    for (k, l) in tree.lines.iter().enumerate() {
        // Only a line's own records are timed: its shared prefix is its
        // parent's (the builder reads times from `shared` on).
        let own_from = l.after.map_or(0, |a| tree.depth[a as usize] as usize + 1);
        let grown = old
            .get(k)
            .filter(|c| c.start == l.start)
            .and_then(|c| Some((c, suffix_after(f, tree, l.leaf, c.leaf)?)));
        let (mut records, mut when, new) = match grown {
            Some((c, new)) => (c.records.clone(), c.times.clone(), new),
            None => {
                // A branch holds its parent's records up to the fork as
                // they are (shared storage) and stores only its own.
                let base = match (l.parent, l.after) {
                    (Some(p), Some(a)) => files
                        .get(p)
                        .map(|pf: &FileIndex| {
                            pf.records.prefix(tree.depth[a as usize] as usize + 1)
                        })
                        .filter(|b| b.len() == tree.depth[l.start as usize] as usize),
                    _ => None,
                };
                match base {
                    Some(base) => (base, Times::default(), own_path(f, tree, l)),
                    None => (Records::new(), Times::default(), tree.path(f, k)),
                }
            }
        };
        // Records after `records`, pushed onto it, and their times.
        if want_times {
            let first = records.len();
            for (k, &i) in new.iter().enumerate() {
                let r = first + k;
                when.set(r, (r >= own_from).then(|| f.time(i)).flatten());
            }
        }
        if take {
            f.take_metas(&new, |m| records.push(m));
        } else {
            for &i in &new {
                records.push(f.meta(i).clone());
            }
        }
        cache.push(LineCache {
            start: l.start,
            leaf: l.leaf,
            records: records.clone(),
            times: when.clone(),
            reason: lines.get(k).and_then(|x: &LineInfo| x.prompt.clone()),
        });
        times.push(when);
        files.push(FileIndex {
            name: f.name.clone(),
            path: f.path.clone(),
            records,
            warnings: Vec::new(),
            bytes: f.bytes,
            dropped_warnings: 0,
        });
    }
    let mut warnings = f.warnings.clone();
    if f.dropped_warnings > 0 {
        warnings.push(Warning {
            file: f.path.display().to_string(),
            line: u64::from(f.lines),
            message: format!(
                "{} more warnings in this file not listed",
                f.dropped_warnings
            ),
        });
    }
    let main = AgentParts {
        dir: f.path.parent().map(|p| p.to_path_buf()).unwrap_or_default(),
        files,
        forks,
        meta: None,
        link: ParentLink::None,
        warnings,
        lines,
        current: tree.current,
        compactions,
        folded_undos: Vec::new(),
        parent_line: None,
        times,
        labels,
    };
    SessionParts {
        dir: f.path.clone(),
        id,
        title,
        agents: vec![main],
        lineage,
        tool: Tool::Pi,
    }
}

/// A line's own entries, from its first to its leaf.
fn own_path(f: &PiFile, tree: &Tree, l: &tree::Line) -> Vec<u32> {
    let mut own = Vec::new();
    let mut at = Some(l.leaf);
    while let Some(i) = at.filter(|&i| tree.depth[i as usize] >= tree.depth[l.start as usize]) {
        own.push(i);
        at = f.parent(i);
    }
    own.reverse();
    own
}

/// The entries after `old` on the path to `leaf`, when `old` is on it (the
/// line only grew); walks up only as far as the new entries go.
fn suffix_after(f: &PiFile, tree: &Tree, leaf: u32, old: u32) -> Option<Vec<u32>> {
    let want = *tree.depth.get(old as usize)?;
    let mut out = Vec::new();
    let mut at = leaf;
    while tree.depth[at as usize] > want {
        out.push(at);
        at = f.parent(at)?;
    }
    out.reverse();
    (at == old).then_some(out)
}

/// The header's id, else the file name's.
pub fn session_id(f: &PiFile) -> String {
    f.header
        .as_ref()
        .and_then(|h| h.id.clone())
        .or_else(|| super::home::id_of_name(&f.path))
        .unwrap_or_else(|| f.name.clone())
}

/// Labels in force: the last `label` entry per target wins; one without a
/// label clears it.
fn labels(f: &PiFile, tree: &Tree) -> Vec<EntryLabel> {
    let mut out: Vec<EntryLabel> = Vec::new();
    for s in f.said.iter().filter(|s| f.kind(s.entry) == Kind::Label) {
        let Some(target) = &s.target else { continue };
        out.retain(|l| *l.entry != **target);
        if let Some(label) = &s.text {
            let at = f
                .index_of(target)
                .and_then(|i| Some((tree.owner_of(i)?, tree.depth[i as usize] as usize)));
            out.push(EntryLabel {
                entry: target.to_string(),
                at,
                label: label.to_string(),
            });
        }
    }
    out
}

/// Pi's title: the latest `session_info` name (empty clears it), else the
/// first prompt.
pub fn title(f: &PiFile) -> Option<String> {
    let named = f
        .said
        .iter()
        .rev()
        .find(|s| f.kind(s.entry) == Kind::SessionInfo)
        .map(|s| s.text.as_deref().unwrap_or(""));
    if let Some(n) = named.filter(|n| !n.trim().is_empty()) {
        return Some(n.trim().to_string());
    }
    (0..f.len() as u32)
        .filter(|&i| *f.meta(i).role() == Role::User && f.kind(i) == Kind::Message)
        .take(8)
        .find_map(|i| text_of(f, i))
        .map(|t| first_chars(t.trim(), 200))
}

/// What started a branch: its summary, else its first prompt.
fn reason(f: &PiFile, own: &[u32]) -> Option<String> {
    for &i in own.iter().take(REASON_ENTRIES) {
        match f.kind(i) {
            Kind::BranchSummary => {
                let text = text_of(f, i)?;
                let summary = text.split_once('\n').map_or("", |(_, s)| s);
                return Some(format!(
                    "summary: {}",
                    first_chars(summary.trim(), PROMPT_CHARS)
                ));
            }
            _ if *f.meta(i).role() == Role::User => {
                return text_of(f, i).map(|t| first_chars(t.trim(), PROMPT_CHARS));
            }
            _ => {}
        }
    }
    None
}

fn text_of(f: &PiFile, i: u32) -> Option<String> {
    let body = super::body::load_body(&f.path, f.meta(i)).ok()?;
    let t = body.text();
    (!t.trim().is_empty()).then_some(t)
}

fn first_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}
