//! Entry ids of one Pi file in one buffer, with an open-addressing table
//! from an id to the last entry holding it.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Entry ids in one buffer, and an open-addressing table from an id to
/// the last entry holding it (Pi's `byId`: a later duplicate wins for
/// children that name it).
#[derive(Debug, Clone, Default)]
pub(super) struct Ids {
    pub(super) text: String,
    /// Per entry: where its id ends in `text`.
    pub(super) ends: Vec<u32>,
    /// Per slot: the high half of its id's hash over the entry (`EMPTY`:
    /// none), so most probes settle without reading the id; a power of
    /// two long.
    pub(super) slots: Vec<u64>,
    /// Distinct ids in `slots`.
    pub(super) used: usize,
}

pub(super) const EMPTY: u64 = u64::MAX;

/// xxh3 under a seed drawn once per process: a file cannot be written to
/// make its ids collide in the table.
pub(super) fn id_hash(id: &str) -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(0x5049u64)
    });
    xxh3_64_with_seed(id.as_bytes(), seed)
}

impl Ids {
    pub(super) fn get(&self, i: u32) -> &str {
        let i = i as usize;
        let start = match i {
            0 => 0,
            _ => self.ends[i - 1] as usize,
        };
        self.text.get(start..self.ends[i] as usize).unwrap_or("")
    }

    /// Where `id`'s probe starts (the hash's top bits), and its slot
    /// word without the entry: the hash's high half, whose top bits are
    /// the start again, so the table grows without reading an id.
    pub(super) fn home(&self, h: u64) -> (usize, u64) {
        let bits = self.slots.len().trailing_zeros();
        ((h >> (64 - bits)) as usize, h & !0xffff_ffff)
    }

    /// The slot holding `id`, else the empty one where it would go.
    pub(super) fn slot(&self, id: &str, h: u64) -> usize {
        let mask = self.slots.len() - 1;
        let (mut at, fp) = self.home(h);
        loop {
            let s = self.slots[at];
            if s == EMPTY || (s & !0xffff_ffff == fp && self.get(s as u32) == id) {
                return at;
            }
            at = (at + 1) & mask;
        }
    }

    pub(super) fn find(&self, id: &str) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        match self.slots[self.slot(id, id_hash(id))] {
            EMPTY => None,
            s => Some(s as u32),
        }
    }

    /// Adds the next entry's id; `Ok(Some(was))`: the entry that held it
    /// before. `Err`: past what the buffer addresses (4 GiB of ids).
    pub(super) fn push(&mut self, id: &str) -> Result<Option<u32>, ()> {
        let end = u32::try_from(self.text.len() + id.len()).map_err(|_| ())?;
        let i = self.ends.len() as u32;
        self.text.push_str(id);
        self.ends.push(end);
        if (self.used + 1) * 4 > self.slots.len() * 3 {
            self.rehash((self.slots.len() * 2).max(64));
        }
        let h = id_hash(id);
        let at = self.slot(id, h);
        let word = self.home(h).1 | u64::from(i);
        let was = std::mem::replace(&mut self.slots[at], word);
        if was == EMPTY {
            self.used += 1;
            return Ok(None);
        }
        Ok(Some(was as u32))
    }

    pub(super) fn rehash(&mut self, cap: usize) {
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; cap]);
        let mask = cap - 1;
        for s in old.into_iter().filter(|&s| s != EMPTY) {
            let mut at = self.home(s).0;
            while self.slots[at] != EMPTY {
                at = (at + 1) & mask;
            }
            self.slots[at] = s;
        }
    }
}
