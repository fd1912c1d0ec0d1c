//! [`Times`]: when a world line's own records were written, as sources
//! hand them to the builder and the builder keeps them. Times are change
//! points (a time holds until the next point; a run of records of one
//! time costs one point), and full chunks are shared between clones, so a
//! follower handing on the previous snapshot's times costs O(points /
//! CHUNK), not O(records).

use std::sync::Arc;

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
    pub fn set(&mut self, record: usize, t: Option<f64>) {
        if self.last().and_then(Point::time) == t {
            return;
        }
        self.tail.push(Point::new(record, t));
        if self.tail.len() == CHUNK {
            self.full.push(Arc::from(std::mem::take(&mut self.tail)));
        }
    }

    /// Forgets the times of `record` and after.
    pub fn truncate(&mut self, record: usize) {
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

impl From<Vec<Option<f64>>> for Times {
    /// The times of records `0..` in order.
    fn from(v: Vec<Option<f64>>) -> Times {
        let mut out = Times::default();
        for (r, t) in v.into_iter().enumerate() {
            out.set(r, t);
        }
        out
    }
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
