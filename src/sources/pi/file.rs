//! Indexing one Pi session file (`<time>_<id>.jsonl`): the header on line
//! 1, then one entry per line, each kept as its id, its parent (resolved to
//! an earlier entry, so the tree can have no cycle), its time and what the
//! tree and the rows need, with the byte range its body is loaded from. Fed
//! in chunks, so a live tail reads only new bytes. Lines are numbered as
//! an editor numbers them (blank ones included), for warnings.

use crate::read::lines::Piece;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;
use xxhash_rust::xxh3::xxh3_64;

use crate::model::{Marker, RecordMeta, RecordParts, Role, ToolCallHead, Warning};
use crate::read::MAX_WARNINGS;

/// A line longer than this is counted and warned about, not kept.
pub const LINE_CAP: usize = 256 << 20;

/// The session header (line 1).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Header {
    pub id: Option<String>,
    /// Missing means 1, as Pi reads it.
    pub version: u64,
    pub cwd: Option<String>,
    /// `/fork` and `/clone`: the absolute path of the source file.
    pub parent_session: Option<String>,
    pub timestamp: Option<f64>,
}

/// What an entry is, as far as the tree and the rows care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Message,
    Compaction {
        first_kept: Option<Box<str>>,
    },
    BranchSummary,
    /// An extension message that enters the context.
    CustomMessage,
    /// `label {targetId, label?}`: no label clears it.
    Label {
        target: Option<Box<str>>,
        label: Option<Box<str>>,
    },
    SessionInfo {
        name: Option<Box<str>>,
    },
    /// `model_change`, `thinking_level_change`, `custom`, `usage`,
    /// `context_edit`: a node of the tree, never a branch of its own.
    Bookkeeping,
    /// A type this reader doesn't know: shown, as Pi's `/tree` shows it.
    Other,
}

impl Kind {
    /// Entries Pi's `/tree` hides by default: they sit inside a chain but
    /// a subtree of only these is no branch a user can see.
    pub fn is_bookkeeping(&self) -> bool {
        matches!(
            self,
            Kind::Label { .. } | Kind::SessionInfo { .. } | Kind::Bookkeeping
        )
    }
}

/// One entry of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: Box<str>,
    /// Index of the parent entry; `None`: a root.
    pub parent: Option<u32>,
    pub meta: RecordMeta,
    /// Unix seconds.
    pub time: Option<f64>,
    pub kind: Kind,
}

/// A session file, read so far.
#[derive(Debug, Clone, Default)]
pub struct PiFile {
    /// The file name (what JSON's `file` says).
    pub name: String,
    pub path: PathBuf,
    pub header: Option<Header>,
    pub entries: Vec<Entry>,
    /// Id → the last entry with it (Pi's `byId` map: a later duplicate
    /// wins for children that name it).
    pub by_id: HashMap<Box<str>, u32>,
    pub warnings: Vec<Warning>,
    pub dropped_warnings: u64,
    /// Lines read (blank ones included).
    pub lines: u32,
    /// Bytes consumed (complete lines).
    pub bytes: u64,
    pending: Vec<u8>,
    oversize: Option<u64>,
    /// Something other than blank space was seen (the header is due).
    started: bool,
    migrated_warned: bool,
    /// The inode read (a rewrite under the same name is a new file).
    pub ino: u64,
    /// The last line was taken whole without its newline (at the end of
    /// the file); a newline arriving next ends it, it is no blank line.
    unterminated: bool,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    /// Missing (a version 1 entry) vs `null` (a root).
    #[serde(rename = "parentId", borrow, default, deserialize_with = "present")]
    parent_id: Option<Option<Cow<'a, str>>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<Msg<'a>>,
    #[serde(rename = "targetId", borrow, default)]
    target_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    label: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(rename = "firstKeptEntryId", borrow, default)]
    first_kept: Option<Cow<'a, str>>,
    // The header's.
    #[serde(default)]
    version: Option<u64>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(rename = "parentSession", borrow, default)]
    parent_session: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Msg<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(rename = "toolCallId", borrow, default)]
    tool_call_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

impl PiFile {
    pub fn new(name: impl Into<String>, path: impl Into<PathBuf>) -> PiFile {
        PiFile {
            name: name.into(),
            path: path.into(),
            ..PiFile::default()
        }
    }

    /// Reads a whole session file through the guarded open.
    pub fn read(path: &Path) -> crate::Result<PiFile> {
        use std::io::Read;
        let g = crate::read::guard::open_regular(path).map_err(|e| match e {
            crate::read::guard::GuardError::NotFound => crate::Error::NotFound {
                path: path.to_path_buf(),
            },
            e => crate::Error::Other(format!("{}: {e}", path.display())),
        })?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut ix = PiFile::new(name, path);
        ix.ino = inode(&g.file);
        // Read as the file was when opened: a writer appending meanwhile
        // leaves a whole prefix, and the follower reads the rest.
        let mut file = g.file.take(g.len);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buf).map_err(|e| crate::Error::io(path, e))?;
            if n == 0 {
                break;
            }
            ix.feed(&buf[..n]);
        }
        ix.finish();
        Ok(ix)
    }

    /// Reads what was appended since the last read. `Ok(false)`: the file
    /// is not the one read (replaced, truncated, or its last read line
    /// changed: Pi rewrites a file only to migrate it), read it anew.
    pub fn read_more(&mut self) -> crate::Result<bool> {
        use std::io::{Read, Seek, SeekFrom};
        let path = self.path.clone();
        let g = crate::read::guard::open_regular(&path)
            .map_err(|e| crate::Error::Other(format!("{}: {e}", path.display())))?;
        let from = self.bytes + self.pending_len() as u64;
        if inode(&g.file) != self.ino || g.len < from || self.oversize.is_some() {
            return Ok(false);
        }
        let mut file = g.file;
        if let Some(last) = self.entries.last() {
            let (off, len) = (last.meta.offset(), last.meta.len() as usize);
            let mut buf = vec![0u8; len];
            file.seek(SeekFrom::Start(off))
                .and_then(|_| file.read_exact(&mut buf))
                .map_err(|e| crate::Error::io(&path, e))?;
            if xxh3_64(&buf) != last.meta.hash() {
                return Ok(false);
            }
        }
        file.seek(SeekFrom::Start(from))
            .map_err(|e| crate::Error::io(&path, e))?;
        let mut rest = file.take(g.len - from);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = rest
                .read(&mut buf)
                .map_err(|e| crate::Error::io(&path, e))?;
            if n == 0 {
                break;
            }
            self.feed(&buf[..n]);
        }
        Ok(true)
    }

    /// Parses bytes already in memory (tests).
    pub fn parse(name: &str, path: &Path, bytes: &[u8]) -> PiFile {
        let mut ix = PiFile::new(name, path);
        ix.feed(bytes);
        ix.finish();
        ix
    }

    /// Feeds the next bytes; returns how many lines completed.
    pub fn feed(&mut self, chunk: &[u8]) -> usize {
        let (mut pending, mut oversize) = (std::mem::take(&mut self.pending), self.oversize.take());
        let n =
            crate::read::lines::split(&mut pending, &mut oversize, chunk, LINE_CAP, |p| match p {
                Piece::Line(line) => self.add_line(line, 1),
                Piece::Oversize(len) => self.skip_line(len),
            });
        (self.pending, self.oversize) = (pending, oversize);
        n
    }

    /// The file ended: a last line without its newline counts whole (Pi
    /// writes whole lines; a torn one fails to parse and is warned about).
    pub fn finish(&mut self) {
        if let Some(so_far) = self.oversize.take() {
            self.skip_line(so_far);
        } else if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.add_line(&line, 0);
        }
    }

    /// Bytes of a half-written last line.
    pub fn pending_len(&self) -> usize {
        match self.oversize {
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            None => self.pending.len(),
        }
    }

    fn skip_line(&mut self, bytes: u64) {
        self.bytes += bytes;
        self.lines += 1;
        self.warn(format!(
            "skipped a line of {bytes} bytes (longer than {} MiB)",
            LINE_CAP >> 20
        ));
    }

    fn warn(&mut self, message: String) {
        if self.warnings.len() >= MAX_WARNINGS {
            self.dropped_warnings += 1;
            return;
        }
        self.warnings.push(Warning {
            file: self.path.display().to_string(),
            line: u64::from(self.lines),
            message,
        });
    }

    fn add_line(&mut self, raw: &[u8], terminator: u64) {
        if std::mem::replace(&mut self.unterminated, terminator == 0) && raw.is_empty() {
            self.bytes += terminator;
            return;
        }
        let offset = self.bytes;
        self.bytes += raw.len() as u64 + terminator;
        self.lines += 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Ok(len) = u32::try_from(line.len()) else {
            self.warn("skipped a line over 4 GiB".to_string());
            return;
        };
        let first = !std::mem::replace(&mut self.started, true);
        let owned;
        let rec: Line = match serde_json::from_slice(line) {
            Ok(r) => r,
            Err(e) => {
                // Invalid UTF-8 or raw control characters: repaired as
                // the rest of worldline reads lines; else skipped.
                owned = crate::read::lenient::repair(line);
                match serde_json::from_str(&owned) {
                    Ok(r) => r,
                    // Pi writes whole lines: a last one without its end
                    // that doesn't parse is still being written (a live
                    // session), not damage.
                    Err(_) if terminator == 0 => {
                        // Kept as pending: the rest arrives with a later read.
                        self.bytes -= raw.len() as u64;
                        self.lines -= 1;
                        self.unterminated = false;
                        self.started = !first;
                        self.pending = raw.to_vec();
                        return;
                    }
                    Err(_) => {
                        self.warn(format!("not a JSON entry ({e}); skipped"));
                        return;
                    }
                }
            }
        };
        let ty = rec.ty.as_deref().unwrap_or("");
        if ty == "session" {
            if !first || self.header.is_some() {
                self.warn("a second session header; ignored".to_string());
                return;
            }
            let version = rec.version.unwrap_or(1);
            self.header = Some(Header {
                id: rec.id.map(Cow::into_owned),
                version,
                cwd: rec.cwd.map(Cow::into_owned),
                parent_session: rec.parent_session.map(Cow::into_owned),
                timestamp: rec.timestamp.as_deref().and_then(parse_iso),
            });
            if version < 3 {
                self.migrated_warned = true;
                self.warn(format!(
                    "session version {version}: Pi migrates (rewrites) this file to version 3 when it opens it; read as migrated"
                ));
            }
            return;
        }
        if first {
            self.warn(
                "no session header on the first line (Pi does not open such a file); entries read anyway"
                    .to_string(),
            );
        }
        let version = self.header.as_ref().map_or(3, |h| h.version);
        let prev = self.entries.len().checked_sub(1).map(|i| i as u32);
        let line_no = self.lines;
        let id: Box<str> = match rec.id.as_deref() {
            Some(id) if !id.is_empty() => id.into(),
            // Version 1 entries have no ids: Pi numbers them as a chain.
            _ => {
                if version >= 2 {
                    self.warn("an entry without an id; named by its line".to_string());
                }
                format!("line{line_no}").into()
            }
        };
        let parent = match &rec.parent_id {
            Some(Some(p)) => match self.by_id.get(p.as_ref()) {
                Some(&i) => Some(i),
                None => {
                    self.warn(format!(
                        "parent {} is not an earlier entry (missing, or a cycle); a root here, as Pi treats it",
                        crate::text::sanitize_line(p, 40)
                    ));
                    None
                }
            },
            Some(None) => None,
            // Version 1: each entry follows the one before (Pi's migration).
            None if version < 2 || rec.id.is_none() => prev,
            None => {
                self.warn("an entry without parentId; a root here".to_string());
                None
            }
        };
        let kind = match ty {
            "message" => Kind::Message,
            "compaction" => Kind::Compaction {
                first_kept: rec.first_kept.as_deref().map(Into::into),
            },
            "branch_summary" => Kind::BranchSummary,
            "custom_message" => Kind::CustomMessage,
            "label" => Kind::Label {
                target: rec.target_id.as_deref().map(Into::into),
                label: rec
                    .label
                    .as_deref()
                    .filter(|l| !l.is_empty())
                    .map(Into::into),
            },
            "session_info" => Kind::SessionInfo {
                name: rec.name.as_deref().map(Into::into),
            },
            "model_change" | "thinking_level_change" | "custom" | "usage" | "context_edit" => {
                Kind::Bookkeeping
            }
            _ => Kind::Other,
        };
        let parts = record_parts(ty, &kind, rec.message.as_ref());
        let meta = RecordMeta::new(offset, len, line_no, xxh3_64(line), parts);
        let index = self.entries.len() as u32;
        if let Some(was) = self.by_id.insert(id.clone(), index) {
            let at = self.entries[was as usize].meta.line();
            self.warn(format!(
                "id {} already used on line {at}; entries naming it hang under this one (as in Pi)",
                crate::text::sanitize_line(&id, 40)
            ));
        }
        self.entries.push(Entry {
            id,
            parent,
            meta,
            time: rec.timestamp.as_deref().and_then(parse_iso),
            kind,
        });
    }
}

fn inode(f: &std::fs::File) -> u64 {
    use std::os::unix::fs::MetadataExt;
    f.metadata().map_or(0, |m| m.ino())
}

/// The index entry's role, tool calls and marker.
fn record_parts(ty: &str, kind: &Kind, msg: Option<&Msg>) -> RecordParts {
    let mut parts = RecordParts {
        role: Role::Other(ty.into()),
        checkpoint: None,
        tokens: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        marker: None,
    };
    match kind {
        Kind::Message => {
            let role = msg.and_then(|m| m.role.as_deref()).unwrap_or("");
            parts.role = match role {
                "user" => Role::User,
                "assistant" => Role::Assistant,
                "toolResult" => Role::Tool,
                "system" => Role::SystemPrompt,
                "" => Role::Other("message".into()),
                other => Role::Other(other.into()),
            };
            if let Some(m) = msg {
                parts.tool_call_id = m.tool_call_id.as_deref().map(str::to_string);
                if role == "assistant" {
                    parts.tool_calls = tool_calls(m.content);
                }
            }
        }
        Kind::Compaction { .. } => {
            parts.role = Role::System;
            parts.marker = Some(Marker::Compaction);
        }
        // Pi hands a branch summary to the model as a user message: here
        // too it opens a step of its own, led by what it says.
        Kind::BranchSummary => parts.role = Role::User,
        Kind::CustomMessage => parts.role = Role::System,
        _ => {}
    }
    parts
}

/// `toolCall` blocks of an assistant's content.
fn tool_calls(content: Option<&RawValue>) -> Vec<ToolCallHead> {
    let Some(raw) = content else {
        return Vec::new();
    };
    if !raw.get().starts_with('[') {
        return Vec::new();
    }
    let Ok(blocks) = serde_json::from_str::<Vec<Block>>(raw.get()) else {
        return Vec::new();
    };
    blocks
        .into_iter()
        .filter(|b| b.ty.as_deref() == Some("toolCall"))
        .map(|b| ToolCallHead {
            id: b.id.map(Cow::into_owned).unwrap_or_default(),
            name: b.name.map(Cow::into_owned).unwrap_or_default(),
            dmail: None,
        })
        .collect()
}

/// `2026-12-04T12:44:29.451Z` (or with an offset) → Unix seconds.
pub fn parse_iso(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac = 0.0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        // Digits over a power of ten: exact values, one rounding.
        let (mut num, mut den) = (0u64, 1u64);
        for &c in b[start..i].iter().take(12) {
            num = num * 10 + u64::from(c - b'0');
            den *= 10;
        }
        frac = num as f64 / den as f64;
    }
    let offset = match b.get(i) {
        None | Some(b'Z') | Some(b'z') => 0,
        Some(&sign @ (b'+' | b'-')) => {
            let oh = num(i + 1..i + 3)?;
            let om = match b.get(i + 3) {
                Some(b':') => num(i + 4..i + 6)?,
                _ => num(i + 3..i + 5).unwrap_or(0),
            };
            let o = oh * 3600 + om * 60;
            if sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + mi * 60 + sec - offset) as f64 + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times() {
        assert_eq!(parse_iso("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(
            parse_iso("2026-12-04T12:44:29.451Z"),
            Some(1_796_388_269.451)
        );
        assert_eq!(parse_iso("1970-01-01T01:00:00+01:00"), Some(0.0));
        assert_eq!(parse_iso("nope"), None);
        assert_eq!(parse_iso("2026-13-04T12:44:29Z"), None);
    }

    fn parse(text: &str) -> PiFile {
        PiFile::parse("s.jsonl", Path::new("/t/s.jsonl"), text.as_bytes())
    }

    #[test]
    fn bad_input_is_warned_about_never_a_panic() {
        // A missing parent, a cycle, a duplicate id, a torn last line.
        let f = parse(concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
            "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"zz\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n",
            "{\"type\":\"message\",\"id\":\"c\",\"parentId\":\"d\"}\n",
            "{\"type\":\"message\",\"id\":\"d\",\"parentId\":\"c\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"d\"}\n",
            "not json\n",
            "{\"type\":\"message\",\"id\":\"e\",\"par",
        ));
        assert_eq!(f.entries.len(), 5);
        assert_eq!(f.entries[1].parent, None);
        assert_eq!(f.entries[2].parent, None);
        assert_eq!(f.entries[3].parent, Some(2));
        assert_eq!(f.by_id["a"], 4);
        let lines: Vec<u64> = f.warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, [3, 4, 6, 7], "{:?}", f.warnings);
        assert!(f.warnings.iter().all(|w| w.file == "/t/s.jsonl"));
    }

    #[test]
    fn version_one_entries_chain_and_headerless_files_are_read() {
        let f = parse(concat!(
            "{\"type\":\"session\",\"id\":\"s\"}\n",
            "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
            "{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"bash\",\"arguments\":{}}]}}\n",
        ));
        assert_eq!(f.entries[1].parent, Some(0));
        assert_eq!(f.entries[1].meta.tool_calls().len(), 1);
        assert!(f.warnings[0].message.contains("version 1"));
        let g = parse("{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n");
        assert_eq!(g.entries.len(), 1);
        assert!(g.warnings[0].message.contains("no session header"));
        assert_eq!(g.warnings[0].line, 1);
    }

    #[test]
    fn reading_on_after_appends_equals_one_read() {
        let text = concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
            "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"message\":{\"role\":\"assistant\",\"content\":[]}}\n",
            "{\"type\":\"label\",\"id\":\"c\",\"parentId\":\"b\",\"targetId\":\"a\",\"label\":\"x\"}\n",
        );
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.jsonl");
        let whole = PiFile::parse("s.jsonl", &path, text.as_bytes());
        // Cut everywhere: mid-line, at a line end without its newline.
        for cut in 1..text.len() {
            std::fs::write(&path, &text[..cut]).unwrap();
            let mut f = PiFile::read(&path).unwrap();
            std::fs::write(&path, text).unwrap();
            assert!(f.read_more().unwrap(), "cut {cut}");
            f.finish();
            assert_eq!(f.entries, whole.entries, "cut {cut}");
            assert_eq!(f.lines, whole.lines, "cut {cut}");
            assert_eq!(f.warnings, whole.warnings, "cut {cut}");
        }
        // A rewritten file (its last read line changed) is read anew.
        let mut f = PiFile::read(&path).unwrap();
        std::fs::write(&path, text.replace("\"x\"", "\"y\"")).unwrap();
        assert!(!f.read_more().unwrap());
    }
}
