//! kimi-cli's record times. Its context files carry none; `wire.jsonl`
//! does (read by [`WireLog`]): tool calls and results are joined by their
//! ids, checkpoints by the order of turns and steps. Each world line's own
//! records get the best time known, as [`Times`] the builder keeps. A
//! [`WireJoin`] keeps the last join, so the follower's next one after an
//! append starts where something changed.

use crate::model::Role;
use crate::read::{FileIndex, Records};
use crate::sources::{LineFork, Times, WireLog};

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

/// The join's state, so the next join continues it.
#[derive(Debug, Clone, Default, PartialEq)]
struct Timing {
    /// Per world line, the state after its own records.
    ends: Vec<Cursor>,
    /// In visiting order.
    waiting: Vec<Waiting>,
}

impl Waiting {
    fn resolved(&self, files: &[FileIndex], wire: &WireLog, anchors: &dyn Fn() -> usize) -> bool {
        let rec = files
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

/// The last join of one agent's family: what the next one continues.
#[derive(Debug, Clone, Default)]
struct Joined {
    records: Vec<Records>,
    shared: Vec<usize>,
    times: Vec<Times>,
    timing: Timing,
}

/// Joins one agent's wire to its world lines, keeping the last join.
#[derive(Debug, Clone, Default)]
pub struct WireJoin {
    last: Option<Joined>,
}

/// The times of `files`' own records, joined from scratch.
pub fn join(files: &[FileIndex], forks: &[LineFork], wire: &WireLog) -> Vec<Times> {
    WireJoin::default().join(files, forks, wire)
}

impl WireJoin {
    /// Forgets the last join: the wire was read again from its start.
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// Gives every own record of `files` the best time `wire` supports —
    /// exact for tool calls and results, else the time of the checkpoint
    /// that opened its step. Records are visited in the order they were
    /// written (each world line's own records after its predecessors').
    /// After an earlier join of the same family whose wire was a prefix of
    /// this one, the walk starts where something changed: a world line that
    /// grew or changed, or a record whose wire data has arrived since.
    pub fn join(&mut self, files: &[FileIndex], forks: &[LineFork], wire: &WireLog) -> Vec<Times> {
        let shared: Vec<usize> = (0..files.len())
            .map(|i| LineFork::checked(forks, files, i).1)
            .collect();
        let prev = self
            .last
            .take()
            .filter(|p| p.timing.ends.len() == p.records.len());
        let (times, timing) = join_from(files, &shared, wire, prev.as_ref());
        self.last = Some(Joined {
            records: files.iter().map(|f| f.records.clone()).collect(),
            shared,
            times: times.clone(),
            timing,
        });
        times
    }
}

fn join_from(
    files: &[FileIndex],
    shared: &[usize],
    wire: &WireLog,
    prev: Option<&Joined>,
) -> (Vec<Times>, Timing) {
    let n = files.len();
    let mut out: Vec<Times> = vec![Times::default(); n];
    // All of them, so only asked for when a checkpoint needs one.
    let all_anchors = std::cell::OnceCell::new();
    let anchors = || all_anchors.get_or_init(|| wire.checkpoint_times());
    // Where to start again: (line, record, state before it, keep the
    // line's earlier times).
    let mut start = (
        0,
        shared.first().copied().unwrap_or(0),
        Cursor::default(),
        false,
    );
    if let Some(p) = prev {
        let end_before = |i: usize| {
            i.checked_sub(1)
                .map_or(Cursor::default(), |j| p.timing.ends[j])
        };
        start = (n, 0, Cursor::default(), false);
        for i in 0..n {
            let len = files[i].records.len();
            let same = p
                .records
                .get(i)
                .filter(|old| p.shared[i] == shared[i] && files[i].records.extends(old));
            match same {
                None => {
                    start = (i, shared[i], end_before(i), false);
                    break;
                }
                Some(old) if len > old.len() => {
                    let from = old.len().max(shared[i]);
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
            .find(|w| w.resolved(files, wire, &|| anchors().len()))
        {
            if (w.line, w.record) < (start.0, start.1) {
                start = (w.line, w.record, w.before, true);
            }
        }
    }
    let (from_line, from_record, mut cur, keep) = start;
    let mut timing = Timing {
        ends: Vec::with_capacity(n),
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
        for (i, t) in out.iter_mut().enumerate().take(from_line.min(n)) {
            *t = p.times[i].clone();
        }
    }
    for i in from_line..n {
        let (first, mut times) = match prev {
            Some(p) if i == from_line && keep => {
                let mut t = p.times[i].clone();
                t.truncate(from_record);
                (from_record, t)
            }
            _ => (shared[i], Times::default()),
        };
        for (r, rec) in files[i].records.iter().enumerate().skip(first) {
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
            times.set(r, exact.or(cur.current));
        }
        out[i] = times;
        timing.ends.push(cur);
    }
    (out, timing)
}
