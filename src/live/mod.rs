//! Following a live session. This first version polls file sizes and
//! mtimes and rebuilds the whole session when anything changed; the UI and
//! `watch` only see the API below, so the reader behind it can improve.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use crate::worldline::Session;

#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// Poll instead of native notifications.
    pub poll: bool,
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
    /// the initial state).
    Snapshot(Arc<Session>),
    /// The session directory is gone; keep showing the last snapshot.
    Deleted,
    /// Something went wrong reading; following goes on.
    Error(String),
}

/// Stops the follower thread when dropped.
pub struct LiveHandle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for LiveHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts following `dir`; events arrive on the returned receiver.
pub fn spawn(dir: PathBuf, opts: LiveOptions) -> crate::Result<(Receiver<LiveEvent>, LiveHandle)> {
    let (tx, rx) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let thread = std::thread::Builder::new()
        .name("worldline-live".into())
        .spawn(move || follow(&dir, &opts, &tx, &stop2))
        .map_err(|e| crate::Error::Other(format!("cannot start the live reader: {e}")))?;
    Ok((
        rx,
        LiveHandle {
            stop,
            thread: Some(thread),
        },
    ))
}

type Fingerprint = Vec<(PathBuf, u64, Option<SystemTime>)>;

fn fingerprint(dir: &Path) -> Option<Fingerprint> {
    fn walk(dir: &Path, depth: usize, out: &mut Fingerprint) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() && depth < 2 {
                walk(&e.path(), depth + 1, out);
            } else if m.is_file() {
                out.push((e.path(), m.len(), m.modified().ok()));
            }
        }
    }
    if !dir.is_dir() {
        return None;
    }
    let mut out = Vec::new();
    walk(dir, 0, &mut out);
    out.sort();
    Some(out)
}

fn follow(dir: &Path, opts: &LiveOptions, tx: &Sender<LiveEvent>, stop: &AtomicBool) {
    let mut last: Option<Fingerprint> = None;
    let mut deleted = false;
    while !stop.load(Ordering::Relaxed) {
        match fingerprint(dir) {
            None if !deleted => {
                deleted = true;
                if tx.send(LiveEvent::Deleted).is_err() {
                    return;
                }
            }
            Some(fp) if last.as_ref() != Some(&fp) => {
                deleted = false;
                let event = match Session::load(dir) {
                    Ok(s) => LiveEvent::Snapshot(Arc::new(s)),
                    Err(e) => LiveEvent::Error(e.to_string()),
                };
                last = Some(fp);
                if tx.send(event).is_err() {
                    return;
                }
            }
            _ => {}
        }
        std::thread::sleep(opts.poll_interval);
    }
}

pub fn watch_command(_args: &crate::cli::WatchArgs) -> anyhow::Result<()> {
    anyhow::bail!("`worldline watch` is not built yet")
}
