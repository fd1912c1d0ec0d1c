//! [`Records`]: a file's record list, shared append-only between the live
//! follower and its snapshots.
//!
//! The follower keeps appending to a file's records while the session it
//! last handed out still reads them. A `Vec` would have to be copied for
//! every snapshot (O(records) per update); here a clone shares one buffer
//! and only remembers its own length. Slots below a clone's length are never
//! written again, so every clone reads a stable prefix; a push writes the
//! next free slot only if no clone has claimed it yet, else (or when the
//! buffer is full) it moves to a new buffer, doubling, so pushes stay
//! amortised O(1).

use std::cell::UnsafeCell;
use std::fmt;
use std::mem::MaybeUninit;
use std::ops::Deref;
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

/// A file's records in line order; derefs to `[RecordMeta]`. Cloning is
/// O(1) and shares the storage.
#[derive(Clone)]
pub struct Records {
    buf: Arc<Buf>,
    len: usize,
}

impl Records {
    pub fn new() -> Records {
        Records {
            buf: Arc::new(Buf::with_capacity(0)),
            len: 0,
        }
    }

    pub fn push(&mut self, r: RecordMeta) {
        let at = self.len;
        if at < self.buf.slots.len()
            && self
                .buf
                .claimed
                .compare_exchange(at, at + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // SAFETY: slot `at` was just claimed by us, so nobody else
            // writes or reads it until we publish `len = at + 1`.
            unsafe { (*self.buf.slots[at].get()).write(r) };
            self.len = at + 1;
        } else {
            self.grow((at + 1).max(at.saturating_mul(2)).max(16));
            self.push(r);
        }
    }

    /// The first `n` records (all if fewer), sharing their storage: a
    /// branch's view starts as its parent's prefix and pushes its own.
    pub fn prefix(&self, n: usize) -> Records {
        Records {
            buf: Arc::clone(&self.buf),
            len: n.min(self.len),
        }
    }

    /// Room for `additional` more records without moving the storage.
    pub fn reserve_exact(&mut self, additional: usize) {
        let want = self.len.saturating_add(additional);
        if want > self.buf.slots.len() || !self.at_frontier() {
            self.grow(want);
        }
    }

    /// Our length is the buffer's frontier: the next push writes in place.
    fn at_frontier(&self) -> bool {
        self.buf.claimed.load(Ordering::Acquire) == self.len
    }

    /// Room for `cap` slots in a buffer of our own: grown in place if no
    /// one else holds it, else a new one (records cloned into it).
    fn grow(&mut self, cap: usize) {
        let cap = cap.max(self.len);
        let len = self.len;
        if let Some(old) = Arc::get_mut(&mut self.buf) {
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
        let new = Buf::with_capacity(cap);
        match Arc::get_mut(&mut self.buf) {
            Some(old) => {
                let n = *old.claimed.get_mut();
                // Moved out: the old buffer must not drop them again.
                *old.claimed.get_mut() = 0;
                for (i, slot) in old.slots[..n].iter_mut().enumerate() {
                    // SAFETY: initialised (below `claimed`), read once.
                    let r = unsafe { slot.get_mut().assume_init_read() };
                    if i < self.len {
                        // SAFETY: `new` is ours alone; slot `i` unwritten.
                        unsafe { (*new.slots[i].get()).write(r) };
                        new.claimed.store(i + 1, Ordering::Relaxed);
                    }
                }
            }
            None => {
                for (i, r) in self.iter().enumerate() {
                    // SAFETY: as above; `claimed` follows each write so a
                    // panicking clone leaves only written slots to drop.
                    unsafe { (*new.slots[i].get()).write(r.clone()) };
                    new.claimed.store(i + 1, Ordering::Relaxed);
                }
            }
        }
        self.buf = Arc::new(new);
    }

    /// `self` holds every record of `prev`, in order (and maybe more), so
    /// what was derived from `prev` still holds for that prefix. O(1) when
    /// both share storage (a follower's snapshots between regrowths: slots
    /// are never written twice); otherwise the prefix is compared, which
    /// happens once per regrowth (doubling) or after a truncation.
    pub fn extends(&self, prev: &Records) -> bool {
        if self.len < prev.len {
            return false;
        }
        Arc::ptr_eq(&self.buf, &prev.buf) || self[..prev.len] == prev[..]
    }

    /// The records as an owned `Vec`: the storage itself when not shared.
    pub fn into_vec(mut self) -> Vec<RecordMeta> {
        let len = self.len;
        match Arc::get_mut(&mut self.buf) {
            Some(old) if old.claimed.load(Ordering::Relaxed) == len => {
                *old.claimed.get_mut() = 0;
                let slots = std::mem::take(&mut old.slots);
                let cap = slots.len();
                let ptr = Box::into_raw(slots).cast::<RecordMeta>();
                // SAFETY: one allocation of `cap` slots with `RecordMeta`'s
                // size and alignment, the first `len` initialised; the
                // buffer no longer owns or drops them (`claimed` is 0 and
                // its slots are empty).
                unsafe { Vec::from_raw_parts(ptr, len, cap) }
            }
            _ => self.to_vec(),
        }
    }
}

impl Default for Records {
    fn default() -> Records {
        Records::new()
    }
}

impl Deref for Records {
    type Target = [RecordMeta];
    fn deref(&self) -> &[RecordMeta] {
        let slots = &self.buf.slots[..self.len];
        // SAFETY: the first `len` slots are initialised and never written
        // again; `UnsafeCell<MaybeUninit<T>>` has `T`'s layout.
        unsafe { std::slice::from_raw_parts(slots.as_ptr().cast::<RecordMeta>(), self.len) }
    }
}

impl fmt::Debug for Records {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Records {
    fn eq(&self, other: &Records) -> bool {
        **self == **other
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
        if self.buf.slots.len() - self.len < lo {
            self.reserve_exact(lo);
        }
        for r in iter {
            self.push(r);
        }
    }
}

impl<'a> IntoIterator for &'a Records {
    type Item = &'a RecordMeta;
    type IntoIter = std::slice::Iter<'a, RecordMeta>;
    fn into_iter(self) -> Self::IntoIter {
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
        assert!(Arc::ptr_eq(&live.buf, &snap.buf));
        let mut other = snap.clone();
        other.push(rec(3));
        assert!(!Arc::ptr_eq(&other.buf, &snap.buf));
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
        assert!(Arc::ptr_eq(&live.buf, &snap.buf));
        assert!(live.extends(&snap) && snap.extends(&snap));
        assert!(!snap.extends(&live));
        // Regrown into new storage: compared, still a continuation.
        live.extend((5..=40).map(rec));
        assert!(!Arc::ptr_eq(&live.buf, &snap.buf));
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
}
