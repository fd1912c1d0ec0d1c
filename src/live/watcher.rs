//! Wake-ups for the follower. Native: a non-recursive `notify` watch on the
//! session directory, `subagents/` and each subagent directory (directories,
//! not files, so renames and new files are seen too). Any event only says
//! "look again"; the follower finds out what changed. Polling: a timer,
//! because the follower's refresh already is a poll (a listing and one stat
//! per file); `notify::PollWatcher` would only walk the same files twice.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::mpsc::Sender;

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecursiveMode, Watcher as _};

/// Why the follower woke up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    Fs,
    Stop,
}

pub enum Watcher {
    Native {
        watcher: notify::RecommendedWatcher,
        watched: HashSet<PathBuf>,
    },
    /// Polling; `Some(reason)` until told, when native notifications were
    /// wanted but failed.
    Poll(Option<String>),
}

impl Watcher {
    /// A native watcher unless `poll`, or unless it cannot start.
    pub fn start(poll: bool, wake: &Sender<Wake>) -> Watcher {
        if poll {
            return Watcher::Poll(None);
        }
        let tx = wake.clone();
        match notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            // Our own reads open files and directories: ignoring those keeps
            // the follower from waking itself. Errors (e.g. a queue
            // overflow) mean "look again".
            if let Ok(ev) = &res {
                if is_read_access(&ev.kind) {
                    return;
                }
            }
            let _ = tx.send(Wake::Fs);
        }) {
            Ok(watcher) => Watcher::Native {
                watcher,
                watched: HashSet::new(),
            },
            Err(e) => Watcher::Poll(Some(format!(
                "native file notifications could not start ({e})"
            ))),
        }
    }

    pub fn is_native(&self) -> bool {
        matches!(self, Watcher::Native { .. })
    }

    /// Why native notifications were given up for polling, once.
    pub fn take_fallback(&mut self) -> Option<String> {
        match self {
            Watcher::Poll(why) => why.take(),
            Watcher::Native { .. } => None,
        }
    }

    /// Watches exactly `dirs`. Returns true when a new directory is watched
    /// (its files may predate the watch, so the caller reads again). A
    /// failure (no inotify, too many watches) falls back to polling.
    pub fn sync(&mut self, dirs: &[PathBuf]) -> bool {
        let Watcher::Native { watcher, watched } = self else {
            return false;
        };
        watched.retain(|d| {
            let keep = dirs.contains(d);
            if !keep {
                let _ = watcher.unwatch(d);
            }
            keep
        });
        let mut added = false;
        for d in dirs {
            if watched.contains(d) {
                continue;
            }
            match watcher.watch(d, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    watched.insert(d.clone());
                    added = true;
                }
                // Gone already: the next listing will not name it.
                Err(_) if !d.is_dir() => {}
                Err(e) => {
                    *self = Watcher::Poll(Some(format!(
                        "native file notifications failed on {} ({e})",
                        crate::text::sanitize_path(d)
                    )));
                    return true;
                }
            }
        }
        added
    }

    /// The session directory went away: its watches died with it, so they
    /// are set up again if it comes back.
    pub fn forget(&mut self) {
        if let Watcher::Native { watcher, watched } = self {
            for d in watched.drain() {
                let _ = watcher.unwatch(&d);
            }
        }
    }
}

fn is_read_access(kind: &EventKind) -> bool {
    matches!(kind, EventKind::Access(a) if *a != AccessKind::Close(AccessMode::Write))
}
