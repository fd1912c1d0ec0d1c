//! Indexing one Kimi Code `agents/<id>/wire.jsonl`: lines are numbered over
//! the non-empty ones from 1; only the lines that shape branches or become
//! records are kept (with their byte range), the rest are counted. Fed in
//! chunks, so a live tail reads only new bytes; a rewrite starts it over.

use crate::read::lines::Piece;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use crate::model::{Role, ToolCallHead, Warning};
use crate::read::{lenient, Sink};

/// A line that matters, where it is in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// 1-based, over non-empty lines.
    pub line: u32,
    pub offset: u64,
    /// Bytes of the line without its line end; for a step, up to the end of
    /// its last line.
    pub len: u32,
    /// xxh3 of the line (a step: of its lines, folded).
    pub hash: u64,
    /// `time` in Unix milliseconds, when the line has one.
    pub time: Option<f64>,
    pub kind: EntryKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    /// `agent.switched`: a branch edge (2.1.0).
    Switched {
        branch: String,
        base: Option<(String, u32)>,
        reason: Option<String>,
        turns: Option<u32>,
        legacy_undo_line: Option<u32>,
    },
    /// `context.undo {count}`.
    Undo { count: u32 },
    /// `context.apply_compaction`: a record, and a mark on its branch.
    Compaction,
    /// `context.clear`: a floor for undo.
    Clear,
    /// `{"type":"forked"}`, appended to every wire a `/fork` copied.
    Forked,
    /// `context.append_message`: user and tool messages, injections, and in
    /// protocol 1.1 assistant messages.
    Message {
        role: Role,
        injection: bool,
        tool_calls: Vec<ToolCallHead>,
        tool_call_id: Option<String>,
        /// A D-Mail worldline sent (`origin.clientMetadata` names it): its
        /// text.
        dmail: Option<String>,
    },
    /// `step.begin` and everything its `stepUuid` gathers: the assistant
    /// message of one step.
    Step {
        uuid: String,
        tool_calls: Vec<ToolCallHead>,
    },
    /// `tool.result`; `agent` is the subagent an Agent call ran.
    ToolResult {
        tool_call_id: String,
        agent: Option<String>,
    },
    /// `subagent.spawned` (2.1.0).
    Spawned {
        agent_id: String,
        name: Option<String>,
        description: Option<String>,
        parent_tool_call_id: Option<String>,
    },
}

impl EntryKind {
    /// Entries shown as records of a world line.
    pub fn is_record(&self) -> bool {
        matches!(
            self,
            EntryKind::Compaction
                | EntryKind::Message { .. }
                | EntryKind::Step { .. }
                | EntryKind::ToolResult { .. }
        )
    }
}

/// What a wire holds, as far as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WireIndex {
    /// Relative to the session dir: `agents/main/wire.jsonl`.
    pub name: String,
    pub path: PathBuf,
    pub protocol: Option<String>,
    /// Non-empty lines read.
    pub lines: u32,
    /// Bytes consumed (complete lines).
    pub bytes: u64,
    pub entries: Vec<Entry>,
    pub warnings: Vec<Warning>,
    /// Each tool call's id and the line of its `tool.call`.
    pub call_lines: Vec<(String, u32)>,
    /// Open steps by uuid → entry index, so parts find their step.
    steps: HashMap<String, usize>,
    /// The start of a line whose end hasn't arrived.
    pending: Vec<u8>,
    /// Bytes so far of a line past `line_cap`, read past instead of kept.
    oversize: Option<u64>,
    /// Longest line kept whole (0: the default).
    line_cap: usize,
}

/// A line longer than this is counted and warned about, not kept: a wire
/// line holds a whole tool output, but not gigabytes of one.
pub const LINE_CAP: usize = 256 << 20;

/// Types worth parsing; any other type that opens its line is counted only.
const WANTED: [&str; 9] = [
    "metadata",
    "agent.switched",
    "context.undo",
    "context.apply_compaction",
    "context.clear",
    "forked",
    "context.append_message",
    "context.append_loop_event",
    "subagent.spawned",
];

impl WireIndex {
    pub fn new(name: impl Into<String>, path: impl Into<PathBuf>) -> WireIndex {
        WireIndex {
            name: name.into(),
            path: path.into(),
            ..WireIndex::default()
        }
    }

    /// Reads a whole wire file.
    pub fn read(path: &Path, name: &str) -> crate::Result<WireIndex> {
        use std::io::Read;
        let g = crate::read::guard::open_regular(path).map_err(|e| match e {
            crate::read::guard::GuardError::Io(e) => crate::Error::io(path, e),
            e if e.is_not_found() => crate::Error::NotFound {
                path: path.to_path_buf(),
            },
            e => crate::Error::Other(format!("{}: {e}", path.display())),
        })?;
        // Read as it was when opened, so a wire that grows without end
        // (or a device) can't keep this loop going.
        let mut file = g.file.take(g.len);
        let mut ix = WireIndex::new(name, path);
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

    /// Parses bytes already in memory (tests, fixtures).
    pub fn parse(name: &str, path: &Path, bytes: &[u8]) -> WireIndex {
        let mut ix = WireIndex::new(name, path);
        ix.feed(bytes);
        ix.finish();
        ix
    }

    /// Feeds the next bytes; returns how many lines completed.
    pub fn feed(&mut self, chunk: &[u8]) -> usize {
        let (mut pending, mut oversize) = (std::mem::take(&mut self.pending), self.oversize.take());
        let n =
            crate::read::lines::split(
                &mut pending,
                &mut oversize,
                chunk,
                self.cap(),
                |p| match p {
                    Piece::Line(line) => self.add_line(line, 1),
                    Piece::Oversize(len) => self.skip_line(len),
                },
            );
        (self.pending, self.oversize) = (pending, oversize);
        n
    }

    /// Lines longer than `cap` are read past (tests make it tiny).
    pub fn with_line_cap(mut self, cap: usize) -> Self {
        self.line_cap = cap;
        self
    }

    fn cap(&self) -> usize {
        if self.line_cap == 0 {
            LINE_CAP
        } else {
            self.line_cap
        }
    }

    /// A line too long to keep ended after `bytes` (its line end included).
    fn skip_line(&mut self, bytes: u64) {
        self.bytes += bytes;
        self.lines += 1;
        self.warn(format!(
            "skipped a line of {bytes} bytes (longer than {} MiB)",
            self.cap() >> 20
        ));
    }

    /// The file ended: a last line without its newline counts once whole.
    /// A live tail doesn't call this: Kimi Code writes whole lines, so a
    /// line without its end is still being written.
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

    fn add_line(&mut self, raw: &[u8], terminator: u64) {
        let offset = self.bytes;
        self.bytes += raw.len() as u64 + terminator;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        self.lines += 1;
        let Ok(len) = u32::try_from(line.len()) else {
            self.warn("skipped a line over 4 GiB".to_string());
            return;
        };
        match peek_type(line) {
            Some((ty, true)) if !WANTED.contains(&ty) => return,
            // 2.1.0's `kind:"event"` duplicates end that way: skip them
            // without parsing (they copy whole messages).
            Some((_, false)) if line.ends_with(br#","kind":"event"}"#) => return,
            _ => {}
        }
        let Some(rec) = self.slim(line) else { return };
        // 2.1.0's `kind:"event"` records duplicate messages: counted, never shown.
        if rec.kind.as_ref().and_then(Value::as_str) == Some("event") {
            return;
        }
        let at = Entry {
            line: self.lines,
            offset,
            len,
            hash: xxh3_64(line),
            time: rec
                .time
                .as_ref()
                .and_then(Value::as_f64)
                .filter(|ms| crate::sources::plausible_time(ms / 1000.0).is_some()),
            kind: EntryKind::Clear,
        };
        let s = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_string);
        let n = |v: &Option<Value>| {
            v.as_ref()
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
        };
        let kind = match rec.ty.as_ref().and_then(Value::as_str).unwrap_or("") {
            "metadata" => {
                self.protocol = s(&rec.protocol_version);
                return;
            }
            "agent.switched" => match s(&rec.branch) {
                Some(branch) => EntryKind::Switched {
                    branch,
                    base: rec
                        .base
                        .as_ref()
                        .and_then(|b| Some((str_of(b, "branch")?, u32_of(b, "line")?))),
                    reason: s(&rec.reason),
                    turns: n(&rec.turns),
                    legacy_undo_line: n(&rec.legacy_undo_line),
                },
                None => {
                    self.warn("agent.switched without a branch name".to_string());
                    return;
                }
            },
            "context.undo" => EntryKind::Undo {
                count: n(&rec.count).unwrap_or(1),
            },
            "context.apply_compaction" => EntryKind::Compaction,
            "context.clear" => EntryKind::Clear,
            "forked" => EntryKind::Forked,
            "context.append_message" => match rec.message {
                Some(m) => message_kind(m, line),
                None => return,
            },
            "subagent.spawned" => match s(&rec.subagent_id) {
                Some(agent_id) => EntryKind::Spawned {
                    agent_id,
                    name: s(&rec.subagent_name),
                    description: s(&rec.description),
                    parent_tool_call_id: s(&rec.parent_tool_call_id),
                },
                None => return,
            },
            "context.append_loop_event" => {
                let Some(ev) = rec.event else { return };
                return self.loop_event(ev, at);
            }
            _ => return,
        };
        self.entries.push(Entry { kind, ..at });
    }

    /// The fields worldline reads, without building the bulky ones
    /// (content, tool arguments and outputs are skipped by the parser).
    /// Odd bytes (invalid UTF-8, raw control characters) are repaired first,
    /// as for kimi-cli files; a line that isn't JSON gets a warning.
    fn slim(&mut self, line: &[u8]) -> Option<Slim> {
        if let Ok(rec) = serde_json::from_slice::<Slim>(line) {
            return Some(rec);
        }
        let repaired = lenient::repair(line);
        if let Ok(rec) = serde_json::from_str::<Slim>(&repaired) {
            return Some(rec);
        }
        match serde_json::from_str::<Value>(&repaired) {
            // Kimi Code stops reading here and repairs the file to its valid
            // prefix; worldline says so and reads on.
            Err(e) => self.warn(format!("skipped malformed line: {e}")),
            // An object of another shape (a message that isn't an object):
            // nothing worldline reads.
            Ok(Value::Object(_)) => {}
            Ok(_) => self.warn("skipped a line that is not a JSON object".to_string()),
        }
        None
    }

    fn loop_event(&mut self, ev: SlimEvent, at: Entry) {
        let s = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_string);
        let ty = s(&ev.ty).unwrap_or_default();
        match ty.as_str() {
            "step.begin" => {
                let Some(uuid) = s(&ev.uuid) else { return };
                self.steps.insert(uuid.clone(), self.entries.len());
                self.entries.push(Entry {
                    kind: EntryKind::Step {
                        uuid,
                        tool_calls: Vec::new(),
                    },
                    ..at
                });
            }
            "content.part" | "tool.call" | "step.end" => {
                let key = if ty == "step.end" {
                    &ev.uuid
                } else {
                    &ev.step_uuid
                };
                let Some(&i) = s(key).and_then(|u| self.steps.get(&u)) else {
                    return;
                };
                let step = &mut self.entries[i];
                let end = at.offset + u64::from(at.len);
                step.len = u32::try_from(end - step.offset).unwrap_or(u32::MAX);
                step.hash = fold(step.hash, at.hash);
                if ty == "tool.call" {
                    let id = s(&ev.tool_call_id).unwrap_or_default();
                    self.call_lines.push((id.clone(), at.line));
                    if let EntryKind::Step { tool_calls, .. } = &mut self.entries[i].kind {
                        tool_calls.push(ToolCallHead {
                            id,
                            name: s(&ev.name).unwrap_or_default(),
                            dmail: None,
                        });
                    }
                }
            }
            "tool.result" => {
                let Some(tool_call_id) = s(&ev.tool_call_id) else {
                    return;
                };
                let agent = ev.result.and_then(|r| r.0);
                self.entries.push(Entry {
                    kind: EntryKind::ToolResult {
                        tool_call_id,
                        agent,
                    },
                    ..at
                });
            }
            _ => {}
        }
    }

    fn warn(&mut self, message: String) {
        self.warnings.push(Warning {
            file: self.name.clone(),
            line: u64::from(self.lines),
            message,
        });
    }
}

impl Sink for WireIndex {
    fn push(&mut self, chunk: &[u8]) -> usize {
        self.feed(chunk)
    }

    fn reset(&mut self) {
        let cap = self.line_cap;
        *self = WireIndex::new(self.name.clone(), self.path.clone()).with_line_cap(cap);
    }
}

/// A step's hash over its lines, in order.
pub fn fold(acc: u64, line: u64) -> u64 {
    xxh3_64(&[acc.to_le_bytes(), line.to_le_bytes()].concat())
}

/// The first `"type":"…"` of a line, and whether it opens the line (then
/// it is the record's own type, not a nested one).
fn peek_type(line: &[u8]) -> Option<(&str, bool)> {
    const KEY: &[u8] = b"\"type\":\"";
    let at = memchr::memmem::find(line, KEY)?;
    let start = at + KEY.len();
    let end = start + memchr::memchr2(b'"', b'\\', &line[start..])?;
    if line[end] != b'"' {
        return None;
    }
    let ty = std::str::from_utf8(&line[start..end]).ok()?;
    Some((ty, line[..at].trim_ascii() == b"{"))
}

fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn u32_of(v: &Value, key: &str) -> Option<u32> {
    v.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

/// Is this `origin` a D-Mail worldline sent? `clientMetadata` is the
/// prompt's `metadata` (2.1.0 keeps it in a list).
pub fn is_dmail_origin(origin: &Value) -> bool {
    let is = |m: &Value| m.pointer("/worldline/kind").and_then(Value::as_str) == Some("dmail");
    match origin.get("clientMetadata") {
        Some(Value::Array(items)) => items.iter().any(is),
        Some(m) => is(m),
        None => false,
    }
}

/// The text of a D-Mail's message: its line read again, whole (rare, so
/// the slim parse of every other message stays slim).
fn dmail_text(line: &[u8]) -> String {
    let v: Value = serde_json::from_slice(line)
        .or_else(|_| serde_json::from_str(&lenient::repair(line)))
        .unwrap_or(Value::Null);
    match v.pointer("/message/content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn message_kind(m: SlimMessage, line: &[u8]) -> EntryKind {
    let s = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_string);
    let role = Role::parse(m.role.as_ref().and_then(Value::as_str).unwrap_or(""));
    let injection = m
        .origin
        .as_ref()
        .and_then(|o| o.get("kind"))
        .and_then(Value::as_str)
        == Some("injection");
    let tool_calls = m
        .tool_calls
        .or(m.tool_calls_snake)
        .as_ref()
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| ToolCallHead {
                    id: str_of(c, "id").unwrap_or_default(),
                    name: str_of(c, "name")
                        .or_else(|| c.get("function").and_then(|f| str_of(f, "name")))
                        .unwrap_or_default(),
                    dmail: None,
                })
                .collect()
        })
        .unwrap_or_default();
    let dmail =
        (role == Role::User && !injection && m.origin.as_ref().is_some_and(is_dmail_origin))
            .then(|| dmail_text(line));
    EntryKind::Message {
        role,
        injection,
        tool_calls,
        tool_call_id: s(&m.tool_call_id).or_else(|| s(&m.tool_call_id_snake)),
        dmail,
    }
}

/// A wire line as far as worldline reads it. Small fields are kept as
/// values (an odd type is then just absent); bulky ones are not declared,
/// so the parser skips them without building them.
#[derive(Deserialize)]
struct Slim {
    #[serde(rename = "type")]
    ty: Option<Value>,
    kind: Option<Value>,
    time: Option<Value>,
    protocol_version: Option<Value>,
    branch: Option<Value>,
    base: Option<Value>,
    reason: Option<Value>,
    turns: Option<Value>,
    #[serde(rename = "legacyUndoLine")]
    legacy_undo_line: Option<Value>,
    count: Option<Value>,
    #[serde(rename = "subagentId")]
    subagent_id: Option<Value>,
    #[serde(rename = "subagentName")]
    subagent_name: Option<Value>,
    description: Option<Value>,
    #[serde(rename = "parentToolCallId")]
    parent_tool_call_id: Option<Value>,
    message: Option<SlimMessage>,
    event: Option<SlimEvent>,
}

#[derive(Deserialize)]
struct SlimMessage {
    role: Option<Value>,
    origin: Option<Value>,
    #[serde(rename = "toolCalls")]
    tool_calls: Option<Value>,
    #[serde(rename = "tool_calls")]
    tool_calls_snake: Option<Value>,
    #[serde(rename = "toolCallId")]
    tool_call_id: Option<Value>,
    #[serde(rename = "tool_call_id")]
    tool_call_id_snake: Option<Value>,
}

#[derive(Deserialize)]
struct SlimEvent {
    #[serde(rename = "type")]
    ty: Option<Value>,
    uuid: Option<Value>,
    #[serde(rename = "stepUuid")]
    step_uuid: Option<Value>,
    #[serde(rename = "toolCallId")]
    tool_call_id: Option<Value>,
    name: Option<Value>,
    result: Option<AgentLine>,
}

/// The subagent an Agent call's result names on the first line of its
/// output (`agent_id: agent-N`), read from `{"output": …}` or a bare
/// string; anything else is read past, not kept.
struct AgentLine(Option<String>);

impl<'de> Deserialize<'de> for AgentLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = AgentLine;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E>(self, text: &str) -> Result<AgentLine, E> {
                let id = text
                    .lines()
                    .next()
                    .and_then(|l| l.strip_prefix("agent_id:"))
                    .map(str::trim)
                    .filter(|id| !id.is_empty());
                Ok(AgentLine(id.map(str::to_string)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<AgentLine, A::Error> {
                let mut found = AgentLine(None);
                while let Some(key) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == "output" && found.0.is_none() {
                        found = m.next_value::<AgentLine>()?;
                    } else {
                        m.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok(found)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<AgentLine, A::Error> {
                while s.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(AgentLine(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<AgentLine, E> {
                Ok(AgentLine(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<AgentLine, E> {
                Ok(AgentLine(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<AgentLine, E> {
                Ok(AgentLine(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<AgentLine, E> {
                Ok(AgentLine(None))
            }
            fn visit_unit<E>(self) -> Result<AgentLine, E> {
                Ok(AgentLine(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_non_empty_lines_and_skips_event_duplicates() {
        let wire = concat!(
            "{\"type\":\"metadata\",\"protocol_version\":\"1.5\"}\n",
            "\n",
            "{\"type\":\"context.append_message\",\"message\":{\"role\":\"user\",\"content\":[]}}\n",
            "{\"message\":{\"message\":{\"role\":\"user\"}},\"type\":\"agent.message.appended\",\"kind\":\"event\"}\n",
            "{\"type\":\"llm.request\",\"model\":\"x\"}\n",
            "{\"type\":\"a.type.from.the.future\",\"x\":1}\n",
            "{\"type\":\"context.undo\",\"count\":2}",
        );
        let ix = WireIndex::parse("w", Path::new("/w"), wire.as_bytes());
        assert_eq!(ix.lines, 6);
        assert_eq!(ix.protocol.as_deref(), Some("1.5"));
        let kinds: Vec<(u32, &EntryKind)> = ix.entries.iter().map(|e| (e.line, &e.kind)).collect();
        assert_eq!(kinds.len(), 2);
        assert_eq!(kinds[0].0, 2);
        assert_eq!(kinds[1], (6, &EntryKind::Undo { count: 2 }));
        assert!(ix.warnings.is_empty());
    }

    #[test]
    fn a_step_gathers_its_parts_and_calls_across_other_lines() {
        let wire = concat!(
            "{\"type\":\"context.append_loop_event\",\"event\":{\"type\":\"step.begin\",\"uuid\":\"s\"}}\n",
            "{\"type\":\"usage.record\"}\n",
            "{\"type\":\"context.append_loop_event\",\"event\":{\"type\":\"tool.call\",\"stepUuid\":\"s\",\"toolCallId\":\"c1\",\"name\":\"Agent\"}}\n",
            "{\"type\":\"context.append_loop_event\",\"event\":{\"type\":\"tool.result\",\"toolCallId\":\"c1\",\"result\":{\"output\":\"agent_id: agent-3\\nstatus: ok\"}}}\n",
            "{\"type\":\"context.append_loop_event\",\"event\":{\"type\":\"step.end\",\"uuid\":\"s\"}}\n",
        );
        let ix = WireIndex::parse("w", Path::new("/w"), wire.as_bytes());
        assert_eq!(ix.entries.len(), 2);
        let step = &ix.entries[0];
        let EntryKind::Step { tool_calls, .. } = &step.kind else {
            panic!("{step:?}")
        };
        assert_eq!(tool_calls[0].id, "c1");
        assert_eq!(tool_calls[0].name, "Agent");
        let last_end = wire.trim_end().len() as u64;
        assert_eq!(step.offset + u64::from(step.len), last_end);
        assert_eq!(
            ix.entries[1].kind,
            EntryKind::ToolResult {
                tool_call_id: "c1".into(),
                agent: Some("agent-3".into())
            }
        );
    }

    #[test]
    fn broken_lines_warn_with_their_line_and_reading_goes_on() {
        let wire = "{\"type\":\"metadata\"}\n{\"type\":\"context.undo\",\n{\"type\":\"context.undo\",\"count\":1}\n";
        let ix = WireIndex::parse("agents/main/wire.jsonl", Path::new("/w"), wire.as_bytes());
        assert_eq!(ix.warnings.len(), 1);
        assert_eq!(ix.warnings[0].line, 2);
        assert_eq!(ix.warnings[0].file, "agents/main/wire.jsonl");
        assert_eq!(ix.entries.len(), 1);
        assert_eq!(ix.entries[0].line, 3);
    }

    #[test]
    fn odd_shapes_and_bytes_are_read_or_passed_over_never_fatal() {
        let mut wire = Vec::new();
        wire.extend_from_slice(
            b"{\"type\":\"context.append_message\",\"message\":\"not an object\"}\n",
        );
        wire.extend_from_slice(b"{\"type\":\"context.append_message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"bad \xff byte\tand tab\"}],\"toolCalls\":[{\"id\":\"c9\",\"function\":{\"name\":\"Agent\",\"arguments\":\"{}\"}}, \"odd\"]}}\n");
        wire.extend_from_slice(b"{\"type\":\"context.append_loop_event\",\"event\":{\"type\":\"tool.result\",\"toolCallId\":\"c9\",\"result\":\"agent_id: agent-7\"}}\n");
        wire.extend_from_slice(b"{\"type\":\"context.undo\",\"count\":\"two\"}\n");
        wire.extend_from_slice(b"[1,2]\n");
        let ix = WireIndex::parse("w", Path::new("/w"), &wire);
        assert_eq!(ix.lines, 5);
        let kinds: Vec<&EntryKind> = ix.entries.iter().map(|e| &e.kind).collect();
        assert_eq!(kinds.len(), 3, "{kinds:?}");
        let EntryKind::Message {
            role, tool_calls, ..
        } = kinds[0]
        else {
            panic!("{kinds:?}")
        };
        assert_eq!(*role, Role::Assistant);
        assert_eq!(tool_calls[0].name, "Agent");
        assert_eq!(tool_calls[1].id, "");
        assert_eq!(
            kinds[1],
            &EntryKind::ToolResult {
                tool_call_id: "c9".into(),
                agent: Some("agent-7".into())
            }
        );
        assert_eq!(kinds[2], &EntryKind::Undo { count: 1 });
        assert_eq!(ix.warnings.len(), 1);
        assert_eq!(ix.warnings[0].line, 5);
    }

    #[test]
    fn a_line_past_the_cap_is_counted_and_warned_not_kept() {
        let big = format!(
            "{{\"type\":\"context.append_message\",\"message\":{{\"role\":\"user\",\"content\":\"{}\"}}}}\n",
            "x".repeat(500)
        );
        let wire =
            format!("{{\"type\":\"metadata\"}}\n{big}{{\"type\":\"context.undo\",\"count\":1}}\n");
        let mut ix = WireIndex::new("w", "/w").with_line_cap(100);
        for c in wire.as_bytes().chunks(64) {
            ix.feed(c);
            assert!(ix.pending.len() <= 164, "held {}", ix.pending.len());
        }
        ix.finish();
        assert_eq!(ix.lines, 3);
        assert_eq!(ix.bytes, wire.len() as u64);
        assert_eq!(ix.warnings.len(), 1);
        assert_eq!(ix.warnings[0].line, 2);
        assert_eq!(ix.entries.len(), 1);
        assert_eq!(ix.entries[0].line, 3);
        assert_eq!(ix.entries[0].offset, (20 + big.len()) as u64);
    }

    #[test]
    fn a_dmail_worldline_sent_is_read_with_its_text() {
        let wire = concat!(
            "{\"type\":\"context.append_message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"plain\"}],\"origin\":{\"kind\":\"user\",\"clientMetadata\":[{\"other\":1}]}}}\n",
            "{\"type\":\"context.append_message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"go \"},{\"type\":\"text\",\"text\":\"back\"}],\"id\":\"wl-dmail-1\",\"origin\":{\"kind\":\"user\",\"clientMetadata\":[{\"worldline\":{\"kind\":\"dmail\",\"turns\":1}}]}}}\n",
        );
        let ix = WireIndex::parse("w", Path::new("/w"), wire.as_bytes());
        let dmails: Vec<Option<String>> = ix
            .entries
            .iter()
            .map(|e| match &e.kind {
                EntryKind::Message { dmail, .. } => dmail.clone(),
                _ => None,
            })
            .collect();
        assert_eq!(dmails, [None, Some("go back".to_string())]);
    }

    #[test]
    fn chunked_feeding_equals_whole() {
        let wire = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/kimi-code/e_subagent/home/sessions/wd_project_a287d994b8c4/session_c5662135-b3d4-49a3-aef5-5610ca8a9596/agents/main/wire.jsonl"
        ))
        .unwrap();
        let whole = WireIndex::parse("w", Path::new("/w"), &wire);
        let mut parts = WireIndex::new("w", "/w");
        for c in wire.chunks(77) {
            parts.feed(c);
        }
        parts.finish();
        assert_eq!(whole, parts);
        assert_eq!(whole.lines, 95);
    }
}
