//! [`WireLog`]: the times worldline takes from an agent's wire log, kept
//! small and shared append-only between the live follower and its
//! snapshots.
//!
//! The graph reads three things: when each tool call was made and answered
//! (by call id) and the times checkpoints were written. They are held as a
//! list of checkpoint times and an open-addressing table keyed by a seeded
//! hash of the call id, both behind an `Arc`. A clone shares both and only
//! remembers how much of them it has seen, so handing a copy to every
//! snapshot is O(1); the follower goes on appending in place. Every table
//! value carries the number of the event that wrote it, and a log ignores
//! what was written after its own last event: a snapshot reads exactly what
//! its wire said when it was taken. A log that appends past a newer clone's
//! writes (not the follower's case) moves to a copy of its own.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::model::CallKey;

/// The wire's times as the graph reads them. Cloning is O(1).
#[derive(Clone, Default)]
pub struct WireLog {
    /// `protocol_version` of the `metadata` header (kimi-cli ≥ 0.85).
    pub protocol: Option<String>,
    calls: Calls,
    checkpoints: Times,
    /// The last turn's start and whether it is in `checkpoints` yet: a
    /// slash command's turn counts only once it has a step.
    turn: Option<(f64, bool)>,
}

impl WireLog {
    /// When the tool call `id` (its key, as the record index keeps it)
    /// was made, as the wire says.
    pub fn call_time(&self, id: CallKey) -> Option<f64> {
        self.calls.get(slot_key(id), Side::Call)
    }

    /// When the result of the tool call `id` arrived, as the wire says.
    pub fn result_time(&self, id: CallKey) -> Option<f64> {
        self.calls.get(slot_key(id), Side::Result)
    }

    /// The times at which checkpoints were written, in order: one per real
    /// turn (slash commands write none unless they run a step) and one per
    /// step.
    pub fn checkpoint_times(&self) -> &[f64] {
        self.checkpoints.as_slice()
    }

    /// Tool calls with a call or a result time.
    pub fn tool_calls(&self) -> usize {
        self.calls.visible().count()
    }

    /// A turn began; `slash` says its input is a slash command.
    pub(crate) fn turn_begin(&mut self, ts: f64, slash: bool) {
        if !slash {
            self.checkpoints.push(ts);
        }
        self.turn = Some((ts, !slash));
    }

    /// A step of the last turn began (ignored before any turn).
    pub(crate) fn step_begin(&mut self, ts: f64) {
        let Some((start, counted)) = &mut self.turn else {
            return;
        };
        if !*counted {
            *counted = true;
            let start = *start;
            self.checkpoints.push(start);
        }
        self.checkpoints.push(ts);
    }

    /// A `ToolCall` (`call`) or `ToolResult` event for call `id`; the first
    /// time given for each side is kept.
    pub(crate) fn tool_event(&mut self, call: bool, ts: f64, id: &str) {
        let side = if call { Side::Call } else { Side::Result };
        self.calls.set_once(slot_key(CallKey::of(id)), side, ts);
    }
}

impl std::fmt::Debug for WireLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireLog")
            .field("protocol", &self.protocol)
            .field("checkpoints", &self.checkpoint_times())
            .field("tool_calls", &self.tool_calls())
            .finish()
    }
}

/// Equal when a reader of the log could not tell them apart (times compare
/// by bits, so a NaN a file spells equals itself).
impl PartialEq for WireLog {
    fn eq(&self, other: &WireLog) -> bool {
        let bits = |t: &[f64]| t.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        self.protocol == other.protocol
            && self.turn.map(|(t, c)| (t.to_bits(), c)) == other.turn.map(|(t, c)| (t.to_bits(), c))
            && bits(self.checkpoint_times()) == bits(other.checkpoint_times())
            && self.calls.sorted() == other.calls.sorted()
    }
}

/// A call id as the table keys it: its [`CallKey`], a seeded 64-bit hash a
/// session file cannot be written to make collide (never 0, which marks an
/// empty slot).
fn slot_key(id: CallKey) -> u64 {
    id.bits().max(1)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Call,
    Result,
}

/// One call id's times. `*_at` is the number (from 1) of the event that
/// wrote the time, 0 while unset; it is stored after the time (release) and
/// read before it (acquire), and `key` is stored last when a slot is taken.
#[derive(Default)]
struct Slot {
    key: AtomicU64,
    call: AtomicU64,
    result: AtomicU64,
    call_at: AtomicU32,
    result_at: AtomicU32,
}

impl Slot {
    fn side(&self, side: Side) -> (&AtomicU64, &AtomicU32) {
        match side {
            Side::Call => (&self.call, &self.call_at),
            Side::Result => (&self.result, &self.result_at),
        }
    }

    /// The time of `side` if event `seen` or an earlier one wrote it.
    fn read(&self, side: Side, seen: u32) -> Option<f64> {
        let (time, at) = self.side(side);
        let at = at.load(Ordering::Acquire);
        (at != 0 && at <= seen).then(|| f64::from_bits(time.load(Ordering::Relaxed)))
    }
}

struct Table {
    /// A power of two long, never more than three quarters full.
    slots: Box<[Slot]>,
    /// Events written into this table: the frontier only its writer moves.
    events: AtomicU32,
    used: AtomicUsize,
}

impl Table {
    fn with_capacity(cap: usize) -> Table {
        Table {
            slots: (0..cap).map(|_| Slot::default()).collect(),
            events: AtomicU32::new(0),
            used: AtomicUsize::new(0),
        }
    }

    /// The slot holding `key`, or the empty one where it would go.
    fn probe(&self, key: u64) -> &Slot {
        let mask = self.slots.len() - 1;
        let mut i = key as usize & mask;
        loop {
            let s = &self.slots[i];
            let k = s.key.load(Ordering::Acquire);
            if k == key || k == 0 {
                return s;
            }
            i = (i + 1) & mask;
        }
    }
}

/// Tool-call times: a shared table and the events of it this log has seen.
#[derive(Clone)]
struct Calls {
    table: Arc<Table>,
    seen: u32,
}

impl Default for Calls {
    fn default() -> Calls {
        Calls {
            table: Arc::new(Table::with_capacity(16)),
            seen: 0,
        }
    }
}

impl Calls {
    fn get(&self, key: u64, side: Side) -> Option<f64> {
        let s = self.table.probe(key);
        if s.key.load(Ordering::Acquire) != key {
            return None;
        }
        s.read(side, self.seen)
    }

    fn set_once(&mut self, key: u64, side: Side, ts: f64) {
        if self.get(key, side).is_some() || self.seen == u32::MAX {
            return;
        }
        let full = (self.table.used.load(Ordering::Relaxed) + 1) * 4 > self.table.slots.len() * 3;
        if full {
            self.copy(self.table.slots.len() * 2);
        }
        // Claim the next event number; a clone that wrote past ours means
        // the table is no longer ours to write.
        let claim = |t: &Table, seen| {
            t.events
                .compare_exchange(seen, seen + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        };
        if !claim(&self.table, self.seen) {
            self.copy(self.table.slots.len());
            claim(&self.table, self.seen);
        }
        self.seen += 1;
        let s = self.table.probe(key);
        let (time, at) = s.side(side);
        time.store(ts.to_bits(), Ordering::Relaxed);
        at.store(self.seen, Ordering::Release);
        if s.key.load(Ordering::Relaxed) == 0 {
            self.table.used.fetch_add(1, Ordering::Relaxed);
            s.key.store(key, Ordering::Release);
        }
    }

    /// Moves to a table of our own with `cap` slots, holding what we see.
    fn copy(&mut self, cap: usize) {
        let mut new = Table::with_capacity(cap);
        let mut used = 0;
        for (key, call, result) in self.visible() {
            let s = new.probe(key);
            for (side, t) in [(Side::Call, call), (Side::Result, result)] {
                let Some((t, at)) = t else { continue };
                let (time, at_slot) = s.side(side);
                time.store(t.to_bits(), Ordering::Relaxed);
                at_slot.store(at, Ordering::Relaxed);
            }
            s.key.store(key, Ordering::Relaxed);
            used += 1;
        }
        *new.events.get_mut() = self.seen;
        *new.used.get_mut() = used;
        self.table = Arc::new(new);
    }

    /// Every key with a time we see: (key, call, result), each time with the
    /// number of the event that wrote it.
    #[allow(clippy::type_complexity)]
    fn visible(&self) -> impl Iterator<Item = (u64, Option<(f64, u32)>, Option<(f64, u32)>)> + '_ {
        let seen = self.seen;
        self.table.slots.iter().filter_map(move |s| {
            let key = s.key.load(Ordering::Acquire);
            let at = |side| {
                let (_, a) = s.side(side);
                let a = a.load(Ordering::Acquire);
                s.read(side, seen).map(|t| (t, a))
            };
            let (call, result) = (at(Side::Call), at(Side::Result));
            (key != 0 && (call.is_some() || result.is_some())).then_some((key, call, result))
        })
    }

    /// The visible times by key, for comparing logs.
    fn sorted(&self) -> Vec<(u64, Option<u64>, Option<u64>)> {
        let mut v: Vec<_> = self
            .visible()
            .map(|(k, c, r)| (k, c.map(|t| t.0.to_bits()), r.map(|t| t.0.to_bits())))
            .collect();
        v.sort_unstable();
        v
    }
}

/// Checkpoint times: a shared list and how much of it this log has.
#[derive(Clone)]
struct Times {
    buf: Arc<TimesBuf>,
    len: usize,
}

struct TimesBuf {
    slots: Box<[AtomicU64]>,
    /// Slots written so far; a slot is written once, by the log that
    /// claimed it (a CAS from its index), before any log's length covers it.
    claimed: AtomicUsize,
}

impl Default for Times {
    fn default() -> Times {
        Times::with_capacity(0, &[])
    }
}

impl Times {
    fn with_capacity(cap: usize, from: &[f64]) -> Times {
        let slots: Box<[AtomicU64]> = (0..cap.max(from.len()))
            .map(|i| AtomicU64::new(from.get(i).map_or(0, |t| t.to_bits())))
            .collect();
        Times {
            buf: Arc::new(TimesBuf {
                slots,
                claimed: AtomicUsize::new(from.len()),
            }),
            len: from.len(),
        }
    }

    fn push(&mut self, t: f64) {
        let at = self.len;
        let ours = at < self.buf.slots.len()
            && self
                .buf
                .claimed
                .compare_exchange(at, at + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
        if !ours {
            *self = Times::with_capacity((at * 2).max(64), self.as_slice());
            return self.push(t);
        }
        self.buf.slots[at].store(t.to_bits(), Ordering::Release);
        self.len = at + 1;
    }

    fn as_slice(&self) -> &[f64] {
        let slots = &self.buf.slots[..self.len];
        // SAFETY: the first `len` slots were written before this log's
        // length covered them (by this log, or by the one it was cloned
        // from, which handed it over through whatever moved the clone) and
        // are never written again; `AtomicU64` has `u64`'s size, alignment
        // and bit validity, and every bit pattern is an `f64`.
        unsafe { std::slice::from_raw_parts(slots.as_ptr().cast::<f64>(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(id: &str) -> CallKey {
        CallKey::of(id)
    }

    #[test]
    fn first_time_wins_and_unknown_ids_have_none() {
        let mut w = WireLog::default();
        w.tool_event(true, 1.0, "a");
        w.tool_event(true, 2.0, "a");
        w.tool_event(false, 3.0, "a");
        w.tool_event(false, 4.0, "b");
        assert_eq!(w.call_time(k("a")), Some(1.0));
        assert_eq!(w.result_time(k("a")), Some(3.0));
        assert_eq!(
            (w.call_time(k("b")), w.result_time(k("b"))),
            (None, Some(4.0))
        );
        assert_eq!(w.call_time(k("c")), None);
        assert_eq!(w.tool_calls(), 2);
    }

    #[test]
    fn slash_turns_count_only_with_steps() {
        let mut w = WireLog::default();
        w.step_begin(0.5); // before any turn: nothing to attach it to
        w.turn_begin(1.0, false);
        w.step_begin(1.5);
        w.turn_begin(2.0, true);
        w.turn_begin(3.0, true);
        w.step_begin(3.5);
        w.step_begin(3.7);
        assert_eq!(w.checkpoint_times(), &[1.0, 1.5, 3.0, 3.5, 3.7]);
    }

    /// A clone shares the storage and keeps reading what it saw while the
    /// original appends in place; grown past its table, too.
    #[test]
    fn a_clone_shares_and_keeps_its_view_while_the_original_appends() {
        let mut live = WireLog::default();
        live.turn_begin(1.0, false);
        live.tool_event(true, 1.1, "c0");
        let snap = live.clone();
        assert!(Arc::ptr_eq(&live.calls.table, &snap.calls.table));
        assert!(Arc::ptr_eq(&live.checkpoints.buf, &snap.checkpoints.buf));
        live.tool_event(false, 1.2, "c0");
        live.tool_event(true, 1.3, "c1");
        assert!(
            Arc::ptr_eq(&live.calls.table, &snap.calls.table),
            "appended in place"
        );
        for i in 2..1000 {
            live.tool_event(true, f64::from(i), &format!("c{i}"));
            live.step_begin(f64::from(i));
        }
        assert_eq!(snap.result_time(k("c0")), None);
        assert_eq!(snap.call_time(k("c1")), None);
        assert_eq!(snap.call_time(k("c0")), Some(1.1));
        assert_eq!(snap.checkpoint_times(), &[1.0]);
        assert_eq!(snap.tool_calls(), 1);
        assert_eq!(live.result_time(k("c0")), Some(1.2));
        assert_eq!(live.call_time(k("c999")), Some(999.0));
        assert_eq!(live.checkpoint_times().len(), 999);
    }

    /// Two clones that both append go their own ways.
    #[test]
    fn appends_after_clone_do_not_leak_between_branches() {
        let mut a = WireLog::default();
        a.tool_event(true, 1.0, "x");
        a.turn_begin(1.0, false);
        let mut b = a.clone();
        a.tool_event(false, 2.0, "x");
        a.step_begin(2.0);
        b.tool_event(false, 5.0, "x");
        b.tool_event(true, 6.0, "y");
        b.step_begin(5.0);
        assert_eq!(a.result_time(k("x")), Some(2.0));
        assert_eq!(b.result_time(k("x")), Some(5.0));
        assert_eq!(
            (a.call_time(k("y")), b.call_time(k("y"))),
            (None, Some(6.0))
        );
        assert_eq!(a.checkpoint_times(), &[1.0, 2.0]);
        assert_eq!(b.checkpoint_times(), &[1.0, 5.0]);
        let c = b.clone();
        assert_eq!(c, b);
        assert_ne!(a, b);
    }

    /// A snapshot read on another thread while the follower appends.
    #[test]
    fn snapshots_read_on_other_threads_while_appending() {
        let mut live = WireLog::default();
        let (tx, rx) = std::sync::mpsc::channel::<WireLog>();
        let reader = std::thread::spawn(move || {
            let mut checked = 0;
            for snap in rx {
                let n = snap.checkpoint_times().len();
                assert!(snap
                    .checkpoint_times()
                    .iter()
                    .enumerate()
                    .all(|(i, &t)| t == i as f64));
                for i in 0..n {
                    assert_eq!(snap.call_time(k(&format!("c{i}"))), Some(i as f64));
                }
                assert_eq!(snap.call_time(k(&format!("c{n}"))), None);
                checked += 1;
            }
            checked
        });
        live.turn_begin(0.0, false);
        live.tool_event(true, 0.0, "c0");
        for i in 1..3000 {
            if i % 100 == 0 {
                tx.send(live.clone()).unwrap();
            }
            live.step_begin(f64::from(i));
            live.tool_event(true, f64::from(i), &format!("c{i}"));
        }
        drop(tx);
        assert_eq!(reader.join().unwrap(), 29);
    }
}
