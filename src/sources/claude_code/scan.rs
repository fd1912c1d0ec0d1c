//! One Claude Code `.jsonl` file read into its conversation entries (lines
//! with a `uuid`) and the few bookkeeping facts worldline uses (the last
//! `custom-title`, `forkedFrom`). Fed in chunks, so a torn last line waits
//! for its end; a line that is no JSON is a warning naming file and line.
//! Only the fields the tree and the record index need are decoded; bodies
//! are read again on demand (`records::load_body`).

use crate::read::lines::Piece;
use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use xxhash_rust::xxh3::xxh3_64;

use crate::model::Warning;
use crate::read::lenient;

/// An entry id: a uuid as its 128 bits, or (an id of another shape) a
/// 128-bit hash of its text, kept in [`Scan::odd_ids`] to print it again.
/// 0 is "none".
pub type Id = u128;

/// What an entry is, as far as the tree and the rows care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Something the user typed (string content or text blocks).
    Prompt,
    /// A `user` entry Claude Code wrote for the user: a slash-command
    /// echo, a `<task-notification>` (starts a turn like a prompt).
    Command,
    /// A `user` entry that is no turn of its own: `isMeta` helpers,
    /// command output, interrupt notes.
    UserNote,
    /// A `user` entry holding `tool_result` blocks.
    Result,
    /// The compaction summary (`isCompactSummary`).
    Summary,
    Assistant,
    Attachment,
    /// `system` entries other than a compact boundary.
    System,
    /// `system/compact_boundary`.
    Boundary,
    /// A type this reader doesn't know, with a `uuid`: kept in the tree.
    Other,
}

/// One conversation entry and where its line is. Holds nothing on the
/// heap: what only some entries carry is in [`Scan::extras`], its text in
/// one [`Scan`] buffer, so a million entries are a few big allocations.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: Id,
    /// `parentUuid` (0: none).
    pub parent: Id,
    pub offset: u64,
    /// xxh3 of the line's bytes.
    pub hash: u64,
    /// xxh3 of `message.id` (assistant entries of one API message share
    /// it; 0: none).
    pub msg: u64,
    /// `timestamp` in Unix seconds (NaN: none).
    pub time: f64,
    /// 1-based physical line number.
    pub line: u32,
    /// Bytes of the line without its line end.
    pub len: u32,
    /// Its [`Extra`] in [`Scan::extras`] ([`NO_EXTRA`]: none).
    pub extra: u32,
    pub kind: Kind,
    /// Copied by `/branch` (`forkedFrom` set).
    pub copied: bool,
    /// An assistant entry with `tool_use` blocks.
    pub calls: bool,
}

/// [`Entry::extra`] of an entry without one.
pub const NO_EXTRA: u32 = u32::MAX;

/// Text kept in [`Scan`]'s buffer: `(start, len)`.
pub type Span = (u32, u32);

/// What only some entries carry (text as spans of the scan's buffer).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extra {
    /// A compact boundary's `compactMetadata.preservedSegment.tailUuid`
    /// and `logicalParentUuid` (boxed: few entries are boundaries, and
    /// inline they would double every entry's extra).
    pub links: Option<Box<(Id, Id)>>,
    /// `tool_use` blocks of an assistant entry: `(first, count)` in
    /// [`Scan::calls`].
    pub calls: (u32, u32),
    /// The `tool_use_id` a result answers.
    pub result_of: Option<Span>,
    /// `toolUseResult.agentId`: the subagent an Agent call ran.
    pub agent: Option<Span>,
    /// A prompt's text (the first [`TEXT_KEEP`] characters).
    pub text: Option<Span>,
    /// A summary made by "summarize from here" (`direction: "from"`).
    pub from_here: bool,
}

/// Characters of a prompt kept for titles and reasons.
pub const TEXT_KEEP: usize = 300;

/// Where a compact boundary hangs: its preserved tail, else its logical
/// parent (0 for other entries).
pub fn boundary_links(e: &Entry, extras: &[Extra]) -> (Id, Id) {
    extras
        .get(e.extra as usize)
        .and_then(|x| x.links.as_deref().copied())
        .unwrap_or((0, 0))
}

/// A file as read so far.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// How warnings name the file (relative to the project folder).
    pub name: String,
    pub path: PathBuf,
    pub entries: Vec<Entry>,
    pub warnings: Vec<Warning>,
    /// The last `custom-title`.
    pub title: Option<String>,
    /// `forkedFrom.sessionId` of the first copied entry (`/branch`).
    pub forked_from: Option<String>,
    /// `cwd` of the first entry that has one.
    pub cwd: Option<String>,
    /// First timestamp of any line (bookkeeping lines included), Unix s.
    pub first_time: Option<f64>,
    /// Ids that are no uuid, by their key.
    pub odd_ids: Vec<(Id, Box<str>)>,
    /// What only some entries carry, by [`Entry::extra`].
    pub extras: Vec<Extra>,
    /// Tool calls of assistant entries: `(id, name)`.
    pub calls: Vec<(Span, Span)>,
    /// The text [`Span`]s point into.
    pub strs: String,
    /// Index of the first [`Kind::Prompt`] entry.
    pub first_prompt: Option<usize>,
    /// Bytes consumed (complete lines).
    pub bytes: u64,
    /// Physical lines consumed.
    pub lines: u32,
    pending: Vec<u8>,
    /// Bytes so far of a line past [`LINE_CAP`], read past, not kept.
    oversize: Option<u64>,
    /// `finish` took a last line that had no newline yet.
    open_end: bool,
    /// More bytes fed after `finish` went on where it left off (false:
    /// the line `finish` took went on; read the file again).
    pub resumable: bool,
}

/// Files from this size on are read in two halves at once.
const SPLIT_MIN: u64 = 32 << 20;

/// A line longer than this is skipped with a warning: one entry holds a
/// whole tool output, but not gigabytes of one.
pub const LINE_CAP: usize = 256 << 20;
/// Warnings kept per file; past this they are counted in the last one.
const MAX_WARNINGS: usize = 100;

impl Scan {
    pub fn new(name: impl Into<String>, path: impl Into<PathBuf>) -> Scan {
        Scan {
            name: name.into(),
            path: path.into(),
            resumable: true,
            ..Scan::default()
        }
    }

    /// Reads a whole file through the guarded open (a FIFO or device under
    /// a session's name is refused, not read). A big file is read in two
    /// halves at once (see [`Scan::read_split`]).
    pub fn read(path: &Path, name: &str) -> crate::Result<Scan> {
        Scan::read_split(path, name, SPLIT_MIN)
    }

    /// Reads a file of at least `min` bytes as two halves, each on its own
    /// thread, the second from the first line start past the middle, then
    /// joined: the same scan as reading it in one go, in about half the
    /// time on two cores.
    pub fn read_split(path: &Path, name: &str, min: u64) -> crate::Result<Scan> {
        let g = crate::read::guard::open_regular(path).map_err(|e| match e {
            crate::read::guard::GuardError::NotFound => crate::Error::NotFound {
                path: path.to_path_buf(),
            },
            crate::read::guard::GuardError::Io(e) => crate::Error::io(path, e),
            other => crate::Error::Other(format!("{}: {other}", path.display())),
        })?;
        let file = &g.file;
        let io = |e| crate::Error::io(path, e);
        // Feeds bytes `from..to` (positional reads: both halves share the
        // descriptor).
        let feed = |s: &mut Scan, from: u64, to: u64| -> crate::Result<()> {
            crate::read::read_range(file, from, to, 1 << 20, |b| s.feed(b)).map_err(io)?;
            Ok(())
        };
        let two = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
        let cut = if g.len >= min && two {
            crate::read::next_line_start(file, g.len / 2, g.len).map_err(io)?
        } else {
            None
        };
        let mut scan = Scan::new(name, path);
        // Room for the entries a file of recorded line sizes holds (~1.7 KB
        // each): no copying while they come; untouched room costs nothing.
        scan.entries.reserve((g.len / 1024).min(1 << 26) as usize);
        let Some(cut) = cut else {
            feed(&mut scan, 0, g.len)?;
            scan.finish();
            return Ok(scan);
        };
        let mut rest = Scan::new(name, path);
        rest.bytes = cut;
        // The second half's tables are made here, not on its thread: a
        // buffer grows in the arena that made it, and only the main one
        // hands its freed top back (`malloc_trim`); a thread's arena would
        // keep tens of MB resident once they are freed. Sized as recorded
        // files need (an entry per ~1.7 KB, an extra per two, a call per
        // four, a byte of kept text per ~95): more grows as it must.
        let est = ((g.len - cut) / 1024).min(1 << 26) as usize;
        rest.entries.reserve(est);
        rest.extras.reserve(est / 2);
        rest.calls.reserve(est / 4);
        rest.strs.reserve(est * 16);
        crate::read::in_two_halves(
            || feed(&mut scan, 0, cut),
            || {
                feed(&mut rest, cut, g.len)?;
                rest.finish();
                Ok(())
            },
        )?;
        if !scan.join(rest) {
            // Past what spans address: read it in one go.
            return Scan::read_split(path, name, u64::MAX);
        }
        Ok(scan)
    }

    /// Takes `b`, the same file read from the line start where `self`
    /// ends, after `self`. `false` (and `self` unusable) when the joined
    /// text would be past what a [`Span`] addresses.
    fn join(&mut self, mut b: Scan) -> bool {
        let (Ok(strs), Ok(calls), Ok(extras)) = (
            u32::try_from(self.strs.len()),
            u32::try_from(self.calls.len()),
            u32::try_from(self.extras.len()),
        ) else {
            return false;
        };
        if (self.strs.len() + b.strs.len()) as u64 > u64::from(u32::MAX)
            || (self.extras.len() + b.extras.len()) as u64 >= u64::from(NO_EXTRA)
        {
            return false;
        }
        let (lines, n) = (self.lines, self.entries.len());
        let span = |s: &mut Option<Span>| {
            if let Some(s) = s {
                s.0 += strs;
            }
        };
        for x in &mut b.extras {
            if x.calls.1 > 0 {
                x.calls.0 += calls;
            }
            span(&mut x.text);
            span(&mut x.result_of);
            span(&mut x.agent);
        }
        for (id, name) in &mut b.calls {
            id.0 += strs;
            name.0 += strs;
        }
        for e in &mut b.entries {
            e.line += lines;
            if e.extra != NO_EXTRA {
                e.extra += extras;
            }
        }
        append_freeing(&mut self.entries, std::mem::take(&mut b.entries));
        self.extras.append(&mut b.extras);
        self.calls.append(&mut b.calls);
        self.strs.push_str(&b.strs);
        for (k, t) in b.odd_ids {
            if !self.odd_ids.iter().any(|(o, _)| *o == k) {
                self.odd_ids.push((k, t));
            }
        }
        // Warned again in order: the same cap, counted over the file.
        for (i, w) in b.warnings.into_iter().enumerate() {
            let line = u32::try_from(w.line)
                .unwrap_or(u32::MAX)
                .saturating_add(lines);
            let message = if i == MAX_WARNINGS {
                "more warnings in this file not listed".into()
            } else {
                w.message
            };
            self.warn(line, message);
        }
        if b.title.is_some() {
            self.title = b.title;
        }
        self.forked_from = self.forked_from.take().or(b.forked_from);
        self.cwd = self.cwd.take().or(b.cwd);
        self.first_time = self.first_time.or(b.first_time);
        self.first_prompt = self.first_prompt.or(b.first_prompt.map(|p| p + n));
        self.bytes = b.bytes;
        self.lines += b.lines;
        self.pending = b.pending;
        self.oversize = b.oversize;
        self.open_end = b.open_end;
        self.resumable = b.resumable;
        true
    }

    /// Parses bytes already in memory (tests).
    pub fn parse(name: &str, bytes: &[u8]) -> Scan {
        let mut s = Scan::new(name, PathBuf::new());
        s.feed(bytes);
        s.finish();
        s
    }

    /// Feeds the next bytes; a line without its end waits for it.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        if std::mem::take(&mut self.open_end) && !chunk.is_empty() {
            // The newline of the line `finish` took, arriving late.
            match chunk.strip_prefix(b"\n") {
                Some(rest) => {
                    self.bytes += 1;
                    chunk = rest;
                }
                None => self.resumable = false,
            }
        }
        let (mut pending, mut oversize) = (std::mem::take(&mut self.pending), self.oversize.take());
        crate::read::lines::split(&mut pending, &mut oversize, chunk, LINE_CAP, |p| match p {
            Piece::Line(line) => self.add_line(line, 1),
            Piece::Oversize(len) => self.skip_line(len),
        });
        (self.pending, self.oversize) = (pending, oversize);
    }

    /// The file ended: a last line without its newline counts if it is
    /// whole JSON (a torn one is still being written: not a warning).
    pub fn finish(&mut self) {
        if let Some(n) = self.oversize.take() {
            self.skip_line(n);
        } else if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            if serde_json::from_slice::<IgnoredAny>(&line).is_ok() {
                self.add_line(&line, 0);
                self.open_end = true;
            } else {
                // Kept for a later feed: the writer may finish it.
                self.pending = line;
            }
        }
    }

    /// Bytes of a half-written last line.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Where reading goes on: past every byte fed (`None` while a line
    /// too long to keep is being read past).
    pub fn resume_at(&self) -> Option<u64> {
        match self.oversize {
            Some(_) => None,
            None if !self.resumable => None,
            None => Some(self.bytes + self.pending.len() as u64),
        }
    }

    fn skip_line(&mut self, bytes: u64) {
        self.bytes += bytes;
        self.lines += 1;
        self.warn(
            self.lines,
            format!(
                "skipped a line of {bytes} bytes (longer than {} MiB)",
                LINE_CAP >> 20
            ),
        );
    }

    pub fn warn(&mut self, line: u32, message: String) {
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(Warning {
                file: self.name.clone(),
                line: line.into(),
                message,
            });
        } else if self.warnings.len() == MAX_WARNINGS {
            self.warnings.push(Warning {
                file: self.name.clone(),
                line: line.into(),
                message: "more warnings in this file not listed".into(),
            });
        }
    }

    /// The text of an entry id, as the file spells it.
    pub fn id_text(&self, id: Id) -> String {
        match self.odd_ids.iter().find(|(k, _)| *k == id) {
            Some((_, t)) => t.to_string(),
            None => uuid_text(id),
        }
    }

    pub fn extra(&self, e: &Entry) -> Option<&Extra> {
        self.extras.get(e.extra as usize)
    }

    pub fn str(&self, s: Span) -> &str {
        self.strs
            .get(s.0 as usize..(s.0 as usize).saturating_add(s.1 as usize))
            .unwrap_or("")
    }

    /// A prompt's text.
    pub fn text(&self, e: &Entry) -> Option<&str> {
        Some(self.str(self.extra(e)?.text?))
    }

    /// The `tool_use_id` a result answers.
    pub fn result_of(&self, e: &Entry) -> Option<&str> {
        Some(self.str(self.extra(e)?.result_of?))
    }

    /// The subagent a result names.
    pub fn agent(&self, e: &Entry) -> Option<&str> {
        Some(self.str(self.extra(e)?.agent?))
    }

    /// An assistant entry's tool calls: `(id, name)`.
    pub fn calls(&self, e: &Entry) -> impl Iterator<Item = (&str, &str)> + '_ {
        let (first, n) = self.extra(e).map_or((0, 0), |x| x.calls);
        self.calls
            .get(first as usize..(first as usize).saturating_add(n as usize))
            .unwrap_or(&[])
            .iter()
            .map(|&(id, name)| (self.str(id), self.str(name)))
    }

    /// Keeps `t` in the text buffer (`None` past 4 GiB of kept text).
    fn keep_str(&mut self, t: &str) -> Option<Span> {
        let at = u32::try_from(self.strs.len()).ok()?;
        let len = u32::try_from(t.len()).ok()?;
        at.checked_add(len)?;
        self.strs.push_str(t);
        Some((at, len))
    }

    fn key(&mut self, s: &str) -> Id {
        match parse_uuid(s) {
            Some(k) => k,
            None => {
                let k = xxhash_rust::xxh3::xxh3_128(s.as_bytes()) | 1;
                if !self.odd_ids.iter().any(|(o, _)| *o == k) {
                    self.odd_ids.push((k, s.into()));
                }
                k
            }
        }
    }

    fn add_line(&mut self, raw: &[u8], terminator: u64) {
        let offset = self.bytes;
        self.bytes += raw.len() as u64 + terminator;
        self.lines += 1;
        let line_no = self.lines;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Ok(len) = u32::try_from(line.len()) else {
            self.warn(line_no, "skipped a line over 4 GiB".into());
            return;
        };
        let repaired;
        // Most lines need no serde at all; the rest (and every bad line,
        // for its error) go through it.
        let parsed: Line = match super::fast::line(line) {
            Some(l) => l,
            None => match serde_json::from_slice(line) {
                Ok(l) => l,
                Err(first) => {
                    repaired = lenient::repair(line);
                    match serde_json::from_str(&repaired) {
                        Ok(l) => l,
                        Err(_) => {
                            self.warn(line_no, format!("skipped a line that is not JSON: {first}"));
                            return;
                        }
                    }
                }
            },
        };
        self.take(parsed, line_no, offset, len, xxh3_64(line));
    }

    fn take(&mut self, l: Line, line: u32, offset: u64, len: u32, hash: u64) {
        let time = l.timestamp.as_deref().and_then(parse_time);
        if self.first_time.is_none() {
            self.first_time = time;
        }
        let ty = l.ty.as_deref().unwrap_or("");
        if ty == "custom-title" {
            if let Some(t) = l.custom_title {
                self.title = Some(t.0.into_owned());
            }
        }
        let Some(uuid) = l.uuid.as_deref().filter(|u| !u.is_empty()) else {
            return;
        };
        let id = self.key(uuid);
        let parent = match l.parent_uuid.as_deref() {
            Some(p) if !p.is_empty() => self.key(p),
            _ => 0,
        };
        if self.cwd.is_none() {
            self.cwd = l.cwd.map(|c| c.0.into_owned());
        }
        if let Some(f) = &l.forked_from {
            if self.forked_from.is_none() {
                self.forked_from = f.session_id.as_deref().map(str::to_string);
            }
        }
        let mut extra = Extra::default();
        let mut calls = false;
        let msg = l.message.as_ref();
        let content = msg.and_then(|m| m.content.as_ref());
        let kind = match ty {
            "user" => {
                let is_result = matches!(content, Some(Content::Blocks(b)) if b.iter().any(|b| b.ty == "tool_result"));
                if is_result {
                    if let Some(Content::Blocks(b)) = content {
                        let of = b
                            .iter()
                            .find(|b| b.ty == "tool_result")
                            .and_then(|b| b.tool_use_id.as_deref());
                        extra.result_of = of.and_then(|t| self.keep_str(t));
                    }
                    let agent = l.tool_use_result.as_ref().and_then(|t| t.0.as_deref());
                    extra.agent = agent.and_then(|a| self.keep_str(a));
                    Kind::Result
                } else if l.is_compact_summary == Some(true) {
                    extra.from_here =
                        l.summarize.as_ref().and_then(|s| s.direction.as_deref()) == Some("from");
                    Kind::Summary
                } else {
                    let text = content.and_then(Content::text).unwrap_or_default();
                    match note_kind(text) {
                        _ if l.is_meta == Some(true) => Kind::UserNote,
                        Some(k) => k,
                        None => {
                            extra.text = self.keep_str(keep(text));
                            Kind::Prompt
                        }
                    }
                }
            }
            "assistant" => {
                if let Some(Content::Blocks(b)) = content {
                    let first = self.calls.len();
                    for b in b.iter().filter(|b| b.ty == "tool_use") {
                        let id = self.keep_str(b.id.as_deref().unwrap_or_default());
                        let name = self.keep_str(b.name.as_deref().unwrap_or_default());
                        self.calls
                            .push((id.unwrap_or_default(), name.unwrap_or_default()));
                    }
                    let n = self.calls.len() - first;
                    if n > 0 {
                        calls = true;
                        extra.calls = (
                            u32::try_from(first).unwrap_or(u32::MAX),
                            u32::try_from(n).unwrap_or(0),
                        );
                    }
                }
                Kind::Assistant
            }
            "attachment" => Kind::Attachment,
            "system" if l.subtype.as_deref() == Some("compact_boundary") => {
                let logical = match l.logical.as_deref() {
                    Some(p) if !p.is_empty() => self.key(p),
                    _ => 0,
                };
                let tail = match l
                    .compact
                    .as_ref()
                    .and_then(|c| c.preserved.as_ref())
                    .and_then(|p| p.tail.as_deref())
                {
                    Some(p) if !p.is_empty() => self.key(p),
                    _ => 0,
                };
                if (tail, logical) != (0, 0) {
                    extra.links = Some(Box::new((tail, logical)));
                }
                Kind::Boundary
            }
            "system" => Kind::System,
            _ => Kind::Other,
        };
        let msg_id = msg
            .and_then(|m| m.id.as_deref())
            .map_or(0, |id| xxh3_64(id.as_bytes()) | 1);
        let extra = if extra == Extra::default() {
            NO_EXTRA
        } else {
            self.extras.push(extra);
            u32::try_from(self.extras.len() - 1).unwrap_or(NO_EXTRA)
        };
        if kind == Kind::Prompt && self.first_prompt.is_none() {
            self.first_prompt = Some(self.entries.len());
        }
        self.entries.push(Entry {
            line,
            offset,
            len,
            hash,
            id,
            parent,
            msg: if kind == Kind::Assistant { msg_id } else { 0 },
            time: time.unwrap_or(f64::NAN),
            kind,
            copied: l.forked_from.is_some(),
            extra,
            calls,
        });
    }
}

/// Appends `from` to `to` a piece at a time from its end, handing each
/// piece's memory back as it goes: the second half of a big file's
/// entries is not resident twice while it joins the first.
fn append_freeing(to: &mut Vec<Entry>, mut from: Vec<Entry>) {
    const PIECE: usize = 1 << 16;
    let (n, k) = (to.len(), from.len());
    to.reserve_exact(k);
    let spare = &mut to.spare_capacity_mut()[..k];
    while !from.is_empty() {
        let at = from.len().saturating_sub(PIECE);
        for (slot, e) in spare[at..].iter_mut().zip(from.drain(at..)) {
            slot.write(e);
        }
        from.shrink_to_fit();
    }
    // SAFETY: the `k` slots past `n` were all written above (a panic
    // before this leaks them, never exposes them).
    unsafe { to.set_len(n + k) };
}

/// User text that is Claude Code's own, not typed: command echoes and
/// background-agent notifications open a turn ([`Kind::Command`]); command
/// output, caveats and interrupt notes don't ([`Kind::UserNote`]).
pub fn note_kind(text: &str) -> Option<Kind> {
    let t = text.trim_start();
    let starts = |list: &[&str]| list.iter().any(|p| t.starts_with(p));
    if starts(&[
        "<command-name>",
        "<command-message>",
        "<task-notification>",
        "<bash-input>",
        "<user-memory-input>",
    ]) {
        Some(Kind::Command)
    } else if starts(&[
        "<command-args>",
        "<local-command-",
        "<bash-stdout>",
        "<bash-stderr>",
        "[Request interrupted",
        "Caveat: ",
    ]) {
        Some(Kind::UserNote)
    } else {
        None
    }
}

fn keep(s: &str) -> &str {
    match s.char_indices().nth(TEXT_KEEP) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// `8b0161b3-7395-4709-9383-037d1ebc0af3` → its 128 bits.
pub fn parse_uuid(s: &str) -> Option<u128> {
    let b = s.as_bytes();
    if b.len() != 36 || b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' {
        return None;
    }
    // Hex digit values; 0xff: not a lowercase hex digit.
    static HEX: [u8; 256] = {
        let mut t = [0xffu8; 256];
        let mut c = 0;
        while c < 10 {
            t[b'0' as usize + c] = c as u8;
            c += 1;
        }
        let mut c = 0;
        while c < 6 {
            t[b'a' as usize + c] = 10 + c as u8;
            c += 1;
        }
        t
    };
    let mut v: u128 = 0;
    let mut bad = 0u8;
    for (i, &c) in b.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            continue;
        }
        let d = HEX[c as usize];
        bad |= d;
        v = (v << 4) | u128::from(d & 0xf);
    }
    if bad == 0xff {
        return None;
    }
    // 0 means "none"; the all-zero uuid is Claude Code's "no leaf".
    (v != 0).then_some(v)
}

pub fn uuid_text(v: u128) -> String {
    let h = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// `2026-12-04T13:04:32.796Z` → Unix seconds (UTC only, as Claude Code
/// writes them).
pub fn parse_time(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let frac = match s.get(19..20) {
        Some(".") => {
            let end = s[20..]
                .find(|c: char| !c.is_ascii_digit())
                .map_or(s.len(), |e| e + 20);
            // "0.<digits>" parsed as before, built on the stack (no
            // allocation per entry); longer fractions the slow way.
            let digits = &s.as_bytes()[20..end];
            let mut buf = [0u8; 24];
            match buf.get_mut(2..2 + digits.len()) {
                Some(d) => {
                    d.copy_from_slice(digits);
                    buf[..2].copy_from_slice(b"0.");
                    std::str::from_utf8(&buf[..2 + digits.len()])
                        .ok()?
                        .parse::<f64>()
                        .ok()?
                }
                None => format!("0.{}", &s[20..end]).parse::<f64>().ok()?,
            }
        }
        _ => 0.0,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + mi * 60 + sec) as f64 + frac)
}

// The fields read from a line; everything else is skipped unparsed.

/// A string borrowed from the line when it has no escapes.
#[derive(Debug, Default)]
pub(super) struct Str<'a>(pub(super) Cow<'a, str>);

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

#[derive(Deserialize, Debug, Default)]
pub(super) struct Line<'a> {
    #[serde(rename = "type", borrow)]
    pub(super) ty: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) uuid: Option<Str<'a>>,
    #[serde(rename = "parentUuid", borrow)]
    pub(super) parent_uuid: Option<Str<'a>>,
    #[serde(rename = "logicalParentUuid", borrow)]
    pub(super) logical: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) subtype: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) timestamp: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) cwd: Option<Str<'a>>,
    #[serde(rename = "isMeta")]
    pub(super) is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary")]
    pub(super) is_compact_summary: Option<bool>,
    #[serde(rename = "compactMetadata", borrow)]
    pub(super) compact: Option<CompactMeta<'a>>,
    #[serde(rename = "summarizeMetadata", borrow)]
    pub(super) summarize: Option<SummarizeMeta<'a>>,
    #[serde(borrow)]
    pub(super) message: Option<Message<'a>>,
    #[serde(rename = "toolUseResult")]
    pub(super) tool_use_result: Option<AgentIdOf>,
    #[serde(rename = "forkedFrom", borrow)]
    pub(super) forked_from: Option<ForkedFrom<'a>>,
    #[serde(rename = "customTitle", borrow)]
    pub(super) custom_title: Option<Str<'a>>,
}

#[derive(Deserialize, Debug, Default)]
pub(super) struct CompactMeta<'a> {
    #[serde(rename = "preservedSegment", borrow)]
    pub(super) preserved: Option<Preserved<'a>>,
}

#[derive(Deserialize, Debug, Default)]
pub(super) struct Preserved<'a> {
    #[serde(rename = "tailUuid", borrow)]
    pub(super) tail: Option<Str<'a>>,
}

#[derive(Deserialize, Debug, Default)]
pub(super) struct SummarizeMeta<'a> {
    #[serde(borrow)]
    pub(super) direction: Option<Str<'a>>,
}

#[derive(Deserialize, Debug, Default)]
pub(super) struct ForkedFrom<'a> {
    #[serde(rename = "sessionId", borrow)]
    pub(super) session_id: Option<Str<'a>>,
}

#[derive(Deserialize, Debug, Default)]
pub(super) struct Message<'a> {
    #[serde(borrow)]
    pub(super) id: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) content: Option<Content<'a>>,
}

#[derive(Debug)]
pub(super) enum Content<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
    Other,
}

impl Content<'_> {
    /// The string content, or the first text block's text.
    fn text(&self) -> Option<&str> {
        match self {
            Content::Text(t) => Some(t),
            Content::Blocks(b) => b
                .iter()
                .find(|b| b.ty == "text")
                .and_then(|b| b.text.as_deref()),
            Content::Other => None,
        }
    }
}

#[derive(Debug)]
pub(super) struct Block<'a> {
    pub(super) ty: Cow<'a, str>,
    pub(super) id: Option<String>,
    pub(super) name: Option<String>,
    pub(super) tool_use_id: Option<String>,
    pub(super) text: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("message content")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                // A block of an odd shape is skipped, not fatal.
                while let Some(b) = seq.next_element::<MaybeBlock<'a>>()? {
                    if let Some(b) = b.0 {
                        out.push(b);
                    }
                }
                Ok(Content::Blocks(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A content block, or nothing when the element is not an object.
struct MaybeBlock<'a>(Option<Block<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for MaybeBlock<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = MaybeBlock<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut b = Block {
                    ty: Cow::Borrowed(""),
                    id: None,
                    name: None,
                    tool_use_id: None,
                    text: None,
                };
                while let Some(k) = map.next_key::<Cow<'de, str>>()? {
                    match &*k {
                        "type" => {
                            b.ty = map
                                .next_value::<Option<Str<'a>>>()?
                                .map(|s| s.0)
                                .unwrap_or_default()
                        }
                        "id" => b.id = map.next_value::<Option<String>>().ok().flatten(),
                        "name" => b.name = map.next_value::<Option<String>>().ok().flatten(),
                        "tool_use_id" => {
                            b.tool_use_id = map.next_value::<Option<String>>().ok().flatten()
                        }
                        "text" => {
                            b.text = map
                                .next_value::<Option<Str<'a>>>()
                                .ok()
                                .flatten()
                                .map(|s| s.0)
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(MaybeBlock(Some(b)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeBlock(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(MaybeBlock(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MaybeBlock(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybeBlock(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybeBlock(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybeBlock(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybeBlock(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// `toolUseResult.agentId` when the result is an object that has one (it
/// is a plain string for a rejected tool).
#[derive(Debug)]
pub(super) struct AgentIdOf(pub(super) Option<String>);

impl<'de> Deserialize<'de> for AgentIdOf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AgentIdOf;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tool result")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut found = None;
                while let Some(k) = map.next_key::<Cow<'de, str>>()? {
                    if k == "agentId" {
                        found = map.next_value::<Option<String>>().ok().flatten();
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(AgentIdOf(found))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(AgentIdOf(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(AgentIdOf(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(AgentIdOf(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(AgentIdOf(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(AgentIdOf(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(AgentIdOf(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(AgentIdOf(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_and_times() {
        let u = "8b0161b3-7395-4709-9383-037d1ebc0af3";
        assert_eq!(uuid_text(parse_uuid(u).unwrap()), u);
        assert_eq!(parse_uuid("00000000-0000-0000-0000-000000000000"), None);
        assert_eq!(parse_uuid("x"), None);
        assert_eq!(parse_time("1970-01-01T00:00:01.500Z"), Some(1.5));
        assert_eq!(parse_time("2026-12-04T13:04:32Z"), Some(1_796_389_472.0));
    }

    #[test]
    fn a_file_read_in_two_halves_is_the_file_read_in_one() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("s.jsonl");
        let mut text = String::new();
        for i in 1..=400u32 {
            let id = uuid_text(u128::from(i));
            let body = match i % 7 {
                0 => "not json".to_string(),
                1 => format!(r#"{{"type":"custom-title","customTitle":"t{i}"}}"#),
                2 => format!(
                    r#"{{"type":"user","uuid":"odd-{i}","parentUuid":null,"message":{{"content":"odd"}}}}"#
                ),
                3 => format!(
                    r#"{{"type":"assistant","uuid":"{id}","message":{{"id":"m{i}","content":[{{"type":"tool_use","id":"t{i}","name":"Bash","input":{{}}}}]}}}}"#
                ),
                4 => format!(
                    r#"{{"type":"user","uuid":"{id}","toolUseResult":{{"agentId":"a{i}"}},"message":{{"content":[{{"type":"tool_result","tool_use_id":"t{i}"}}]}}}}"#
                ),
                _ => format!(
                    r#"{{"type":"user","uuid":"{id}","cwd":"/w{i}","timestamp":"2026-12-04T10:00:00Z","message":{{"content":"p\nrompt {i}"}}}}"#
                ),
            };
            text.push_str(&body);
            text.push('\n');
        }
        text.push_str(r#"{"type":"user","uuid":"torn"#);
        std::fs::write(&p, &text).unwrap();
        let one = Scan::read_split(&p, "s", u64::MAX).unwrap();
        for min in [0, 1000] {
            let two = Scan::read_split(&p, "s", min).unwrap();
            assert_eq!(format!("{:?}", two.entries), format!("{:?}", one.entries));
            assert_eq!(two.warnings, one.warnings);
            assert!(two.warnings.len() > 50);
            assert_eq!((&two.title, &two.cwd), (&one.title, &one.cwd));
            assert!(two.odd_ids == one.odd_ids, "odd ids");
            assert!(two.extras == one.extras, "extras");
            assert!(two.calls == one.calls, "calls");
            assert!(two.strs == one.strs, "strs");
            assert_eq!(
                (two.first_prompt, two.bytes, two.lines, two.pending_len()),
                (one.first_prompt, one.bytes, one.lines, one.pending_len())
            );
        }
    }

    #[test]
    fn torn_and_malformed_lines() {
        let a = r#"{"type":"user","uuid":"8b0161b3-7395-4709-9383-037d1ebc0af3","parentUuid":null,"message":{"role":"user","content":"hi"}}"#;
        let mut s = Scan::new("s.jsonl", "");
        s.feed(format!("{a}\nnot json\n{}", &a[..20]).as_bytes());
        s.finish();
        assert_eq!(s.entries.len(), 1);
        assert_eq!(s.warnings.len(), 1);
        assert_eq!(s.warnings[0].line, 2);
        assert_eq!(s.pending_len(), 20);
        assert_eq!(s.text(&s.entries[0]), Some("hi"));
        assert_eq!(s.entries[0].kind, Kind::Prompt);
    }
}
