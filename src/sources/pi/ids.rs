//! Entry ids of one Pi file in one buffer, and how an id finds its entry:
//! a sorted array of keys for the entries of the first read, and an
//! open-addressing table for those appended after it (a live session).
//!
//! The first read only stores ids and their keys (its halves in parallel,
//! each sorting its own); the few parents that are not the entry before
//! and duplicate ids are settled after it, over the sorted keys. A table
//! filled entry by entry costs a cache miss per entry on a big file.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Entry ids in one buffer, and where each id is found (Pi's `byId`: a
/// later duplicate wins for children that name it).
#[derive(Debug, Clone, Default)]
pub(super) struct Ids {
    text: String,
    /// Per entry: where its id ends in `text`.
    ends: Vec<u32>,
    /// Entries `0..keys.len()` (the first read's): per entry its key, the
    /// high half of its id's hash over the entry; sorted once `sealed`.
    keys: Vec<u64>,
    sealed: bool,
    /// Entries from `keys.len()` on: per slot a key as above (`EMPTY`:
    /// none) of the last entry holding its id; a power of two long.
    slots: Vec<u64>,
    /// Distinct ids in `slots`.
    used: usize,
}

const EMPTY: u64 = u64::MAX;
const HIGH: u64 = !0xffff_ffff;

/// xxh3 under a seed drawn once per process: a file cannot be written to
/// make its ids collide.
fn id_hash(id: &str) -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(0x5049u64)
    });
    xxh3_64_with_seed(id.as_bytes(), seed) & HIGH
}

impl Ids {
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(super) fn get(&self, i: u32) -> &str {
        let i = i as usize;
        let start = match i {
            0 => 0,
            _ => self.ends[i - 1] as usize,
        };
        self.text.get(start..self.ends[i] as usize).unwrap_or("")
    }

    /// Room for `n` more entries.
    pub(super) fn reserve(&mut self, n: usize) {
        self.ends.reserve_exact(n);
        self.keys.reserve_exact(n);
        self.text.reserve_exact(n.saturating_mul(12));
    }

    /// Adds the next entry's id in the first read (found only once
    /// sealed). `Err`: past what the buffer addresses (4 GiB of ids).
    pub(super) fn store(&mut self, id: &str) -> Result<(), ()> {
        debug_assert!(!self.sealed && self.keys.len() == self.ends.len());
        let end = self.end_after(id)?;
        self.keys
            .push(id_hash(id) | u64::from(self.ends.len() as u32));
        self.text.push_str(id);
        self.ends.push(end);
        Ok(())
    }

    fn end_after(&self, id: &str) -> Result<u32, ()> {
        u32::try_from(self.text.len() + id.len()).map_err(|_| ())
    }

    /// The first read's ids become findable.
    pub(super) fn seal(&mut self) {
        if !self.sealed {
            self.keys.sort_unstable();
            self.sealed = true;
        }
    }

    /// Takes `b`, the sealed ids of the entries after these (sealed too),
    /// false if the buffer would pass 4 GiB.
    pub(super) fn append(&mut self, b: Ids) -> bool {
        let (n1, base) = (self.len() as u64, self.text.len());
        let fits = u32::try_from(base + b.text.len()).is_ok()
            && u32::try_from(n1 + b.len() as u64).is_ok();
        if !fits || !self.sealed || !b.sealed || !self.slots.is_empty() || !b.slots.is_empty() {
            return false;
        }
        self.text.push_str(&b.text);
        self.ends.extend(b.ends.iter().map(|&e| e + base as u32));
        // Merged in place from the back, into the room reserved for the
        // whole file (no second array); branch-free, as which side is
        // larger is a coin flip per key.
        let (mut i, mut j) = (self.keys.len(), b.keys.len());
        self.keys.resize(i + j, 0);
        let keys = &mut self.keys;
        while j > 0 {
            let q = b.keys[j - 1] + n1;
            let p = if i > 0 { keys[i - 1] } else { 0 };
            let from_self = i > 0 && p > q;
            keys[i + j - 1] = if from_self { p } else { q };
            i -= usize::from(from_self);
            j -= usize::from(!from_self);
        }
        true
    }

    /// The last entry before `before` holding `id`, among the sealed keys.
    pub(super) fn find_before(&self, id: &str, before: u32) -> Option<u32> {
        self.in_keys(id, id_hash(id), before)
    }

    /// [`Ids::find_before`] for `id` hashed to `h`.
    fn in_keys(&self, id: &str, h: u64, before: u32) -> Option<u32> {
        debug_assert!(self.sealed || self.keys.is_empty());
        let end = self.keys.partition_point(|&k| k < h | u64::from(before));
        self.keys[..end]
            .iter()
            .rev()
            .take_while(|&&k| k & HIGH == h)
            .map(|&k| k as u32)
            .find(|&i| self.get(i) == id)
    }

    /// The last entry holding `id`: in the table, else among the keys.
    pub(super) fn find(&self, id: &str) -> Option<u32> {
        let h = id_hash(id);
        let in_table = (!self.slots.is_empty())
            .then(|| self.slots[self.slot(id, h)])
            .filter(|&s| s != EMPTY);
        in_table
            .map(|s| s as u32)
            .or_else(|| self.in_keys(id, h, u32::MAX))
    }

    /// Per entry holding an id an earlier entry held: `(entry, the last
    /// earlier one)`, in entry order, among the sealed keys.
    pub(super) fn duplicates(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for (n, &k) in self.keys.iter().enumerate() {
            // A run of one hash, in entry order: the nearest earlier key
            // of the same text is the last holder.
            let earlier = self.keys[..n]
                .iter()
                .rev()
                .take_while(|&&e| e & HIGH == k & HIGH)
                .map(|&e| e as u32)
                .find(|&e| self.get(e) == self.get(k as u32));
            if let Some(e) = earlier {
                out.push((k as u32, e));
            }
        }
        out.sort_unstable();
        out
    }

    /// The slot of the table (not empty) holding `id`, hashed to `h`, else
    /// the empty one where it would go.
    fn slot(&self, id: &str, h: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut at = self.home(h);
        loop {
            let s = self.slots[at];
            if s == EMPTY || (s & HIGH == h && self.get(s as u32) == id) {
                return at;
            }
            at = (at + 1) & mask;
        }
    }

    /// Where a key's probe starts: its top bits.
    fn home(&self, key: u64) -> usize {
        (key >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    /// Adds the next entry's id after the first read (or in a read that
    /// never seals); `Ok(Some(was))`: the last entry that held it before.
    /// `Err`: past what the buffer addresses (4 GiB of ids).
    pub(super) fn push(&mut self, id: &str) -> Result<Option<u32>, ()> {
        let end = self.end_after(id)?;
        let i = self.ends.len() as u32;
        if (self.used + 1) * 4 > self.slots.len() * 3 {
            self.rehash((self.slots.len() * 2).max(64));
        }
        let h = id_hash(id);
        let at = self.slot(id, h);
        let was = match self.slots[at] {
            EMPTY => {
                self.used += 1;
                self.in_keys(id, h, u32::MAX)
            }
            s => Some(s as u32),
        };
        self.slots[at] = h | u64::from(i);
        self.text.push_str(id);
        self.ends.push(end);
        Ok(was)
    }

    fn rehash(&mut self, cap: usize) {
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; cap]);
        let mask = cap - 1;
        for s in old.into_iter().filter(|&s| s != EMPTY) {
            let mut at = self.home(s);
            while self.slots[at] != EMPTY {
                at = (at + 1) & mask;
            }
            self.slots[at] = s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Ids;

    fn sealed(ids: &[&str]) -> Ids {
        let mut x = Ids::default();
        for id in ids {
            x.store(id).unwrap();
        }
        x.seal();
        x
    }

    #[test]
    fn sealed_keys_find_the_last_earlier_holder_and_every_duplicate() {
        let x = sealed(&["a", "b", "a", "c", "a", "b"]);
        assert_eq!(x.find("a"), Some(4));
        assert_eq!(x.find_before("a", 4), Some(2));
        assert_eq!(x.find_before("a", 2), Some(0));
        assert_eq!(x.find_before("a", 0), None);
        assert_eq!(x.find("zz"), None);
        assert_eq!(x.duplicates(), [(2, 0), (4, 2), (5, 1)]);
    }

    #[test]
    fn appended_halves_and_live_pushes_agree_with_one_table() {
        let ids: Vec<String> = (0..300).map(|i| format!("e{}", i % 211)).collect();
        let mut table = Ids::default();
        let mut was = Vec::new();
        for id in &ids {
            was.push(table.push(id).unwrap());
        }
        for cut in [0, 1, 150, 299, 300] {
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            let mut a = sealed(&refs[..cut.min(250)]);
            assert!(a.append(sealed(&refs[cut.min(250)..250])));
            let mut dups = vec![None; 250];
            for (e, w) in a.duplicates() {
                dups[e as usize] = Some(w);
            }
            for id in ids.iter().skip(250) {
                dups.push(a.push(id).unwrap());
            }
            assert_eq!(dups, was, "cut {cut}");
            for id in &ids {
                assert_eq!(a.find(id), table.find(id));
            }
            assert_eq!(a.get(299), "e88");
        }
    }
}
