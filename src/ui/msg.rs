//! The messages the app takes, typed by their source: `Action` (what the
//! user did, from a key table or the mouse), `Resize`, `Live` (the
//! follower's snapshots), `Found` (the search worker) and `Denwa` (the
//! D-Mail worker); and the `Effect`s an update asks of the runtime (quit,
//! open, start a search, probe, send).

use std::path::PathBuf;
use std::sync::Arc;

use ratatui::layout::{Position, Size};

use crate::worldline::{RecordRef, Session};

use super::compose::{Reply, SendRequest, Target};

/// What the user did: a key from the key table, a mouse event, or typing
/// into the compose box.
#[derive(Debug, Clone)]
pub enum Action {
    Move(isize),
    Page(isize),
    Top,
    Bottom,
    /// Previous/next world line (h/l, Tab wraps).
    SwitchLine(isize),
    /// Enter/→: unfold or fold a step; on a record, the whole record.
    Expand,
    /// ←: fold the step holding the selection.
    Fold,
    /// Every record, bookkeeping included (toggle).
    Every,
    FilterMenu,
    MapToggle,
    /// Next/previous tool error or refused D-Mail.
    Error(isize),
    /// Next/previous fork or D-Mail.
    Mark(isize),
    SearchOpen,
    SearchChar(char),
    SearchBackspace,
    SearchSubmit,
    /// Esc: close the prompt and stop a running search.
    SearchCancel,
    Hit(isize),
    Subagents,
    /// Step into the `/fork` or `/undo` session leaving at the selection
    /// (elsewhere: go to the next fork point); on a fork, back to its source.
    Fork,
    Back,
    Help,
    Follow,
    /// `d`: open the compose box on the selected checkpoint.
    DMail,
    /// A key typed into the compose box.
    ComposeKey(ratatui_textarea::Input),
    /// Text pasted into the compose box.
    ComposePaste(String),
    ComposeSend,
    /// Ctrl-O in the compose box: insert what a revert leaves on disk.
    ComposeInsertKept,
    ComposeCancel,
    /// `c`: the compare screen on the focused world line and the marked
    /// one, else its parent.
    Compare,
    /// `C`: mark (or unmark) the focused world line for `c`.
    CompareMark,
    Quit,
    Click(Position),
    Wheel(isize),
}

/// From the live follower.
#[derive(Debug, Clone)]
pub enum Live {
    Snapshot(Arc<Session>),
    Deleted,
    Error(String),
}

/// From the search worker.
#[derive(Debug, Clone)]
pub enum Found {
    Hits {
        generation: u64,
        records: Vec<RecordRef>,
    },
    Progress {
        generation: u64,
        scanned: usize,
        total: usize,
    },
    Done {
        generation: u64,
    },
}

/// From the D-Mail side of the runtime.
#[derive(Debug, Clone)]
pub enum Denwa {
    /// The runtime's answer to `Effect::Probe`.
    Probed { target: Target, live: bool },
    /// DenwaRenji's answer to `Effect::SendDMail`.
    Reply { request: SendRequest, reply: Reply },
}

/// Every message the app takes, by source.
#[derive(Debug, Clone)]
pub enum Msg {
    Input(Action),
    Resize(Size),
    Live(Live),
    Search(Found),
    DMail(Denwa),
}

impl From<Action> for Msg {
    fn from(a: Action) -> Msg {
        Msg::Input(a)
    }
}

impl From<Live> for Msg {
    fn from(l: Live) -> Msg {
        Msg::Live(l)
    }
}

impl From<Found> for Msg {
    fn from(f: Found) -> Msg {
        Msg::Search(f)
    }
}

impl From<Denwa> for Msg {
    fn from(d: Denwa) -> Msg {
        Msg::DMail(d)
    }
}

/// What the runtime does after an update.
#[derive(Debug, Clone)]
pub enum Effect {
    None,
    Quit,
    Open(PathBuf),
    Search(SearchRequest),
    CancelSearch,
    /// Is this agent's DenwaRenji live? Answer with `Denwa::Probed`.
    Probe(Target),
    /// Send off the UI thread; answer with `Denwa::Reply`.
    SendDMail(SendRequest),
}

#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub session: Arc<Session>,
    pub agent: usize,
    pub query: String,
    pub generation: u64,
}
