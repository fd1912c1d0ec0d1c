//! Times from a wire log, joined to records: tool calls and results by
//! their ids, checkpoints by the order of turns and steps (pure; the
//! source reads the log, see `sources::WireLog`). Times are kept as
//! change points per world line ([`Times`]), and the join can continue from
//! the previous snapshot's ([`Timing`]).

use std::sync::Arc;

pub use crate::sources::WireLog;

use super::family::Family;
use crate::model::Role;

/// Points per shared chunk: a clone copies at most this many.
const CHUNK: usize = 1024;

/// A time that starts at record `at` and holds until the next point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    at: u32,
    /// `f64` bits; [`NO_TIME`] for none.
    bits: [u32; 2],
}

const NO_TIME: u64 = u64::MAX;

impl Point {
    fn new(at: usize, t: Option<f64>) -> Point {
        let b = t.map_or(NO_TIME, f64::to_bits);
        Point {
            at: u32::try_from(at).unwrap_or(u32::MAX),
            bits: [b as u32, (b >> 32) as u32],
        }
    }

    fn time(self) -> Option<f64> {
        let b = u64::from(self.bits[0]) | (u64::from(self.bits[1]) << 32);
        (b != NO_TIME).then(|| f64::from_bits(b))
    }
}

/// The times of one world line's own records, by record index: a point
/// where the time changes (times only change at checkpoints, tool calls and
/// their results). Full chunks are shared between clones, so handing the
/// previous snapshot's times on costs O(points / CHUNK).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Times {
    full: Vec<Arc<[Point]>>,
    tail: Vec<Point>,
}

impl Times {
    fn len(&self) -> usize {
        self.full.len() * CHUNK + self.tail.len()
    }

    fn get(&self, i: usize) -> Point {
        match self.full.get(i / CHUNK) {
            Some(c) => c[i % CHUNK],
            None => self.tail[i - self.full.len() * CHUNK],
        }
    }

    fn last(&self) -> Option<Point> {
        self.len().checked_sub(1).map(|i| self.get(i))
    }

    /// Points at or after `record`.
    fn first_at(&self, record: usize) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if (self.get(mid).at as usize) < record {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The time of record `record` (one of the world line's own).
    pub fn at(&self, record: usize) -> Option<f64> {
        let i = self.first_at(record.saturating_add(1));
        i.checked_sub(1).and_then(|i| self.get(i).time())
    }

    /// Sets the next record's time; records come in increasing order.
    fn set(&mut self, record: usize, t: Option<f64>) {
        if self.last().and_then(Point::time) == t {
            return;
        }
        self.tail.push(Point::new(record, t));
        if self.tail.len() == CHUNK {
            self.full.push(Arc::from(std::mem::take(&mut self.tail)));
        }
    }

    /// Forgets the times of `record` and after.
    fn truncate(&mut self, record: usize) {
        let keep = self.first_at(record);
        if keep >= self.full.len() * CHUNK {
            self.tail.truncate(keep - self.full.len() * CHUNK);
            return;
        }
        let chunk = keep / CHUNK;
        let mut tail = self.full[chunk][..keep % CHUNK].to_vec();
        tail.reserve(CHUNK - tail.len());
        self.full.truncate(chunk);
        self.tail = tail;
    }
}

/// Where the join stands: checkpoints seen so far and the time in force.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Cursor {
    next_anchor: usize,
    current: Option<f64>,
}

/// What a joined time waits for from the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// The checkpoint time with this index.
    Anchor(usize),
    /// The call time of the record's first tool call.
    Call,
    /// The result time of the record's `tool_call_id`.
    Result,
}

/// A record joined before the wire held what its time depends on.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Waiting {
    line: usize,
    record: usize,
    /// The join's state just before the record.
    before: Cursor,
    need: Need,
}

/// The join's state kept with a family, so the next snapshot continues it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timing {
    /// A wire was joined.
    wired: bool,
    /// Per world line, the state after its own records.
    ends: Vec<Cursor>,
    /// In visiting order.
    waiting: Vec<Waiting>,
}

impl Waiting {
    fn resolved(&self, family: &Family, wire: &WireLog, anchors: &dyn Fn() -> usize) -> bool {
        let rec = family
            .files
            .get(self.line)
            .and_then(|f| f.records.get(self.record));
        match (self.need, rec) {
            (Need::Anchor(k), _) => k < anchors(),
            (Need::Call, Some(r)) => r
                .tool_calls()
                .first()
                .is_some_and(|c| wire.call_time(c.key()).is_some()),
            (Need::Result, Some(r)) => r
                .tool_call_key()
                .is_some_and(|id| wire.result_time(id).is_some()),
            (_, None) => true,
        }
    }
}

/// Gives every own record of `family` the best time known: the source's
/// (`source[line][record]`), else what the wire log supports — exact for
/// tool calls and results, else the time of the checkpoint that opened its
/// step. Records are visited in the order they were written (each world
/// line's own records after its predecessors'). With `prev` (the same
/// agent's family in the previous snapshot, whose wire was a prefix of this
/// one) the walk starts where something changed: a world line that grew or
/// changed, or a record whose wire data has arrived since.
pub fn join_times(
    family: &mut Family,
    wire: Option<&WireLog>,
    source: &[crate::sources::LineTimes],
    prev: Option<&Family>,
) {
    let given = |line: usize, record: usize| source.get(line)?.at(record);
    let Some(wire) = wire else {
        for i in 0..family.lines.len() {
            let mut times = Times::default();
            for r in family.lines[i].shared..family.files[i].records.len() {
                times.set(r, given(i, r));
            }
            family.lines[i].times = times;
        }
        family.timing = Timing::default();
        return;
    };
    // All of them, so only asked for when a checkpoint needs one.
    let all_anchors = std::cell::OnceCell::new();
    let anchors = || all_anchors.get_or_init(|| wire.checkpoint_times());
    let prev = prev.filter(|p| p.timing.wired && p.timing.ends.len() == p.lines.len());
    // Where to start again: (line, record, state before it, keep the
    // line's earlier times).
    let mut start = (
        0,
        family.lines.first().map_or(0, |l| l.shared),
        Cursor::default(),
        false,
    );
    if let Some(p) = prev {
        let end_before = |i: usize| {
            i.checked_sub(1)
                .map_or(Cursor::default(), |j| p.timing.ends[j])
        };
        start = (family.lines.len(), 0, Cursor::default(), false);
        for (i, l) in family.lines.iter().enumerate() {
            let len = family.files[i].records.len();
            let same = p.lines.get(i).filter(|w| {
                w.shared == l.shared && family.files[i].records.extends(&p.files[i].records)
            });
            match same {
                None => {
                    start = (i, l.shared, end_before(i), false);
                    break;
                }
                Some(_) if len > p.files[i].records.len() => {
                    let from = p.files[i].records.len().max(l.shared);
                    start = (i, from, p.timing.ends[i], true);
                    break;
                }
                Some(_) => {}
            }
        }
        if let Some(w) = p
            .timing
            .waiting
            .iter()
            .find(|w| w.resolved(family, wire, &|| anchors().len()))
        {
            if (w.line, w.record) < (start.0, start.1) {
                start = (w.line, w.record, w.before, true);
            }
        }
    }
    let (from_line, from_record, mut cur, keep) = start;
    let mut timing = Timing {
        wired: true,
        ends: Vec::with_capacity(family.lines.len()),
        waiting: Vec::new(),
    };
    if let Some(p) = prev {
        timing
            .ends
            .extend_from_slice(&p.timing.ends[..from_line.min(p.timing.ends.len())]);
        timing.waiting.extend(
            p.timing
                .waiting
                .iter()
                .filter(|w| (w.line, w.record) < (from_line, from_record))
                .copied(),
        );
        for i in 0..from_line.min(family.lines.len()) {
            family.lines[i].times = p.lines[i].times.clone();
        }
    }
    for i in from_line..family.lines.len() {
        let (first, mut times) = match prev {
            Some(p) if i == from_line && keep => {
                let mut t = p.lines[i].times.clone();
                t.truncate(from_record);
                (from_record, t)
            }
            _ => (family.lines[i].shared, Times::default()),
        };
        let file = &family.files[i];
        for (r, rec) in file.records.iter().enumerate().skip(first) {
            let before = cur;
            let mut wait = |need| {
                timing.waiting.push(Waiting {
                    line: i,
                    record: r,
                    before,
                    need,
                })
            };
            if *rec.role() == Role::Checkpoint && rec.checkpoint().is_some() {
                match anchors().get(cur.next_anchor) {
                    Some(&t) => cur.current = Some(cur.current.map_or(t, |c| c.max(t))),
                    // Later checkpoints wait for it too: one entry will do.
                    None if cur.next_anchor == anchors().len() => {
                        wait(Need::Anchor(cur.next_anchor))
                    }
                    None => {}
                }
                cur.next_anchor += 1;
            }
            let mut exact = None;
            if let Some(c) = rec.tool_calls().first() {
                exact = wire.call_time(c.key());
                if exact.is_none() {
                    wait(Need::Call);
                }
            }
            if exact.is_none() {
                if let Some(id) = rec.tool_call_key() {
                    exact = wire.result_time(id);
                    if exact.is_none() {
                        wait(Need::Result);
                    }
                }
            }
            if let Some(t) = exact {
                cur.current = Some(cur.current.map_or(t, |c| c.max(t)));
            }
            times.set(r, given(i, r).or(exact.or(cur.current)));
        }
        family.lines[i].times = times;
        timing.ends.push(cur);
    }
    family.timing = timing;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_change_points_that_survive_truncation_across_chunks() {
        let mut t = Times::default();
        let at = |r: usize| (r / 3) as f64;
        for r in 5..5000 {
            t.set(r, Some(at(r)));
        }
        assert_eq!(t.at(4), None);
        assert_eq!(t.at(5), Some(1.0));
        assert_eq!(t.at(4999), Some(at(4999)));
        assert!(t.len() < 1700, "one point per change: {}", t.len());
        for cut in [4000, 3072, 10] {
            let mut c = t.clone();
            c.truncate(cut);
            for r in cut..5000 {
                c.set(r, Some(at(r)));
            }
            assert_eq!(c, t, "cut at {cut}");
        }
    }
}
