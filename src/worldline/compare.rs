//! Two world lines of one agent side by side from where they part: the
//! fork point (the last record both hold), and for each line what it did
//! after it — its steps, tool calls ✓/✗, tokens, time, the files it wrote
//! or edited and the commands it ran (a revert never undoes those), how it
//! ended — plus the files both touched and the steps aligned by what they
//! did (same tool on the same target). Pure over the session index; the
//! bodies it reads (arguments, results, texts) come through
//! [`Session::body`], a bounded number per line.

use std::ops::Range;

use similar::{capture_diff_slices, Algorithm, DiffOp};

use super::map::{Map, Order, StepMark, TrackState};
use super::names::line_name;
use super::tools::{self, Effect};
use super::{Family, ForkKind, RecordRef, Session};
use crate::model::{Body, Marker, RecordMeta, Role};
use crate::text::sanitize_line;

/// Bodies read per line at most: a line of 100 000 records still compares
/// in a keypress; what is beyond is counted in `unread`.
pub const MAX_BODIES: usize = 1500;
/// Columns kept of a step's text or a line's last text.
const TEXT_COLS: usize = 200;
/// A tool result longer than this is judged by its first bytes.
const BIG_RESULT: u32 = 64 << 10;

/// Where the two lines part.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkPoint {
    /// Records both lines hold (their common prefix).
    pub shared: usize,
    /// The last shared record, by the world line that wrote it.
    pub at: Option<RecordRef>,
    /// The last checkpoint id in the shared part.
    pub checkpoint: Option<i64>,
    /// Steps in the shared part.
    pub steps: usize,
    /// The session file line of the last shared record.
    pub file_line: Option<u32>,
    /// The entry id of the last shared record, where the source names
    /// entries and one line leaves the other right there.
    pub entry: Option<String>,
    /// When the last shared record was written (Unix seconds).
    pub time: Option<f64>,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Ok,
    Failed,
    /// No result on this line (yet).
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

/// One tool call of a step.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The assistant record holding it.
    pub record: RecordRef,
    pub id: String,
    pub tool: String,
    pub effect: Effect,
    /// Its file(s) or command, when its arguments were read.
    pub target: Option<String>,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepKind {
    /// A prompt the user typed.
    Prompt,
    /// A D-Mail's arrival.
    DMail,
    /// A compacted summary.
    Compaction,
    /// The model's reply and tool calls.
    Reply,
    /// Only bookkeeping (checkpoints, usage) so far.
    Other,
}

impl StepKind {
    pub fn tag(self) -> &'static str {
        match self {
            StepKind::Prompt => "user",
            StepKind::DMail => "✉",
            StepKind::Compaction => "⊜",
            StepKind::Reply => "asst",
            StepKind::Other => "·",
        }
    }

    fn rank(self) -> u8 {
        match self {
            StepKind::Other => 0,
            StepKind::Reply => 1,
            StepKind::Compaction => 2,
            StepKind::Prompt => 3,
            StepKind::DMail => 4,
        }
    }
}

/// A step of a line after the fork: from one step mark (a checkpoint, or a
/// prompt where there are none) to the next.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Its records, as positions on its world line.
    pub records: Range<usize>,
    /// The record its text comes from, by owner.
    pub lead: Option<RecordRef>,
    pub checkpoint: Option<i64>,
    pub kind: StepKind,
    /// One line, sanitised; empty when not read.
    pub text: String,
    pub calls: Vec<Call>,
    pub time: Option<f64>,
}

/// A file a line wrote or edited after the fork.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileTouch {
    pub path: String,
    /// `Write` when any call wrote it whole, else `Edit`.
    pub effect: Effect,
    /// Calls that touched it.
    pub calls: usize,
    /// Every call that touched it failed: it may be unchanged.
    pub failed: bool,
    /// The subagent (its agent id) that touched it, if not the agent.
    pub by: Option<String>,
}

/// A command a line ran after the fork.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRun {
    pub command: String,
    pub outcome: Outcome,
    pub by: Option<String>,
}

/// What one line did after the fork.
#[derive(Debug, Clone, PartialEq)]
pub struct LineSummary {
    pub line: usize,
    /// α, β, …
    pub name: String,
    /// Its file name or branch label.
    pub label: String,
    pub branch: Option<String>,
    pub leaf: Option<String>,
    /// Why it exists (its D-Mail, undo or rewind prompt), one line.
    pub reason: String,
    pub kind: Option<ForkKind>,
    pub state: TrackState,
    /// Its records after the fork, as positions on its world line.
    pub own: Range<usize>,
    pub steps: Vec<Step>,
    pub tool_calls: usize,
    pub ok: usize,
    pub errors: usize,
    /// The newest token count after the fork.
    pub tokens: Option<u64>,
    /// From the fork point to its last record, where times are known.
    pub duration_s: Option<f64>,
    pub files: Vec<FileTouch>,
    pub commands: Vec<CommandRun>,
    /// Its last reply's text, one line.
    pub last_text: Option<String>,
    /// Records whose body was not read (past [`MAX_BODIES`]) or could not be.
    pub unread: usize,
}

impl LineSummary {
    /// Paths written or edited by calls that did not all fail.
    pub fn files_written(&self) -> Vec<&str> {
        self.files
            .iter()
            .filter(|f| !f.failed)
            .map(|f| f.path.as_str())
            .collect()
    }

    pub fn open_calls(&self) -> usize {
        self.tool_calls - self.ok - self.errors
    }
}

/// One row of the aligned steps: a step of each side, or of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub a: Option<usize>,
    pub b: Option<usize>,
    /// Both sides did the same (same calls on the same targets, or the
    /// same text).
    pub same: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub agent: usize,
    pub fork: ForkPoint,
    pub lines: [LineSummary; 2],
    /// Files both wrote or edited after the fork.
    pub files_both: Vec<String>,
    pub rows: Vec<Row>,
}

/// Why two lines can't be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    #[error("no agent {0}")]
    NoAgent(usize),
    #[error("no world line {0:?} (the session has {1})")]
    NoLine(String, String),
    #[error("the session has one world line only: nothing to compare")]
    OneLine,
    #[error("a world line is compared with itself")]
    Same,
}

/// Compares world lines `a` and `b` of agent `agent`.
pub fn compare(s: &Session, agent: usize, a: usize, b: usize) -> Result<Comparison, CompareError> {
    let fam = &s
        .agents
        .get(agent)
        .ok_or(CompareError::NoAgent(agent))?
        .family;
    for l in [a, b] {
        if l >= fam.lines.len() {
            return Err(CompareError::NoLine(l.to_string(), names(fam)));
        }
    }
    if a == b {
        return Err(CompareError::Same);
    }
    let map = if agent == 0 {
        Map::of_session(s)
    } else {
        Map::of_family(fam, &Order::of(fam))
    };
    let shared = shared_of(fam, a, b);
    let mark = StepMark::of(fam);
    let fork = fork_point(s, fam, a, b, shared, mark);
    let la = summarise(s, fam, &map, a, shared, mark, fork.time);
    let lb = summarise(s, fam, &map, b, shared, mark, fork.time);
    let files_both = la
        .files_written()
        .into_iter()
        .filter(|p| lb.files_written().contains(p))
        .map(str::to_owned)
        .collect();
    let rows = align(&la.steps, &lb.steps);
    Ok(Comparison {
        agent,
        fork,
        lines: [la, lb],
        files_both,
        rows,
    })
}

/// The line a name means: α, β, … (or `wl25`), a branch name, a leaf id
/// (or a unique prefix of one), a file or branch label, or an index.
pub fn find_line(fam: &Family, name: &str) -> Option<usize> {
    let n = name.trim();
    let exact = fam.lines.iter().position(|l| {
        line_name(l.index) == n
            || l.branch.as_deref() == Some(n)
            || l.leaf.as_deref() == Some(n)
            || l.file == n
    });
    if exact.is_some() {
        return exact;
    }
    if n.len() >= 4 {
        let mut hits = fam.lines.iter().filter(|l| {
            l.leaf.as_deref().is_some_and(|x| x.starts_with(n))
                || l.file.ends_with(&format!("/{n}"))
        });
        if let (Some(h), None) = (hits.next(), hits.next()) {
            return Some(h.index);
        }
    }
    n.parse::<usize>().ok().filter(|&i| i < fam.lines.len())
}

/// Resolves two names, as [`find_line`]; an error names what exists.
pub fn find_pair(fam: &Family, a: &str, b: &str) -> Result<(usize, usize), CompareError> {
    let one = |n: &str| find_line(fam, n).ok_or_else(|| CompareError::NoLine(n.into(), names(fam)));
    Ok((one(a)?, one(b)?))
}

/// The pair compared by default around `focus` (the current line when
/// `None`): its parent and it; for a line without a parent, it and its
/// newest child. `Err` when the session has one line.
pub fn default_pair(fam: &Family, focus: Option<usize>) -> Result<(usize, usize), CompareError> {
    if fam.lines.len() < 2 {
        return Err(CompareError::OneLine);
    }
    let focus = focus
        .filter(|&f| f < fam.lines.len())
        .or_else(|| fam.lines.iter().rposition(|l| l.current))
        .unwrap_or(fam.lines.len() - 1);
    if let Some(p) = fam.lines[focus].parent {
        return Ok((p, focus));
    }
    let child = fam.lines.iter().rposition(|l| l.parent == Some(focus));
    // A line alone in its tree (after a /clear read as a new root): the
    // one before or after it.
    let other = child.unwrap_or(if focus == 0 { 1 } else { focus - 1 });
    Ok((focus, other))
}

fn names(fam: &Family) -> String {
    fam.lines
        .iter()
        .map(|l| match &l.branch {
            Some(b) => format!("{} ({b})", line_name(l.index)),
            None => line_name(l.index),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Records both lines hold: the longest prefix where the same world line
/// wrote each record (which only ever holds for a prefix).
pub fn shared_of(fam: &Family, a: usize, b: usize) -> usize {
    let n = fam.line_len(a).min(fam.line_len(b));
    if a == b {
        return n;
    }
    // Binary search: `owner(a, r) == owner(b, r)` holds for r < shared.
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fam.owner(a, mid).is_some() && fam.owner(a, mid) == fam.owner(b, mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

fn fork_point(
    s: &Session,
    fam: &Family,
    a: usize,
    b: usize,
    shared: usize,
    mark: StepMark,
) -> ForkPoint {
    let at = shared.checked_sub(1).and_then(|r| fam.owner(a, r));
    let prefix = || {
        fam.files
            .get(a)
            .into_iter()
            .flat_map(|f| f.records.range(..shared))
    };
    // The line whose own fork this is (on one side's ancestry, leaving a
    // line of the other's) says where it is in its words: its wire line,
    // its entry id.
    let chain = |mut x: usize| {
        let mut v = vec![x];
        while let Some(p) = fam.lines[x].parent {
            v.push(p);
            x = p;
        }
        v
    };
    let (ca, cb) = (chain(a), chain(b));
    let leaving = [(&ca, &cb), (&cb, &ca)]
        .into_iter()
        .find_map(|(mine, other)| {
            mine.iter()
                .filter(|x| !other.contains(x))
                .map(|&x| &fam.lines[x])
                .find(|l| l.shared == shared && l.parent.is_some_and(|p| other.contains(&p)))
        });
    ForkPoint {
        shared,
        at,
        checkpoint: prefix().rev().find_map(|r| r.checkpoint()),
        steps: prefix().filter(|r| mark.opens(r)).count(),
        file_line: leaving
            .and_then(|l| l.fork.as_ref()?.after.as_ref()?.line)
            .or_else(|| at.and_then(|r| fam.record(r)).map(|m| m.line())),
        entry: leaving.and_then(|l| l.fork.as_ref()?.after.as_ref()?.entry.clone()),
        time: at.and_then(|r| s.time(r)),
    }
}

/// Reads bodies within a budget, remembering what it could not read.
struct Reader<'s> {
    s: &'s Session,
    left: usize,
    unread: usize,
}

impl Reader<'_> {
    fn body(&mut self, r: RecordRef) -> Option<Body> {
        if self.left == 0 {
            self.unread += 1;
            return None;
        }
        self.left -= 1;
        let b = self.s.body(r).ok();
        if b.is_none() {
            self.unread += 1;
        }
        b
    }

    /// Did the tool result `r` report an error? Large results by their head.
    fn failed(&mut self, r: RecordRef) -> bool {
        let Some(m) = self.s.record(r) else {
            return false;
        };
        if let Some(Marker::DMailResult(res)) = m.marker().as_deref() {
            return res.is_err();
        }
        if m.len() > BIG_RESULT {
            return self
                .s
                .line_head(r, 4096)
                .is_ok_and(|h| tools::head_failed(&h));
        }
        self.body(r).is_some_and(|b| tools::result_failed(&b))
    }
}

fn kind_of(m: &RecordMeta) -> StepKind {
    match (m.role(), m.marker().as_deref()) {
        (_, Some(Marker::DMailInjection(_))) => StepKind::DMail,
        (_, Some(Marker::Compaction)) => StepKind::Compaction,
        (_, Some(Marker::CheckpointNote(_))) => StepKind::Other,
        (Role::User, _) => StepKind::Prompt,
        (Role::Assistant, _) => StepKind::Reply,
        _ => StepKind::Other,
    }
}

fn summarise(
    s: &Session,
    fam: &Family,
    map: &Map,
    line: usize,
    shared: usize,
    mark: StepMark,
    fork_time: Option<f64>,
) -> LineSummary {
    let l = &fam.lines[line];
    let len = fam.line_len(line);
    let track = map.tracks.get(line);
    let mut out = LineSummary {
        line,
        name: line_name(line),
        label: l.file.clone(),
        branch: l.branch.clone(),
        leaf: l.leaf.clone(),
        reason: track.map(|t| t.reason.clone()).unwrap_or_default(),
        kind: l.fork.as_ref().map(|f| f.kind),
        state: track.map_or(TrackState::Abandoned, |t| t.state),
        own: shared.min(len)..len,
        steps: Vec::new(),
        tool_calls: 0,
        ok: 0,
        errors: 0,
        tokens: None,
        duration_s: None,
        files: Vec::new(),
        commands: Vec::new(),
        last_text: None,
        unread: 0,
    };
    let mut rd = Reader {
        s,
        left: MAX_BODIES,
        unread: 0,
    };
    let refs: Vec<(usize, RecordRef)> = out
        .own
        .clone()
        .filter_map(|p| Some((p, fam.owner(line, p)?)))
        .collect();
    let mut checkpoint = fam.files[line]
        .records
        .range(..out.own.start)
        .rev()
        .find_map(|r| r.checkpoint());
    for (k, &(pos, r)) in refs.iter().enumerate() {
        let Some(m) = fam.record(r) else { continue };
        if m.checkpoint().is_some() {
            checkpoint = m.checkpoint();
        }
        if out.steps.is_empty() || mark.opens(m) {
            out.steps.push(Step {
                records: pos..pos,
                lead: None,
                checkpoint,
                kind: StepKind::Other,
                text: String::new(),
                calls: Vec::new(),
                time: None,
            });
        }
        if m.tokens().is_some() {
            out.tokens = m.tokens();
        }
        let si = out.steps.len() - 1;
        let step = &mut out.steps[si];
        step.records.end = pos + 1;
        if step.time.is_none() && m.role().is_message() {
            step.time = s.time(r);
        }
        let kind = kind_of(m);
        if kind.rank() > step.kind.rank() {
            step.kind = kind;
            step.lead = Some(r);
        }
        let calls = m.tool_calls();
        if calls.is_empty() {
            continue;
        }
        // Arguments are read for calls whose target matters.
        let wanted = calls.iter().any(|c| {
            matches!(
                tools::effect(c.name()),
                Effect::Write | Effect::Edit | Effect::Run
            )
        });
        let body = if wanted { rd.body(r) } else { None };
        for c in &calls {
            let effect = tools::effect(c.name());
            let args = body
                .as_ref()
                .and_then(|b| b.tool_calls.iter().find(|t| c.is(&t.id)))
                .map(|t| t.arguments.as_str());
            let target = args.and_then(|a| tools::target(c.name(), a));
            // The result: among the records after the call on this line.
            let result = refs[k + 1..]
                .iter()
                .take(4096)
                .find(|&&(_, q)| fam.record(q).is_some_and(|qm| qm.answers(c.key())));
            let outcome = match result {
                Some(&(_, q)) if rd.failed(q) => Outcome::Failed,
                Some(_) => Outcome::Ok,
                None => Outcome::Open,
            };
            out.tool_calls += 1;
            match outcome {
                Outcome::Ok => out.ok += 1,
                Outcome::Failed => out.errors += 1,
                Outcome::Open => {}
            }
            if let Some(a) = args {
                note_effects(&mut out, c.name(), a, outcome, None);
            }
            if effect == Effect::Subagent {
                subagent_effects(s, r, &mut rd, &mut out);
            }
            out.steps[si].calls.push(Call {
                record: r,
                id: c.id().unwrap_or_default().to_string(),
                tool: c.name().to_string(),
                effect,
                target,
                outcome,
            });
        }
    }
    // Records after the fork that only close the shared step (a new file's
    // header, settings, usage) are no step of this line's own.
    if out
        .steps
        .first()
        .is_some_and(|st| st.kind == StepKind::Other && st.calls.is_empty())
    {
        out.steps.remove(0);
    }
    // Texts: the lead of each step, newest steps last to run out of budget.
    for step in &mut out.steps {
        let Some(r) = step.lead else { continue };
        let known = fam.record(r).and_then(|m| match m.marker().as_deref() {
            Some(Marker::DMailInjection(msg)) => Some(msg.clone()),
            _ => None,
        });
        let text = known.or_else(|| rd.body(r).map(|b| b.text()));
        step.text = text
            .map(|t| sanitize_line(&t, TEXT_COLS))
            .unwrap_or_default();
    }
    out.last_text = refs
        .iter()
        .rev()
        .filter(|&&(_, r)| fam.record(r).is_some_and(|m| *m.role() == Role::Assistant))
        .take(8)
        .find_map(|&(_, r)| {
            let t = rd.body(r)?.text();
            (!t.trim().is_empty()).then(|| sanitize_line(&t, TEXT_COLS))
        });
    let end = refs.last().and_then(|&(_, r)| s.time(r));
    let start = fork_time.or_else(|| refs.first().and_then(|&(_, r)| s.time(r)));
    out.duration_s = start.zip(end).map(|(a, b)| (b - a).max(0.0));
    out.unread = rd.unread;
    out
}

/// Files and commands of one call, merged into the line's lists.
fn note_effects(out: &mut LineSummary, tool: &str, args: &str, outcome: Outcome, by: Option<&str>) {
    for t in tools::touches(tool, args) {
        let failed = outcome == Outcome::Failed;
        match out
            .files
            .iter_mut()
            .find(|f| f.path == t.path && f.by.as_deref() == by)
        {
            Some(f) => {
                f.calls += 1;
                f.failed &= failed;
                if t.effect == Effect::Write {
                    f.effect = Effect::Write;
                }
            }
            None => out.files.push(FileTouch {
                path: t.path,
                effect: t.effect,
                calls: 1,
                failed,
                by: by.map(str::to_owned),
            }),
        }
    }
    if let Some(command) = tools::command(tool, args) {
        out.commands.push(CommandRun {
            command,
            outcome,
            by: by.map(str::to_owned),
        });
    }
}

/// What the subagent run by the call in `call` wrote and ran.
fn subagent_effects(s: &Session, call: RecordRef, rd: &mut Reader, out: &mut LineSummary) {
    for (i, a) in s.agents.iter().enumerate().skip(1) {
        if a.parent_call != Some(call) {
            continue;
        }
        let f = &a.family;
        let Some(line) = f.lines.iter().rposition(|l| l.current) else {
            continue;
        };
        let by = a
            .meta
            .as_ref()
            .map_or_else(|| "subagent".to_string(), |m| m.agent_id.clone());
        let refs = s.walk(i, line);
        for (k, &r) in refs.iter().enumerate() {
            let Some(m) = f.record(r) else { continue };
            let calls = m.tool_calls();
            let wanted = calls.iter().any(|c| {
                matches!(
                    tools::effect(c.name()),
                    Effect::Write | Effect::Edit | Effect::Run
                )
            });
            if !wanted {
                continue;
            }
            let Some(body) = rd.body(r) else { continue };
            for c in &calls {
                let Some(t) = body.tool_calls.iter().find(|t| c.is(&t.id)) else {
                    continue;
                };
                let result = refs[k + 1..]
                    .iter()
                    .take(4096)
                    .find(|&&q| f.record(q).is_some_and(|qm| qm.answers(c.key())));
                let outcome = match result {
                    Some(&q) if rd.failed(q) => Outcome::Failed,
                    Some(_) => Outcome::Ok,
                    None => Outcome::Open,
                };
                note_effects(out, c.name(), &t.arguments, outcome, Some(&by));
            }
        }
    }
}

/// What a step did, for matching: its calls and their targets, else its
/// kind and text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Sig {
    Calls(Vec<(String, Option<String>)>),
    Text(StepKind, String),
}

fn sig(step: &Step) -> Sig {
    if step.calls.is_empty() {
        Sig::Text(step.kind, step.text.clone())
    } else {
        Sig::Calls(
            step.calls
                .iter()
                .map(|c| (c.tool.clone(), c.target.clone()))
                .collect(),
        )
    }
}

/// The steps of both sides in rows: matching steps side by side (a longest
/// common subsequence), differing ones paired in order, the rest alone.
pub fn align(a: &[Step], b: &[Step]) -> Vec<Row> {
    let sa: Vec<Sig> = a.iter().map(sig).collect();
    let sb: Vec<Sig> = b.iter().map(sig).collect();
    let mut rows = Vec::with_capacity(a.len().max(b.len()));
    for op in capture_diff_slices(Algorithm::Myers, &sa, &sb) {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => rows.extend((0..len).map(|k| Row {
                a: Some(old_index + k),
                b: Some(new_index + k),
                same: true,
            })),
            DiffOp::Delete {
                old_index, old_len, ..
            } => paired(&mut rows, old_index..old_index + old_len, 0..0),
            DiffOp::Insert {
                new_index, new_len, ..
            } => paired(&mut rows, 0..0, new_index..new_index + new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => paired(
                &mut rows,
                old_index..old_index + old_len,
                new_index..new_index + new_len,
            ),
        }
    }
    rows
}

/// Steps that differ, paired in order; the longer side's rest alone.
fn paired(rows: &mut Vec<Row>, oa: Range<usize>, ob: Range<usize>) {
    for k in 0..oa.len().max(ob.len()) {
        rows.push(Row {
            a: oa.clone().nth(k),
            b: ob.clone().nth(k),
            same: false,
        });
    }
}

#[cfg(test)]
mod tests;
