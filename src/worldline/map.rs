//! The world-line map in logical coordinates (pure, no terminal): one track
//! per world line, oldest first, with its name, colour slot, state, a
//! one-line reason, its checkpoints as ticks, where it forks, D-Mail arcs
//! from the sending call back to the checkpoint they target (refused ones
//! too), compaction and `/clear` marks, and subagents under the call that
//! ran them, and the sessions `/fork` and `/undo` made from this one as
//! short tracks leaving at their fork point. The TUI draws it in a strip;
//! `tree --format svg` draws the same model.
//!
//! The x axis is *written order*: every record once, in the order it was
//! written (world line 0's records, then each later line's own records after
//! its shared prefix). A line's own records are one contiguous run of x; its
//! fork sits at the x of the last record it shares, on the track of the line
//! that wrote that record. Renderers scale x to their width.

use std::ops::Range;

use super::family::{Family, ForkKind};
use super::graph::RecordRef;
use super::names::line_name;
use super::{LinkKind, Session, SessionLink};
use crate::model::{Marker, RecordMeta, Role};
use crate::text::sanitize_line;

/// What opens a step: a checkpoint, where the agent writes them (kimi-cli),
/// else a real user prompt or a compaction (Kimi Code has no checkpoints,
/// so each turn is a step there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepMark {
    Checkpoint,
    Prompt,
}

impl StepMark {
    pub fn of(family: &Family) -> StepMark {
        let checkpointed = family
            .files
            .iter()
            .any(|f| f.records.iter().any(|r| *r.role() == Role::Checkpoint));
        if checkpointed {
            StepMark::Checkpoint
        } else {
            StepMark::Prompt
        }
    }

    /// The mark once `new` has the records `grown` added to `old`'s (whose
    /// mark is `self`): records are only ever appended, so only they are
    /// read.
    pub fn after(self, new: &Family, grown: Appended) -> StepMark {
        match self {
            StepMark::Checkpoint => StepMark::Checkpoint,
            StepMark::Prompt if grown.records(new).any(|r| *r.role() == Role::Checkpoint) => {
                StepMark::Checkpoint
            }
            StepMark::Prompt => StepMark::Prompt,
        }
    }

    pub fn opens(self, rec: &RecordMeta) -> bool {
        match self {
            StepMark::Checkpoint => *rec.role() == Role::Checkpoint,
            // A compaction stands out as a step of its own, as in kimi-cli
            // (where it starts a new file with a fresh checkpoint).
            StepMark::Prompt => match rec.marker().as_deref() {
                None => *rec.role() == Role::User,
                Some(m) => *m == Marker::Compaction,
            },
        }
    }
}

/// How one agent's family grew from one snapshot to the next, when it only
/// grew: records appended to one world line after which no line has
/// records of its own, or one new world line after the others (a D-Mail,
/// a compaction: the old lines keep their records, the one rotated away
/// only its name), so no x before the old end moves. A truncation, a
/// rewritten file or a changed fork is not this, and is rebuilt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The world line that grew (the last one when none did), or the new one.
    pub line: usize,
    /// Its file's record count before (0 for a new line).
    pub from: usize,
    /// `line` is a new world line.
    pub added: bool,
}

impl Appended {
    /// `Some` when `new` is `old` grown as above (or unchanged). Records
    /// are compared by `read::Records::extends`: O(1) for a follower's
    /// snapshots, which share their lists.
    pub fn between(old: &Family, new: &Family) -> Option<Appended> {
        let n = old.lines.len();
        let added = new.lines.len() == n + 1;
        if n == 0
            || old.agent != new.agent
            || !(added || new.lines.len() == n)
            || old.files.len() != n
            || new.files.len() != new.lines.len()
        {
            return None;
        }
        let mut grown = None;
        for (i, ((ol, nl), (of, nf))) in old
            .lines
            .iter()
            .zip(&new.lines)
            .zip(old.files.iter().zip(&new.files))
            .enumerate()
        {
            // A rotation renames the file it moves away and makes it old.
            let renamed = added || ol.file == nl.file && of.name == nf.name && of.path == nf.path;
            let same_line = renamed
                && ol.branch == nl.branch
                && ol.parent == nl.parent
                && ol.fork == nl.fork
                && ol.shared == nl.shared
                && (added || ol.current == nl.current);
            let (a, b) = (of.records.len(), nf.records.len());
            if !same_line || !nf.records.extends(&of.records) {
                return None;
            }
            if b > a {
                if grown.is_some() || added {
                    return None;
                }
                grown = Some(Appended {
                    line: i,
                    from: a,
                    added: false,
                });
            }
        }
        if added {
            return Some(Appended {
                line: n,
                from: 0,
                added: true,
            });
        }
        let Some(g) = grown else {
            return Some(Appended {
                line: n - 1,
                from: old.files[n - 1].records.len(),
                added: false,
            });
        };
        // Later lines with records of their own would move.
        let later_own = (g.line + 1..n).any(|j| old.files[j].records.len() > old.lines[j].shared);
        (!later_own).then_some(g)
    }

    /// The appended records, as `new` holds them.
    pub fn records(self, new: &Family) -> impl DoubleEndedIterator<Item = &RecordMeta> + Clone {
        new.files
            .get(self.line)
            .into_iter()
            .flat_map(move |f| f.records.range(self.from..))
    }

    /// Record positions (in the grown file) that are new and the line's
    /// own: appended ones past its shared prefix.
    pub fn own_range(self, new: &Family) -> Range<usize> {
        let shared = new.lines.get(self.line).map_or(0, |l| l.shared);
        let end = new.files.get(self.line).map_or(0, |f| f.records.len());
        self.from.max(shared).min(end)..end
    }
}

/// Written order of one agent's records: `x` ↔ (world line, record).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Order {
    /// First x of each world line's own records.
    starts: Vec<usize>,
    /// Records each world line shares with its parent.
    shared: Vec<usize>,
    pub total: usize,
}

impl Order {
    pub fn of(family: &Family) -> Order {
        let mut starts = Vec::with_capacity(family.lines.len());
        let mut shared = Vec::with_capacity(family.lines.len());
        let mut total = 0;
        for (line, file) in family.lines.iter().zip(&family.files) {
            starts.push(total);
            shared.push(line.shared);
            total += file.records.len().saturating_sub(line.shared);
        }
        Order {
            starts,
            shared,
            total,
        }
    }

    /// World line owning `x`.
    pub fn line_of(&self, x: usize) -> Option<usize> {
        if x >= self.total {
            return None;
        }
        // The last line starting at or before `x` is the non-empty one.
        self.starts.partition_point(|&s| s <= x).checked_sub(1)
    }

    /// `(world line, record in its file)` at `x`.
    pub fn record_of(&self, x: usize) -> Option<(usize, usize)> {
        let line = self.line_of(x)?;
        Some((line, x - self.starts[line] + self.shared[line]))
    }

    /// x of a record given by its owner (the world line that wrote it).
    pub fn x_of(&self, line: usize, record: usize) -> Option<usize> {
        let shared = *self.shared.get(line)?;
        let x = self.starts[line] + record.checked_sub(shared)?;
        (x < self.total && self.line_of(x) == Some(line)).then_some(x)
    }

    /// The x run of world line `line`'s own records.
    pub fn own(&self, line: usize) -> Range<usize> {
        let start = self.starts.get(line).copied().unwrap_or(self.total);
        let end = self.starts.get(line + 1).copied().unwrap_or(self.total);
        start..end.max(start)
    }

    pub fn lines(&self) -> usize {
        self.starts.len()
    }
}

/// What became of a world line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrackState {
    /// The newest: what the model sees now.
    Current,
    /// Left by a D-Mail (or for an unknown reason).
    Abandoned,
    /// Replaced by its compacted summary.
    Compacted,
    /// Left by `/clear`.
    Cleared,
}

impl TrackState {
    pub fn as_str(self) -> &'static str {
        match self {
            TrackState::Current => "current",
            TrackState::Abandoned => "abandoned",
            TrackState::Compacted => "compacted",
            TrackState::Cleared => "cleared",
        }
    }
}

/// A checkpoint a world line wrote itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    pub x: usize,
    pub checkpoint: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Track {
    /// The world line's index, oldest first.
    pub line: usize,
    /// α, β, γ …
    pub name: String,
    /// Colour slot: the line's index (renderers take it modulo their
    /// palette), so a line keeps its colour whatever appears later.
    pub colour: usize,
    pub file: String,
    pub state: TrackState,
    /// Why the line exists, one line, already sanitised.
    pub reason: String,
    /// How the line left its parent; `None` for the first.
    pub kind: Option<ForkKind>,
    /// The line that wrote the last shared record.
    pub origin: Option<usize>,
    /// x of the last shared record (on `origin`'s track).
    pub fork_x: Option<usize>,
    /// For a D-Mail: the checkpoint it went back to.
    pub back_to: Option<i64>,
    /// The line's own records.
    pub own: Range<usize>,
    pub ticks: Vec<Tick>,
    /// Checkpoints on the whole line (shared ones included).
    pub steps: usize,
    /// The newest `_usage` token count on the line.
    pub tokens: Option<u64>,
    /// Per mille of the line's records that are its own.
    pub new_permille: u16,
}

/// What a SendDMail call came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It made this world line.
    Landed(usize),
    /// DenwaRenji refused it.
    Refused(String),
    /// Accepted (or not answered yet) and no new line so far.
    Pending,
}

/// A D-Mail drawn from the sending call back to the checkpoint it targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DMailArc {
    /// The world line that wrote the call, and the call's x.
    pub from_line: usize,
    pub from_x: usize,
    /// The last checkpoint before the call on its line.
    pub from_checkpoint: Option<i64>,
    pub checkpoint: i64,
    /// x of that checkpoint on the sender's line, when it is there.
    pub to_x: Option<usize>,
    pub outcome: Outcome,
    /// The message, sanitised, one line.
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    Compaction,
    Clear,
}

/// A compaction or `/clear`: where the line that followed it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub line: usize,
    pub x: usize,
    pub kind: MarkKind,
}

/// A subagent, drawn as a short track under the Agent call that ran it.
#[derive(Debug, Clone, PartialEq)]
pub struct SubTrack {
    pub agent: usize,
    pub label: String,
    /// The main agent's world line holding the call, and the call's x.
    pub host_line: usize,
    pub x: usize,
    pub world_lines: usize,
    pub steps: usize,
}

/// A session made from this one by `/fork` or `/undo`, drawn as a short
/// track leaving the main agent's map at the last record it shares.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkTrack {
    /// Index into `Session::forks`.
    pub fork: usize,
    pub kind: LinkKind,
    /// The fork's short id, sanitised.
    pub label: String,
    /// The fork point as this session holds it (`None`: an `/undo` of the
    /// first turn, leaving from before anything).
    pub at: Option<RecordRef>,
    /// The world line drawing the fork point, and its x.
    pub host_line: usize,
    pub x: usize,
    /// The last checkpoint at or before the fork point.
    pub checkpoint: Option<i64>,
    pub records: usize,
}

impl ForkTrack {
    /// "⑂ /undo · Undo: one · from ⚑2 · shares 9 records": the words its
    /// fork's own header uses (`came_from`).
    pub fn text(&self) -> String {
        format!(
            "⑂ /{} · {}{}",
            self.kind.as_str(),
            self.label,
            shared_words(self.checkpoint, self.records)
        )
    }
}

/// " · from ⚑2 · shares 9 records": where a fork session leaves its source,
/// said the same way on both ends.
pub fn shared_words(checkpoint: Option<i64>, records: usize) -> String {
    let at = checkpoint
        .map(|c| format!(" · from ⚑{c}"))
        .unwrap_or_default();
    format!(
        "{at} · shares {records} record{}",
        if records == 1 { "" } else { "s" }
    )
}

/// A name a user gave an entry (Pi's label), where it sits on the map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapLabel {
    /// The world line that holds the entry as its own.
    pub line: usize,
    pub x: usize,
    /// Sanitised, short.
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Map {
    pub tracks: Vec<Track>,
    pub arcs: Vec<DMailArc>,
    pub marks: Vec<Mark>,
    /// Names on entries, drawn as `[name]` on their line (main agent only).
    pub labels: Vec<MapLabel>,
    pub subagents: Vec<SubTrack>,
    /// Sessions made from this one (main agent's map only).
    pub forks: Vec<ForkTrack>,
    /// For a `/fork` or `/undo` session: where it came from (`came_from`).
    pub came_from: Option<String>,
    /// One past the largest x.
    pub width: usize,
}

/// Longest message text kept in a reason or an arc.
const MESSAGE_COLS: usize = 120;

impl Map {
    /// The main agent's map, with its subagents under their calls.
    pub fn of_session(s: &Session) -> Map {
        let Some(main) = s.agents.first() else {
            return Map::default();
        };
        let order = Order::of(&main.family);
        let mut map = Map::of_family(&main.family, &order);
        map.session_parts(s, &order, None);
        map
    }

    /// Subagents, forks and where the session came from: what only the
    /// main agent's map shows. With `prev` (the session `self` was made
    /// for, and the map it had), what did not change is kept.
    fn session_parts(&mut self, s: &Session, order: &Order, prev: Option<(&Session, &Map)>) {
        let Some(main) = s.agents.first() else {
            return;
        };
        self.subagents.clear();
        for (k, a) in s.agents.iter().enumerate().skip(1) {
            let Some(call) = a.parent_call else { continue };
            let Some(x) = order.x_of(call.line, call.record) else {
                continue;
            };
            let meta = a.meta.clone().unwrap_or_default();
            let label = match &meta.subagent_type {
                Some(t) => format!("{} ({})", meta.agent_id, t),
                None => meta.agent_id.clone(),
            };
            // A subagent whose records did not change keeps its count.
            let kept = prev.and_then(|(ps, pm)| {
                let old = ps.agents.get(k)?;
                same_records(&old.family, &a.family).then_some(())?;
                pm.subagents.iter().find(|t| t.agent == k).map(|t| t.steps)
            });
            self.subagents.push(SubTrack {
                agent: k,
                label: sanitize_line(&label, 40),
                host_line: call.line,
                x,
                world_lines: a.family.lines.len(),
                steps: kept.unwrap_or_else(|| {
                    a.family.files.last().map_or(0, |f| {
                        let mark = StepMark::of(&a.family);
                        f.records.iter().filter(|r| mark.opens(r)).count()
                    })
                }),
            });
        }
        self.forks = s
            .forks
            .iter()
            .enumerate()
            .map(|(k, link)| {
                let kept = prev.and_then(|(ps, pm)| {
                    let same =
                        ps.forks.get(k) == Some(link) && ps.fork_point(link) == s.fork_point(link);
                    same.then(|| pm.forks.get(k).cloned()).flatten()
                });
                kept.unwrap_or_else(|| fork_track(s, &main.family, order, k, link))
            })
            .collect();
        self.came_from = came_from(s);
        // Few, and labels can move: found again each time.
        self.labels = main
            .labels
            .iter()
            .filter_map(|lb| {
                let (line, record) = lb.at?;
                let own = main.family.owner(line, record)?;
                Some(MapLabel {
                    line: own.line,
                    x: order.x_of(own.line, own.record)?,
                    text: sanitize_line(&lb.label, 24),
                })
            })
            .collect();
        if let (Some(from), Some(first)) = (&self.came_from, self.tracks.first_mut()) {
            first.reason = format!("⑂ {from}");
        }
    }

    /// One agent's map (no subagents).
    pub fn of_family(family: &Family, order: &Order) -> Map {
        let step_mark = StepMark::of(family);
        let mut tracks: Vec<Track> = (0..family.lines.len())
            .map(|i| track(family, order, step_mark, i))
            .collect();
        set_states(&mut tracks, family);
        let arcs: Vec<DMailArc> = family
            .attempts
            .iter()
            .filter_map(|a| arc_of(family, order, a))
            .collect();
        for (i, t) in tracks.iter_mut().enumerate() {
            t.reason = reason(family, i, &arcs);
        }
        let mut marks = line_marks(&tracks);
        // A compaction inside a world line (Kimi Code's: no new world line)
        // is marked where its record is.
        for (i, (line, file)) in family.lines.iter().zip(&family.files).enumerate() {
            push_compactions(
                &mut marks,
                family,
                order,
                i,
                line.shared..file.records.len(),
            );
        }
        Map {
            tracks,
            arcs,
            marks,
            labels: Vec::new(),
            subagents: Vec::new(),
            forks: Vec::new(),
            came_from: None,
            width: order.total,
        }
    }

    /// Brings the map of agent `agent` of `old` (what `self` was built
    /// from) up to `new`, where that agent's family grew as `grown` (see
    /// [`Appended::between`]) and opens steps by `mark` (as before): the
    /// appended records are read, and the D-Mails, subagents and forks that
    /// changed; the result equals building `new`'s map from scratch.
    pub fn extend(
        &mut self,
        old: &Session,
        new: &Session,
        agent: usize,
        grown: Appended,
        mark: StepMark,
    ) {
        let (Some(of), Some(nf)) = (
            old.agents.get(agent).map(|a| &a.family),
            new.agents.get(agent).map(|a| &a.family),
        ) else {
            return;
        };
        let old_order = Order::of(of);
        let order = Order::of(nf);
        for (i, t) in self.tracks.iter_mut().enumerate() {
            t.own = order.own(i);
        }
        if grown.added {
            self.tracks.push(track(nf, &order, mark, grown.line));
        }
        // A rotation renames the line it leaves and makes its successor's
        // fork say what happened to it.
        for (t, l) in self.tracks.iter_mut().zip(&nf.lines) {
            t.file = sanitize_line(&l.file, 80);
        }
        set_states(&mut self.tracks, nf);
        let added = grown.records(nf);
        let grew = self.tracks.get_mut(grown.line).filter(|_| !grown.added);
        if let (Some(t), Some(file)) = (grew, nf.files.get(grown.line)) {
            push_ticks(&mut t.ticks, nf, &order, grown.line, grown.own_range(nf));
            t.steps += added.clone().filter(|r| mark.opens(r)).count();
            t.tokens = added.rev().find_map(|r| r.tokens()).or(t.tokens);
            t.new_permille = permille(t.own.len(), file.records.len());
        }
        // An unchanged D-Mail keeps its arc: its call and target are
        // records that did not move.
        let mut old_arcs = self.arcs.drain(..);
        let kept: Vec<Option<DMailArc>> = of
            .attempts
            .iter()
            .map(|a| {
                has_arc(of, &old_order, a)
                    .then(|| old_arcs.next())
                    .flatten()
            })
            .collect();
        drop(old_arcs);
        self.arcs = nf
            .attempts
            .iter()
            .enumerate()
            .filter_map(|(k, a)| match kept.get(k) {
                Some(Some(arc)) if of.attempts.get(k) == Some(a) => Some(arc.clone()),
                _ => arc_of(nf, &order, a),
            })
            .collect();
        for (i, t) in self.tracks.iter_mut().enumerate() {
            t.reason = reason(nf, i, &self.arcs);
        }
        // The lines' own marks first (their x may be a line's start, which
        // moves for an empty line), then the compactions inside lines.
        let mut marks = line_marks(&self.tracks);
        let inline = marks.len().min(self.marks.len());
        marks.extend_from_slice(&self.marks[inline..]);
        push_compactions(&mut marks, nf, &order, grown.line, grown.own_range(nf));
        self.marks = marks;
        self.width = order.total;
        if agent == 0 {
            let prev = Map {
                subagents: std::mem::take(&mut self.subagents),
                forks: std::mem::take(&mut self.forks),
                ..Map::default()
            };
            self.session_parts(new, &order, Some((old, &prev)));
        }
    }

    /// The track that draws `x` (owns it), if any.
    pub fn track_at(&self, x: usize) -> Option<&Track> {
        self.tracks.iter().find(|t| t.own.contains(&x))
    }

    /// The arc that made world line `line`.
    pub fn arc_into(&self, line: usize) -> Option<&DMailArc> {
        self.arcs
            .iter()
            .find(|a| a.outcome == Outcome::Landed(line))
    }

    /// A plain caption for a line: "γ: back to ⚑3 from β · 91% new".
    pub fn caption(&self, line: usize) -> String {
        let Some(t) = self.tracks.get(line) else {
            return String::new();
        };
        let from = t.origin.map(line_name).unwrap_or_else(|| "?".into());
        let pct = format!("{}% new", t.new_permille / 10);
        match t.kind {
            None => match &self.came_from {
                Some(from) => format!("{}: ⑂ {from}", t.name),
                None => format!("{}: the first world line", t.name),
            },
            Some(ForkKind::Dmail) => {
                let sender = self
                    .arc_into(line)
                    .map(|a| line_name(a.from_line))
                    .unwrap_or_else(|| "outside".into());
                match t.back_to {
                    Some(cp) => format!("{}: back to ⚑{cp} from {sender} · {pct}", t.name),
                    None => format!("{}: D-Mail from {sender} · {pct}", t.name),
                }
            }
            Some(ForkKind::Compaction) => format!("{}: {from} compacted · {pct}", t.name),
            Some(ForkKind::Clear) => format!("{}: fresh start after /clear on {from}", t.name),
            Some(ForkKind::Undo) => format!("{}: {from} undone · {pct}", t.name),
            Some(
                k @ (ForkKind::Rewind
                | ForkKind::Summarize
                | ForkKind::Tree
                | ForkKind::Fork
                | ForkKind::Rollback),
            ) => {
                format!("{}: {} from {from} · {pct}", t.name, k.branch_words())
            }
            Some(ForkKind::Unknown) => format!("{}: left {from}, reason unknown · {pct}", t.name),
        }
    }
}

/// The track of world line `i`.
fn track(family: &Family, order: &Order, mark: StepMark, i: usize) -> Track {
    let (line, file) = (&family.lines[i], &family.files[i]);
    let own = order.own(i);
    let mut ticks = Vec::new();
    push_ticks(
        &mut ticks,
        family,
        order,
        i,
        line.shared..file.records.len(),
    );
    let fork_x = family
        .fork_record(i)
        .and_then(|o| order.x_of(o.line, o.record));
    Track {
        line: i,
        name: line_name(i),
        colour: i,
        file: sanitize_line(&line.file, 80),
        state: TrackState::Current,
        reason: String::new(),
        kind: line.fork.as_ref().map(|f| f.kind),
        origin: line.fork.as_ref().and_then(|f| f.origin),
        fork_x,
        back_to: line
            .fork
            .as_ref()
            .filter(|f| f.kind == ForkKind::Dmail)
            .and_then(|f| f.checkpoint),
        steps: file.records.iter().filter(|r| mark.opens(r)).count(),
        tokens: file.records.iter().rev().find_map(|r| r.tokens()),
        new_permille: permille(own.len(), file.records.len()),
        own,
        ticks,
    }
}

/// A line's state is what its successor says happened to it.
fn set_states(tracks: &mut [Track], family: &Family) {
    for (i, t) in tracks.iter_mut().enumerate() {
        let next = family
            .lines
            .iter()
            .find(|l| l.parent == Some(i))
            .and_then(|l| l.fork.as_ref());
        t.state = match next.map(|f| f.kind) {
            None if family.lines.get(i).is_some_and(|l| l.current) => TrackState::Current,
            Some(ForkKind::Compaction) => TrackState::Compacted,
            Some(ForkKind::Clear) => TrackState::Cleared,
            _ => TrackState::Abandoned,
        };
    }
}

/// Per mille of a line's `total` records that are its own.
fn permille(own: usize, total: usize) -> u16 {
    ((own * 1000 / total.max(1)).min(1000)) as u16
}

/// The checkpoints line `i` wrote among `records`.
fn push_ticks(
    out: &mut Vec<Tick>,
    family: &Family,
    order: &Order,
    i: usize,
    records: Range<usize>,
) {
    let Some(file) = family.files.get(i) else {
        return;
    };
    for r in records {
        let Some(rec) = file.records.get(r) else {
            break;
        };
        if let (Some(x), Some(checkpoint)) = (order.x_of(i, r), rec.checkpoint()) {
            out.push(Tick { x, checkpoint });
        }
    }
}

/// Compactions and `/clear`s that started a world line.
fn line_marks(tracks: &[Track]) -> Vec<Mark> {
    tracks
        .iter()
        .filter_map(|t| {
            let kind = match t.kind? {
                ForkKind::Compaction => MarkKind::Compaction,
                ForkKind::Clear => MarkKind::Clear,
                _ => return None,
            };
            Some(Mark {
                line: t.line,
                x: t.fork_x.unwrap_or(t.own.start),
                kind,
            })
        })
        .collect()
}

/// Compactions inside line `i` among `records` (not the one that starts
/// a compacted line).
fn push_compactions(
    out: &mut Vec<Mark>,
    family: &Family,
    order: &Order,
    i: usize,
    records: Range<usize>,
) {
    let (Some(line), Some(file)) = (family.lines.get(i), family.files.get(i)) else {
        return;
    };
    let starts_line = line.fork.as_ref().map(|f| f.kind) == Some(ForkKind::Compaction);
    for r in records {
        let Some(rec) = file.records.get(r) else {
            break;
        };
        let compaction = matches!(rec.marker().as_deref(), Some(Marker::Compaction));
        if !compaction || (starts_line && r == line.shared) {
            continue;
        }
        if let Some(x) = order.x_of(i, r) {
            out.push(Mark {
                line: i,
                x,
                kind: MarkKind::Compaction,
            });
        }
    }
}

/// Same files with the same record counts (records only grow).
fn same_records(a: &Family, b: &Family) -> bool {
    a.files.len() == b.files.len()
        && a.lines.len() == b.lines.len()
        && a.files
            .iter()
            .zip(&b.files)
            .all(|(x, y)| x.name == y.name && x.records.len() == y.records.len())
}

/// Where fork `k` leaves the main agent's map.
fn fork_track(
    s: &Session,
    family: &Family,
    order: &Order,
    k: usize,
    link: &SessionLink,
) -> ForkTrack {
    let at = s.fork_point(link);
    // The record's x is on the line that wrote it (shared records belong
    // to an older line).
    let (host_line, x) = at
        .and_then(|r| {
            let x = owner_of(family, order, r.line, r.record)?;
            Some((order.line_of(x)?, x))
        })
        .unwrap_or((0, 0));
    ForkTrack {
        fork: k,
        kind: link.kind,
        // kimi-cli titles every fork "Fork: <this title>": the id is what
        // tells them apart.
        label: link_label(&link.session, None),
        at,
        host_line,
        x,
        checkpoint: at.and_then(|r| checkpoint_at(family, r)),
        records: link.records,
    }
}

/// The last checkpoint on `r`'s world line at or before `r`.
fn checkpoint_at(family: &Family, r: RecordRef) -> Option<i64> {
    let file = family.files.get(r.line)?;
    file.records
        .range(..=r.record)
        .rev()
        .find_map(|x| x.checkpoint())
}

/// A session named by its title, else its short id.
fn link_label(id: &str, title: Option<&str>) -> String {
    match title {
        Some(t) if !t.trim().is_empty() => sanitize_line(t, 40),
        _ => {
            // Kimi Code ids all start `session_`: the uuid tells them apart.
            let id = id.strip_prefix("session_").unwrap_or(id);
            sanitize_line(id.get(..8).unwrap_or(id), 8)
        }
    }
}

/// Where a fork session came from, for its header: "/undo of one · from
/// ⚑2 · shares 9 records" (as the source's map says it). The source's title is read from this session's own ("Undo:
/// one"), the only place kimi-cli writes it.
pub fn came_from(s: &Session) -> Option<String> {
    let link = s.forked_from.as_ref()?;
    let source = s.title.as_deref().and_then(|t| {
        t.strip_prefix("Fork: ")
            .or_else(|| t.strip_prefix("Undo: "))
    });
    let name = link_label(&link.session, source);
    let at = match s.fork_point(link) {
        Some(r) => shared_words(checkpoint_at(&s.agents[0].family, r), r.record + 1),
        None => " · shares no record".to_string(),
    };
    Some(format!("/{} of {name}{at}", link.kind.as_str()))
}

/// Does attempt `a` get an arc (its call has an x)?
fn has_arc(family: &Family, order: &Order, a: &super::DMailAttempt) -> bool {
    let RecordRef { line, record, .. } = a.call;
    order.x_of(line, record).is_some() && family.files.get(line).is_some()
}

/// A SendDMail call as an arc.
fn arc_of(family: &Family, order: &Order, a: &super::DMailAttempt) -> Option<DMailArc> {
    let RecordRef { line, record, .. } = a.call;
    let from_x = order.x_of(line, record)?;
    let file = family.files.get(line)?;
    let mut before = file.records.range(..record);
    let from_checkpoint = before.clone().rev().find_map(|r| r.checkpoint());
    // The target on the sender's own path: its last checkpoint with that id.
    let to_x = before
        .rposition(|r| *r.role() == Role::Checkpoint && r.checkpoint() == Some(a.checkpoint_id))
        .and_then(|r| owner_of(family, order, line, r));
    let outcome = match (a.caused, a.accepted) {
        (Some(k), _) => Outcome::Landed(k),
        (None, Some(false)) => Outcome::Refused(sanitize_line(
            a.error.as_deref().unwrap_or("refused"),
            MESSAGE_COLS,
        )),
        (None, _) => Outcome::Pending,
    };
    Some(DMailArc {
        from_line: line,
        from_x,
        from_checkpoint,
        checkpoint: a.checkpoint_id,
        to_x,
        outcome,
        message: sanitize_line(&a.message, MESSAGE_COLS),
    })
}

/// x of record `record` of world line `line`: shared records belong to the
/// line that wrote them.
fn owner_of(family: &Family, order: &Order, line: usize, record: usize) -> Option<usize> {
    let o = family.owner(line, record)?;
    order.x_of(o.line, o.record)
}

/// The one-line reason a world line exists.
fn reason(family: &Family, i: usize, arcs: &[DMailArc]) -> String {
    let line = &family.lines[i];
    let Some(fork) = &line.fork else {
        return "the first world line".into();
    };
    let from = fork.origin.or(line.parent).map(line_name);
    let from = from.as_deref().unwrap_or("?");
    match fork.kind {
        ForkKind::Dmail => {
            let arc = arcs.iter().find(|a| a.outcome == Outcome::Landed(i));
            let at = |cp: Option<i64>| cp.map(|c| format!(" at ⚑{c}")).unwrap_or_default();
            let who = match arc {
                Some(a) => format!("{}{}", line_name(a.from_line), at(a.from_checkpoint)),
                None => "outside".into(),
            };
            let back = match (fork.checkpoint, fork.turns) {
                (None, None) => String::new(),
                _ => format!(" → {}", fork.dmail_back()),
            };
            let msg = fork
                .message
                .as_deref()
                .map(|m| format!(": \"{}\"", sanitize_line(m, MESSAGE_COLS)))
                .unwrap_or_default();
            format!("← D-Mail from {who}{back}{msg}")
        }
        ForkKind::Compaction => format!("⊜ compacted from {from}: the context was summarised"),
        ForkKind::Clear => format!("∅ /clear on {from}: a fresh start"),
        ForkKind::Undo => match fork.turns {
            Some(n) => format!(
                "↶ undo on {from}: {n} turn{} taken back",
                if n == 1 { "" } else { "s" }
            ),
            None => format!("↶ undo on {from}"),
        },
        ForkKind::Rewind
        | ForkKind::Summarize
        | ForkKind::Tree
        | ForkKind::Fork
        | ForkKind::Rollback => match fork.message.as_deref() {
            Some(m) => format!(
                "{} on {from}: \"{}\"",
                fork.kind.branch_words(),
                sanitize_line(m, MESSAGE_COLS)
            ),
            None => format!("{} on {from}", fork.kind.branch_words()),
        },
        ForkKind::Unknown => format!("left {from} for a reason the files don't say"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> Session {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/kimi-cli")
            .join(name)
            .join("sessions");
        // fixtures/kimi-cli/<name>/sessions/<work>/<session>
        let work = std::fs::read_dir(&root).unwrap().next().unwrap().unwrap();
        let dir = std::fs::read_dir(work.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        Session::load(&dir.path()).unwrap()
    }

    #[test]
    fn order_maps_both_ways() {
        let s = fixture("dmail_twice");
        let f = s.main();
        let o = Order::of(f);
        assert_eq!(o.lines(), 3);
        for x in 0..o.total {
            let (line, record) = o.record_of(x).unwrap();
            assert_eq!(o.x_of(line, record), Some(x));
        }
        // A shared record has no x of its own on the later line.
        assert_eq!(o.x_of(1, 0), None);
        assert_eq!(o.record_of(o.total), None);
        assert_eq!(o.own(0).start, 0);
        assert_eq!(o.own(2).end, o.total);
    }

    #[test]
    fn dmail_twice_has_three_tracks_two_arcs_in_written_order() {
        let s = fixture("dmail_twice");
        let m = Map::of_session(&s);
        let names: Vec<_> = m.tracks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["α", "β", "γ"]);
        let states: Vec<_> = m.tracks.iter().map(|t| t.state).collect();
        assert_eq!(
            states,
            [
                TrackState::Abandoned,
                TrackState::Abandoned,
                TrackState::Current
            ]
        );
        // Tracks run left to right in written order, never overlapping.
        assert_eq!(m.tracks[0].own.start, 0);
        assert_eq!(m.tracks[0].own.end, m.tracks[1].own.start);
        assert_eq!(m.tracks[2].own.end, m.width);
        for t in &m.tracks[1..] {
            let fx = t.fork_x.unwrap();
            let origin = t.origin.unwrap();
            assert!(
                m.tracks[origin].own.contains(&fx),
                "{} forks on its origin",
                t.name
            );
            assert!(fx < t.own.start);
            assert!(t.reason.starts_with("← D-Mail from "), "{}", t.reason);
        }
        assert_eq!(m.tracks[0].reason, "the first world line");
        // Each landed arc goes from a call on the sender back to the ⚑ the
        // new line left from, and that ⚑ is a tick of the track drawing it.
        let landed: Vec<_> = m
            .arcs
            .iter()
            .filter(|a| matches!(a.outcome, Outcome::Landed(_)))
            .collect();
        assert_eq!(landed.len(), 2);
        for a in landed {
            let Outcome::Landed(k) = a.outcome else {
                unreachable!()
            };
            let to = a.to_x.unwrap();
            assert!(to < a.from_x);
            assert_eq!(Some(a.checkpoint), m.tracks[k].back_to);
            assert!(m.tracks.iter().any(|t| t.ticks.contains(&Tick {
                x: to,
                checkpoint: a.checkpoint
            })));
            assert_eq!(m.tracks[k].fork_x.map(|fx| fx >= to), Some(true));
            assert!(m.tracks[k]
                .reason
                .contains(&format!("from {}", line_name(a.from_line))));
        }
        assert!(m.caption(2).starts_with("γ: back to ⚑"), "{}", m.caption(2));
        assert!(m.caption(2).ends_with("% new"));
        assert!(m.marks.is_empty());
        // Ticks are the lines' own checkpoints, in order.
        for t in &m.tracks {
            assert!(t.ticks.windows(2).all(|w| w[0].x < w[1].x));
            assert!(t.ticks.iter().all(|k| t.own.contains(&k.x)));
        }
    }

    #[test]
    fn a_compaction_inside_a_world_line_is_marked_where_it_is() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "fixtures/kimi-code/d_compact_undo/home/sessions/wd_project_65ebbb9ea3d1/session_6154a4f5-2d74-4bd1-9d43-55d80bc9bd7b",
        );
        let s = Session::load(&dir).unwrap();
        let m = Map::of_session(&s);
        assert_eq!(m.marks.len(), 1);
        assert_eq!(m.marks[0].kind, MarkKind::Compaction);
        assert_eq!(m.marks[0].line, 0);
        // Not a world line of its own: two branches, both undo or root.
        assert!(m
            .tracks
            .iter()
            .all(|t| t.kind != Some(ForkKind::Compaction)));
    }

    #[test]
    fn compaction_and_clear_are_marks_not_time_travel() {
        let s = fixture("with_compact");
        let m = Map::of_session(&s);
        assert_eq!(m.tracks[0].state, TrackState::Compacted);
        assert_eq!(m.tracks[1].kind, Some(ForkKind::Compaction));
        assert!(
            m.tracks[1].reason.starts_with('⊜'),
            "{}",
            m.tracks[1].reason
        );
        assert!(!m.tracks[1].reason.contains("D-Mail"));
        assert_eq!(m.marks.len(), 1);
        assert_eq!(m.marks[0].kind, MarkKind::Compaction);
        assert!(m.caption(1).contains("compacted"));

        let s = fixture("with_clear");
        let m = Map::of_session(&s);
        assert_eq!(m.tracks[0].state, TrackState::Cleared);
        assert!(
            m.tracks[1].reason.starts_with('∅'),
            "{}",
            m.tracks[1].reason
        );
        assert_eq!(m.marks[0].kind, MarkKind::Clear);
        assert!(m.caption(1).contains("/clear"));
        assert!(m.arcs.is_empty());
    }

    #[test]
    fn refused_dmails_are_arcs_without_a_line() {
        let s = fixture("dmail_errors");
        let m = Map::of_session(&s);
        let refused: Vec<_> = m
            .arcs
            .iter()
            .filter(|a| matches!(a.outcome, Outcome::Refused(_)))
            .collect();
        assert!(!refused.is_empty());
        for a in refused {
            assert!(m.tracks[a.from_line].own.contains(&a.from_x));
        }
    }

    #[test]
    fn subagents_hang_under_their_call() {
        let s = fixture("subagent");
        let m = Map::of_session(&s);
        assert!(!m.subagents.is_empty());
        for sub in &m.subagents {
            assert!(m.tracks[sub.host_line].own.contains(&sub.x));
            assert!(sub.world_lines >= 1);
            assert!(!sub.label.is_empty());
        }
    }

    fn fork_fixture(id: &str) -> Session {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/kimi-cli-history/v1_40_0_fork_undo/sessions")
            .join("e7267f0bd6f7ca742a4acd6faae02d7e")
            .join(id);
        Session::load(&dir).unwrap()
    }

    #[test]
    fn forks_leave_the_source_at_their_last_shared_record() {
        let s = fork_fixture("0706220a-4234-46bf-958b-2c56b11dcb00");
        let m = Map::of_session(&s);
        assert_eq!(m.forks.len(), 2);
        let kinds: Vec<_> = m.forks.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [LinkKind::Undo, LinkKind::Fork]);
        for f in &m.forks {
            let link = &s.forks[f.fork];
            let at = f.at.unwrap();
            // The x is the shared prefix's last record, on the track drawing it.
            assert_eq!(at.record, link.records - 1);
            assert!(m.tracks[f.host_line].own.contains(&f.x));
            assert_eq!(
                Order::of(s.main()).record_of(f.x),
                Some((at.line, at.record))
            );
            let id = link
                .session
                .strip_prefix("session_")
                .unwrap_or(&link.session);
            assert_eq!(f.label, &id[..8]);
            assert!(f
                .text()
                .starts_with(&format!("⑂ /{} · {}", f.kind.as_str(), f.label)));
            assert!(f.text().ends_with(&format!("{} records", link.records)));
        }
        // The /undo shares fewer records: it leaves earlier.
        assert!(m.forks[0].x < m.forks[1].x);
        assert!(m.forks[0].checkpoint.is_some());
        assert_eq!(came_from(&s), None);
    }

    #[test]
    fn a_fork_session_says_where_it_came_from() {
        let s = fork_fixture("e299ef2f-64d0-45f5-b7f1-32ec254df600");
        let text = came_from(&s).unwrap();
        let r = s.fork_point(s.forked_from.as_ref().unwrap()).unwrap();
        // In the words the source's map uses for it (`ForkTrack::text`).
        assert!(text.starts_with("/undo of one · from ⚑"), "{text}");
        assert!(
            text.ends_with(&format!("shares {} records", r.record + 1)),
            "{text}"
        );
        let link = s.forked_from.as_ref().unwrap();
        assert!(
            text.ends_with(&format!("shares {} records", link.records)),
            "{text}"
        );
        let m = Map::of_session(&s);
        assert!(m.forks.is_empty());
        // The map's first line and the header's caption say it too.
        assert_eq!(m.tracks[0].reason, format!("⑂ {text}"));
        assert_eq!(m.caption(0), format!("α: ⑂ {text}"));
        let s = fork_fixture("1daf86b9-2123-4299-843b-fa06669261a9");
        assert!(came_from(&s).unwrap().starts_with("/fork of one · from "));
    }
}
