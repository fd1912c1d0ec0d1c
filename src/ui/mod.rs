//! The terminal UI. One event loop: the input thread, the live follower,
//! the search worker and the D-Mail sender all send on one channel; the loop
//! turns terminal events into messages with the key table, applies every
//! message with `App::update`, drains whatever else is queued (redraws are
//! coalesced), loads the visible bodies, then draws.

pub mod app;
pub mod cache;
pub mod compare;
pub mod compose;
pub mod detail;
pub mod diffview;
pub mod divergence;
mod dmail;
pub mod geometry;
pub mod hop;
pub mod keys;
pub mod layout;
pub mod map;
mod msg;
pub mod pane;
pub mod picker;
mod popup;
pub mod rows;
pub mod search;
pub mod session;
pub mod steps;
pub mod terminal;
pub mod theme;
pub mod view;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ratatui::crossterm::event::{self, Event};

use crate::live::{self, LiveEvent, LiveOptions};
use crate::sources::lookup::{self as source, Locator};

use app::{Action, App, Denwa, Effect, Live, Msg};
use theme::Theme;

/// What arrives on the event loop's channel: raw terminal events (turned
/// into messages by the key table on the loop, where the mode is known) and
/// messages from the worker threads.
enum Incoming {
    Term(Event),
    Msg(Msg),
}

/// What `worldline [session]` was asked to open.
#[derive(Debug, Clone, Default)]
pub struct ViewOptions {
    /// Session path, id or id prefix; `None`: the newest of this directory.
    pub session: Option<String>,
    /// Choose the session from a list.
    pub pick: bool,
    /// Keep the newest record in view as the session grows.
    pub follow: bool,
    /// Poll the files instead of using native file notifications.
    pub poll: bool,
}

/// `worldline [session]`: the picker when asked (or when this directory has
/// several sessions and none was named), else the session.
pub fn run(args: &ViewOptions) -> anyhow::Result<()> {
    let loc = Locator::from_env();
    let several_here = args.session.is_none() && source::sessions_here(&loc).len() > 1;
    if args.pick || several_here {
        let mut sessions = source::list(&loc, false);
        if sessions.is_empty() {
            sessions = source::list(&loc, true);
        }
        if sessions.is_empty() {
            anyhow::bail!(
                "no sessions under {} (set KIMI_SHARE_DIR or KIMI_CODE_HOME, or try `worldline demo`)",
                loc.everywhere()
            );
        }
        return start(None, Some(sessions), args.follow, args.poll);
    }
    let dir = source::resolve(args.session.as_deref(), &loc)?;
    run_on(dir, args.follow, args.poll)
}

/// Opens the TUI on one session directory (the demo calls this).
pub fn run_on(dir: PathBuf, follow: bool, poll: bool) -> anyhow::Result<()> {
    if !source::is_session(&dir) {
        return Err(crate::Error::NoContextFile { path: dir }.into());
    }
    start(Some(dir), None, follow, poll)
}

fn start(
    dir: Option<PathBuf>,
    picker: Option<Vec<source::SessionSummary>>,
    follow: bool,
    poll: bool,
) -> anyhow::Result<()> {
    let signals = terminal::signal_flag();
    let (mut term, guard) = terminal::init()?;
    let size = term.size()?;
    let mut app = App::new(Theme::from_env(), follow, size);
    if let Some(p) = picker {
        app = app.with_picker(p);
    }
    let result = event_loop(&mut term, &mut app, dir, follow, poll, signals);
    drop(guard);
    result
}

/// Kept alive while a session is open; dropping stops its threads.
struct Open {
    stop: Arc<AtomicBool>,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn open(dir: &Path, poll: bool, tx: &Sender<Incoming>) -> anyhow::Result<Open> {
    let stop = Arc::new(AtomicBool::new(false));
    let (dir, tx, stopped) = (dir.to_path_buf(), tx.clone(), stop.clone());
    std::thread::Builder::new()
        .name("worldline-live-forward".into())
        .spawn(move || {
            // The session is read once: the follower's first snapshot is the
            // first frame (its first read of a big file is as parallel as
            // `Session::load`), and it goes on from what it read.
            let opts = LiveOptions {
                poll,
                ..LiveOptions::default()
            };
            let (rx, _handle) = match live::spawn(dir, opts) {
                Ok(pair) => pair,
                Err(e) => {
                    let _ = tx.send(Incoming::Msg(Live::Error(e.to_string()).into()));
                    return;
                }
            };
            while !stopped.load(Ordering::Relaxed) {
                let ev = match rx.recv_timeout(Duration::from_millis(200)) {
                    Ok(ev) => ev,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                };
                let l = match ev {
                    LiveEvent::Snapshot(s) => Live::Snapshot(s),
                    LiveEvent::Deleted => Live::Deleted,
                    LiveEvent::Error(e) | LiveEvent::Warning(e) => Live::Error(e),
                };
                if tx.send(Incoming::Msg(l.into())).is_err() {
                    return;
                }
            }
        })?;
    Ok(Open { stop })
}

/// The session's work dir, if known.
fn work_dir_of(dir: &Path) -> Option<String> {
    source::work_dir_of(dir)
}

fn recently_modified(dir: &Path) -> bool {
    SystemTime::now()
        .duration_since(source::modified(dir))
        .is_ok_and(|age| age < Duration::from_secs(60))
}

fn event_loop(
    term: &mut terminal::Term,
    app: &mut App,
    dir: Option<PathBuf>,
    follow: bool,
    poll: bool,
    signals: Arc<AtomicBool>,
) -> anyhow::Result<()> {
    let (tx, rx) = mpsc::channel::<Incoming>();
    let stop = Arc::new(AtomicBool::new(false));
    spawn_input(tx.clone(), stop.clone())?;
    let mut current: Option<Open> = None;
    let mut search_cancel = Arc::new(AtomicBool::new(false));
    let mut pending = dir.map(Effect::Open);
    let result = loop {
        if signals.load(Ordering::Relaxed) {
            break Ok(());
        }
        if let Some(effect) = pending.take() {
            match effect {
                Effect::Quit => break Ok(()),
                Effect::Open(d) => {
                    app.set_follow(follow || recently_modified(&d));
                    app.set_work_dir(work_dir_of(&d));
                    current = None;
                    match open(&d, poll, &tx) {
                        Ok(o) => current = Some(o),
                        Err(e) => break Err(e),
                    }
                }
                Effect::Search(req) => {
                    search_cancel.store(true, Ordering::Relaxed);
                    search_cancel = Arc::new(AtomicBool::new(false));
                    let tx = tx.clone();
                    let sent = search::spawn(req, search_cancel.clone(), move |f| {
                        tx.send(Incoming::Msg(f.into())).is_ok()
                    });
                    if let Err(e) = sent {
                        app.say(format!("cannot search: {e}"));
                    }
                }
                Effect::CancelSearch => search_cancel.store(true, Ordering::Relaxed),
                // Cheap (a file read and a kill(pid, 0)): done right here.
                Effect::Probe(target) => {
                    let live = compose::probe(&target);
                    let next = app.update(Denwa::Probed { target, live });
                    if !matches!(next, Effect::None) {
                        pending = Some(next);
                    }
                }
                Effect::SendDMail(request) => spawn_send(request, tx.clone(), app),
                Effect::None => {}
            }
            continue;
        }
        app.prepare();
        if let Err(e) = term.draw(|f| view::draw(f, app)) {
            break Err(e.into());
        }
        // Wait for one message, then drain the rest before drawing again.
        // The timeout lets a signal end the loop even when no input comes
        // (after a hangup crossterm's reader may never return).
        let first = loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(m) => break Some(m),
                Err(mpsc::RecvTimeoutError::Timeout) if !signals.load(Ordering::Relaxed) => {}
                Err(_) => break None,
            }
        };
        let Some(first) = first else {
            break Ok(());
        };
        let mut effect = handle(app, first);
        while matches!(effect, Effect::None) {
            match rx.try_recv() {
                Ok(m) => effect = handle(app, m),
                Err(_) => break,
            }
        }
        if !matches!(effect, Effect::None) {
            pending = Some(effect);
        }
    };
    stop.store(true, Ordering::Relaxed);
    search_cancel.store(true, Ordering::Relaxed);
    drop(current);
    // The input thread is not joined: it notices `stop` within 100 ms, and
    // after a hangup it may be stuck in crossterm's reader; exiting ends it.
    result
}

fn handle(app: &mut App, m: Incoming) -> Effect {
    match m {
        Incoming::Msg(m) => app.update(m),
        Incoming::Term(ev) => {
            let mode = app.mode();
            match keys::message_for(mode, &ev) {
                Some(a) => {
                    if matches!(ev, Event::Key(_)) {
                        app.key_pressed();
                    }
                    app.update(a)
                }
                None => Effect::None,
            }
        }
    }
}

/// Sends a D-Mail on a worker thread (the client may wait for its
/// timeouts); the reply comes back through the loop's channel.
fn spawn_send(request: compose::SendRequest, tx: Sender<Incoming>, app: &mut App) {
    let req = request.clone();
    let spawned = std::thread::Builder::new()
        .name("worldline-dmail".into())
        .spawn(move || {
            let reply = compose::send(&req);
            let _ = tx.send(Incoming::Msg(
                Denwa::Reply {
                    request: req,
                    reply,
                }
                .into(),
            ));
        });
    if let Err(e) = spawned {
        app.update(Denwa::Reply {
            request,
            reply: compose::Reply::Failed(format!("cannot start a thread: {e}")),
        });
    }
}

/// Reads terminal events with a short timeout so it notices `stop`.
fn spawn_input(tx: Sender<Incoming>, stop: Arc<AtomicBool>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("worldline-input".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match event::poll(Duration::from_millis(100)) {
                    Ok(true) => match event::read() {
                        Ok(ev) => {
                            if tx.send(Incoming::Term(ev)).is_err() {
                                return;
                            }
                        }
                        Err(_) => break,
                    },
                    Ok(false) => {}
                    Err(_) => break,
                }
            }
            // The terminal is gone or unreadable: nothing more can be done
            // interactively.
            if !stop.load(Ordering::Relaxed) {
                let _ = tx.send(Incoming::Msg(Action::Quit.into()));
            }
        })
        .map(|_| ())
}
