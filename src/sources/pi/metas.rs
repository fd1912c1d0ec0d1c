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

    pub(super) fn take(&mut self, i: u32) -> RecordMeta {
        let (c, k) = self.at(i);
        let Some(slot) = self.chunks.get_mut(c).and_then(|ch| ch.get_mut(k)) else {
            return taken().clone();
        };
        let m = std::mem::replace(slot, taken().clone());
        if let Some(left) = self.left.get_mut(c) {
            *left = left.saturating_sub(1);
            if *left == 0 {
                self.chunks[c] = Vec::new();
            }
        }
        m
    }
}
