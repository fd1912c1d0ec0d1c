//! Following a live session. A reader thread wakes on file notifications
//! (or a poll timer), coalesces bursts, reads only new bytes of each file,
//! and sends a rebuilt `Session` when what it shows changed. A rotation in
//! progress is held back until it is complete, so a D-Mail revert shows up
//! as one new world line, never as a half-copied one.

mod dropper;
pub mod watch;
mod watcher;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use crate::sources::ROTATION_GRACE;
pub use dropper::drop_later;
pub use watch::events_between;

use crate::sources::{Follower, Refresh, SessionParts};
use crate::worldline::Session;
use watcher::{Wake, Watcher};

#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// Poll instead of native notifications.
    pub poll: bool,
    /// How often to look when polling.
    pub poll_interval: Duration,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            poll: false,
            poll_interval: Duration::from_millis(250),
        }
    }
}

/// What the follower reports, in order, on one channel.
#[derive(Debug, Clone)]
pub enum LiveEvent {
    /// The session as it is now, rebuilt after a change (the first event is
    /// the initial state, sent once the directory holds a context file).
    Snapshot(Arc<Session>),
    /// The session directory is gone; keep showing the last snapshot.
    Deleted,
    /// Something went wrong reading; following goes on.
    Error(String),
    /// Following goes on, less well (native notifications fell back to
    /// polling).
    Warning(String),
}

/// Stops the follower thread when dropped.
pub struct LiveHandle {
    stop: Arc<AtomicBool>,
    wake: Sender<Wake>,
    polling: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LiveHandle {
    /// True when following by polling (asked for, or native notifications
    /// could not start).
    pub fn is_polling(&self) -> bool {
        self.polling.load(Ordering::Relaxed)
    }
}

impl Drop for LiveHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.wake.send(Wake::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Without native events, look this often anyway: notifications can be
/// lost (queue overflow) and a lost one must not freeze the view.
const SAFETY_TICK: Duration = Duration::from_secs(1);
/// A burst of writes is read as one batch: wait for this much quiet…
const QUIET: Duration = Duration::from_millis(2);
/// …but never longer than this after the first event.
const MAX_BATCH: Duration = Duration::from_millis(15);

/// Starts following `dir`; events arrive on the returned receiver.
pub fn spawn(dir: PathBuf, opts: LiveOptions) -> crate::Result<(Receiver<LiveEvent>, LiveHandle)> {
    let (tx, rx) = mpsc::channel();
    let (wake_tx, wake_rx) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let polling = Arc::new(AtomicBool::new(opts.poll));
    let state = Tracked::new(&dir);
    let follower = LiveLoop {
        state,
        watcher: Watcher::start(opts.poll, &wake_tx),
        opts,
        tx,
        wake: wake_rx,
        stop: stop.clone(),
        polling: polling.clone(),
        last_errors: Vec::new(),
    };
    let thread = std::thread::Builder::new()
        .name("worldline-live".into())
        .spawn(move || follower.run())
        .map_err(|e| crate::Error::Other(format!("cannot start the live reader: {e}")))?;
    Ok((
        rx,
        LiveHandle {
            stop,
            wake: wake_tx,
            polling,
            thread: Some(thread),
        },
    ))
}

/// The follower's reading without its thread and watcher: each
/// [`Reader::refresh`] reads what was added since the last, each snapshot
/// continues the previous one. For tools and tests that drive it step by
/// step.
pub struct Reader {
    state: Tracked,
}

impl Reader {
    pub fn new(dir: &Path) -> Reader {
        Reader {
            state: Tracked::new(dir),
        }
    }

    /// Reads new bytes; `true` when something a snapshot shows changed.
    /// Problems reading go to `errors`.
    pub fn refresh(&mut self, errors: &mut Vec<String>) -> bool {
        self.state.refresh(Instant::now(), errors).changed
    }

    pub fn snapshot(&mut self) -> Option<Arc<Session>> {
        self.state.snapshot()
    }

    /// The next snapshot as the follower builds it (from the previous one,
    /// [`Session::build_from`]) and the same parts built afresh
    /// ([`Session::build`]): the two must be equal.
    pub fn snapshot_and_full(&mut self) -> Option<(Arc<Session>, Session)> {
        let (parts, fresh) = self.state.follower.parts()?;
        let full = Session::build(parts.clone());
        Some((self.state.build_next(parts, fresh), full))
    }
}

/// What is followed: the session's source's follower, and the last
/// snapshot, which the next one is built from.
struct Tracked {
    follower: Box<dyn Follower>,
    prev: Option<Arc<Session>>,
}

impl Tracked {
    fn new(path: &Path) -> Tracked {
        let follower = match crate::sources::source_for(path) {
            Some(s) => s.follower(path),
            // Not a session yet (a demo or replay about to write one): the
            // default source's follower waits for its files.
            None => crate::sources::Tool::default().source().follower(path),
        };
        Tracked {
            follower,
            prev: None,
        }
    }

    fn refresh(&mut self, now: Instant, errors: &mut Vec<String>) -> Refresh {
        self.follower.refresh(now, errors)
    }

    fn settling_until(&self, now: Instant) -> Option<Instant> {
        self.follower.settling_until(now)
    }

    /// Rebuilds the session from what was read, continuing the previous
    /// snapshot; `None` while there is nothing to show.
    fn snapshot(&mut self) -> Option<Arc<Session>> {
        let (parts, fresh) = self.follower.parts()?;
        Some(self.build_next(parts, fresh))
    }

    fn build_next(&mut self, parts: SessionParts, fresh: bool) -> Arc<Session> {
        let prev = self.prev.take();
        let s = Arc::new(Session::build_from(
            parts,
            prev.as_deref().filter(|_| !fresh),
        ));
        if let Some(old) = prev {
            // Possibly the last holder of storage a regrowth left behind.
            drop_later(old);
        }
        self.prev = Some(s.clone());
        s
    }

    fn dirs(&self) -> &[PathBuf] {
        self.follower.dirs()
    }
}

struct LiveLoop {
    state: Tracked,
    watcher: Watcher,
    opts: LiveOptions,
    tx: Sender<LiveEvent>,
    wake: Receiver<Wake>,
    stop: Arc<AtomicBool>,
    polling: Arc<AtomicBool>,
    /// Errors of the previous batch, so a lasting problem is said once.
    last_errors: Vec<String>,
}

impl LiveLoop {
    fn run(mut self) {
        let mut pending = true;
        let mut deleted = false;
        loop {
            let deleted_now = self.read();
            self.polling
                .store(!self.watcher.is_native(), Ordering::Relaxed);
            if let Some(why) = self.watcher.take_fallback() {
                let ms = self.opts.poll_interval.as_millis();
                let msg = format!("{why}; following by polling every {ms} ms");
                if self.tx.send(LiveEvent::Warning(msg)).is_err() {
                    return;
                }
            }
            match deleted_now {
                Some(true) if !deleted => {
                    deleted = true;
                    self.watcher.forget();
                    if self.tx.send(LiveEvent::Deleted).is_err() {
                        return;
                    }
                }
                Some(true) => {}
                Some(false) => {
                    pending = true;
                    deleted = false;
                }
                None => deleted = false,
            }
            let now = Instant::now();
            let settle = self.state.settling_until(now);
            if pending && !deleted && settle.is_none() {
                if let Some(s) = self.state.snapshot() {
                    pending = false;
                    if self.tx.send(LiveEvent::Snapshot(s)).is_err() {
                        return;
                    }
                }
            }
            let tick = if self.watcher.is_native() {
                SAFETY_TICK
            } else {
                self.opts.poll_interval
            };
            let timeout = settle.map_or(tick, |t| t.saturating_duration_since(now).min(tick));
            if !self.wait(timeout) {
                return;
            }
        }
    }

    /// One batch of reading. `Some(true)`: the session is gone;
    /// `Some(false)`: something changed; `None`: nothing did.
    fn read(&mut self) -> Option<bool> {
        let mut changed = false;
        // New watches may miss files made before them: read again after.
        for _ in 0..8 {
            let mut errors = Vec::new();
            let r = self.state.refresh(Instant::now(), &mut errors);
            self.report(errors);
            if r.deleted {
                return Some(true);
            }
            changed |= r.changed;
            if !self.watcher.sync(self.state.dirs()) {
                break;
            }
        }
        changed.then_some(false)
    }

    fn report(&mut self, errors: Vec<String>) {
        for e in &errors {
            if !self.last_errors.contains(e) {
                let _ = self.tx.send(LiveEvent::Error(e.clone()));
            }
        }
        self.last_errors = errors;
    }

    /// Sleeps until a notification (then lets the burst finish) or the
    /// timeout. False when it is time to stop.
    fn wait(&self, timeout: Duration) -> bool {
        match self.wake.recv_timeout(timeout) {
            Ok(Wake::Fs) => {}
            Err(RecvTimeoutError::Timeout) => return !self.stop.load(Ordering::Relaxed),
            Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return false,
        }
        let first = Instant::now();
        loop {
            let left = MAX_BATCH.saturating_sub(first.elapsed());
            if left.is_zero() {
                break;
            }
            match self.wake.recv_timeout(QUIET.min(left)) {
                Ok(Wake::Fs) => {}
                Err(RecvTimeoutError::Timeout) => break,
                Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return false,
            }
        }
        !self.stop.load(Ordering::Relaxed)
    }
}
