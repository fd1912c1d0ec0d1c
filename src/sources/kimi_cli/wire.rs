//! kimi-cli's `wire.jsonl`: `{"timestamp", "message": {"type", "payload"}}`
//! lines, with a `metadata` header from 0.85 on (none in 0.59–0.84, which
//! also write no `TurnEnd`). Only the event types that carry times are
//! parsed; the rest are skipped by a look at the line's start.

use std::path::Path;

use serde_json::Value;

use crate::model::CallKey;
use crate::read::{guard, lenient};
use crate::sources::{StepTiming, TurnTiming, WireLog};

impl WireLog {
    /// Reads a wire file as a stream: wire files grow to hundreds of MB
    /// (every content part is an event) and only a few event types matter.
    /// `None` when it is missing or cannot be read (see [`WireLog::read_checked`]).
    pub fn read(path: &Path) -> Option<WireLog> {
        Self::read_checked(path).ok().flatten()
    }

    /// [`WireLog::read`], saying why a wire file that exists was not read:
    /// `Err` holds the reason for a warning (a FIFO, a device, a directory).
    /// The file is read as long as it was when opened, and a line is never
    /// held whole past [`MAX_WIRE_LINE`] bytes.
    pub fn read_checked(path: &Path) -> Result<Option<WireLog>, String> {
        use std::io::{BufRead, Read};
        let g = match guard::open_regular(path) {
            Ok(g) => g,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let mut reader = std::io::BufReader::with_capacity(1 << 20, g.file.take(g.len));
        let mut log = WireLog::default();
        let mut line = Vec::new();
        let mut cut = false;
        loop {
            let buf = match reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("read failed after {} turns: {e}", log.turns.len())),
            };
            if buf.is_empty() {
                break;
            }
            let (piece, end) = match memchr::memchr(b'\n', buf) {
                Some(nl) => (&buf[..nl], Some(nl + 1)),
                None => (buf, None),
            };
            let room = MAX_WIRE_LINE.saturating_sub(line.len());
            cut |= piece.len() > room;
            line.extend_from_slice(&piece[..piece.len().min(room)]);
            let used = end.unwrap_or(buf.len());
            reader.consume(used);
            if end.is_some() {
                log.push_kept(&line, cut);
                line.clear();
                cut = false;
            }
        }
        if !line.is_empty() {
            log.push_kept(&line, cut);
        }
        Ok(Some(log))
    }

    fn push_kept(&mut self, line: &[u8], cut: bool) {
        if cut {
            self.push_long_line(line);
        } else {
            self.push_line(line);
        }
    }

    /// A line cut at [`MAX_WIRE_LINE`]: what its start says is used (the
    /// event type, time, ids and step number kimi-cli writes first), the
    /// rest (a huge user input or tool output) is not needed for timing.
    fn push_long_line(&mut self, head: &[u8]) {
        let kind = event_type(head).and_then(|k| std::str::from_utf8(k).ok());
        let Some(kind @ ("ToolCall" | "ToolResult" | "TurnBegin" | "TurnEnd" | "StepBegin")) = kind
        else {
            return;
        };
        let Some(ts) = quick_number(head, br#""timestamp""#) else {
            return;
        };
        let mut payload = serde_json::Map::new();
        for key in ["id", "tool_call_id", "user_input"] {
            let quoted = format!("\"{key}\"");
            if let Some(v) = quick_string(head, quoted.as_bytes()) {
                payload.insert(key.into(), Value::from(v));
            }
        }
        if let Some(n) = quick_number(head, br#""n""#) {
            payload.insert("n".into(), Value::from(n as i64));
        }
        let v = serde_json::json!({"timestamp": ts, "message": {"type": kind, "payload": payload}});
        self.add(&v);
    }

    pub fn parse(bytes: &[u8]) -> WireLog {
        let mut log = WireLog::default();
        for line in bytes.split(|&b| b == b'\n') {
            log.push_line(line);
        }
        log
    }

    /// Adds one line (without its line end); the live tail feeds lines as
    /// they complete. Blank and broken lines are skipped, and so are event
    /// types that carry no timing (content parts, status updates) — found by
    /// a look at the line's start, without parsing it.
    pub fn push_line(&mut self, line: &[u8]) {
        let kind = event_type(line);
        match kind {
            Some(b"ToolCall") | Some(b"ToolResult") => {
                let key: &[u8] = if kind == Some(b"ToolCall") {
                    br#""id""#
                } else {
                    br#""tool_call_id""#
                };
                if let (Some(ts), Some(id)) = (
                    quick_number(line, br#""timestamp""#),
                    quick_string(line, key),
                ) {
                    self.tool_event(kind == Some(b"ToolCall"), ts, id);
                    return;
                }
            }
            Some(b"TurnBegin" | b"TurnEnd" | b"StepBegin" | b"metadata") | None => {}
            Some(_) => return,
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        if let Ok(v) = lenient::parse_value(line) {
            self.add(&v);
        }
    }

    fn tool_event(&mut self, call: bool, ts: f64, id: &str) {
        let entry = self.tool_calls.entry(CallKey::of(id)).or_default();
        let slot = if call { &mut entry.0 } else { &mut entry.1 };
        slot.get_or_insert(ts);
    }

    fn add(&mut self, v: &Value) {
        if v.get("type").and_then(Value::as_str) == Some("metadata") {
            self.protocol = v
                .get("protocol_version")
                .and_then(Value::as_str)
                .map(str::to_string);
            return;
        }
        let Some(ts) = v.get("timestamp").and_then(Value::as_f64) else {
            return;
        };
        let Some(msg) = v.get("message") else { return };
        let payload = msg.get("payload").unwrap_or(&Value::Null);
        match msg.get("type").and_then(Value::as_str).unwrap_or("") {
            "TurnBegin" => self.turns.push(TurnTiming {
                user_input: input_text(payload.get("user_input")),
                start: ts,
                end: None,
                steps: Vec::new(),
            }),
            "TurnEnd" => {
                if let Some(t) = self.turns.last_mut() {
                    t.end = Some(ts);
                    if let Some(s) = t.steps.last_mut() {
                        s.end.get_or_insert(ts);
                    }
                }
            }
            "StepBegin" => {
                if let Some(t) = self.turns.last_mut() {
                    if let Some(s) = t.steps.last_mut() {
                        s.end.get_or_insert(ts);
                    }
                    t.steps.push(StepTiming {
                        n: payload.get("n").and_then(Value::as_i64).unwrap_or(0),
                        start: ts,
                        end: None,
                    });
                }
            }
            "ToolCall" => {
                if let Some(id) = payload.get("id").and_then(Value::as_str) {
                    self.tool_event(true, ts, id);
                }
            }
            "ToolResult" => {
                if let Some(id) = payload.get("tool_call_id").and_then(Value::as_str) {
                    self.tool_event(false, ts, id);
                }
            }
            _ => {}
        }
    }
}

/// Longest wire line held in memory; the rest of a longer one is skipped.
pub const MAX_WIRE_LINE: usize = 4 << 20;

/// How far into a line the event type and the ids kimi-cli writes first are
/// looked for; past that the line is parsed in full.
const PEEK: usize = 256;

/// The first `"type"` value near the line's start: the event type of
/// `{"timestamp": …, "message": {"type": "…"`, or `metadata`.
fn event_type(line: &[u8]) -> Option<&[u8]> {
    quick_string(line, br#""type""#).map(str::as_bytes)
}

/// The value of `key` (given with its quotes) near the line's start, when
/// the value holds no escapes.
fn quick_string<'a>(line: &'a [u8], key: &[u8]) -> Option<&'a str> {
    let rest = after_key(line, key)?;
    let rest = rest.strip_prefix(b"\"")?;
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    (rest[end] == b'"')
        .then(|| std::str::from_utf8(&rest[..end]).ok())
        .flatten()
}

/// The number after `key` (given with its quotes) and its colon, near the
/// line's start.
fn quick_number(line: &[u8], key: &[u8]) -> Option<f64> {
    let rest = after_key(line, key)?;
    let end = rest
        .iter()
        .position(|b| !matches!(b, b'0'..=b'9' | b'.' | b'-' | b'+' | b'e' | b'E'))
        .unwrap_or(rest.len());
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

/// The bytes after `key` (quotes included), the colon and white space,
/// within the peek window.
fn after_key<'a>(line: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let window = &line[..line.len().min(PEEK)];
    let at = memchr::memmem::find(window, key)? + key.len();
    let rest = line[at..].trim_ascii_start().strip_prefix(b":")?;
    Some(rest.trim_ascii_start())
}

fn input_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcuts see exactly what a full parse of every line sees.
    #[test]
    fn quick_path_equals_full_parse_on_every_fixture() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut wires = Vec::new();
        let mut stack = vec![root];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.file_name().is_some_and(|n| n == "wire.jsonl") {
                    wires.push(p);
                }
            }
        }
        assert!(wires.len() >= 15);
        for w in wires {
            let bytes = std::fs::read(&w).unwrap();
            let mut full = WireLog::default();
            for line in bytes.split(|&b| b == b'\n') {
                if let Ok(v) = lenient::parse_value(line) {
                    full.add(&v);
                }
            }
            assert_eq!(WireLog::parse(&bytes), full, "{}", w.display());
            assert_eq!(WireLog::read(&w).unwrap(), full, "{}", w.display());
        }
    }

    #[test]
    fn peeks_types_ids_and_times() {
        let l = br#"{"timestamp": 17.5, "message": {"type": "ToolResult", "payload": {"tool_call_id": "c1", "return_value": {}}}}"#;
        assert_eq!(event_type(l), Some(&b"ToolResult"[..]));
        assert_eq!(quick_string(l, br#""tool_call_id""#), Some("c1"));
        assert_eq!(quick_number(l, br#""timestamp""#), Some(17.5));
        assert_eq!(quick_string(br#"{"type": "a\"b"}"#, br#""type""#), None);
    }
}
