//! One D-Mail model for every agent: what D-Mail a session can take (a
//! DenwaRenji socket with checkpoint ids, a server that takes turns back,
//! or none and why), how far back a D-Mail goes, and what a turns server
//! answers. Sources say which (`Source::dmail_route`); `send`, the compose
//! box and `d` ask them.

use std::path::PathBuf;

/// What D-Mail a session can take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DMailRoute {
    /// A DenwaRenji socket announced in the session directory; a D-Mail
    /// goes back to a checkpoint id (kimi-cli).
    Checkpoints { dir: PathBuf },
    /// A server that undoes turns and takes the D-Mail as the next prompt
    /// (Kimi Code).
    Turns,
    /// None, and why (in words for the user).
    None(String),
}

/// How far back a D-Mail goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Back {
    /// To checkpoint id N.
    Checkpoint(i64),
    /// N turns back (the one running counts as one).
    Turns(u32),
    /// Keep turns 1..=K of the current world line, undo the rest.
    KeepTurns(u32),
}

/// A turns server's view of a session (`send --status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnsStatus {
    /// Which server, in words.
    pub server: String,
    pub loaded: bool,
    pub busy: bool,
    /// Turns of the current world line (user prompts); `None` while the
    /// session is loaded nowhere (asking would load it).
    pub turns: Option<u32>,
    /// How many of them can be undone now.
    pub undoable: Option<u32>,
    /// Undo stops at a compaction before reaching the first turn.
    pub stopped_at_compaction: bool,
}

/// A D-Mail a turns server took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnsSent {
    pub turns: u32,
    pub prompt_id: String,
    /// A running turn was aborted first.
    pub aborted: bool,
    pub server: String,
}

/// Why a D-Mail to a turns server did not land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnsError {
    /// No server serves the session (exit 2 for `send`).
    NoServer(String),
    /// The agent refused, in its words; nothing was written unless said.
    Refused(String),
    /// Transport or protocol failure.
    Failed(String),
}

impl std::fmt::Display for TurnsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TurnsError::NoServer(m) | TurnsError::Refused(m) | TurnsError::Failed(m) => {
                f.write_str(m)
            }
        }
    }
}
