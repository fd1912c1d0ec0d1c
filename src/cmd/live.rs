//! `worldline send --status` without a session: this user's live sessions,
//! each with its path (what `send` and `worldline` take), agent and state.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use worldline::denwa::{self, live_list};
use worldline::sources::lookup::{all_sessions, Locator};

use super::out;

pub fn live_status() -> anyhow::Result<ExitCode> {
    let dir = denwa::socket_dir(denwa::env_runtime_dir().as_deref());
    let loc = Locator::from_env();
    // Sessions whose `denwa.json` names a socket (an agent with the
    // bridge): read only when a socket no host registered needs a name.
    let mut announced: Option<Vec<(PathBuf, PathBuf)>> = None;
    let known = |socket: &Path| -> Option<PathBuf> {
        let list = announced.get_or_insert_with(|| announcements(&loc));
        list.iter()
            .find(|(s, _)| s == socket)
            .map(|(_, d)| d.clone())
    };
    let known = std::cell::RefCell::new(known);
    let list = live_list::live_sessions(&dir, &|s| (known.borrow_mut())(s));
    out::print(&live_list::live_text(&list))?;
    Ok(ExitCode::SUCCESS)
}

/// (socket, session dir) of every known session's `denwa.json` (a
/// subagent's sits in `subagents/<id>/`: its session is the parent).
fn announcements(loc: &Locator) -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for dir in all_sessions(loc).into_iter().filter(|d| d.is_dir()) {
        if let Ok(a) = denwa::read_announcement(&dir) {
            out.push((a.socket, dir.clone()));
        }
        let Ok(subs) = std::fs::read_dir(dir.join("subagents")) else {
            continue;
        };
        for sub in subs.flatten() {
            if let Ok(a) = denwa::read_announcement(&sub.path()) {
                out.push((a.socket, dir.clone()));
            }
        }
    }
    out
}
