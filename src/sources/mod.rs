//! The seam between an agent's on-disk format and the world-line builder.
//!
//! A source (`sources/<agent>/`) owns everything about where an agent keeps
//! its sessions and how their bytes are laid out. It hands the builder
//! (`worldline::Session::build`) a [`SessionParts`]: per agent a list of world
//! lines, each a named record list with where its bodies live, and how and
//! why each leaves its parent (kimi-cli's source infers it from a rotated
//! context file's shared prefix, Kimi Code's reads its wire's branches);
//! wire times; subagent meta and how a subagent links to its parent's
//! call; the title; and lineage between sessions. Past this line nothing
//! opens a file.
//!
//! A world line is not a file: in kimi-cli it is one rotated context file,
//! in Kimi Code a branch inside one append-only `wire.jsonl`.

pub mod claude_code;
pub mod codex;
pub mod follow;
pub mod kimi_cli;
pub mod kimi_code;
pub mod lookup;
pub mod pi;
mod source;
#[cfg(test)]
pub(crate) mod test_util;
pub mod times;
mod wire_log;

pub use follow::{Follower, Refresh};
/// How long a kimi-cli rotation in progress is held back before it is shown.
pub use kimi_cli::live::ROTATION_GRACE;

pub use source::{others, source_for, source_of, ReplayStyle, Source, SOURCES};

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Result;
use crate::model::Warning;
use crate::read::FileIndex;

/// The last second of year 9999: a time past it (or before 1970, or not
/// finite) in a session file is not a time, and is treated as unknown
/// rather than printed as year 292277026596.
pub const LATEST_UNIX_SECS: f64 = 253_402_300_799.0;

/// `secs` if it is a plausible Unix time (1970 to 9999), else `None`.
pub fn plausible_time(secs: f64) -> Option<f64> {
    (secs.is_finite() && (0.0..=LATEST_UNIX_SECS).contains(&secs)).then_some(secs)
}

/// Reads the session at `path` with the source whose format it is.
pub fn parts(path: &Path) -> Result<SessionParts> {
    parts_with(path, Reading::default())
}

/// What a reader needs beyond the world lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Record times. kimi-cli keeps them in `wire.jsonl`, often as big as
    /// the context files together; an output without times (`tree --format
    /// json`) skips reading it. Kimi Code's times come with its records.
    pub times: bool,
}

impl Default for Reading {
    fn default() -> Self {
        Reading { times: true }
    }
}

/// [`parts`], reading as much as `reading` asks for, with the first
/// registered source that recognises the path. A file none recognises is
/// refused naming what worldline reads; a directory goes to kimi-cli's
/// reader, which says what it lacks.
pub fn parts_with(path: &Path, reading: Reading) -> Result<SessionParts> {
    match source_for(path) {
        Some(s) => s.parts(path, reading),
        None if path.is_dir() => kimi_cli::parts(path, reading),
        None if path.exists() => Err(crate::error::Error::UnknownFormat {
            path: path.to_path_buf(),
            known: known_formats(),
        }),
        None => Err(crate::error::Error::NotFound {
            path: path.to_path_buf(),
        }),
    }
}

/// `kimi-code, kimi-cli`: the agents worldline reads, for messages.
pub fn known_formats() -> String {
    SOURCES
        .iter()
        .map(|s| s.tool().as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which agent wrote a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Tool {
    #[default]
    #[serde(rename = "kimi-cli")]
    KimiCli,
    #[serde(rename = "kimi-code")]
    KimiCode,
    #[serde(rename = "claude-code")]
    ClaudeCode,
    #[serde(rename = "pi")]
    Pi,
    #[serde(rename = "codex")]
    Codex,
}

impl Tool {
    /// What this agent's marked positions are called ("checkpoint",
    /// "turn"); see [`Source::checkpoint_word`].
    pub fn checkpoint_word(self) -> &'static str {
        source_of(self).checkpoint_word()
    }

    /// See [`Source::dmail_to_marks`].
    pub fn dmail_to_marks(self) -> bool {
        source_of(self).dmail_to_marks()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Tool::KimiCli => "kimi-cli",
            Tool::KimiCode => "kimi-code",
            Tool::ClaudeCode => "claude-code",
            Tool::Pi => "pi",
            Tool::Codex => "codex",
        }
    }

    /// The source that reads this agent's sessions.
    pub fn source(self) -> &'static dyn Source {
        source_of(self)
    }
}

/// Everything a source found for one session.
#[derive(Debug, Clone, Default)]
pub struct SessionParts {
    /// Where the session lives, as users name it: a session directory, or a
    /// file for layouts that keep sessions as files (kimi-cli ≤ 0.58).
    pub dir: PathBuf,
    pub id: String,
    pub title: Option<String>,
    /// `agents[0]` is the main agent; the rest are subagents in start order.
    pub agents: Vec<AgentParts>,
    pub lineage: Lineage,
    pub tool: Tool,
}

/// One agent's world lines as a source found them.
#[derive(Debug, Clone, Default)]
pub struct AgentParts {
    /// The agent's directory (where its live files and DenwaRenji are).
    pub dir: PathBuf,
    /// World line `i`'s records, root first, oldest world line first. A
    /// [`FileIndex`] is a named record list (`name`, records with byte
    /// offsets, and `path`, where their bodies live): a kimi-cli context file,
    /// or the view of one Kimi Code branch (its base's records up to the
    /// fork, then its own).
    pub files: Vec<FileIndex>,
    /// How world line `i` leaves its parent; a missing entry means
    /// [`LineFork::Root`].
    pub forks: Vec<LineFork>,
    /// `None` for the main agent.
    pub meta: Option<SubagentMeta>,
    /// How a subagent finds the parent's call that ran it.
    pub link: ParentLink,
    /// What the source skipped or could not read about this agent (a side
    /// file that is a FIFO or too big, a name that is no world line, an
    /// unreadable directory); the main agent's also hold the session's.
    pub warnings: Vec<Warning>,
    /// What the source states about each world line beyond where it forks:
    /// its name, why it forks (a missing entry: for no reason worldline
    /// knows), undo turns, fork lines; empty: world lines are named by file.
    pub lines: Vec<LineInfo>,
    /// The world line the agent sees now, when it isn't the last one.
    pub current: Option<usize>,
    /// Compactions marked on a world line (not forks), and undos a newer
    /// Kimi Code treats as already applied.
    pub compactions: Vec<LineMark>,
    pub folded_undos: Vec<LineMark>,
    /// The line of the parent's call in the parent's wire (Kimi Code).
    pub parent_line: Option<u32>,
    /// Per world line: when its own records (those past its fork) were
    /// written, in Unix seconds, where the source knows (Kimi Code lines
    /// carry `time`; kimi-cli's come from its wire).
    pub times: Vec<Times>,
    /// Names users gave entries (Pi's labels).
    pub labels: Vec<EntryLabel>,
}

/// A world line as a source names it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LineInfo {
    /// Shown instead of the file name (`branch b1`); already sanitised.
    pub label: String,
    /// The branch name as the file has it.
    pub branch: Option<String>,
    /// Why it forks; `None`: for a reason worldline doesn't know.
    pub fork: Option<StatedFork>,
    /// Tree-shaped formats name their entries: the id of this world line's
    /// last entry (JSON `leaf`; a child's `parent` is its parent's leaf).
    pub leaf: Option<String>,
    /// What started this world line in the user's words (the first prompt
    /// of a rewound branch, a summary): shown as its reason.
    pub prompt: Option<String>,
}

/// Why a world line left its parent, for every agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ForkKind {
    Dmail,
    Compaction,
    Clear,
    /// Kimi Code's `/undo`: a branch inside the wire.
    Undo,
    /// Claude Code: a prompt resumed at an earlier message (Esc Esc, `-p
    /// --resume-session-at`).
    Rewind,
    /// Claude Code's "summarize from here": a summary starts the branch.
    Summarize,
    /// Pi's `/tree`: the next entry hangs off an earlier one.
    Tree,
    /// A thread forked inside one tree (Codex `fork`).
    Fork,
    /// Turns rolled back (Codex `thread_rolled_back`).
    Rollback,
    #[default]
    Unknown,
}

impl ForkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ForkKind::Dmail => "dmail",
            ForkKind::Compaction => "compaction",
            ForkKind::Clear => "clear",
            ForkKind::Undo => "undo",
            ForkKind::Rewind => "rewind",
            ForkKind::Summarize => "summarize",
            ForkKind::Tree => "tree",
            ForkKind::Fork => "fork",
            ForkKind::Rollback => "rollback",
            ForkKind::Unknown => "unknown",
        }
    }

    /// `↶ rewind`: the mark and word a branch-like fork is shown with.
    pub fn branch_words(self) -> &'static str {
        match self {
            ForkKind::Undo => "↶ undo",
            ForkKind::Rewind => "↶ rewind",
            ForkKind::Summarize => "↶ summarized from here",
            ForkKind::Tree => "↶ /tree move",
            ForkKind::Fork => "⑂ fork",
            ForkKind::Rollback => "↶ rollback",
            ForkKind::Dmail => "✉ D-Mail",
            ForkKind::Compaction => "⊜ compaction",
            ForkKind::Clear => "∅ /clear",
            ForkKind::Unknown => "?",
        }
    }

    /// Leaving for another branch of the same tree: not a D-Mail, a
    /// compaction or a `/clear`, but a user (or agent) choosing an earlier
    /// point to go on from.
    pub fn is_branch(self) -> bool {
        matches!(
            self,
            ForkKind::Undo
                | ForkKind::Rewind
                | ForkKind::Summarize
                | ForkKind::Tree
                | ForkKind::Fork
                | ForkKind::Rollback
        )
    }
}

/// A place in a session's file, one type for every format: the line
/// records carry (`RecordMeta::line`; Kimi Code's wire line), and the
/// entry's id where the format names its entries (Claude Code's `uuid`,
/// Pi's ids, Codex ordinals) — JSON and pictures say "after entry 3a3d37e2".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pos {
    /// `None`: in another file than the one read (a Codex fork's source).
    pub line: Option<u32>,
    pub entry: Option<String>,
}

impl Pos {
    /// A line of a format whose entries have no names of their own.
    pub fn line(line: u32) -> Pos {
        Pos {
            line: Some(line),
            entry: None,
        }
    }

    /// An entry named `id`, written at `line`.
    pub fn entry(line: u32, id: impl Into<String>) -> Pos {
        Pos {
            line: Some(line),
            entry: Some(id.into()),
        }
    }

    /// An entry named `id` in a file not read here.
    pub fn named(id: impl Into<String>) -> Pos {
        Pos {
            line: None,
            entry: Some(id.into()),
        }
    }
}

/// A fork a source states (Kimi Code's `agent.switched`, a rewind, a
/// `/tree` move, a Codex fork or rollback), or an undo inferred the way
/// Kimi Code ≤ 0.42 did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatedFork {
    /// Why it forks (`Unknown`: a branch for a reason worldline doesn't
    /// know).
    pub kind: ForkKind,
    /// The last place shared with the parent (JSON `fork.after`).
    pub after: Option<Pos>,
    pub turns: Option<u32>,
    pub inferred: bool,
    /// The world line that wrote the fork line.
    pub origin: Option<usize>,
}

/// A marked event on a world line: its line, and for a folded undo the
/// turns it undid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineMark {
    pub world_line: usize,
    /// The entry that marks it (a compact boundary, an undo line).
    pub at: Pos,
    pub count: Option<u32>,
    /// A compaction that names the first entry it kept whole (Pi's
    /// `firstKeptEntryId`).
    pub first_kept: Option<String>,
}

/// A user's name for an entry (Pi's `label`), shown on it like Pi's
/// `[name]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryLabel {
    /// The entry's id.
    pub entry: String,
    /// World line and record the entry is, where it is a record.
    pub at: Option<(usize, usize)>,
    pub label: String,
}

/// Kept so callers written before the seam still build.
pub type AgentFiles = AgentParts;

/// Where a world line leaves its parent, as its source found it (the
/// builder infers nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineFork {
    /// `parent` is a world line index (lower than this one), `shared` the
    /// number of records both hold: a kimi-cli rotation's longest run of
    /// equal records, Kimi Code's `agent.switched` base line.
    Explicit { parent: usize, shared: usize },
    /// A new tree: nothing shared, no parent.
    #[default]
    Root,
}

impl LineFork {
    /// World line `i`'s parent and the records it shares with it, as
    /// `forks` state and `files` hold them: a parent must come first, and
    /// the shared part exist in both (a source's word is checked against
    /// what it hands over).
    pub fn checked(forks: &[LineFork], files: &[FileIndex], i: usize) -> (Option<usize>, usize) {
        match forks.get(i).copied().unwrap_or_default() {
            LineFork::Explicit { parent, shared } if parent < i && i < files.len() => {
                let most = files[parent].records.len().min(files[i].records.len());
                (Some(parent), shared.min(most))
            }
            LineFork::Explicit { .. } | LineFork::Root => (None, 0),
        }
    }
}

/// How a subagent is matched to the main agent's call that started it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ParentLink {
    #[default]
    None,
    /// The tool result that names it (`agent_id: <id>`, kimi-cli ≥ 1.25).
    AgentId(String),
    /// The `n`-th (0-based) `Task`/`Agent` call of the main agent, in the
    /// order they were written (kimi-cli ≤ 1.24 numbers subagents so).
    Nth(usize),
    /// The parent's tool call id (Kimi Code's `subagent.spawned`).
    ToolCallId(String),
}

/// Why one session was made from another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    Fork,
    Undo,
}

impl LinkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkKind::Fork => "fork",
            LinkKind::Undo => "undo",
        }
    }
}

/// One session made from another: `session` is the other end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLink {
    pub session: String,
    /// The other session's location, as in [`SessionParts::dir`].
    pub dir: PathBuf,
    /// Records the fork copied from its source's main world line: the
    /// fork leaves at the source's record `records - 1` of world line
    /// `source_line`, and at the fork's own record `records - 1` of its
    /// first world line (no shared record: it leaves from the start).
    pub records: usize,
    pub kind: LinkKind,
    /// The source's main world line (by index) the copy was taken from.
    pub source_line: usize,
    /// That world line's name (`context.jsonl`, or `context_1.jsonl` once
    /// the source rotated after the fork).
    pub source_file: String,
    /// The last place of the source both sessions share (the last wire
    /// line a Kimi Code `/fork` copied, the last shared entry).
    pub after: Option<Pos>,
}

/// A session's place among the sessions it came from and led to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lineage {
    pub forked_from: Option<SessionLink>,
    pub forks: Vec<SessionLink>,
}

pub use kimi_cli::share::SessionSummary;
pub use times::Times;
pub use wire_log::WireLog;

/// A subagent's meta (kimi-cli: `subagents/<agent_id>/meta.json`; older
/// layouts only know a number).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SubagentMeta {
    pub agent_id: String,
    pub subagent_type: Option<String>,
    pub description: Option<String>,
    pub status: Option<String>,
    pub created_at: Option<f64>,
}
