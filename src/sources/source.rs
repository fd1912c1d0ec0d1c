//! The `Source` trait: everything worldline asks of one agent's on-disk
//! contract, and the one table ([`SOURCES`]) that registers every agent.
//! Code outside `sources/` asks a session's [`Tool`] for its source and
//! never matches on the agent; adding an agent is one folder under
//! `sources/` and one line in the table.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::follow::{Follower, Rereader};
use super::{Reading, SessionParts, SessionSummary, Tool};
use crate::denwa::{Back, DMailRoute, TurnsError, TurnsSent, TurnsStatus};
use crate::error::Result;
use crate::model::{Body, RecordMeta};

/// One agent's on-disk contract.
pub trait Source: Sync {
    /// Which agent this is.
    fn tool(&self) -> Tool;

    /// Is `path` (a file or a directory) a session of this agent, by its
    /// name *and* its content? A file of another agent's format must
    /// answer `false`, so nothing opens as the wrong agent.
    fn recognise(&self, path: &Path) -> bool;

    /// The session an existing path a user typed belongs to (a subagent's
    /// file → its session); `None` when the path is not this agent's.
    fn session_of(&self, path: &Path) -> Option<PathBuf> {
        self.recognise(path).then(|| path.to_path_buf())
    }

    /// Reads the session at `path` (as [`Source::session_of`] names it)
    /// into the parts the world-line builder takes.
    fn parts(&self, path: &Path, reading: Reading) -> Result<SessionParts>;

    /// Loads one record's body from the file its index entry points into
    /// (`FileIndex::path`). A line that changed on disk is an error.
    fn load_body(&self, path: &Path, meta: &RecordMeta) -> Result<Body>;

    /// The first `max` bytes of a record's line, raw (a preview of a record
    /// too big to parse). Sources whose index offsets are not plain byte
    /// offsets into `path` (compressed or multi-file) override it.
    fn load_line_head(&self, path: &Path, meta: &RecordMeta, max: usize) -> Result<Vec<u8>> {
        crate::read::load_line_head(path, meta, max)
    }

    /// Sessions of the work directory `cwd`, any order.
    fn sessions_here(&self, cwd: &Path) -> Vec<PathBuf>;

    /// Every session this agent keeps (its home from its env var, else the
    /// default), any order.
    fn all_sessions(&self) -> Vec<PathBuf>;

    /// The id users type (`worldline SESSION`, prefixes included).
    fn session_id(&self, path: &Path) -> String {
        path.file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// A session's row for `list` and the picker, read cheaply.
    fn summarize(&self, path: &Path) -> SessionSummary;

    /// Last change to any of the session's files.
    fn modified(&self, path: &Path) -> SystemTime;

    /// The work directory the session belongs to.
    fn work_dir_of(&self, path: &Path) -> Option<String>;

    /// What a live follower watches: the files and directories whose
    /// change means the session may have changed (new files included: a
    /// directory is listed to see files appear in it).
    fn live_paths(&self, path: &Path) -> Vec<PathBuf>;

    /// The reader that follows the session at `path` live. By default the
    /// session is read again whenever a [`Source::live_paths`] entry
    /// changes; a source whose appends must stay cheap brings its own.
    fn follower(&self, path: &Path) -> Box<dyn Follower> {
        Box::new(Rereader::new(path, source_of(self.tool())))
    }

    /// For a session made from another (`link` is its `forked_from`): the
    /// world line of this session that holds the copied records.
    fn copy_line(&self, link: &super::SessionLink) -> usize {
        link.source_line
    }

    /// How `worldline replay` writes the session again.
    fn replay_style(&self, _path: &Path) -> ReplayStyle {
        ReplayStyle::Appends {
            side_files: Vec::new(),
        }
    }

    /// Where this agent's sessions are looked for, for messages.
    fn home_hint(&self) -> String;

    /// What the marked positions of a world line (records of
    /// `Role::Checkpoint`, the map's `⚑N` ticks) are called: kimi's
    /// checkpoints, which a D-Mail goes back to; Codex's turns.
    fn checkpoint_word(&self) -> &'static str {
        "checkpoint"
    }

    /// Can a D-Mail send the agent back to one of those marked positions
    /// (kimi-cli's checkpoints)? The detail pane promises it only then.
    fn dmail_to_marks(&self) -> bool {
        false
    }

    /// What D-Mail the session at `path` can take: the compose box, `d`,
    /// the footer and `send` ask this.
    fn dmail_route(&self, _path: &Path) -> DMailRoute {
        DMailRoute::None(format!(
            "worldline cannot send a D-Mail into a {} session",
            self.tool().as_str()
        ))
    }

    /// For [`DMailRoute::Turns`]: the server's view of the session.
    fn turns_status(&self, path: &Path) -> Result<TurnsStatus, TurnsError> {
        Err(TurnsError::NoServer(self.no_turns(path)))
    }

    /// For [`DMailRoute::Turns`]: goes `back` turns and sends `message` as
    /// the next prompt, marked as a D-Mail. `load`: a server may load a
    /// session no server has loaded (the user says no other process has it
    /// open).
    fn send_turns_back(
        &self,
        path: &Path,
        _back: Back,
        _message: &str,
        _load: bool,
    ) -> Result<TurnsSent, TurnsError> {
        Err(TurnsError::NoServer(self.no_turns(path)))
    }

    /// For [`DMailRoute::Turns`]: is a server there at all? Cheap (no
    /// network): the compose box opens only then; `Err` says what to do.
    fn turns_reachable(&self, path: &Path) -> std::result::Result<(), String> {
        Err(self.no_turns(path))
    }

    /// Why a session takes no D-Mail by turns.
    fn no_turns(&self, path: &Path) -> String {
        match self.dmail_route(path) {
            DMailRoute::None(why) => why,
            _ => format!(
                "a {} session goes back by checkpoints",
                self.tool().as_str()
            ),
        }
    }
}

/// How a session is written again by `worldline replay`.
#[derive(Debug, Clone)]
pub enum ReplayStyle {
    /// World lines are rotated files (kimi-cli): each rotation is replayed
    /// as it was made. `wire` is the name of an agent's event log beside
    /// its context files; `current_name` names a family's current file
    /// from its world lines' file names.
    Rotations {
        wire: &'static str,
        current_name: fn(&[&str]) -> Option<String>,
    },
    /// Files only grow by appended lines: copied again record by record;
    /// `side_files` (titles, subagent meta) are copied whole first.
    Appends { side_files: Vec<PathBuf> },
    /// Not replayable, and why.
    Unsupported(String),
}

/// Every agent worldline reads, in the order a path is offered to them:
/// the first whose [`Source::recognise`] says yes reads it. kimi-cli comes
/// last: its oldest layouts are bare `<id>.jsonl` files.
pub static SOURCES: &[&dyn Source] = &[
    &super::kimi_code::KimiCode,
    &super::claude_code::ClaudeCode,
    &super::pi::Pi,
    &super::codex::Codex,
    &super::kimi_cli::KimiCli,
];

/// The source that reads the session at `path`, if any does.
pub fn source_for(path: &Path) -> Option<&'static dyn Source> {
    SOURCES.iter().copied().find(|s| s.recognise(path))
}

/// The source registered for `tool`.
pub fn source_of(tool: Tool) -> &'static dyn Source {
    SOURCES
        .iter()
        .copied()
        .find(|s| s.tool() == tool)
        .unwrap_or(SOURCES[SOURCES.len() - 1])
}

/// Sources other than `tool`'s, for lookups that try each in turn.
pub fn others(tool: Tool) -> impl Iterator<Item = &'static dyn Source> {
    SOURCES.iter().copied().filter(move |s| s.tool() != tool)
}
