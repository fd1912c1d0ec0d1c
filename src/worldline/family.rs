//! Rebuilding one agent's world lines from the record lists its source
//! found (pure: indexes in, graph out). A world line's parent is the one
//! before it and the shared prefix the longest run of equal records, unless
//! the source says where it forks; the first differing record tells why.

use petgraph::graph::NodeIndex;
use serde::Serialize;

use super::graph::{Edge, Graph, Node, NodeKind, RecordRef};
use crate::model::{CallKey, Marker, RecordMeta, Role};
use crate::read::FileIndex;
use crate::sources::{LineFork, LineInfo};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ForkKind {
    Dmail,
    Compaction,
    Clear,
    /// Kimi Code's `/undo`: a branch inside the wire.
    Undo,
    Unknown,
}

impl ForkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ForkKind::Dmail => "dmail",
            ForkKind::Compaction => "compaction",
            ForkKind::Clear => "clear",
            ForkKind::Undo => "undo",
            ForkKind::Unknown => "unknown",
        }
    }
}

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
    /// For a branch inside a wire: the last wire line shared with the parent.
    pub line: Option<u32>,
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
            .line
            .map(|n| format!(" after line {n}"))
            .unwrap_or_default();
        let how = if self.inferred { " (inferred)" } else { "" };
        format!("undo{turns}{at}{how}")
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
    /// Records shared with the parent (the fork point is the last of them).
    pub shared: usize,
    /// The graph node of each record of this file, in order.
    pub nodes: Vec<NodeIndex>,
    /// The newest world line: what the model sees now.
    pub current: bool,
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
}

impl Family {
    pub fn record(&self, r: RecordRef) -> Option<&RecordMeta> {
        self.files.get(r.line)?.records.get(r.record)
    }

    /// Index of the world line whose file is `name`.
    pub fn line_by_file(&self, name: &str) -> Option<usize> {
        self.lines.iter().position(|l| l.file == name)
    }
}

fn node_kind(r: &RecordMeta) -> NodeKind {
    match (r.role(), r.checkpoint(), r.tokens()) {
        (Role::SystemPrompt, _, _) => NodeKind::SystemPrompt,
        (Role::Checkpoint, Some(id), _) => NodeKind::Checkpoint(id),
        (Role::Usage, _, Some(t)) => NodeKind::Usage(t),
        (role, _, _) => NodeKind::Message(role.clone()),
    }
}

/// Builds one family's world lines into `graph`.
/// `forks[i]` says how world line `i` leaves its parent (missing: infer).
pub fn build_family(
    agent: usize,
    files: Vec<FileIndex>,
    forks: &[LineFork],
    graph: &mut Graph,
) -> Family {
    let mut lines: Vec<WorldLine> = Vec::with_capacity(files.len());
    for (i, file) in files.iter().enumerate() {
        let (parent, shared) = match forks.get(i).copied().unwrap_or_default() {
            LineFork::Infer => match i.checked_sub(1) {
                Some(p) => (Some(p), shared_prefix_of_files(&files[p], file)),
                None => (None, 0),
            },
            // A source's word is checked against what it hands over: a
            // parent must come first, and the shared part exist in both.
            LineFork::Explicit { parent, shared } if parent < i => {
                let most = files[parent].records.len().min(file.records.len());
                (Some(parent), shared.min(most))
            }
            LineFork::Explicit { .. } | LineFork::Root => (None, 0),
        };
        let mut nodes: Vec<NodeIndex> = Vec::with_capacity(file.records.len());
        if let Some(p) = parent {
            nodes.extend_from_slice(&lines[p].nodes[..shared]);
        }
        for (r, rec) in file.records.iter().enumerate().skip(shared) {
            let n = graph.add_node(Node {
                owner: RecordRef {
                    agent,
                    line: i,
                    record: r,
                },
                kind: node_kind(rec),
                time: None,
            });
            if let Some(&prev) = nodes.last() {
                let edge = if r == shared && parent.is_some() {
                    Edge::Fork
                } else {
                    Edge::Next
                };
                graph.add_edge(prev, n, edge);
            }
            nodes.push(n);
        }
        let fork = parent.map(|p| classify(&files[p], file, shared, &nodes, graph));
        lines.push(WorldLine {
            index: i,
            file: file.name.clone(),
            branch: None,
            parent,
            fork,
            shared,
            nodes,
            current: i + 1 == files.len(),
        });
    }
    let mut family = Family {
        agent,
        files,
        lines,
        attempts: Vec::new(),
    };
    link_senders(&mut family, graph);
    family.attempts = collect_attempts(&family, graph);
    family
}

/// Names world lines and their forks as the source states them (Kimi
/// Code's branches), and marks the one the agent sees now.
pub fn apply_stated(family: &mut Family, stated: &[LineInfo], current: Option<usize>) {
    for (l, info) in family.lines.iter_mut().zip(stated) {
        l.file = info.label.clone();
        l.branch = info.branch.clone();
        if let (Some(fork), Some(sf)) = (l.fork.as_mut(), info.fork) {
            fork.kind = if sf.undo {
                ForkKind::Undo
            } else {
                ForkKind::Unknown
            };
            fork.line = sf.line;
            fork.turns = sf.turns;
            fork.inferred = sf.inferred;
            fork.origin = sf.origin.or(fork.origin);
        }
    }
    if let Some(c) = current.filter(|&c| c < family.lines.len()) {
        for (i, l) in family.lines.iter_mut().enumerate() {
            l.current = i == c;
        }
    }
}

pub use crate::model::shared_prefix;

/// [`shared_prefix`], where two records whose text differs still count as
/// shared when kimi-cli's Python reads them as the same value (it rewrites
/// `_checkpoint c`, and a record with a repeated key is not the same text
/// once rewritten).
pub fn shared_prefix_of_files(old: &FileIndex, new: &FileIndex) -> usize {
    let mut n = 0;
    loop {
        n += shared_prefix(&old.records[n..], &new.records[n..]);
        if n < old.records.len()
            && n < new.records.len()
            && crate::read::same_record_on_disk(old, n, new, n)
        {
            n += 1;
        } else {
            return n;
        }
    }
}

fn classify(
    parent: &FileIndex,
    file: &FileIndex,
    shared: usize,
    nodes: &[NodeIndex],
    g: &Graph,
) -> Fork {
    let origin = shared
        .checked_sub(1)
        .and_then(|last| nodes.get(last))
        .map(|&n| g[n].owner.line);
    let prefix = &file.records[..shared];
    let first = file.records.get(shared);
    let mut fork = Fork {
        kind: ForkKind::Unknown,
        checkpoint: None,
        message: None,
        origin,
        sender: None,
        turns: None,
        line: None,
        inferred: false,
    };
    match first.and_then(|r| r.marker()).as_deref() {
        Some(Marker::DMailInjection(message)) => {
            fork.kind = ForkKind::Dmail;
            fork.checkpoint = prefix.iter().rev().find_map(|r| r.checkpoint());
            fork.message = Some(message.clone());
        }
        Some(Marker::Compaction) => fork.kind = ForkKind::Compaction,
        _ if looks_cleared(prefix, first, parent) => fork.kind = ForkKind::Clear,
        _ => {}
    }
    fork
}

/// After `/clear` a file starts empty and the next turn writes the system
/// prompt and checkpoint 0 again: at most those are shared by text.
fn looks_cleared(prefix: &[RecordMeta], first: Option<&RecordMeta>, parent: &FileIndex) -> bool {
    let only_preamble = prefix
        .iter()
        .all(|r| match (r.role(), r.marker().as_deref()) {
            (Role::SystemPrompt, _) => true,
            (Role::Checkpoint, _) => r.checkpoint() == Some(0),
            (Role::User, Some(Marker::CheckpointNote(0))) => true,
            _ => false,
        });
    // A file identical to its parent so far (still being written) has not
    // diverged yet, so it is not a clear.
    let diverged = first.is_some() || prefix.len() < parent.records.len();
    only_preamble && diverged
}

/// Links each D-Mail fork to the SendDMail call in the abandoned world line:
/// the last accepted call with the same checkpoint and message.
fn link_senders(family: &mut Family, g: &mut Graph) {
    for i in 1..family.lines.len() {
        let Some(fork) = family.lines[i].fork.clone() else {
            continue;
        };
        let (Some(cp), Some(msg)) = (fork.checkpoint, fork.message.as_ref()) else {
            continue;
        };
        let Some(parent) = family.lines[i].parent else {
            continue;
        };
        let pfile = &family.files[parent];
        let sender = pfile.records.iter().enumerate().rev().find_map(|(r, rec)| {
            rec.tool_calls().iter().find_map(|call| {
                let args = call.dmail()?;
                let refused = matches!(result_of(pfile, r, call.key()), Some(Err(_)));
                (args.checkpoint_id == cp && &args.message == msg && !refused)
                    .then(|| (r, call.id().unwrap_or_default().to_string()))
            })
        });
        let Some((r, tool_call_id)) = sender else {
            continue;
        };
        let sender_node = family.lines[parent].nodes[r];
        let sender_ref = g[sender_node].owner;
        if let Some(&injection) = family.lines[i].nodes.get(family.lines[i].shared) {
            g.add_edge(sender_node, injection, Edge::DMail);
        }
        if let Some(f) = family.lines[i].fork.as_mut() {
            f.sender = Some(Sender {
                call: sender_ref,
                tool_call_id,
            });
        }
    }
}

/// The SendDMail result for `call_id`, searched after the call in its file.
fn result_of(file: &FileIndex, from: usize, call_id: CallKey) -> Option<Result<(), String>> {
    file.records[from..].iter().find_map(|rec| {
        if !rec.answers(call_id) {
            return None;
        }
        match rec.marker().as_deref() {
            Some(Marker::DMailResult(res)) => Some(res.clone()),
            _ => Some(Err("unrecognised SendDMail result".to_string())),
        }
    })
}

/// Every SendDMail call, once: calls are listed where they were first written.
fn collect_attempts(family: &Family, g: &Graph) -> Vec<DMailAttempt> {
    let mut out = Vec::new();
    for (i, file) in family.files.iter().enumerate() {
        for (r, rec) in file.records.iter().enumerate() {
            if g[family.lines[i].nodes[r]].owner.line != i {
                continue;
            }
            for call in &rec.tool_calls() {
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
                let call_ref = RecordRef {
                    agent: family.agent,
                    line: i,
                    record: r,
                };
                let caused = family.lines.iter().position(|l| {
                    l.fork
                        .as_ref()
                        .and_then(|f| f.sender.as_ref())
                        .is_some_and(|s| s.call == call_ref && call.is(&s.tool_call_id))
                });
                out.push(DMailAttempt {
                    call: call_ref,
                    tool_call_id: call.id().unwrap_or_default().to_string(),
                    checkpoint_id,
                    message,
                    accepted: result.as_ref().map(|r| r.is_ok()),
                    error: result.and_then(|r| r.err()),
                    caused,
                    arguments_error,
                });
            }
        }
    }
    out
}
