//! The row model of one agent: one row per record, in the order records were
//! written (world line 0's records, then each later world line's own records
//! after its shared prefix). Row ↔ record mapping is O(log world lines); the
//! filter keeps a list of visible rows, built from the index only (no bodies).

use std::cell::OnceCell;

use crate::model::{Marker, RecordMeta, Role};
use crate::worldline::{Family, RecordRef, Session};

use super::layout::{Lanes, Span};

/// Which rows show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RoleFilter {
    #[default]
    All,
    User,
    Assistant,
    Tool,
    Checkpoints,
    /// Assistant records calling this tool and the tool results answering it.
    ToolName(String),
}

impl RoleFilter {
    pub fn label(&self) -> String {
        match self {
            RoleFilter::All => "all".into(),
            RoleFilter::User => "user".into(),
            RoleFilter::Assistant => "assistant".into(),
            RoleFilter::Tool => "tool".into(),
            RoleFilter::Checkpoints => "checkpoints".into(),
            RoleFilter::ToolName(n) => format!("tool {}", crate::text::sanitize_line(n, 24)),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub role: RoleFilter,
    /// Only checkpoints (one row per step).
    pub collapse: bool,
}

impl Filter {
    pub fn is_all(&self) -> bool {
        self.role == RoleFilter::All && !self.collapse
    }
}

#[derive(Debug, Clone)]
pub struct RowModel {
    pub agent: usize,
    /// First row of each world line's own records.
    starts: Vec<usize>,
    /// Records each world line shares with its parent.
    shared: Vec<usize>,
    pub total: usize,
    pub lanes: Lanes,
    /// Visible rows when a filter is on; `None` shows every row.
    visible: Option<Vec<u32>>,
    /// Tool names in first-use order, for the tool filter. Walking every
    /// record costs tens of ms at a million records, so it is done on the
    /// first `f` press instead of on every snapshot.
    tools: OnceCell<Vec<String>>,
    /// Rows `]`/`[` jump to, sorted; computed on the first jump of this
    /// model (a model lives until the next snapshot or filter change).
    marks: OnceCell<Vec<usize>>,
}

impl RowModel {
    pub fn build(session: &Session, agent: usize, filter: &Filter) -> RowModel {
        let Some(a) = session.agents.get(agent) else {
            return RowModel::empty(agent);
        };
        let family = &a.family;
        let mut starts = Vec::with_capacity(family.lines.len());
        let mut shared = Vec::with_capacity(family.lines.len());
        let mut total = 0;
        for (i, line) in family.lines.iter().enumerate() {
            starts.push(total);
            shared.push(line.shared);
            total += family.files[i].records.len().saturating_sub(line.shared);
        }
        let mut m = RowModel {
            agent,
            starts,
            shared,
            total,
            lanes: Lanes::default(),
            visible: None,
            tools: OnceCell::new(),
            marks: OnceCell::new(),
        };
        let spans = family
            .lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                let start = m.starts[i];
                let end = m.starts.get(i + 1).copied().unwrap_or(total);
                let fork_row = line
                    .shared
                    .checked_sub(1)
                    .and_then(|last| line.nodes.get(last))
                    .and_then(|&n| m.row_of(session.graph[n].owner));
                let origin = fork_row.and_then(|r| m.line_of(r));
                Span {
                    fork_row,
                    origin,
                    start,
                    end,
                }
            })
            .collect();
        m.lanes = Lanes::assign(spans);
        m.set_filter(family, filter);
        m
    }

    pub fn empty(agent: usize) -> RowModel {
        RowModel {
            agent,
            starts: Vec::new(),
            shared: Vec::new(),
            total: 0,
            lanes: Lanes::default(),
            visible: None,
            tools: OnceCell::new(),
            marks: OnceCell::new(),
        }
    }

    /// Tool names of `family` (the model's own) in first-use order.
    pub fn tools(&self, family: &Family) -> &[String] {
        self.tools.get_or_init(|| {
            let mut tools: Vec<String> = Vec::new();
            for file in &family.files {
                for rec in &file.records {
                    for c in &rec.tool_calls {
                        if !tools.contains(&c.name) {
                            tools.push(c.name.clone());
                        }
                    }
                }
            }
            tools
        })
    }

    /// Rows worth jumping to, sorted: fork points, each world line's first
    /// own record (but the first line's), D-Mail calls and injections.
    pub fn marks(&self, family: &Family) -> &[usize] {
        self.marks.get_or_init(|| {
            let mut out: Vec<usize> = self.fork_rows().collect();
            for l in 1..family.lines.len() {
                let r = self.line_rows(l);
                if !r.is_empty() {
                    out.push(r.start);
                }
            }
            out.extend(family.attempts.iter().filter_map(|a| self.row_of(a.call)));
            for (li, file) in family.files.iter().enumerate() {
                let skip = family.lines.get(li).map_or(0, |l| l.shared);
                for (i, rec) in file.records.iter().enumerate().skip(skip) {
                    if matches!(rec.marker.as_deref(), Some(Marker::DMailInjection(_))) {
                        out.extend(self.row_of(RecordRef {
                            agent: self.agent,
                            line: li,
                            record: i,
                        }));
                    }
                }
            }
            out.sort_unstable();
            out.dedup();
            out
        })
    }

    /// World line owning `row`.
    pub fn line_of(&self, row: usize) -> Option<usize> {
        if row >= self.total {
            return None;
        }
        // The last line starting at or before `row` is the non-empty one.
        self.starts.partition_point(|&s| s <= row).checked_sub(1)
    }

    pub fn record_of(&self, row: usize) -> Option<RecordRef> {
        let line = self.line_of(row)?;
        Some(RecordRef {
            agent: self.agent,
            line,
            record: row - self.starts[line] + self.shared[line],
        })
    }

    /// Row of a record given by its owner (the world line that wrote it).
    pub fn row_of(&self, r: RecordRef) -> Option<usize> {
        let shared = *self.shared.get(r.line)?;
        let row = self.starts[r.line] + r.record.checked_sub(shared)?;
        (row < self.total && self.line_of(row) == Some(r.line)).then_some(row)
    }

    /// Rows of world line `line` (its own records).
    pub fn line_rows(&self, line: usize) -> std::ops::Range<usize> {
        let start = self.starts.get(line).copied().unwrap_or(self.total);
        let end = self.starts.get(line + 1).copied().unwrap_or(self.total);
        start..end.max(start)
    }

    pub fn fork_rows(&self) -> impl Iterator<Item = usize> + '_ {
        self.lanes.spans.iter().filter_map(|s| s.fork_row)
    }

    pub fn set_filter(&mut self, family: &Family, filter: &Filter) {
        if filter.is_all() {
            self.visible = None;
            return;
        }
        // Fork points and each line's first and last rows keep the graph
        // readable whatever the filter hides.
        let mut keep_always = vec![false; self.total];
        for r in self.fork_rows().collect::<Vec<_>>() {
            if let Some(k) = keep_always.get_mut(r) {
                *k = true;
            }
        }
        for line in 0..self.starts.len() {
            let rows = self.line_rows(line);
            if !rows.is_empty() {
                keep_always[rows.start] = true;
                keep_always[rows.end - 1] = true;
            }
        }
        let mut visible = Vec::new();
        for (row, keep) in keep_always.iter().enumerate() {
            let Some(r) = self.record_of(row) else {
                continue;
            };
            let Some(meta) = family.record(r) else {
                continue;
            };
            if *keep || is_dmail(meta) || matches(meta, family, r, filter) {
                visible.push(row as u32);
            }
        }
        self.visible = Some(visible);
    }

    /// Number of visible rows.
    pub fn len(&self) -> usize {
        self.visible.as_ref().map_or(self.total, Vec::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row at visible position `i`.
    pub fn row_at(&self, i: usize) -> Option<usize> {
        match &self.visible {
            None => (i < self.total).then_some(i),
            Some(v) => v.get(i).map(|&r| r as usize),
        }
    }

    /// Visible position of `row`, or of the nearest visible row at or
    /// before it (after it when none is before).
    pub fn position_of(&self, row: usize) -> usize {
        match &self.visible {
            None => row.min(self.total.saturating_sub(1)),
            Some(v) => {
                let p = v.partition_point(|&r| (r as usize) <= row);
                p.saturating_sub(1)
            }
        }
    }

    /// Rows hidden after visible position `i` (for collapsed rows).
    pub fn hidden_after(&self, i: usize) -> usize {
        match &self.visible {
            None => 0,
            Some(v) => {
                let here = v.get(i).map_or(0, |&r| r as usize);
                let next = v.get(i + 1).map_or(self.total, |&r| r as usize);
                next.saturating_sub(here + 1)
            }
        }
    }
}

fn is_dmail(meta: &RecordMeta) -> bool {
    meta.tool_calls.iter().any(|c| c.dmail.is_some())
        || matches!(meta.marker.as_deref(), Some(Marker::DMailInjection(_)))
}

fn matches(meta: &RecordMeta, family: &Family, r: RecordRef, filter: &Filter) -> bool {
    if filter.collapse && meta.role != Role::Checkpoint {
        return false;
    }
    match &filter.role {
        RoleFilter::All => true,
        RoleFilter::User => meta.role == Role::User,
        RoleFilter::Assistant => meta.role == Role::Assistant,
        RoleFilter::Tool => meta.role == Role::Tool,
        RoleFilter::Checkpoints => meta.role == Role::Checkpoint,
        RoleFilter::ToolName(name) => {
            meta.tool_calls.iter().any(|c| &c.name == name)
                || meta
                    .tool_call_id
                    .as_deref()
                    .is_some_and(|id| answers(family, r, id, name))
        }
    }
}

/// Does the call with `id` before `r` in its file have this tool name?
fn answers(family: &Family, r: RecordRef, id: &str, name: &str) -> bool {
    family.files.get(r.line).is_some_and(|f| {
        f.records[..r.record.min(f.records.len())]
            .iter()
            .rev()
            // Results follow their call closely; a bound keeps filtering linear.
            .take(256)
            .flat_map(|rec| rec.tool_calls.iter())
            .any(|c| c.id == id && c.name == name)
    })
}
