//! Helpers shared by the live tests: fixtures, a seeded RNG, waiting on a
//! follower with a generous bound, and the replayer.

#![allow(dead_code)]

pub mod replay;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use worldline::live::LiveEvent;
use worldline::worldline::Session;

/// The one session directory inside a fixture scenario.
pub fn session_dir(scenario: &Path) -> PathBuf {
    let only = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.is_dir())
            .unwrap()
    };
    only(&only(&scenario.join("sessions")))
}

pub fn kimi_fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-cli");
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// xorshift64*: small, seeded, good enough to vary chunk sizes and pauses.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// In `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

/// Generous: the machine running the tests may be busy.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Everything a follower sent, kept for checks after the fact.
#[derive(Default)]
pub struct Seen {
    pub events: Vec<LiveEvent>,
}

impl Seen {
    pub fn snapshots(&self) -> impl Iterator<Item = &Arc<Session>> {
        self.events.iter().filter_map(|e| match e {
            LiveEvent::Snapshot(s) => Some(s),
            _ => None,
        })
    }

    pub fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                LiveEvent::Error(m) => Some(m.clone()),
                _ => None,
            })
            .collect()
    }

    /// Receives until an event satisfies `done`; panics after `PATIENCE`.
    pub fn until(
        &mut self,
        rx: &Receiver<LiveEvent>,
        what: &str,
        mut done: impl FnMut(&LiveEvent) -> bool,
    ) -> LiveEvent {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(e) => {
                    self.events.push(e.clone());
                    if done(&e) {
                        return e;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!("timed out waiting for {what}"),
                Err(RecvTimeoutError::Disconnected) => panic!("follower stopped before {what}"),
            }
        }
    }

    /// Receives until a snapshot satisfies `done`.
    pub fn until_snapshot(
        &mut self,
        rx: &Receiver<LiveEvent>,
        what: &str,
        mut done: impl FnMut(&Session) -> bool,
    ) -> Arc<Session> {
        match self.until(rx, what, |e| matches!(e, LiveEvent::Snapshot(s) if done(s))) {
            LiveEvent::Snapshot(s) => s,
            _ => unreachable!(),
        }
    }
}
