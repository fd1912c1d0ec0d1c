//! What one step row says (pure over the index and the preview cache): the
//! step's checkpoint, what kind of step it is, its text, its tool calls with
//! ✓/✗, its tokens and time. A step is a checkpoint up to the next one on
//! its world line (or a line's first own records before its first own
//! checkpoint).

use std::ops::Range;

use crate::model::{CallKey, Marker, RecordMeta, Role};
use crate::text::sanitize_line;
use crate::worldline::{Family, RecordRef, Session};

use super::cache::Cache;
use super::rows::RowModel;

/// How a tool call ended, as far as the step shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed,
    /// No result in this step (yet).
    Open,
}

impl Outcome {
    pub fn glyph(self) -> &'static str {
        match self {
            Outcome::Ok => "✓",
            Outcome::Failed => "✗",
            Outcome::Open => "…",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// The system prompt (before checkpoint 0).
    System,
    /// A prompt the user typed.
    User,
    /// A D-Mail's arrival.
    DMail,
    /// The summary a compaction starts with.
    Compaction,
    Assistant,
    /// Only bookkeeping so far (a step being written).
    Empty,
}

impl StepKind {
    pub fn tag(self) -> &'static str {
        match self {
            StepKind::System => "sys",
            StepKind::User => "user",
            StepKind::DMail => "✉",
            StepKind::Compaction => "⊜",
            StepKind::Assistant => "asst",
            StepKind::Empty => "·",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub rows: Range<usize>,
    /// The checkpoint the step belongs to (its own, or the last shared one).
    pub checkpoint: Option<i64>,
    pub kind: StepKind,
    /// The record whose text the row shows.
    pub lead: Option<RecordRef>,
    /// Text known from the index alone (a D-Mail's message).
    pub known_text: Option<String>,
    pub tools: Vec<(String, Outcome)>,
    pub tokens: Option<u64>,
    pub time: Option<f64>,
    /// Records in the step, bookkeeping included.
    pub records: usize,
    /// Records unfolding would show (bookkeeping excluded).
    pub content: usize,
}

/// Records a step reads for its row, at most: a step with hundreds of tool
/// calls still costs a bounded number of previews.
pub const MAX_READ: usize = 64;

/// The records of the step at `head` a row needs previews of: its lead and
/// its tool results.
pub fn wanted(fam: &Family, rows: &RowModel, head: usize) -> Vec<RecordRef> {
    let mut out = Vec::new();
    for row in rows.step_rows(head).take(MAX_READ) {
        let Some(r) = rows.record_of(row) else {
            continue;
        };
        let Some(m) = fam.record(r) else { continue };
        if matches!(
            m.role(),
            Role::Assistant | Role::Tool | Role::User | Role::System | Role::SystemPrompt
        ) && !super::rows::is_bookkeeping(m)
        {
            out.push(r);
        }
    }
    out
}

/// The record a folded step is read through: its D-Mail, prompt or first
/// assistant reply (what its row shows), else its first record.
pub fn lead(fam: &Family, rows: &RowModel, head: usize) -> Option<RecordRef> {
    let mut best: Option<(StepKind, RecordRef)> = None;
    for row in rows.step_rows(head).take(MAX_READ * 4) {
        let Some(r) = rows.record_of(row) else {
            continue;
        };
        let Some(m) = fam.record(r) else { continue };
        let k = kind_of(m);
        if best.is_none_or(|(b, _)| k.outranks(b)) {
            best = Some((k, r));
        }
    }
    best.map(|(_, r)| r)
}

pub fn summarise(s: &Session, fam: &Family, rows: &RowModel, head: usize, cache: &Cache) -> Step {
    let range = rows.step_rows(head);
    let mut step = Step {
        rows: range.clone(),
        checkpoint: None,
        kind: StepKind::Empty,
        lead: None,
        known_text: None,
        tools: Vec::new(),
        tokens: None,
        time: None,
        records: range.len(),
        content: 0,
    };
    let Some(first) = rows.record_of(range.start) else {
        return step;
    };
    // The checkpoint at or before the step's first record on its line.
    step.checkpoint = fam.files.get(first.line).and_then(|f| {
        f.records
            .range(..=first.record.min(f.records.len().saturating_sub(1)))
            .rev()
            .find_map(|r| r.checkpoint())
    });
    let mut calls: Vec<(CallKey, String)> = Vec::new();
    for row in range.clone().take(MAX_READ * 4) {
        let Some(r) = rows.record_of(row) else {
            continue;
        };
        let Some(m) = fam.record(r) else { continue };
        if step.time.is_none() && m.role().is_message() {
            step.time = s.time(r);
        }
        if let Some(t) = m.tokens() {
            step.tokens = Some(t);
        }
        if !super::rows::is_bookkeeping(m) {
            step.content += 1;
        }
        let kind = kind_of(m);
        if kind.outranks(step.kind) {
            step.kind = kind;
            step.lead = Some(r);
            step.known_text = match m.marker().as_deref() {
                Some(Marker::DMailInjection(msg)) => Some(sanitize_line(msg, 200)),
                _ => None,
            };
        }
        for c in &m.tool_calls() {
            let name = match c.dmail() {
                Some(d) => {
                    let made = fam
                        .attempts
                        .iter()
                        .find(|a| a.call == r && c.is(&a.tool_call_id))
                        .and_then(|a| a.caused)
                        .map(|k| format!("⇒{}", crate::worldline::names::line_name(k)))
                        .unwrap_or_default();
                    format!("SendDMail→⚑{}{made}", d.checkpoint_id)
                }
                None => sanitize_line(c.name(), 24),
            };
            calls.push((c.key(), name));
        }
        if let Some(id) = m.tool_call_key() {
            let failed = match m.marker().as_deref() {
                Some(Marker::DMailResult(res)) => res.is_err(),
                _ => cache.is_error(r).unwrap_or(false),
            };
            if let Some(k) = calls.iter().position(|&(cid, _)| cid == id) {
                let (_, name) = calls.remove(k);
                let outcome = if failed { Outcome::Failed } else { Outcome::Ok };
                step.tools.push((name, outcome));
            }
        }
    }
    step.tools
        .extend(calls.into_iter().map(|(_, n)| (n, Outcome::Open)));
    step
}

fn kind_of(m: &RecordMeta) -> StepKind {
    match (m.role(), m.marker().as_deref()) {
        (_, Some(Marker::DMailInjection(_))) => StepKind::DMail,
        (_, Some(Marker::Compaction)) => StepKind::Compaction,
        (_, Some(Marker::CheckpointNote(_))) => StepKind::Empty,
        (Role::SystemPrompt, _) => StepKind::System,
        (Role::User, _) => StepKind::User,
        (Role::Assistant, _) => StepKind::Assistant,
        _ => StepKind::Empty,
    }
}

impl StepKind {
    /// What a row leads with when a step holds several kinds of records:
    /// a D-Mail or a prompt stands out over the assistant's reply.
    fn outranks(self, other: StepKind) -> bool {
        let rank = |k: StepKind| match k {
            StepKind::Empty => 0,
            StepKind::System => 1,
            StepKind::Assistant => 2,
            StepKind::Compaction => 3,
            StepKind::User => 4,
            StepKind::DMail => 5,
        };
        rank(self) > rank(other)
    }
}
