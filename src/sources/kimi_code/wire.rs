//! Indexing one Kimi Code `agents/<id>/wire.jsonl`: lines are numbered over
//! the non-empty ones from 1; only the lines that shape branches or become
//! records are kept (with their byte range), the rest are counted. Fed in
//! chunks, so a live tail reads only new bytes; a rewrite starts it over.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
}

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
        let mut file = std::fs::File::open(path).map_err(|e| crate::Error::io(path, e))?;
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
        let mut n = 0;
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', chunk) {
            if self.pending.is_empty() {
                self.add_line(&chunk[start..nl], 1);
            } else {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(&chunk[start..nl]);
                self.add_line(&line, 1);
            }
            n += 1;
            start = nl + 1;
        }
        self.pending.extend_from_slice(&chunk[start..]);
        n
    }

    /// The file ended: a last line without its newline counts once whole.
    /// A live tail doesn't call this: Kimi Code writes whole lines, so a
    /// line without its end is still being written.
    pub fn finish(&mut self) {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.add_line(&line, 0);
        }
    }

    /// Bytes of a half-written last line.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
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
        let peek = peek_type(line);
        match peek {
            Some((ty, true)) if !WANTED.contains(&ty) => return,
            _ => {}
        }
        let value = match lenient::parse_value(line) {
            Ok(v) => v,
            Err(e) => {
                // Kimi Code stops reading here and repairs the file to its
                // valid prefix; worldline says so and reads on.
                self.warn(format!("skipped malformed line: {e}"));
                return;
            }
        };
        let Some(obj) = value.as_object() else {
            self.warn("skipped a line that is not a JSON object".to_string());
            return;
        };
        // 2.1.0's `kind:"event"` records duplicate messages: counted, never shown.
        if obj.get("kind").and_then(Value::as_str) == Some("event") {
            return;
        }
        let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
        let time = obj.get("time").and_then(Value::as_f64);
        let at = Entry {
            line: self.lines,
            offset,
            len,
            hash: xxh3_64(line),
            time,
            kind: EntryKind::Clear,
        };
        let kind = match ty {
            "metadata" => {
                self.protocol = str_of(&value, "protocol_version");
                return;
            }
            "agent.switched" => match str_of(&value, "branch") {
                Some(branch) => EntryKind::Switched {
                    branch,
                    base: value
                        .get("base")
                        .and_then(|b| Some((str_of(b, "branch")?, u32_of(b, "line")?))),
                    reason: str_of(&value, "reason"),
                    turns: u32_of(&value, "turns"),
                    legacy_undo_line: u32_of(&value, "legacyUndoLine"),
                },
                None => {
                    self.warn("agent.switched without a branch name".to_string());
                    return;
                }
            },
            "context.undo" => EntryKind::Undo {
                count: u32_of(&value, "count").unwrap_or(1),
            },
            "context.apply_compaction" => EntryKind::Compaction,
            "context.clear" => EntryKind::Clear,
            "forked" => EntryKind::Forked,
            "context.append_message" => match value.get("message") {
                Some(m) => message_kind(m),
                None => return,
            },
            "subagent.spawned" => match str_of(&value, "subagentId") {
                Some(agent_id) => EntryKind::Spawned {
                    agent_id,
                    name: str_of(&value, "subagentName"),
                    description: str_of(&value, "description"),
                    parent_tool_call_id: str_of(&value, "parentToolCallId"),
                },
                None => return,
            },
            "context.append_loop_event" => {
                let Some(ev) = value.get("event") else { return };
                return self.loop_event(ev, at);
            }
            _ => return,
        };
        self.entries.push(Entry { kind, ..at });
    }

    fn loop_event(&mut self, ev: &Value, at: Entry) {
        let ty = ev.get("type").and_then(Value::as_str).unwrap_or("");
        match ty {
            "step.begin" => {
                let Some(uuid) = str_of(ev, "uuid") else {
                    return;
                };
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
                let key = if ty == "step.end" { "uuid" } else { "stepUuid" };
                let Some(&i) = str_of(ev, key).and_then(|u| self.steps.get(&u)) else {
                    return;
                };
                let step = &mut self.entries[i];
                let end = at.offset + u64::from(at.len);
                step.len = u32::try_from(end - step.offset).unwrap_or(u32::MAX);
                step.hash = fold(step.hash, at.hash);
                if ty == "tool.call" {
                    let id = str_of(ev, "toolCallId").unwrap_or_default();
                    self.call_lines.push((id.clone(), at.line));
                    if let EntryKind::Step { tool_calls, .. } = &mut self.entries[i].kind {
                        tool_calls.push(ToolCallHead {
                            id,
                            name: str_of(ev, "name").unwrap_or_default(),
                            dmail: None,
                        });
                    }
                }
            }
            "tool.result" => {
                let Some(tool_call_id) = str_of(ev, "toolCallId") else {
                    return;
                };
                let agent = ev.get("result").and_then(agent_of_result);
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
        *self = WireIndex::new(self.name.clone(), self.path.clone());
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

fn message_kind(m: &Value) -> EntryKind {
    let role = Role::parse(m.get("role").and_then(Value::as_str).unwrap_or(""));
    let injection = m
        .get("origin")
        .and_then(|o| o.get("kind"))
        .and_then(Value::as_str)
        == Some("injection");
    let tool_calls = m
        .get("toolCalls")
        .or_else(|| m.get("tool_calls"))
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
    EntryKind::Message {
        role,
        injection,
        tool_calls,
        tool_call_id: str_of(m, "toolCallId").or_else(|| str_of(m, "tool_call_id")),
    }
}

/// `agent_id: agent-N` on the first line of an Agent call's output.
fn agent_of_result(result: &Value) -> Option<String> {
    let text = match result.get("output") {
        Some(Value::String(s)) => s.as_str(),
        _ => return None,
    };
    let first = text.lines().next()?;
    let id = first.strip_prefix("agent_id:")?.trim();
    (!id.is_empty()).then(|| id.to_string())
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
