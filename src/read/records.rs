//! [`Records`]: a world line's record list, shared append-only between the
//! live follower and its snapshots, and shared as segments between a world
//! line and the branches that leave it.
//!
//! The follower keeps appending to a file's records while the session it
//! last handed out still reads them. A `Vec` would have to be copied for
//! every snapshot (O(records) per update); here a clone shares one buffer
//! and only remembers its own length. Slots below a clone's length are never
//! written again, so every clone reads a stable prefix; a push writes the
//! next free slot only if no clone has claimed it yet, else (or when the
//! buffer is full) it moves to a new buffer, doubling, so pushes stay
//! amortised O(1).
//!
//! A branch holds its parent's first records ([`Records::prefix`]) as
//! segments of the parent's storage and pushes only its own, so a session
//! with many branches costs O(records), not O(branches × records). Segments
//! are as many as the branch's ancestors; an index is found by binary
//! search over them, and iteration walks them in order.

use std::cell::UnsafeCell;
use std::fmt;
use std::mem::MaybeUninit;
use std::ops::{Bound, Index, RangeBounds};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::model::RecordMeta;

/// Fixed-capacity storage; `claimed` slots at its start are initialised.
struct Buf {
    slots: Box<[UnsafeCell<MaybeUninit<RecordMeta>>]>,
    /// Slots written so far. Only grows; a slot is claimed (by a CAS from
    /// its index) by exactly one writer, which writes it at once.
    claimed: AtomicUsize,
}

// SAFETY: a slot is written once, by the one holder that claimed it, before
// any `Records` with a length covering it exists; slots below a length are
// only ever read. `RecordMeta` is `Send + Sync`.
unsafe impl Send for Buf {}
unsafe impl Sync for Buf {}

impl Buf {
    fn with_capacity(cap: usize) -> Buf {
        // Allocated, not written: untouched slack costs no resident memory.
        let raw = Box::into_raw(Box::<[RecordMeta]>::new_uninit_slice(cap));
        Buf {
            // SAFETY: `UnsafeCell<MaybeUninit<T>>` is `repr(transparent)`
            // over `MaybeUninit<T>`: same layout, same allocation.
            slots: unsafe { Box::from_raw(raw as *mut [UnsafeCell<MaybeUninit<RecordMeta>>]) },
            claimed: AtomicUsize::new(0),
        }
    }

    /// A buffer of `cap` slots holding `records` first (at most `cap`).
    fn filled(cap: usize, records: impl Iterator<Item = RecordMeta>) -> Buf {
        let buf = Buf::with_capacity(cap);
        for (i, r) in records.take(cap).enumerate() {
            // SAFETY: `buf` is ours alone and slot `i` unwritten; `claimed`
            // follows each write, so a panicking clone leaves only written
            // slots to drop.
            unsafe { (*buf.slots[i].get()).write(r) };
            buf.claimed.store(i + 1, Ordering::Relaxed);
        }
        buf
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        let n = *self.claimed.get_mut();
        for slot in &mut self.slots[..n] {
            // SAFETY: the first `claimed` slots are initialised, and are
            // dropped once, here.
            unsafe { slot.get_mut().assume_init_drop() };
        }
    }
}

/// The first `len` slots of a storage buffer, starting at index `start` of
/// the records.
#[derive(Clone)]
struct Seg {
    buf: Arc<Buf>,
    start: usize,
    len: usize,
    /// How many merges made it ([`merge_tail`]); 0 for storage written by
    /// pushes.
    rank: u8,
}

impl Seg {
    fn empty(start: usize) -> Seg {
        Seg {
            buf: Arc::new(Buf::with_capacity(0)),
            start,
            len: 0,
            rank: 0,
        }
    }

    fn slice(&self) -> &[RecordMeta] {
        let slots = &self.buf.slots[..self.len];
        // SAFETY: the first `len` slots are initialised and never written
        // again; `UnsafeCell<MaybeUninit<T>>` has `T`'s layout.
        unsafe { std::slice::from_raw_parts(slots.as_ptr().cast::<RecordMeta>(), self.len) }
    }

    fn end(&self) -> usize {
        self.start + self.len
    }
}

/// Segments of one rank that merge into one of the next rank.
const MERGE_RUN: usize = 16;
/// Records a merge copies at most: merges are for the many small segments
/// a deep chain of branches makes; bigger ones cost little beside their
/// records, and a cap keeps siblings from copying much each.
const MERGE_RECORDS: usize = 256;

/// Each branch adds a segment, so a chain of 10 000 branches would make
/// lists of 10 000. As a base-16 counter carries, [`MERGE_RUN`] segments of
/// one rank at the tail are copied into one of the next rank: a chain's
/// lists stay O(log) long and each record is copied O(log) times along it.
fn merge_tail(segs: &mut Vec<Seg>) {
    loop {
        let Some(rank) = segs.last().map(|s| s.rank) else {
            return;
        };
        let run = segs.iter().rev().take_while(|s| s.rank == rank).count();
        if run < MERGE_RUN {
            return;
        }
        let from = segs.len() - MERGE_RUN;
        let total: usize = segs[from..].iter().map(|s| s.len).sum();
        if total > MERGE_RECORDS {
            return;
        }
        let records = segs[from..].iter().flat_map(Seg::slice).cloned();
        let buf = Buf::filled(total, records);
        let start = segs[from].start;
        segs.truncate(from);
        segs.push(Seg {
            buf: Arc::new(buf),
            start,
            len: total,
            rank: rank.saturating_add(1),
        });
    }
}

/// A world line's records in line order. Cloning is O(1) and shares the
/// storage; so does [`Records::prefix`].
#[derive(Clone)]
pub struct Records {
    /// Segments shared with the world lines this one branched from, root
    /// first, each starting where the previous ends.
    shared: Arc<[Seg]>,
    /// This list's own records, after the shared ones; the only segment
    /// pushes write to.
    own: Seg,
}

impl Records {
    pub fn new() -> Records {
        Records {
            shared: Arc::from(Vec::new()),
            own: Seg::empty(0),
        }
    }

    pub fn len(&self) -> usize {
        self.own.end()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records this list stores itself, past those it shares with the
    /// world lines it branched from.
    pub fn stored(&self) -> usize {
        self.own.len
    }

    pub fn push(&mut self, r: RecordMeta) {
        let at = self.own.len;
        if at < self.own.buf.slots.len()
            && self
                .own
                .buf
                .claimed
                .compare_exchange(at, at + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // SAFETY: slot `at` was just claimed by us, so nobody else
            // writes or reads it until we publish `len = at + 1`.
            unsafe { (*self.own.buf.slots[at].get()).write(r) };
            self.own.len = at + 1;
        } else {
            self.grow((at + 1).max(at.saturating_mul(2)).max(16));
            self.push(r);
        }
    }

    /// The first `n` records (all if fewer), sharing their storage: a
    /// branch's view starts as its parent's prefix and pushes its own,
    /// which go to storage of the branch's own.
    pub fn prefix(&self, n: usize) -> Records {
        let n = n.min(self.len());
        if let Some(k) = n.checked_sub(self.own.start) {
            // Nothing was written past record `n` in our storage (a branch
            // from the end, or a follower's snapshot): the branch shares it
            // and pushes in place, as a clone does.
            if self.own.buf.claimed.load(Ordering::Acquire) == k {
                return Records {
                    shared: Arc::clone(&self.shared),
                    own: Seg {
                        len: k,
                        ..self.own.clone()
                    },
                };
            }
        }
        let mut shared: Vec<Seg> = Vec::with_capacity(self.shared.len() + 1);
        for seg in self.shared.iter().chain(std::iter::once(&self.own)) {
            if seg.start >= n {
                break;
            }
            if seg.len > 0 {
                shared.push(Seg {
                    len: seg.len.min(n - seg.start),
                    ..seg.clone()
                });
            }
        }
        merge_tail(&mut shared);
        Records {
            shared: Arc::from(shared),
            own: Seg::empty(n),
        }
    }

    /// Room for `additional` more records without moving the storage.
    pub fn reserve_exact(&mut self, additional: usize) {
        let want = self.own.len.saturating_add(additional);
        if want > self.own.buf.slots.len() || !self.at_frontier() {
            self.grow(want);
        }
    }

    /// Our length is the buffer's frontier: the next push writes in place.
    fn at_frontier(&self) -> bool {
        self.own.buf.claimed.load(Ordering::Acquire) == self.own.len
    }

    /// Room for `cap` own slots in a buffer of our own: grown in place if
    /// no one else holds it, else a new one (own records cloned into it).
    fn grow(&mut self, cap: usize) {
        let own = &mut self.own;
        let cap = cap.max(own.len);
        let len = own.len;
        if let Some(old) = Arc::get_mut(&mut own.buf) {
            if *old.claimed.get_mut() == len {
                // Ours alone and all initialised slots are ours: grow in
                // place as a `Vec` would (a big `realloc` remaps, no copy).
                let mut v = std::mem::take(&mut old.slots).into_vec();
                v.reserve_exact(cap - v.len());
                // SAFETY: the added slots are `MaybeUninit`, valid
                // uninitialised; `claimed` still counts the written ones.
                unsafe { v.set_len(v.capacity()) };
                old.slots = v.into_boxed_slice();
                return;
            }
        }
        let new = match Arc::get_mut(&mut own.buf) {
            Some(old) => {
                let new = Buf::with_capacity(cap);
                let n = *old.claimed.get_mut();
                // Moved out: the old buffer must not drop them again.
                *old.claimed.get_mut() = 0;
                for (i, slot) in old.slots[..n].iter_mut().enumerate() {
                    // SAFETY: initialised (below `claimed`), read once.
                    let r = unsafe { slot.get_mut().assume_init_read() };
                    if i < len {
                        // SAFETY: `new` is ours alone; slot `i` unwritten.
                        unsafe { (*new.slots[i].get()).write(r) };
                        new.claimed.store(i + 1, Ordering::Relaxed);
                    }
                }
                new
            }
            None => Buf::filled(cap, own.slice().iter().cloned()),
        };
        own.buf = Arc::new(new);
    }

    /// Every segment, root first (the own one last, maybe empty).
    fn segs(&self) -> impl Iterator<Item = &Seg> {
        self.shared.iter().chain(std::iter::once(&self.own))
    }

    /// The records as slices of their storage, in order: the loop for hot
    /// paths that would otherwise look each index up.
    pub fn slices(&self) -> impl DoubleEndedIterator<Item = &[RecordMeta]> {
        self.shared
            .iter()
            .chain(std::iter::once(&self.own))
            .map(Seg::slice)
    }

    /// The segment holding record `i` (`i < len`).
    fn seg_of(&self, i: usize) -> &Seg {
        if i >= self.own.start {
            return &self.own;
        }
        let k = self.shared.partition_point(|s| s.end() <= i);
        &self.shared[k]
    }

    pub fn get(&self, i: usize) -> Option<&RecordMeta> {
        if i >= self.len() {
            return None;
        }
        let seg = self.seg_of(i);
        seg.slice().get(i - seg.start)
    }

    pub fn first(&self) -> Option<&RecordMeta> {
        self.get(0)
    }

    pub fn last(&self) -> Option<&RecordMeta> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    pub fn iter(&self) -> Iter<'_> {
        self.range(..)
    }

    /// The records in `range`, clamped to the list (a range past the end
    /// yields what is there, never panics).
    pub fn range(&self, range: impl RangeBounds<usize>) -> Iter<'_> {
        let len = self.len();
        let front = match range.start_bound() {
            Bound::Included(&a) => a,
            Bound::Excluded(&a) => a.saturating_add(1),
            Bound::Unbounded => 0,
        }
        .min(len);
        let back = match range.end_bound() {
            Bound::Included(&b) => b.saturating_add(1),
            Bound::Excluded(&b) => b,
            Bound::Unbounded => len,
        }
        .clamp(front, len);
        Iter {
            recs: self,
            front,
            back,
            fcache: &[],
            fstart: 0,
            bcache: &[],
            bstart: 0,
        }
    }

    /// The index of the first record for which `pred` is false, the
    /// records being partitioned by it (as `slice::partition_point`).
    pub fn partition_point(&self, mut pred: impl FnMut(&RecordMeta) -> bool) -> usize {
        for seg in self.segs() {
            let s = seg.slice();
            match s.last() {
                Some(last) if pred(last) => continue,
                Some(_) => return seg.start + s.partition_point(&mut pred),
                None => continue,
            }
        }
        self.len()
    }

    pub fn to_vec(&self) -> Vec<RecordMeta> {
        self.iter().cloned().collect()
    }

    /// `self` holds every record of `prev`, in order (and maybe more), so
    /// what was derived from `prev` still holds for that prefix. O(segments)
    /// when both share storage (a follower's snapshots between regrowths:
    /// slots are never written twice; a branch and its parent's prefix);
    /// otherwise the prefix is compared, which happens once per regrowth
    /// (doubling) or after a truncation.
    pub fn extends(&self, prev: &Records) -> bool {
        if self.len() < prev.len() {
            return false;
        }
        let mut mine = self.segs().filter(|s| s.len > 0);
        let same_storage = prev.segs().filter(|s| s.len > 0).all(|p| {
            mine.next().is_some_and(|m| {
                m.start == p.start && m.len >= p.len && Arc::ptr_eq(&m.buf, &p.buf)
            })
        });
        same_storage || self.iter().zip(prev.iter()).all(|(a, b)| a == b)
    }

    /// The records as an owned `Vec`: the storage itself when not shared.
    pub fn into_vec(mut self) -> Vec<RecordMeta> {
        let len = self.own.len;
        if self.shared.is_empty() {
            if let Some(old) = Arc::get_mut(&mut self.own.buf) {
                if old.claimed.load(Ordering::Relaxed) == len {
                    *old.claimed.get_mut() = 0;
                    let slots = std::mem::take(&mut old.slots);
                    let cap = slots.len();
                    let ptr = Box::into_raw(slots).cast::<RecordMeta>();
                    // SAFETY: one allocation of `cap` slots with
                    // `RecordMeta`'s size and alignment, the first `len`
                    // initialised; the buffer no longer owns or drops them
                    // (`claimed` is 0 and its slots are empty).
                    return unsafe { Vec::from_raw_parts(ptr, len, cap) };
                }
            }
        }
        self.to_vec()
    }
}

/// Records in order, over however many segments hold them.
#[derive(Clone)]
pub struct Iter<'a> {
    recs: &'a Records,
    /// The next index from the front, and one past the next from the back.
    front: usize,
    back: usize,
    /// The segment slices last read from each end, with their starts.
    fcache: &'a [RecordMeta],
    fstart: usize,
    bcache: &'a [RecordMeta],
    bstart: usize,
}

impl<'a> Iter<'a> {
    fn load(&self, i: usize) -> (&'a [RecordMeta], usize) {
        let seg = self.recs.seg_of(i);
        (seg.slice(), seg.start)
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a RecordMeta;

    fn next(&mut self) -> Option<&'a RecordMeta> {
        if self.front >= self.back {
            return None;
        }
        let i = self.front;
        if i < self.fstart || i >= self.fstart + self.fcache.len() {
            (self.fcache, self.fstart) = self.load(i);
        }
        self.front += 1;
        self.fcache.get(i - self.fstart)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }

    fn nth(&mut self, n: usize) -> Option<&'a RecordMeta> {
        self.front = self.front.saturating_add(n).min(self.back);
        self.next()
    }

    fn count(self) -> usize {
        self.back - self.front
    }

    fn last(mut self) -> Option<&'a RecordMeta> {
        self.next_back()
    }
}

impl<'a> DoubleEndedIterator for Iter<'a> {
    fn next_back(&mut self) -> Option<&'a RecordMeta> {
        if self.front >= self.back {
            return None;
        }
        let i = self.back - 1;
        if i < self.bstart || i >= self.bstart + self.bcache.len() {
            (self.bcache, self.bstart) = self.load(i);
        }
        self.back = i;
        self.bcache.get(i - self.bstart)
    }

    fn nth_back(&mut self, n: usize) -> Option<&'a RecordMeta> {
        self.back = self.back.saturating_sub(n).max(self.front);
        self.next_back()
    }
}

impl ExactSizeIterator for Iter<'_> {}
impl std::iter::FusedIterator for Iter<'_> {}

impl Default for Records {
    fn default() -> Records {
        Records::new()
    }
}

impl Index<usize> for Records {
    type Output = RecordMeta;
    fn index(&self, i: usize) -> &RecordMeta {
        match self.get(i) {
            Some(r) => r,
            None => panic!("record {i} out of range ({} records)", self.len()),
        }
    }
}

impl fmt::Debug for Records {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Records {
    fn eq(&self, other: &Records) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Records {}

impl From<Vec<RecordMeta>> for Records {
    fn from(v: Vec<RecordMeta>) -> Records {
        v.into_iter().collect()
    }
}

impl FromIterator<RecordMeta> for Records {
    fn from_iter<I: IntoIterator<Item = RecordMeta>>(iter: I) -> Records {
        let mut out = Records::new();
        out.extend(iter);
        out
    }
}

impl Extend<RecordMeta> for Records {
    fn extend<I: IntoIterator<Item = RecordMeta>>(&mut self, iter: I) {
        let iter = iter.into_iter();
        let (lo, _) = iter.size_hint();
        if self.own.buf.slots.len() - self.own.len < lo {
            self.reserve_exact(lo);
        }
        for r in iter {
            self.push(r);
        }
    }
}

impl<'a> IntoIterator for &'a Records {
    type Item = &'a RecordMeta;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RecordParts, Role};

    fn rec(line: u32) -> RecordMeta {
        let parts = RecordParts {
            role: Role::User,
            checkpoint: None,
            tokens: None,
            tool_calls: Vec::new(),
            tool_call_id: Some(format!("call{line}")),
            marker: None,
        };
        RecordMeta::new(u64::from(line) * 10, 9, line, u64::from(line), parts)
    }

    fn lines(r: &Records) -> Vec<u32> {
        r.iter().map(|m| m.line()).collect()
    }

    #[test]
    fn a_clone_keeps_its_prefix_while_the_original_grows() {
        let mut live: Records = (1..=3).map(rec).collect();
        let snap = live.clone();
        for l in 4..=40 {
            live.push(rec(l));
        }
        assert_eq!(lines(&snap), vec![1, 2, 3]);
        assert_eq!(lines(&live), (1..=40).collect::<Vec<_>>());
        // The snapshot shares storage until it is pushed to itself.
        let mut fork = snap.clone();
        fork.push(rec(99));
        assert_eq!(lines(&fork), vec![1, 2, 3, 99]);
        assert_eq!(lines(&live)[3], 4);
        assert_eq!(lines(&snap), vec![1, 2, 3]);
    }

    #[test]
    fn sharing_does_not_copy_until_a_branch_pushes() {
        let mut live = Records::new();
        live.reserve_exact(8);
        live.push(rec(1));
        let snap = live.clone();
        live.push(rec(2));
        assert!(Arc::ptr_eq(&live.own.buf, &snap.own.buf));
        let mut other = snap.clone();
        other.push(rec(3));
        assert!(!Arc::ptr_eq(&other.own.buf, &snap.own.buf));
        assert_eq!(lines(&other), vec![1, 3]);
        assert_eq!(lines(&live), vec![1, 2]);
    }

    #[test]
    fn growing_alone_keeps_every_record_and_a_stale_clone_its_own() {
        let mut r = Records::new();
        for l in 1..=1000 {
            r.push(rec(l));
        }
        let old = r.clone();
        drop(old);
        r.reserve_exact(5000);
        r.push(rec(1001));
        assert_eq!(lines(&r), (1..=1001).collect::<Vec<_>>());
        let stale = r.clone();
        r.push(rec(1002));
        drop(r);
        assert_eq!(stale.len(), 1001);
        assert_eq!(stale.into_vec().last().map(|m| m.line()), Some(1001));
    }

    #[test]
    fn extends_is_true_for_a_grown_clone_and_false_for_a_branch() {
        let mut live = Records::new();
        live.reserve_exact(4);
        live.extend((1..=3).map(rec));
        let snap = live.clone();
        live.push(rec(4));
        assert!(Arc::ptr_eq(&live.own.buf, &snap.own.buf));
        assert!(live.extends(&snap) && snap.extends(&snap));
        assert!(!snap.extends(&live));
        // Regrown into new storage: compared, still a continuation.
        live.extend((5..=40).map(rec));
        assert!(!Arc::ptr_eq(&live.own.buf, &snap.own.buf));
        assert!(live.extends(&snap));
        // A branch from the same prefix with other records is not.
        let mut branch = snap.clone();
        branch.extend((50..=90).map(rec));
        assert!(!branch.extends(&live) && !live.extends(&branch));
        assert!(branch.extends(&snap));
        // Read again after a truncation: its own storage, same records.
        let reread: Records = (1..=2).map(rec).collect();
        assert!(!reread.extends(&snap) && snap.extends(&reread));
    }

    #[test]
    fn into_vec_and_equality() {
        let a: Records = (1..=5).map(rec).collect();
        let b = a.clone();
        assert_eq!(a, b);
        assert_eq!(b.into_vec(), (1..=5).map(rec).collect::<Vec<_>>());
        assert_eq!(a.into_vec().len(), 5);
        assert!(Records::default().is_empty());
    }

    #[test]
    fn a_branch_shares_its_parents_prefix_and_stores_only_its_own() {
        let mut trunk: Records = (1..=100).map(rec).collect();
        let before = trunk.clone();
        let mut branch = trunk.prefix(60);
        branch.extend((200..210).map(rec));
        trunk.push(rec(101));
        let mut twig = branch.prefix(65);
        twig.push(rec(300));
        assert_eq!(lines(&branch), (1..=60).chain(200..210).collect::<Vec<_>>());
        assert_eq!(
            lines(&twig),
            (1..=60).chain(200..205).chain([300]).collect::<Vec<_>>()
        );
        assert_eq!(lines(&trunk).len(), 101);
        // The branch's first 60 are the trunk's storage, not a copy.
        assert!(Arc::ptr_eq(&branch.shared[0].buf, &before.own.buf));
        assert!(Arc::ptr_eq(&twig.shared[0].buf, &branch.shared[0].buf));
        assert_eq!(branch.own.len, 10);
        assert_eq!(twig.own.len, 1);
        assert!(twig.extends(&branch.prefix(65)) && branch.extends(&trunk.prefix(60)));
        assert!(!twig.extends(&branch));
    }

    #[test]
    fn a_deep_chain_of_branches_keeps_few_segments_and_copies_little() {
        // Each branch leaves its parent one record before the end (an undo)
        // and writes two: 5 000 levels deep.
        let mut line: Records = (1..=2).map(rec).collect();
        let mut model: Vec<u32> = vec![1, 2];
        let mut all = vec![line.clone()];
        let mut next = 2;
        let mut most_segs = 0;
        for _ in 0..5_000 {
            let cut = line.len() - 1;
            line = line.prefix(cut);
            model.truncate(cut);
            for _ in 0..2 {
                next += 1;
                line.push(rec(next));
                model.push(next);
            }
            most_segs = most_segs.max(line.shared.len());
            all.push(line.clone());
        }
        // Every storage buffer any world line holds, once.
        let mut bufs = std::collections::HashMap::new();
        for l in &all {
            for s in l.segs() {
                bufs.insert(Arc::as_ptr(&s.buf), s.buf.claimed.load(Ordering::Relaxed));
            }
        }
        let stored: usize = bufs.values().sum();
        assert_eq!(lines(&line), model);
        assert_eq!(line.get(7).map(|r| r.line()), Some(model[7]));
        assert!(most_segs <= 80, "{most_segs} segments");
        // Merged copies included, a few times the records written.
        assert!(
            stored < 8 * next as usize,
            "{stored} stored for {next} records"
        );
        // A branch from the very end shares the storage and pushes in place.
        let mut on = line.prefix(line.len());
        on.push(rec(next + 1));
        assert!(Arc::ptr_eq(&on.own.buf, &line.own.buf));
        assert_eq!(on.len(), line.len() + 1);
    }

    fn model_matches(r: &Records, m: &[RecordMeta], probe: usize) {
        assert_eq!(r.len(), m.len());
        assert_eq!(r.to_vec(), m);
        assert_eq!(
            r.iter().rev().cloned().collect::<Vec<_>>(),
            m.iter().rev().cloned().collect::<Vec<_>>()
        );
        assert_eq!(r.get(probe), m.get(probe));
        assert_eq!(r.last(), m.last());
        let (a, b) = (probe / 2, probe);
        let want: Vec<_> = m
            .get(a.min(m.len())..b.clamp(a.min(m.len()), m.len()))
            .unwrap_or(&[])
            .to_vec();
        assert_eq!(r.range(a..b).cloned().collect::<Vec<_>>(), want);
        assert_eq!(r.range(a..b).len(), want.len());
        assert_eq!(r.iter().nth(probe), m.get(probe));
        let mut it = r.iter();
        let (f, bk) = (it.next(), it.next_back());
        assert_eq!(
            (f, bk),
            (m.first(), if m.len() > 1 { m.last() } else { None })
        );
        assert_eq!(
            r.partition_point(|x| x.line() < probe as u32),
            m.partition_point(|x| x.line() < probe as u32)
        );
    }

    proptest::proptest! {
        /// Any tree of branches made by `prefix` and `push` reads as the
        /// vectors it stands for, through every accessor.
        #[test]
        fn branches_read_as_their_vectors(ops in proptest::collection::vec((0usize..4, 0usize..64, 0usize..300), 1..60)) {
            let mut lists: Vec<(Records, Vec<RecordMeta>)> = vec![(Records::new(), Vec::new())];
            let mut next = 0u32;
            for (op, pick, n) in ops {
                let k = pick % lists.len();
                match op {
                    0 | 1 => {
                        for _ in 0..(n % 20 + 1) {
                            next += 1;
                            lists[k].0.push(rec(next));
                            lists[k].1.push(rec(next));
                        }
                    }
                    2 => {
                        let cut = n % (lists[k].1.len() + 1);
                        let r = lists[k].0.prefix(cut);
                        let m = lists[k].1[..cut].to_vec();
                        lists.push((r, m));
                    }
                    _ => {
                        let c = lists[k].clone();
                        lists.push(c);
                    }
                }
            }
            for (r, m) in &lists {
                model_matches(r, m, next as usize % (m.len() + 2));
            }
        }
    }
}
