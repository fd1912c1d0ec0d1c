//! `worldline watch --json`: the live event stream (`live::watch` says what
//! the events are), one JSON object per line, until Ctrl-C, SIGTERM or a
//! closed stdout.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use worldline::live::{self, events_between, LiveEvent, LiveOptions};
use worldline::sources::lookup::{resolve, Locator};
use worldline::text::json_for_terminal;
use worldline::worldline::Session;

use super::args::WatchArgs;
use super::out;

pub fn watch(args: &WatchArgs) -> anyhow::Result<()> {
    let path = resolve(args.session.as_deref(), &Locator::from_env())?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let (rx, _handle) = live::spawn(
        path,
        LiveOptions {
            poll: args.poll,
            ..LiveOptions::default()
        },
    )?;
    let mut stdout = std::io::stdout().lock();
    let mut shown: Option<Arc<Session>> = None;
    while !stop.load(Ordering::Relaxed) {
        let event = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(e) => e,
            Err(RecvTimeoutError::Timeout) if out::reader_gone() => return Err(out::Closed.into()),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => anyhow::bail!("the live reader stopped"),
        };
        let lines = match event {
            LiveEvent::Snapshot(s) => {
                let lines = events_between(shown.as_deref(), &s);
                if let Some(old) = shown.replace(s) {
                    worldline::live::drop_later(old);
                }
                lines
            }
            LiveEvent::Deleted => vec![json!({"event": "deleted"})],
            LiveEvent::Error(message) => vec![json!({"event": "error", "message": message})],
            LiveEvent::Warning(message) => {
                vec![json!({"event": "warning", "file": null, "line": null, "message": message})]
            }
        };
        for l in &lines {
            out::line(&mut stdout, &json_for_terminal(l.to_string()))?;
        }
    }
    Ok(())
}
