//! The row model of one agent. Rows are records in written order (world
//! line 0's records, then each later world line's own records after its
//! shared prefix, see `worldline::map::Order`). By default one drawn row
//! stands for a *step* (a checkpoint up to the next one); an unfolded step
//! shows its records below it; bookkeeping (checkpoints, their notes,
//! `_usage`) is never a row of its own unless every record is asked for.
//! Row ↔ record mapping is O(log world lines); the visible list is built
//! from the index only (no bodies).

use std::cell::OnceCell;
use std::collections::BTreeSet;
use std::ops::Range;

use crate::model::{CallKey, Marker, RecordMeta, Role};
use crate::worldline::map::{Appended, Order, StepMark};
use crate::worldline::{Family, RecordRef, Session};

use super::layout::{Lanes, Span};

/// Which records show when not one row per step.
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
    /// Every record, bookkeeping included, one row each (instead of steps).
    pub every: bool,
    /// Steps shown with their records below them (by their head record).
    pub unfolded: BTreeSet<RecordRef>,
}

impl Filter {
    /// One row per step: the default view.
    pub fn steps(&self) -> bool {
        self.role == RoleFilter::All && !self.every
    }

    /// Nothing hidden.
    pub fn is_all(&self) -> bool {
        self.role == RoleFilter::All && self.every
    }
}

/// kimi-cli's bookkeeping: folded into the step row, not a row of its own.
pub fn is_bookkeeping(meta: &RecordMeta) -> bool {
    matches!(meta.role(), Role::Checkpoint | Role::Usage)
        || matches!(meta.marker().as_deref(), Some(Marker::CheckpointNote(_)))
}

#[derive(Debug, Clone, PartialEq)]
pub struct RowModel {
    pub agent: usize,
    order: Order,
    /// What opens a step in this agent (kept so a snapshot that only
    /// appends reads only the new records).
    pub mark: StepMark,
    pub total: usize,
    pub lanes: Lanes,
    /// First row of every step, sorted: each checkpoint a line wrote and
    /// each line's first own row.
    steps: Vec<usize>,
    /// Drawn rows stand for steps.
    pub step_view: bool,
    /// Visible rows when some are hidden; `None` shows every row.
    visible: Option<Vec<u32>>,
    /// Tool names in first-use order with their calls, for the filter
    /// menu. Walking every record costs tens of ms at a million records, so
    /// it is done on the first `f` press instead of on every snapshot.
    tools: OnceCell<Vec<(String, usize)>>,
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
        let order = Order::of(family);
        let total = order.total;
        let mut m = RowModel {
            agent,
            order,
            mark: StepMark::of(family),
            total,
            lanes: Lanes::default(),
            steps: Vec::new(),
            step_view: false,
            visible: None,
            tools: OnceCell::new(),
            marks: OnceCell::new(),
        };
        m.lanes = Lanes::assign(m.spans(family));
        for (i, line) in family.lines.iter().enumerate() {
            let own = m.order.own(i);
            if own.is_empty() {
                continue;
            }
            m.steps.push(own.start);
            m.push_steps(family, i, line.shared + 1..usize::MAX);
        }
        m.set_filter(family, filter);
        m
    }

    /// Where each world line sits in row space (its fork row and own rows).
    fn spans(&self, family: &Family) -> Vec<Span> {
        family
            .lines
            .iter()
            .enumerate()
            .map(|(i, _)| {
                let own = self.order.own(i);
                let fork_row = family.fork_record(i).and_then(|o| self.row_of(o));
                let origin = fork_row.and_then(|r| self.line_of(r));
                Span {
                    fork_row,
                    origin,
                    start: own.start,
                    end: own.end,
                }
            })
            .collect()
    }

    /// The steps that records `records` of line `i` open (past its first
    /// own record, which always starts one).
    fn push_steps(&mut self, family: &Family, i: usize, records: Range<usize>) {
        let Some(file) = family.files.get(i) else {
            return;
        };
        let end = records.end.min(file.records.len());
        for k in records.start..end {
            if self.mark.opens(&file.records[k]) {
                self.steps.extend(self.order.x_of(i, k));
            }
        }
    }

    /// Brings a model of the previous snapshot up to `session`, whose
    /// family grew as `grown` (`Appended::between`): only the appended
    /// records are read, and the model equals `build` on `session`. False
    /// (the model untouched) when the appended records change what opens
    /// a step: the caller rebuilds.
    pub fn extend(&mut self, session: &Session, grown: Appended, filter: &Filter) -> bool {
        let Some(family) = session.agents.get(self.agent).map(|a| &a.family) else {
            return false;
        };
        let Some(line) = family.lines.get(grown.line) else {
            return false;
        };
        let lines = self.order.lines() + usize::from(grown.added);
        if self.mark.after(family, grown) != self.mark || lines != family.lines.len() {
            return false;
        }
        let old_total = self.total;
        let old_own = self.order.own(grown.line);
        let old_steps = self.steps.len();
        self.order = Order::of(family);
        self.total = self.order.total;
        self.lanes = Lanes::assign(self.spans(family));
        let own = self.order.own(grown.line);
        if old_own.is_empty() && !own.is_empty() {
            self.steps.push(own.start);
        }
        let new = grown.own_range(family);
        self.push_steps(family, grown.line, new.start.max(line.shared + 1)..new.end);
        // Rows from the first one whose look may change: the old last step
        // (it may have grown), or in a filtered list the old last row (no
        // longer its line's last, which is always kept).
        if self.step_view {
            let from = match old_own.is_empty() {
                true => old_steps,
                false => self
                    .steps
                    .partition_point(|&s| s < old_total)
                    .saturating_sub(1),
            };
            if let (Some(v), Some(&head)) = (self.visible.as_mut(), self.steps.get(from)) {
                v.truncate(v.partition_point(|&r| (r as usize) < head));
                let mut v = self.visible.take().unwrap_or_default();
                self.push_visible_steps(family, filter, from, &mut v);
                self.visible = Some(v);
            }
        } else if let Some(mut v) = self.visible.take() {
            let from = if old_own.is_empty() {
                old_total
            } else {
                old_own.end - 1
            };
            v.truncate(v.partition_point(|&r| (r as usize) < from));
            self.push_filtered(family, filter, from..self.total, &mut v);
            // A new line's fork point, an old row, is now always shown.
            if let Some(r) = self.new_fork_row(grown).filter(|&r| r < from) {
                let keep = self
                    .record_of(r)
                    .and_then(|rec| family.record(rec))
                    .is_some_and(|m| !is_bookkeeping(m));
                if let (true, Err(at)) = (keep, v.binary_search(&(r as u32))) {
                    v.insert(at, r as u32);
                }
            }
            self.visible = Some(v);
        }
        if let Some(tools) = self.tools.get_mut() {
            if let Some(file) = family.files.get(grown.line) {
                count_tools(tools, file.records.range(new.clone()));
            }
        }
        let added = self.new_marks(family, grown, old_total);
        if let Some(marks) = self.marks.get_mut() {
            // Rows before the old end kept their marks; new ones are after
            // it, but a new line's fork point.
            marks.extend(added);
            marks.sort_unstable();
            marks.dedup();
        }
        true
    }

    /// The fork row of a world line `grown` added.
    fn new_fork_row(&self, grown: Appended) -> Option<usize> {
        grown
            .added
            .then(|| self.lanes.spans.get(grown.line)?.fork_row)
            .flatten()
    }

    /// Marks at rows from `old_total` on (see `marks`) and a new line's
    /// fork point, sorted.
    fn new_marks(&self, family: &Family, grown: Appended, old_total: usize) -> Vec<usize> {
        if self.marks.get().is_none() {
            return Vec::new();
        }
        let mut out: Vec<usize> = self.new_fork_row(grown).into_iter().collect();
        out.extend(
            (1..family.lines.len())
                .map(|l| self.line_rows(l))
                .filter(|r| !r.is_empty() && r.start >= old_total)
                .map(|r| r.start),
        );
        out.extend(
            family
                .attempts
                .iter()
                .filter_map(|a| self.row_of(a.call))
                .filter(|&r| r >= old_total),
        );
        if let Some(file) = family.files.get(grown.line) {
            for i in grown.own_range(family) {
                if matches!(
                    file.records[i].marker().as_deref(),
                    Some(Marker::DMailInjection(_))
                ) {
                    out.extend(self.row_of(RecordRef {
                        agent: self.agent,
                        line: grown.line,
                        record: i,
                    }));
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    pub fn empty(agent: usize) -> RowModel {
        RowModel {
            agent,
            order: Order::default(),
            mark: StepMark::Checkpoint,
            total: 0,
            lanes: Lanes::default(),
            steps: Vec::new(),
            step_view: false,
            visible: None,
            tools: OnceCell::new(),
            marks: OnceCell::new(),
        }
    }

    /// Tool names of `family` (the model's own) in first-use order, with
    /// how many calls each has.
    pub fn tools(&self, family: &Family) -> &[(String, usize)] {
        self.tools.get_or_init(|| {
            let mut tools: Vec<(String, usize)> = Vec::new();
            for (li, file) in family.files.iter().enumerate() {
                let skip = family.lines.get(li).map_or(0, |l| l.shared);
                count_tools(&mut tools, file.records.range(skip..));
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
                    if matches!(rec.marker().as_deref(), Some(Marker::DMailInjection(_))) {
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
        self.order.line_of(row)
    }

    pub fn record_of(&self, row: usize) -> Option<RecordRef> {
        let (line, record) = self.order.record_of(row)?;
        Some(RecordRef {
            agent: self.agent,
            line,
            record,
        })
    }

    /// Row of a record given by its owner (the world line that wrote it).
    pub fn row_of(&self, r: RecordRef) -> Option<usize> {
        self.order.x_of(r.line, r.record)
    }

    /// Rows of world line `line` (its own records).
    pub fn line_rows(&self, line: usize) -> Range<usize> {
        self.order.own(line)
    }

    pub fn fork_rows(&self) -> impl Iterator<Item = usize> + '_ {
        self.lanes.spans.iter().filter_map(|s| s.fork_row)
    }

    /// The rows of the step holding `row`.
    pub fn step_rows(&self, row: usize) -> Range<usize> {
        let i = self.steps.partition_point(|&s| s <= row);
        let Some(start) = i.checked_sub(1).map(|k| self.steps[k]) else {
            return row..row + 1;
        };
        let line_end = self
            .line_of(start)
            .map_or(self.total, |l| self.line_rows(l).end);
        let next = self.steps.get(i).copied().unwrap_or(self.total);
        start..next.min(line_end).max(start + 1)
    }

    /// Is `row` drawn as a whole step?
    pub fn is_step_head(&self, row: usize) -> bool {
        self.step_view && self.steps.binary_search(&row).is_ok()
    }

    /// Number of steps (of every line).
    pub fn step_count(&self) -> usize {
        self.steps.len()
    }

    pub fn set_filter(&mut self, family: &Family, filter: &Filter) {
        self.step_view = filter.steps();
        if filter.is_all() {
            self.visible = None;
            return;
        }
        let mut visible = Vec::new();
        if self.step_view {
            visible.reserve(self.steps.len());
            self.push_visible_steps(family, filter, 0, &mut visible);
        } else {
            self.push_filtered(family, filter, 0..self.total, &mut visible);
        }
        self.visible = Some(visible);
    }

    /// The visible rows of steps `from..` (by index) in the step view: each
    /// step's head, and an unfolded step's records but bookkeeping.
    fn push_visible_steps(
        &self,
        family: &Family,
        filter: &Filter,
        from: usize,
        visible: &mut Vec<u32>,
    ) {
        for &s in self.steps.get(from..).unwrap_or(&[]) {
            visible.push(s as u32);
            let open = self
                .record_of(s)
                .is_some_and(|r| filter.unfolded.contains(&r));
            if !open {
                continue;
            }
            for row in self.step_rows(s).skip(1) {
                let shown = self
                    .record_of(row)
                    .and_then(|r| family.record(r))
                    .is_some_and(|m| !is_bookkeeping(m));
                if shown {
                    visible.push(row as u32);
                }
            }
        }
    }

    /// The visible rows among `rows` under a role filter or the every-record
    /// view.
    fn push_filtered(
        &self,
        family: &Family,
        filter: &Filter,
        rows: Range<usize>,
        visible: &mut Vec<u32>,
    ) {
        // Fork points and each line's first and last rows keep the story
        // readable whatever the filter hides.
        let mut keep_always: Vec<usize> = self.fork_rows().collect();
        for line in 0..self.order.lines() {
            let rows = self.line_rows(line);
            if !rows.is_empty() {
                keep_always.push(rows.start);
                keep_always.push(rows.end - 1);
            }
        }
        keep_always.sort_unstable();
        for row in rows {
            let Some(r) = self.record_of(row) else {
                continue;
            };
            let Some(meta) = family.record(r) else {
                continue;
            };
            // Kept rows that are bookkeeping would only be noise: the row
            // before them draws their lanes and forks.
            let keep = keep_always.binary_search(&row).is_ok() && !is_bookkeeping(meta);
            if keep || is_dmail(meta) || matches(meta, family, r, filter) {
                visible.push(row as u32);
            }
        }
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

    /// Rows hidden after visible position `i` (for filtered rows).
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

/// Counts the tool calls of `records` into `tools` (first-use order).
fn count_tools(tools: &mut Vec<(String, usize)>, records: crate::read::RecordIter<'_>) {
    for rec in records {
        for c in &rec.tool_calls() {
            match tools.iter_mut().find(|(n, _)| n == c.name()) {
                Some((_, k)) => *k += 1,
                None => tools.push((c.name().to_string(), 1)),
            }
        }
    }
}

fn is_dmail(meta: &RecordMeta) -> bool {
    meta.tool_calls().iter().any(|c| c.dmail().is_some())
        || matches!(meta.marker().as_deref(), Some(Marker::DMailInjection(_)))
}

pub fn matches(meta: &RecordMeta, family: &Family, r: RecordRef, filter: &Filter) -> bool {
    match &filter.role {
        RoleFilter::All => true,
        // Checkpoint notes are kimi-cli's, not the user's.
        RoleFilter::User => *meta.role() == Role::User && !is_bookkeeping(meta),
        RoleFilter::Assistant => *meta.role() == Role::Assistant,
        RoleFilter::Tool => *meta.role() == Role::Tool,
        RoleFilter::Checkpoints => *meta.role() == Role::Checkpoint,
        RoleFilter::ToolName(name) => {
            meta.tool_calls().iter().any(|c| c.name() == name)
                || meta
                    .tool_call_key()
                    .is_some_and(|id| answers(family, r, id, name))
        }
    }
}

/// Does the call with `id` before `r` in its file have this tool name?
fn answers(family: &Family, r: RecordRef, id: CallKey, name: &str) -> bool {
    family.files.get(r.line).is_some_and(|f| {
        f.records
            .range(..r.record.min(f.records.len()))
            .rev()
            // Results follow their call closely; a bound keeps filtering linear.
            .take(256)
            .flat_map(|rec| rec.tool_calls().iter())
            .any(|c| c.key() == id && c.name() == name)
    })
}
