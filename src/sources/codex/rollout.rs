//! One rollout file read: every line as an entry (byte range, hash, its
//! `ordinal` or line index, time, and what it is), plus the thread's
//! `session_meta` (the first one: a copied older fork holds its source's
//! too). Lines are parsed with a slim serde view that skips the big
//! fields (`base_instructions`, `world_state`, outputs) without building
//! them; bodies are loaded later from the byte range.

use crate::read::lines::Piece;
use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::model::Warning;
use crate::read::{guard, keep_warning, Records, MAX_WARNINGS};
use xxhash_rust::xxh3::xxh3_64;

/// A line longer than this is read past with a warning (a real rollout's
/// biggest lines, a `world_state` or a tool output, are far smaller).
pub const LINE_CAP: usize = 64 << 20;

/// What a rollout line is, as far as world lines and rows need (what the
/// rows need of it beyond that is in its [`RecordMeta`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `session_meta`; the thread's own is [`Rollout::meta`].
    Meta,
    /// A user message the user typed; its first text (capped) is
    /// [`Rollout::prompt`].
    Prompt,
    /// Injected context: `<environment_context>`, developer text, AGENTS.md,
    /// a subagent notification.
    Injected,
    /// An assistant message or reasoning.
    Assistant,
    /// A model's tool call (`function_call`, `custom_tool_call`,
    /// `local_shell_call`).
    Call,
    /// A tool call's output.
    Output,
    TurnStarted,
    TurnComplete,
    /// Legacy `thread_rolled_back {num_turns}` ([`Entry::turns`]).
    RolledBack,
    /// A `compacted` line (or a `context_compacted` event).
    Compacted,
    /// `token_count`.
    Tokens,
    /// `item_completed` of a `spawn_agent` call: the threads it started
    /// ([`Rollout::spawned`]).
    Spawned,
    /// Everything else: settings, world state, turn context, events, types
    /// this reader doesn't know.
    Other,
}

/// A line as parsed, before it is kept: its kind and what its index entry
/// and the kept side tables take from it.
#[derive(Debug, PartialEq)]
pub enum Parsed<'a> {
    Meta,
    Prompt(String),
    Injected,
    Assistant,
    /// Call id and tool name.
    Call(Cow<'a, str>, Cow<'a, str>),
    /// The call id answered.
    Output(Cow<'a, str>),
    TurnStarted,
    TurnComplete,
    RolledBack(u32),
    Compacted,
    /// The thread's total tokens so far.
    Tokens(Option<u64>),
    /// Spawn call id and the threads it started.
    Spawned(String, Vec<String>),
    Other,
}

/// One line of a rollout, beside its index entry ([`Rollout::records`]
/// holds that, by the same index): 24 bytes, so a million stay small.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry {
    /// `ordinal`, else the 0-based line index: the record's name.
    pub ordinal: u64,
    /// The time's `f64` bits; [`NO_TIME`] for none.
    time: u64,
    /// A prompt's or spawn's index in its side table, a rollback's turns.
    aux: u32,
    pub kind: Kind,
    /// The line carried an `ordinal`.
    pub stated: bool,
}

const NO_TIME: u64 = u64::MAX;

impl Entry {
    pub fn time(&self) -> Option<f64> {
        (self.time != NO_TIME).then(|| f64::from_bits(self.time))
    }

    /// Turns a legacy rollback drops (0 for any other line).
    pub fn turns(&self) -> u32 {
        if self.kind == Kind::RolledBack {
            self.aux
        } else {
            0
        }
    }
}

/// What the thread's `session_meta` says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Meta {
    pub id: String,
    pub cwd: Option<String>,
    pub timestamp: Option<String>,
    pub forked_from_id: Option<String>,
    pub forked_from_ordinal_exclusive: Option<u64>,
    /// `history_base`: the thread whose records with ordinal below `end`
    /// come before this file's (a fork's source, or the same thread for a
    /// reverted generation).
    pub base: Option<(String, u64)>,
    /// A subagent's parent thread (`source.subagent.thread_spawn`).
    pub parent_thread: Option<String>,
    pub nickname: Option<String>,
    pub role: Option<String>,
    pub cli_version: Option<String>,
}

/// One rollout file, indexed.
#[derive(Debug, Clone, Default)]
pub struct Rollout {
    pub path: PathBuf,
    pub meta: Option<Meta>,
    /// Older Codex copied a fork's source into the fork's file, source
    /// `session_meta` first, right after the fork's own: that source's id.
    pub copied_from: Option<String>,
    /// Every line's index entry in this file (offset, length, line, hash,
    /// role, call), a `task_started`'s turn counted in this file; world
    /// lines share this storage where they can.
    pub records: Records,
    /// Every line's ordinal, time and kind, by the same index.
    pub entries: Vec<Entry>,
    /// Prompts' first texts, in file order.
    prompts: Vec<Box<str>>,
    /// Spawns: call id and the threads started, in file order.
    spawned: Vec<(String, Vec<String>)>,
    /// `task_started` lines so far.
    turns: u32,
    pub warnings: Vec<Warning>,
    pub dropped_warnings: u64,
    /// Bytes of complete lines read (a live tail's resume point).
    pub bytes: u64,
    /// The file name as shown in warnings.
    pub name: String,
}

#[derive(Deserialize)]
pub(super) struct Line<'a> {
    #[serde(borrow, default)]
    pub(super) timestamp: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) ordinal: Option<u64>,
    #[serde(rename = "type", borrow, default)]
    pub(super) ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) payload: Option<Payload<'a>>,
}

#[derive(Deserialize, Default)]
pub(super) struct Payload<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    num_turns: Option<u64>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    info: Option<&'a RawValue>,
    #[serde(borrow, default)]
    item: Option<&'a RawValue>,
    // session_meta
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    forked_from_id: Option<Cow<'a, str>>,
    #[serde(default)]
    forked_from_ordinal_exclusive: Option<u64>,
    #[serde(borrow, default)]
    history_base: Option<&'a RawValue>,
    #[serde(borrow, default)]
    source: Option<&'a RawValue>,
    #[serde(borrow, default)]
    parent_thread_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    agent_nickname: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    agent_role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cli_version: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool: Option<Cow<'a, str>>,
    #[serde(default)]
    receiver_thread_ids: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct Base<'a> {
    #[serde(borrow, default)]
    thread_id: Option<Cow<'a, str>>,
    #[serde(default)]
    end_ordinal_exclusive: Option<u64>,
}

impl Rollout {
    pub fn new(path: &Path, name: &str) -> Rollout {
        Rollout {
            path: path.to_path_buf(),
            name: name.to_string(),
            ..Rollout::default()
        }
    }

    /// Reads a rollout (`.jsonl`, or `.jsonl.zst` decompressed on the way);
    /// a big plain one in two halves at once when a second core is there.
    pub fn read(path: &Path, name: &str) -> Result<Rollout> {
        let g = guard::open_regular(path)
            .map_err(|e| Error::Other(format!("{}: {e}", path.display())))?;
        if !super::home::is_zst(path) {
            if let Some(r) = super::split::read(&g.file, g.len, path, name) {
                return Ok(r);
            }
        }
        let mut r = Rollout::new(path, name);
        r.reserve(g.len);
        let mut reader: Box<dyn Read> = Box::new(g.file.take(g.len));
        if super::home::is_zst(path) {
            let dec = ruzstd::decoding::StreamingDecoder::new(reader)
                .map_err(|e| Error::Other(format!("{}: not zstd: {e}", path.display())))?;
            reader = Box::new(dec);
        }
        let mut feeder = Feeder::default();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    r.warn(0, format!("read stopped: {e}"));
                    break;
                }
            };
            if n == 0 {
                break;
            }
            feeder.feed(&mut r, &buf[..n]);
        }
        feeder.finish(&mut r);
        Ok(r)
    }

    /// Room for the lines `bytes` of a rollout may hold, taken at once: no
    /// copying while they come, and no string of ever bigger buffers left
    /// behind in the heap. Room never written costs no memory.
    pub(super) fn reserve(&mut self, bytes: u64) {
        // Real lines are rarely under 64 bytes.
        let n = usize::try_from(bytes / 64)
            .unwrap_or(usize::MAX)
            .min(1 << 22);
        self.records.reserve_exact(n);
        self.entries.reserve_exact(n);
    }

    /// Takes `rest`, the same file read on its own from the line start
    /// where `self` ends (`lines` lines in), after `self`, as one read of
    /// the whole would have made it. `false` (and `self` unusable) when
    /// the second part holds what only reading in order tells (a
    /// `session_meta`, a read error).
    pub(super) fn join(&mut self, mut rest: Rollout, lines: u32) -> bool {
        if rest.meta.is_some() || rest.copied_from.is_some() || rest.bytes < self.bytes {
            return false;
        }
        let (turns, prompts, spawned) = (
            i64::from(self.turns),
            self.prompts.len() as u32,
            self.spawned.len() as u32,
        );
        let Some(n_turns) = self.turns.checked_add(rest.turns) else {
            return false;
        };
        // The ordinal check at the seam, where reading in order makes it.
        let mut seam = None;
        if let (Some(prev), Some(e), Some(m)) = (
            self.entries.last(),
            rest.entries.first(),
            rest.records.first(),
        ) {
            if e.stated && prev.stated && e.ordinal != prev.ordinal + 1 {
                let what = if e.ordinal <= prev.ordinal {
                    "repeats or goes back from"
                } else {
                    "skips after"
                };
                let line = m.line().saturating_add(lines);
                seam = Some(Warning {
                    file: self.name.clone(),
                    line: line.into(),
                    message: format!("ordinal {} {what} {}", e.ordinal, prev.ordinal),
                });
            }
        }
        self.records.reserve_exact(rest.records.len());
        for m in rest.records.iter() {
            let mut m = super::records::turned(m, turns);
            m.shift(0, lines);
            self.records.push(m);
        }
        self.entries.reserve_exact(rest.entries.len());
        self.entries.extend(rest.entries.iter().map(|e| {
            let mut e = *e;
            match e.kind {
                Kind::Prompt => e.aux += prompts,
                Kind::Spawned => e.aux += spawned,
                _ => {}
            }
            e
        }));
        self.prompts.append(&mut rest.prompts);
        self.spawned.append(&mut rest.spawned);
        self.turns = n_turns;
        // Warnings in line order, the seam's before the first at or after
        // its line; past the cap, counted.
        let mut more: Vec<Warning> = rest
            .warnings
            .into_iter()
            .map(|mut w| {
                w.line = w.line.saturating_add(lines.into());
                w
            })
            .collect();
        if let Some(w) = seam {
            let at = more.partition_point(|x| x.line < w.line);
            more.insert(at, w);
        }
        let room = MAX_WARNINGS.saturating_sub(self.warnings.len());
        let over = more.len().saturating_sub(room) as u64;
        more.truncate(room);
        self.warnings.extend(more);
        self.dropped_warnings += rest.dropped_warnings + over;
        self.bytes = rest.bytes;
        true
    }

    /// Parses bytes already in memory (tests, benchmarks).
    pub fn parse(path: &Path, name: &str, bytes: &[u8]) -> Rollout {
        let mut r = Rollout::new(path, name);
        let mut f = Feeder::default();
        f.feed(&mut r, bytes);
        f.finish(&mut r);
        r
    }

    fn warn(&mut self, line: u64, message: String) {
        let w = Warning {
            file: self.name.clone(),
            line,
            message,
        };
        keep_warning(&mut self.warnings, &mut self.dropped_warnings, w);
    }

    /// Adds one complete line (without its newline) at `offset`.
    pub fn add_line(&mut self, raw: &[u8], offset: u64, lineno: u32) {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Ok(len) = u32::try_from(line.len()) else {
            self.warn(lineno.into(), "skipped a line over 4 GiB".into());
            return;
        };
        let at = At {
            offset,
            len,
            line: lineno,
            hash: xxh3_64(line),
        };
        let index = u64::from(lineno.saturating_sub(1));
        if let Some((time, ordinal)) = bookkeeping(line) {
            self.push(at, ordinal, true, time, Parsed::Other);
            return;
        }
        if let Some((ts, ordinal, kind)) = super::fast::line(line) {
            let time = ts.as_deref().and_then(parse_time);
            self.push(at, ordinal.unwrap_or(index), ordinal.is_some(), time, kind);
            return;
        }
        let parsed: std::result::Result<Line, _> = serde_json::from_slice(line);
        let repaired: String;
        let l;
        match parsed {
            Ok(v) => l = v,
            Err(e) => {
                // Python-lenient bytes (raw control characters, bad UTF-8):
                // repaired, then parsed again; else the line is no record.
                repaired = crate::read::lenient::repair(line);
                match serde_json::from_str::<Line>(&repaired) {
                    Ok(v) => l = v,
                    Err(_) => {
                        self.warn(
                            lineno.into(),
                            format!("not a JSON rollout line, skipped: {e}"),
                        );
                        return;
                    }
                }
            }
        }
        let ordinal = l.ordinal.unwrap_or(index);
        let time = l.timestamp.as_deref().and_then(parse_time);
        let p = l.payload.unwrap_or_default();
        let kind = match l.ty.as_deref().unwrap_or("") {
            "session_meta" => {
                match &self.meta {
                    None => self.meta = Some(meta_of(&p)),
                    Some(first)
                        if self.entries.len() == 1
                            && p.id.as_deref().is_some_and(|o| o != first.id) =>
                    {
                        self.copied_from = p.id.as_deref().map(str::to_string);
                    }
                    Some(first) => {
                        let other = p.id.as_deref().unwrap_or("?").to_string();
                        let msg = format!(
                            "another session_meta (thread {other}); the first, thread {}, names this file",
                            first.id
                        );
                        self.warn(lineno.into(), msg);
                    }
                }
                Parsed::Meta
            }
            "" => {
                self.warn(lineno.into(), "a line without a type".into());
                Parsed::Other
            }
            ty => kind_of(ty, &p),
        };
        self.push(at, ordinal, l.ordinal.is_some(), time, kind);
    }

    /// Keeps a line, warning when its ordinal doesn't follow the last.
    fn push(&mut self, at: At, ordinal: u64, stated: bool, time: Option<f64>, p: Parsed) {
        if let Some(prev) = self.entries.last() {
            if stated && prev.stated && ordinal != prev.ordinal + 1 {
                let what = if ordinal <= prev.ordinal {
                    "repeats or goes back from"
                } else {
                    "skips after"
                };
                let msg = format!("ordinal {ordinal} {what} {}", prev.ordinal);
                self.warn(at.line.into(), msg);
            }
        }
        let turn = matches!(p, Parsed::TurnStarted).then(|| {
            self.turns += 1;
            i64::from(self.turns - 1)
        });
        self.records.push(super::records::record_meta(
            &p, at.offset, at.len, at.line, at.hash, turn,
        ));
        let (kind, aux) = match p {
            Parsed::Meta => (Kind::Meta, 0),
            Parsed::Prompt(text) => {
                self.prompts.push(text.into());
                (Kind::Prompt, self.prompts.len() as u32 - 1)
            }
            Parsed::Injected => (Kind::Injected, 0),
            Parsed::Assistant => (Kind::Assistant, 0),
            Parsed::Call(..) => (Kind::Call, 0),
            Parsed::Output(_) => (Kind::Output, 0),
            Parsed::TurnStarted => (Kind::TurnStarted, 0),
            Parsed::TurnComplete => (Kind::TurnComplete, 0),
            Parsed::RolledBack(turns) => (Kind::RolledBack, turns),
            Parsed::Compacted => (Kind::Compacted, 0),
            Parsed::Tokens(_) => (Kind::Tokens, 0),
            Parsed::Spawned(call, threads) => {
                self.spawned.push((call, threads));
                (Kind::Spawned, self.spawned.len() as u32 - 1)
            }
            Parsed::Other => (Kind::Other, 0),
        };
        self.entries.push(Entry {
            ordinal,
            time: time.map_or(NO_TIME, f64::to_bits),
            aux,
            kind,
            stated,
        });
    }

    /// A prompt's first text (capped).
    pub fn prompt(&self, e: &Entry) -> Option<&str> {
        if e.kind != Kind::Prompt {
            return None;
        }
        self.prompts.get(e.aux as usize).map(|t| &**t)
    }

    /// The first prompt's text.
    pub fn first_prompt(&self) -> Option<&str> {
        self.prompts.first().map(|t| &**t)
    }

    /// Spawns in file order: call id and the threads each started.
    pub fn spawns(&self) -> &[(String, Vec<String>)] {
        &self.spawned
    }
}

/// Where a line is.
#[derive(Clone, Copy)]
struct At {
    offset: u64,
    len: u32,
    line: u32,
    hash: u64,
}

/// Splits a byte stream into lines for [`Rollout::add_line`]; a live tail
/// keeps one to feed appended bytes.
#[derive(Debug, Clone, Default)]
pub struct Feeder {
    pending: Vec<u8>,
    /// Bytes of an over-long line read past so far.
    oversize: Option<u64>,
    pub(super) lines: u32,
}

impl Feeder {
    /// Feeds the next bytes; returns how many lines completed.
    pub fn feed(&mut self, r: &mut Rollout, chunk: &[u8]) -> usize {
        let (mut pending, mut oversize) = (std::mem::take(&mut self.pending), self.oversize.take());
        let lines = &mut self.lines;
        let n = crate::read::lines::split(&mut pending, &mut oversize, chunk, LINE_CAP, |p| {
            *lines += 1;
            let offset = r.bytes;
            match p {
                Piece::Oversize(len) => {
                    r.bytes += len;
                    r.warn(
                        (*lines).into(),
                        format!("a line over {LINE_CAP} bytes, read past"),
                    );
                }
                Piece::Line(line) => {
                    r.bytes += line.len() as u64 + 1;
                    r.add_line(line, offset, *lines);
                }
            }
        });
        (self.pending, self.oversize) = (pending, oversize);
        n
    }

    /// Bytes taken in but not yet part of a complete line.
    pub fn pending_len(&self) -> usize {
        self.oversize.map_or(self.pending.len(), |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        })
    }

    /// End of file: a last line without a newline still counts, once it
    /// parses (a writer mid-line is left for the next read).
    pub fn finish(&mut self, r: &mut Rollout) {
        if self.pending.is_empty() || self.oversize.is_some() {
            return;
        }
        if serde_json::from_slice::<serde::de::IgnoredAny>(&self.pending).is_ok() {
            let line = std::mem::take(&mut self.pending);
            self.lines += 1;
            let offset = r.bytes;
            r.bytes += line.len() as u64;
            r.add_line(&line, offset, self.lines);
        }
    }
}

/// Event types the world lines or rows need from a line's payload.
const EVENTS_READ: [&[u8]; 8] = [
    b"task_started",
    b"task_complete",
    b"turn_started",
    b"turn_complete",
    b"thread_rolled_back",
    b"token_count",
    b"item_completed",
    b"context_compacted",
];

/// A subagent spawn's item type, searched for in `item_completed` lines.
static COLLAB: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"CollabAgentToolCall\""));

/// A line Codex writes as `{"timestamp":"…","ordinal":N,"type":"…",
/// "payload":{…}}` that is pure bookkeeping for worldline (`turn_context`,
/// `world_state`, `token_usage_record`, an event it doesn't read, an
/// `item_completed` of no subagent): its time and ordinal, read from the
/// head without parsing the (often large) payload. Anything else, or any
/// other spelling, is `None` and parsed in full.
fn bookkeeping(line: &[u8]) -> Option<(Option<f64>, u64)> {
    let rest = line.strip_prefix(b"{\"timestamp\":\"")?;
    let q = memchr::memchr(b'"', rest)?;
    let ts = std::str::from_utf8(&rest[..q]).ok()?;
    let rest = rest[q..].strip_prefix(b"\",\"ordinal\":")?;
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits > 18 {
        return None;
    }
    let ordinal: u64 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let rest = rest[digits..].strip_prefix(b",\"type\":\"")?;
    let q = memchr::memchr(b'"', rest)?;
    let (ty, rest) = (&rest[..q], &rest[q..]);
    let payload = rest.strip_prefix(b"\",\"payload\":")?;
    if !line.ends_with(b"}") {
        return None;
    }
    let skip = match ty {
        b"turn_context" | b"world_state" | b"token_usage_record" => true,
        b"event_msg" => {
            let p = payload.strip_prefix(b"{\"type\":\"")?;
            let q = memchr::memchr(b'"', p)?;
            let ev = &p[..q];
            !EVENTS_READ.contains(&ev)
                || (ev == b"item_completed" && COLLAB.find(payload).is_none())
        }
        _ => false,
    };
    skip.then(|| (parse_time(ts), ordinal))
}

fn meta_of(p: &Payload) -> Meta {
    let s = |c: &Option<Cow<str>>| c.as_deref().map(str::to_string);
    let base = p
        .history_base
        .and_then(|raw| serde_json::from_str::<Base>(raw.get()).ok())
        .and_then(|b| Some((b.thread_id?.into_owned(), b.end_ordinal_exclusive?)));
    let spawn = p.source.and_then(|raw| {
        let v: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
        v.get("subagent")?.get("thread_spawn").cloned()
    });
    let field = |k: &str| {
        spawn
            .as_ref()
            .and_then(|s| s.get(k))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    Meta {
        id: s(&p.id).unwrap_or_default(),
        cwd: s(&p.cwd),
        timestamp: s(&p.timestamp),
        forked_from_id: s(&p.forked_from_id),
        forked_from_ordinal_exclusive: p.forked_from_ordinal_exclusive,
        base,
        parent_thread: field("parent_thread_id").or_else(|| s(&p.parent_thread_id)),
        nickname: field("agent_nickname").or_else(|| s(&p.agent_nickname)),
        role: field("agent_role").or_else(|| s(&p.agent_role)),
        cli_version: s(&p.cli_version),
    }
}

/// The kind of a line of type `ty` (not `session_meta`) with payload `p`.
pub(super) fn kind_of<'b>(ty: &str, p: &'b Payload) -> Parsed<'b> {
    match ty {
        "response_item" => item_kind(p),
        "event_msg" => event_kind(p),
        "compacted" => Parsed::Compacted,
        _ => Parsed::Other,
    }
}

fn item_kind<'b>(p: &'b Payload) -> Parsed<'b> {
    let s = |c: &'b Option<Cow<str>>| Cow::Borrowed(c.as_deref().unwrap_or(""));
    item_of(
        p.ty.as_deref().unwrap_or(""),
        p.role.as_deref().unwrap_or(""),
        || s(&p.call_id),
        || p.name.as_deref().map_or_else(|| s(&p.ty), Cow::Borrowed),
        || Some(p.content.map(first_text).unwrap_or_default()),
    )
    // Serde always has the first text: `None` cannot come back.
    .unwrap_or(Parsed::Other)
}

/// A `response_item`'s kind from what both readers take out of it: its
/// `type` and `role`, its call id, its tool name (else its type) and, for
/// a user message, its first text (`None`: the fast reader is not sure;
/// serde reads the line).
pub(super) fn item_of<'b>(
    ty: &str,
    role: &str,
    call_id: impl FnOnce() -> Cow<'b, str>,
    name: impl FnOnce() -> Cow<'b, str>,
    first_text: impl FnOnce() -> Option<String>,
) -> Option<Parsed<'b>> {
    Some(match ty {
        "message" => match role {
            "user" => {
                let text = first_text()?;
                if is_injected(&text) {
                    Parsed::Injected
                } else {
                    Parsed::Prompt(cap(text, PROMPT_CAP))
                }
            }
            "assistant" => Parsed::Assistant,
            _ => Parsed::Injected,
        },
        "reasoning" => Parsed::Assistant,
        "function_call" | "custom_tool_call" | "local_shell_call" | "tool_search_call" => {
            Parsed::Call(call_id(), name())
        }
        t if t.ends_with("_output") => Parsed::Output(call_id()),
        "compaction" | "context_compaction" => Parsed::Compacted,
        _ => Parsed::Other,
    })
}

fn event_kind<'b>(p: &'b Payload) -> Parsed<'b> {
    match p.ty.as_deref().unwrap_or("") {
        "task_started" | "turn_started" => Parsed::TurnStarted,
        "task_complete" | "turn_complete" => Parsed::TurnComplete,
        "thread_rolled_back" => {
            Parsed::RolledBack(p.num_turns.and_then(|n| u32::try_from(n).ok()).unwrap_or(0))
        }
        "token_count" => Parsed::Tokens(p.info.and_then(total_tokens)),
        "item_completed" => p
            .item
            .and_then(|raw| serde_json::from_str::<Item>(raw.get()).ok())
            .filter(|i| {
                i.ty.as_deref() == Some("CollabAgentToolCall")
                    && i.tool.as_deref() == Some("spawn_agent")
            })
            .map_or(Parsed::Other, |i| {
                Parsed::Spawned(
                    i.id.as_deref().unwrap_or("").to_string(),
                    i.receiver_thread_ids.unwrap_or_default(),
                )
            }),
        _ => Parsed::Other,
    }
}

fn total_tokens(raw: &RawValue) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    v.get("total_token_usage")?.get("total_tokens")?.as_u64()
}

/// Prompts kept with the index (titles, a world line's reason).
pub(super) const PROMPT_CAP: usize = 4096;

pub(super) fn cap(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// The first text part of a message's `content`.
pub fn first_text(content: &RawValue) -> String {
    if let Ok(parts) = serde_json::from_str::<Vec<Part>>(content.get()) {
        return parts
            .into_iter()
            .find_map(|p| p.text.map(Cow::into_owned))
            .unwrap_or_default();
    }
    serde_json::from_str::<String>(content.get()).unwrap_or_default()
}

/// Text Codex injects as a user message rather than the user typing it:
/// the environment, instructions, notifications. Each is one XML-ish block
/// (`<environment_context>…</environment_context>`) or AGENTS.md text.
pub fn is_injected(text: &str) -> bool {
    let t = text.trim();
    if t.starts_with("# AGENTS.md instructions") || t.starts_with("<INSTRUCTIONS>") {
        return true;
    }
    let Some(rest) = t.strip_prefix('<') else {
        return false;
    };
    let tag: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-' || *c == ' ')
        .collect();
    !tag.is_empty()
        && rest[tag.len()..].starts_with('>')
        && t.trim_end().ends_with(&format!("</{tag}>"))
}

/// `2026-12-04T12:49:28.695Z` as Unix seconds.
pub fn parse_time(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[10] != b'T' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut frac = 0.0;
    if b.get(19) == Some(&b'.') {
        let mut scale = 0.1;
        for &d in b[20..].iter().take_while(|c| c.is_ascii_digit()).take(9) {
            frac += f64::from(d - b'0') * scale;
            scale /= 10.0;
        }
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    Some((days * 86400 + h * 3600 + mi * 60 + sec) as f64 + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injected_text_is_told_from_prompts() {
        assert!(is_injected(
            "<environment_context>\n <cwd>/x</cwd>\n</environment_context>"
        ));
        assert!(is_injected(
            "<subagent_notification>\n{}\n</subagent_notification>"
        ));
        assert!(is_injected(
            "# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>"
        ));
        assert!(!is_injected("TOOLS=1 first turn"));
        assert!(!is_injected("<b>bold</b> is not a block"));
        assert!(!is_injected("<div> and more"));
    }

    #[test]
    fn times_parse_as_unix_seconds() {
        assert_eq!(parse_time("1970-01-01T00:00:01.500Z"), Some(1.5));
        assert_eq!(parse_time("2026-12-04T12:49:28Z"), Some(1796388568.0));
        assert_eq!(parse_time("nope"), None);
    }

    #[test]
    fn lines_ordinals_and_bad_input() {
        let text = concat!(
            "{\"timestamp\":\"2026-12-04T12:49:28.695Z\",\"ordinal\":0,\"type\":\"session_meta\",\"payload\":{\"id\":\"t1\",\"cwd\":\"/p\"}}\n",
            "{\"ordinal\":1,\"type\":\"session_meta\",\"payload\":{\"id\":\"other\"}}\n",
            "not json\n",
            "{\"ordinal\":1,\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"hi\"}]}}\n",
            "{\"ordinal\":5,\"type\":\"brand_new\",\"payload\":{}}\n",
            "{\"type\":\"event_msg\",\"payload\":{\"type\":\"thread_rolled_back\",\"num_turns\":2}}",
        );
        let r = Rollout::parse(Path::new("/x"), "x.jsonl", text.as_bytes());
        assert_eq!(r.meta.as_ref().unwrap().id, "t1");
        let ords: Vec<u64> = r.entries.iter().map(|e| e.ordinal).collect();
        assert_eq!(ords, [0, 1, 1, 5, 5]);
        assert_eq!(r.entries[2].kind, Kind::Prompt);
        assert_eq!(r.prompt(&r.entries[2]), Some("hi"));
        assert_eq!(r.entries[4].kind, Kind::RolledBack);
        assert_eq!(r.entries[4].turns(), 2);
        assert_eq!(r.records.len(), r.entries.len());
        let msgs: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
        assert!(msgs[0].starts_with("not a JSON rollout line"), "{msgs:?}");
        assert!(msgs.iter().any(|m| m.contains("repeats")), "{msgs:?}");
        assert!(msgs.iter().any(|m| m.contains("skips")), "{msgs:?}");
    }
}
