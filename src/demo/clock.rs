//! Time for the demo agent: the real clock, or a fake one for tests that
//! advances instantly when asked to sleep.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::kimi_writer::unix_now;

pub trait Clock: Send {
    /// Seconds since the Unix epoch.
    fn now(&self) -> f64;
    fn sleep(&self, d: Duration);
}

#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        unix_now()
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// A clock whose `sleep` only moves its time forward; clones share the time.
#[derive(Debug, Clone)]
pub struct FakeClock {
    now: Arc<Mutex<f64>>,
}

impl FakeClock {
    pub fn starting_at(unix_seconds: f64) -> Self {
        FakeClock {
            now: Arc::new(Mutex::new(unix_seconds)),
        }
    }
}

impl Clock for FakeClock {
    fn now(&self) -> f64 {
        *self.now.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn sleep(&self, d: Duration) {
        *self.now.lock().unwrap_or_else(|e| e.into_inner()) += d.as_secs_f64();
    }
}
