//! Record index entries of one Pi file, in chunks.

use crate::model::{RecordMeta, RecordParts, Role};

/// Record index entries in chunks: a split read's halves join without a
/// copy, and a one-shot read frees a chunk once the world lines' records
/// took all of it.
#[derive(Debug, Clone, Default)]
pub(super) struct Metas {
    pub(super) chunks: Vec<Vec<RecordMeta>>,
    /// Each chunk's first entry.
    pub(super) starts: Vec<u32>,
    pub(super) len: usize,
    /// Per chunk: entries still to be taken (after [`Metas::plan`]).
    pub(super) left: Vec<u32>,
}

/// Entries per chunk (2.5 MiB of them).
pub(super) const CHUNK: usize = 1 << 16;

/// What [`Metas::get`] gives for an entry taken (never read by design).
pub(super) fn taken() -> &'static RecordMeta {
    static TAKEN: std::sync::OnceLock<RecordMeta> = std::sync::OnceLock::new();
    TAKEN.get_or_init(|| {
        let parts = RecordParts {
            role: Role::User,
            checkpoint: None,
            tokens: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            marker: None,
        };
        RecordMeta::new(0, 0, 0, 0, parts)
    })
}

impl Metas {
    pub(super) fn push(&mut self, m: RecordMeta) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(m),
            last => {
                // The first grows as it fills (small files stay small).
                let mut c = match last {
                    Some(_) => Vec::with_capacity(CHUNK),
                    None => Vec::new(),
                };
                c.push(m);
                self.starts.push(self.len as u32);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }

    pub(super) fn at(&self, i: u32) -> (usize, usize) {
        let c = self.starts.partition_point(|&s| s <= i).saturating_sub(1);
        (c, (i - self.starts.get(c).copied().unwrap_or(0)) as usize)
    }

    pub(super) fn get(&self, i: u32) -> &RecordMeta {
        let (c, k) = self.at(i);
        match self.chunks.get(c).and_then(|c| c.get(k)) {
            Some(m) => m,
            None => taken(),
        }
    }

    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = &RecordMeta> {
        self.chunks.iter().flatten()
    }

    /// Numbers every entry's line `by` on (a second half, once joined).
    pub(super) fn shift_lines(&mut self, by: u32) {
        for m in self.chunks.iter_mut().flatten() {
            m.shift(0, by);
        }
    }

    pub(super) fn append(&mut self, b: Metas) {
        let n = self.len as u32;
        self.starts.extend(b.starts.iter().map(|s| s + n));
        self.chunks.extend(b.chunks);
        self.len += b.len;
    }

    pub(super) fn plan(&mut self, take: impl Fn(u32) -> bool) {
        self.left = (0..self.chunks.len())
            .map(|c| {
                let s = self.starts[c];
                (s..s + self.chunks[c].len() as u32)
                    .filter(|&i| take(i))
                    .count() as u32
            })
            .collect();
        for (c, &left) in self.chunks.iter_mut().zip(&self.left) {
            if left == 0 {
                *c = Vec::new();
            }
        }
    }

    /// Moves out the entries `each` (ascending, as a path from a root
    /// is), handing each to `put`; a chunk's storage is freed when its
    /// last planned entry goes. Consecutive entries are found in the chunk
    /// at hand, not searched for.
    pub(super) fn take_each(&mut self, each: &[u32], mut put: impl FnMut(RecordMeta)) {
        let filler = taken().clone();
        // The chunk at hand and the entries it holds.
        let (mut c, mut lo, mut hi) = (0, 0u32, 0u32);
        for &i in each {
            if !(lo..hi).contains(&i) {
                (c, _) = self.at(i);
                lo = self.starts.get(c).copied().unwrap_or(0);
                hi = lo + self.chunks.get(c).map_or(0, |ch| ch.len() as u32);
            }
            let Some(slot) = self
                .chunks
                .get_mut(c)
                .and_then(|ch| ch.get_mut((i - lo) as usize))
            else {
                put(filler.clone());
                continue;
            };
            put(std::mem::replace(slot, filler.clone()));
            if let Some(left) = self.left.get_mut(c) {
                *left = left.saturating_sub(1);
                if *left == 0 {
                    self.chunks[c] = Vec::new();
                    hi = lo;
                }
            }
        }
    }
}
