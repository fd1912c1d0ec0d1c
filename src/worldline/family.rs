//! Rebuilding one agent's world lines from the record lists its source
//! found (pure: indexes in, world lines out). The source says where each
//! world line leaves its parent and why; the builder checks it, names the
//! world line that wrote the fork point, and links D-Mails to the calls
//! that sent them. Given the previous snapshot's family, a world line whose
//! records only grew keeps what its old records decided and looks at the
//! new ones.

use petgraph::graph::NodeIndex;

use super::graph::RecordRef;
use crate::model::{CallKey, Marker, RecordMeta};
use crate::read::FileIndex;
use crate::sources::{LineFork, LineInfo, Pos, Times};

pub use crate::sources::ForkKind;

/// Why and where a world line left its parent.
#[derive(Debug, Clone, PartialEq)]
pub struct Fork {
    pub kind: ForkKind,
    /// For a D-Mail: the last checkpoint id inside the shared prefix.
    pub checkpoint: Option<i64>,
    /// For a D-Mail: its body.
    pub message: Option<String>,
    /// The world line that first wrote the last shared record; `None` when
    /// nothing is shared (the world line starts a new tree).
    pub origin: Option<usize>,
    /// The SendDMail call that caused a D-Mail fork; `None` for a D-Mail
    /// from outside the agent (e.g. `worldline send`).
    pub sender: Option<Sender>,
    /// For an undo: the turns undone, when the wire says.
    pub turns: Option<u32>,
    /// Where it leaves the parent, where the source says: the last wire
    /// line or entry shared with it.
    pub after: Option<Pos>,
    /// The fork point was inferred (Kimi Code ≤ 0.42 wires), not recorded.
    pub inferred: bool,
}

impl Fork {
    /// `undo of 2 turns after line 54 (inferred)`: an undo fork in words.
    pub fn undo_summary(&self) -> String {
        let turns = match self.turns {
            Some(1) => " of 1 turn".to_string(),
            Some(n) => format!(" of {n} turns"),
            None => String::new(),
        };
        let at = self
            .after
            .as_ref()
            .and_then(|p| p.line)
            .map(|n| format!(" after line {n}"))
            .unwrap_or_default();
        let how = if self.inferred { " (inferred)" } else { "" };
        format!("undo{turns}{at}{how}")
    }

    /// Where a D-Mail went back to: `⚑3` (a checkpoint), `1 turn back`
    /// (a server that undoes turns), `⚑?` when unknown.
    pub fn dmail_back(&self) -> String {
        crate::worldline::family::back_name(self.checkpoint, self.turns)
    }
}

/// [`Fork::dmail_back`] from its parts.
pub fn back_name(checkpoint: Option<i64>, turns: Option<u32>) -> String {
    match (checkpoint, turns) {
        (Some(c), _) => format!("⚑{c}"),
        (None, Some(1)) => "1 turn back".to_string(),
        (None, Some(n)) => format!("{n} turns back"),
        (None, None) => "⚑?".to_string(),
    }
}

/// The tool call that sent a D-Mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    /// The assistant record holding the call.
    pub call: RecordRef,
    pub tool_call_id: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WorldLine {
    /// Position in the family, oldest first.
    pub index: usize,
    /// File name relative to the session dir; for a branch inside a file
    /// (Kimi Code), its label `branch <name>`.
    pub file: String,
    /// The branch name, for world lines that are branches inside one file.
    pub branch: Option<String>,
    pub parent: Option<usize>,
    pub fork: Option<Fork>,
    /// Records shared with the parent (the fork point is the last of them);
    /// records from here on are its own.
    pub shared: usize,
    /// Its segment (own records) in the session graph.
    pub node: NodeIndex,
    /// When its own records were written, where known.
    pub times: Times,
    /// The newest world line: what the model sees now.
    pub current: bool,
    /// Tree-shaped formats: the id of its last entry (Claude Code's uuid,
    /// Pi's 8-hex id, a Codex ordinal), as the source names it.
    pub leaf: Option<String>,
}

/// A SendDMail call and what DenwaRenji said to it.
#[derive(Debug, Clone, PartialEq)]
pub struct DMailAttempt {
    pub call: RecordRef,
    pub tool_call_id: String,
    pub checkpoint_id: i64,
    pub message: String,
    /// `None` while the tool result hasn't been written.
    pub accepted: Option<bool>,
    pub error: Option<String>,
    /// The world line this D-Mail created, once the revert happened.
    pub caused: Option<usize>,
    /// Set when the call's arguments could not be read as `{message,
    /// checkpoint_id}` (kimi-cli refuses such a call before DenwaRenji sees
    /// it); `checkpoint_id` is then -1 and `message` empty.
    pub arguments_error: Option<String>,
}

/// What a SendDMail call with unreadable arguments is recorded with.
pub const UNREADABLE_DMAIL_ARGUMENTS: &str =
    "the arguments are not a JSON object with a string \"message\" and an integer \"checkpoint_id\"";

/// One agent's files, world lines and D-Mail attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub agent: usize,
    pub files: Vec<FileIndex>,
    pub lines: Vec<WorldLine>,
    pub attempts: Vec<DMailAttempt>,
    /// Per world line, its own Agent/Task calls: (record, tool call id).
    pub agent_calls: Vec<Vec<(usize, String)>>,
}

impl Family {
    pub fn record(&self, r: RecordRef) -> Option<&RecordMeta> {
        self.files.get(r.line)?.records.get(r.record)
    }

    /// Records in world line `line` (shared prefix included).
    pub fn line_len(&self, line: usize) -> usize {
        self.files.get(line).map_or(0, |f| f.records.len())
    }

    /// The world line that wrote record `record` of world line `line`, and
    /// where: records before a world line's `shared` are its parent's at
    /// the same index.
    pub fn owner(&self, line: usize, record: usize) -> Option<RecordRef> {
        if record >= self.line_len(line) {
            return None;
        }
        Some(RecordRef {
            agent: self.agent,
            line: owner_line(&self.lines, line, record)?,
            record,
        })
    }

    /// `r` named by the world line that wrote it.
    pub fn owner_of(&self, r: RecordRef) -> Option<RecordRef> {
        self.owner(r.line, r.record)
    }

    /// The last record world line `line` shares with its parent (its fork
    /// point), by owner.
    pub fn fork_record(&self, line: usize) -> Option<RecordRef> {
        let shared = self.lines.get(line)?.shared;
        self.owner(line, shared.checked_sub(1)?)
    }

    /// The last record of world line `line`, by owner.
    pub fn last_record(&self, line: usize) -> Option<RecordRef> {
        self.owner(line, self.line_len(line).checked_sub(1)?)
    }

    /// The time of record `r` (by owner).
    pub fn time(&self, r: RecordRef) -> Option<f64> {
        let o = self.owner_of(r)?;
        self.lines[o.line].times.at(o.record)
    }

    /// Index of the world line whose file is `name`.
    pub fn line_by_file(&self, name: &str) -> Option<usize> {
        self.lines.iter().position(|l| l.file == name)
    }
}

/// The world line among `line` and its ancestors whose own part holds
/// `record` (which world line `line` has).
fn owner_line(lines: &[WorldLine], mut line: usize, record: usize) -> Option<usize> {
    loop {
        let l = lines.get(line)?;
        if record >= l.shared {
            return Some(line);
        }
        line = l.parent?;
    }
}

/// Builds one family's world lines. `forks[i]` says how world line `i`
/// leaves its parent (missing: a root), `stated[i]` why and what it is
/// called ([`apply_stated`]), `current` which one the agent sees now. `prev`: the same agent's
/// family in the previous snapshot, whose records these extend where
/// [`crate::read::Records::extends`] says so; what only depends on records
/// it already had is taken from it.
pub fn build_family(
    agent: usize,
    files: Vec<FileIndex>,
    forks: &[LineFork],
    stated: &[LineInfo],
    current: Option<usize>,
    prev: Option<&Family>,
) -> Family {
    let prev = prev.filter(|p| p.agent == agent && p.files.len() == p.lines.len());
    // Per world line: its length in `prev`, when its records only grew.
    let grown: Vec<Option<usize>> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let old = prev?.files.get(i)?;
            f.records.extends(&old.records).then_some(old.records.len())
        })
        .collect();
    let mut lines: Vec<WorldLine> = Vec::with_capacity(files.len());
    for (i, file) in files.iter().enumerate() {
        let (parent, shared) = LineFork::checked(forks, &files, i);
        let origin = match (parent, shared.checked_sub(1)) {
            (Some(p), Some(last)) => owner_line(&lines, p, last),
            _ => None,
        };
        let fork = parent.map(|_| {
            let info = stated.get(i);
            let sf = info.and_then(|l| l.fork.clone()).unwrap_or_default();
            // A D-Mail goes back to the last checkpoint both hold: the same
            // while its shared records are (they only grew past them).
            let checkpoint = (sf.kind == ForkKind::Dmail)
                .then(|| {
                    let kept = prev
                        .and_then(|p| p.lines.get(i))
                        .filter(|w| grown[i].is_some() && w.shared == shared)
                        .and_then(|w| w.fork.as_ref())
                        .filter(|f| f.kind == ForkKind::Dmail);
                    match kept {
                        Some(f) => f.checkpoint,
                        None => file
                            .records
                            .range(..shared)
                            .rev()
                            .find_map(|r| r.checkpoint()),
                    }
                })
                .flatten();
            Fork {
                kind: sf.kind,
                checkpoint,
                message: info.and_then(|l| l.prompt.clone()),
                origin: sf.origin.or(origin),
                sender: None,
                turns: sf.turns,
                after: sf.after.clone(),
                inferred: sf.inferred,
            }
        });
        lines.push(WorldLine {
            index: i,
            file: file.name.clone(),
            branch: None,
            parent,
            fork,
            shared,
            node: NodeIndex::end(),
            times: Times::default(),
            current: i + 1 == files.len(),
            leaf: None,
        });
    }
    let mut family = Family {
        agent,
        files,
        lines,
        attempts: Vec::new(),
        agent_calls: Vec::new(),
    };
    apply_stated(&mut family, stated, current);
    // Per world line: its length in `prev` when its own part only grew.
    let own_grown: Vec<Option<usize>> = (0..family.lines.len())
        .map(|i| {
            let w = prev?.lines.get(i)?;
            grown[i].filter(|_| w.shared == family.lines[i].shared)
        })
        .collect();
    link_senders(&mut family, prev, &grown);
    (family.attempts, family.agent_calls) = collect_calls(&family, prev, &own_grown);
    family
}

/// Names world lines as the source states them, and marks the one the
/// agent sees now.
fn apply_stated(family: &mut Family, stated: &[LineInfo], current: Option<usize>) {
    for (l, info) in family.lines.iter_mut().zip(stated) {
        l.file = info.label.clone();
        l.branch = info.branch.clone();
        l.leaf = info.leaf.clone();
    }
    if let Some(c) = current.filter(|&c| c < family.lines.len()) {
        for (i, l) in family.lines.iter_mut().enumerate() {
            l.current = i == c;
        }
    }
}

/// Links each D-Mail fork to the SendDMail call in the abandoned world line:
/// the last accepted call with the same checkpoint and message. Kept from
/// `prev` when the fork and its parent's records are unchanged.
fn link_senders(family: &mut Family, prev: Option<&Family>, grown: &[Option<usize>]) {
    for i in 1..family.lines.len() {
        let Some(fork) = &family.lines[i].fork else {
            continue;
        };
        let (Some(cp), Some(msg)) = (fork.checkpoint, fork.message.as_ref()) else {
            continue;
        };
        let Some(parent) = family.lines[i].parent else {
            continue;
        };
        let pfile = &family.files[parent];
        let kept = prev.and_then(|p| {
            let w = p.lines.get(i).filter(|_| grown[i].is_some())?;
            let wf = w.fork.as_ref()?;
            let same = w.parent == Some(parent)
                && w.shared == family.lines[i].shared
                && wf.checkpoint == Some(cp)
                && wf.message.as_ref() == Some(msg)
                && grown[parent] == Some(pfile.records.len());
            same.then(|| {
                wf.sender
                    .as_ref()
                    .map(|s| (s.call.record, s.tool_call_id.clone()))
            })
        });
        let sender = match kept {
            Some(s) => s,
            None => pfile.records.iter().enumerate().rev().find_map(|(r, rec)| {
                rec.tool_calls().iter().find_map(|call| {
                    let args = call.dmail()?;
                    let refused = matches!(result_of(pfile, r, call.key()), Some(Err(_)));
                    (args.checkpoint_id == cp && &args.message == msg && !refused)
                        .then(|| (r, call.id().unwrap_or_default().to_string()))
                })
            }),
        };
        let Some((r, tool_call_id)) = sender else {
            continue;
        };
        let Some(call) = family.owner(parent, r) else {
            continue;
        };
        if let Some(f) = family.lines[i].fork.as_mut() {
            f.sender = Some(Sender { call, tool_call_id });
        }
    }
}

/// The SendDMail result for `call_id`, searched after the call in its file.
fn result_of(file: &FileIndex, from: usize, call_id: CallKey) -> Option<Result<(), String>> {
    file.records.range(from..).find_map(|rec| {
        if !rec.answers(call_id) {
            return None;
        }
        match rec.marker().as_deref() {
            Some(Marker::DMailResult(res)) => Some(res.clone()),
            _ => Some(Err("unrecognised SendDMail result".to_string())),
        }
    })
}

/// Every SendDMail call, once, and each world line's own Agent/Task
/// calls, in one pass over the records. SendDMail calls are listed where
/// they were first written. A world line whose own part only grew since
/// `prev` keeps its attempts and calls, looks for the results still
/// missing in its new records, and reads only those for new calls.
fn collect_calls(
    family: &Family,
    prev: Option<&Family>,
    own_grown: &[Option<usize>],
) -> (Vec<DMailAttempt>, Vec<Vec<(usize, String)>>) {
    let mut out = Vec::new();
    let mut agent_calls = Vec::with_capacity(family.files.len());
    let old: &[DMailAttempt] = prev.map_or(&[], |p| &p.attempts);
    let mut k = 0;
    for (i, file) in family.files.iter().enumerate() {
        let shared = family.lines[i].shared;
        let mut from = shared;
        while k < old.len() && old[k].call.line < i {
            k += 1;
        }
        if let Some(n) = own_grown[i] {
            while k < old.len() && old[k].call.line == i {
                let mut a = old[k].clone();
                if a.accepted.is_none() {
                    // D-Mail call ids are kept as text (`keeps_call_id`).
                    let key = CallKey::of(&a.tool_call_id);
                    if let Some(res) = result_of(file, n.max(a.call.record), key) {
                        a.accepted = Some(res.is_ok());
                        a.error = res.err();
                    }
                }
                out.push(a);
                k += 1;
            }
            from = from.max(n);
        }
        let kept = own_grown[i].and_then(|n| Some((n, prev?.agent_calls.get(i)?)));
        let (mut calls, calls_from) = match kept {
            Some((n, old)) => (old.clone(), n.max(shared)),
            None => (Vec::new(), shared),
        };
        for (r, rec) in file.records.iter().enumerate().skip(from.min(calls_from)) {
            for call in &rec.tool_calls() {
                if r >= calls_from && AGENT_TOOLS.contains(&call.name()) {
                    calls.push((r, call.id().unwrap_or_default().to_string()));
                }
                if r < from {
                    continue;
                }
                let (checkpoint_id, message, arguments_error) = match call.dmail() {
                    Some(args) => (args.checkpoint_id, args.message.clone(), None),
                    None if call.name() == "SendDMail" => (
                        -1,
                        String::new(),
                        Some(UNREADABLE_DMAIL_ARGUMENTS.to_string()),
                    ),
                    None => continue,
                };
                let result = result_of(file, r, call.key());
                out.push(DMailAttempt {
                    call: RecordRef {
                        agent: family.agent,
                        line: i,
                        record: r,
                    },
                    tool_call_id: call.id().unwrap_or_default().to_string(),
                    checkpoint_id,
                    message,
                    accepted: result.as_ref().map(|r| r.is_ok()),
                    error: result.and_then(|r| r.err()),
                    caused: None,
                    arguments_error,
                });
            }
        }
        agent_calls.push(calls);
    }
    let causes: Vec<(&Sender, usize)> = family
        .lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| Some((l.fork.as_ref()?.sender.as_ref()?, i)))
        .collect();
    for a in &mut out {
        a.caused = causes
            .iter()
            .find(|(s, _)| s.call == a.call && s.tool_call_id == a.tool_call_id)
            .map(|&(_, i)| i);
    }
    (out, agent_calls)
}

/// Tool names that start a subagent (`Task` until kimi-cli 1.24).
pub const AGENT_TOOLS: [&str; 2] = ["Agent", "Task"];
