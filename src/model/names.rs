//! Tool names, interned: a record keeps a 10-bit index instead of a string.
//! The table is bounded (in entries and in name length) because a hostile
//! file can hold millions of distinct names; past the bound a name is kept
//! out of line by the record that has it, and freed with it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, OnceLock, PoisonError, RwLock};

/// Entries of the process-wide table: what fits the record's 10 bits.
pub(crate) const BOUND: usize = 1 << 10;
/// Longer names are never interned (real tool names are short).
pub(crate) const MAX_LEN: usize = 128;

/// An append-only table of at most `bound` names of at most `MAX_LEN` bytes.
pub(crate) struct Interner {
    /// Index → name; an entry is written once, before its index is handed
    /// out, so reads need no lock.
    list: Box<[OnceLock<Box<str>>]>,
    index: RwLock<HashMap<Box<str>, u16>>,
    /// Tells this table's entries apart in a thread's [`RECENT`].
    id: u64,
}

/// Names looked up last on this thread, per table: `(table, name,
/// index)`. Most records name one of a few tools, and threads reading a
/// file's halves at once would otherwise contend on the table's lock for
/// every record. An index never changes once handed out.
const RECENT_LEN: usize = 8;
thread_local! {
    static RECENT: RefCell<Vec<(u64, Box<str>, u16)>> = const { RefCell::new(Vec::new()) };
}

impl Interner {
    pub(crate) fn new(bound: usize) -> Interner {
        Interner {
            list: (0..bound.min(BOUND)).map(|_| OnceLock::new()).collect(),
            index: RwLock::new(HashMap::new()),
            id: {
                static NEXT: AtomicU64 = AtomicU64::new(0);
                NEXT.fetch_add(1, Ordering::Relaxed)
            },
        }
    }

    /// The index of `name`, adding it if there is room; `None` when the
    /// table is full or the name too long.
    pub(crate) fn intern(&self, name: &str) -> Option<u16> {
        if name.len() > MAX_LEN {
            return None;
        }
        let hit = RECENT.with_borrow(|r| {
            r.iter()
                .find(|(t, n, _)| *t == self.id && **n == *name)
                .map(|&(_, _, i)| i)
        });
        if hit.is_some() {
            return hit;
        }
        let i = self.intern_shared(name)?;
        RECENT.with_borrow_mut(|r| {
            if r.len() >= RECENT_LEN {
                r.remove(0);
            }
            r.push((self.id, name.into(), i));
        });
        Some(i)
    }

    /// [`Interner::intern`] through the shared index.
    fn intern_shared(&self, name: &str) -> Option<u16> {
        let read = self.index.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(&i) = read.get(name) {
            return Some(i);
        }
        drop(read);
        let mut write = self.index.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(&i) = write.get(name) {
            return Some(i);
        }
        let i = write.len();
        let slot = self.list.get(i)?;
        // Only the writer holding the lock fills the next slot.
        let _ = slot.set(name.into());
        let i = u16::try_from(i).ok()?;
        write.insert(name.into(), i);
        Some(i)
    }

    /// The name at `i` (empty for an index never handed out).
    pub(crate) fn get(&self, i: u16) -> &str {
        self.list
            .get(usize::from(i))
            .and_then(OnceLock::get)
            .map_or("", |s| s)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.index
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// The process-wide table the record index uses.
pub(crate) static NAMES: LazyLock<Interner> = LazyLock::new(|| Interner::new(BOUND));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_stops_at_its_bound_and_keeps_what_it_has() {
        let t = Interner::new(3);
        assert_eq!(t.intern("Shell"), Some(0));
        assert_eq!(t.intern("ReadFile"), Some(1));
        assert_eq!(t.intern("Shell"), Some(0));
        assert_eq!(t.intern("Grep"), Some(2));
        // Full: new names stay out, known ones still resolve.
        assert_eq!(t.intern("Glob"), None);
        assert_eq!(t.intern("ReadFile"), Some(1));
        assert_eq!(t.len(), 3);
        assert_eq!(
            (t.get(0), t.get(1), t.get(2)),
            ("Shell", "ReadFile", "Grep")
        );
        assert_eq!(t.get(3), "");
    }

    #[test]
    fn long_names_are_never_interned() {
        let t = Interner::new(8);
        assert_eq!(t.intern(&"x".repeat(MAX_LEN + 1)), None);
        assert_eq!(t.intern(&"x".repeat(MAX_LEN)), Some(0));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn many_distinct_names_grow_nothing_past_the_bound() {
        let t = Interner::new(BOUND);
        let interned = (0..100_000)
            .filter(|i| t.intern(&format!("tool{i}")).is_some())
            .count();
        assert_eq!(interned, BOUND);
        assert_eq!(t.len(), BOUND);
    }
}
