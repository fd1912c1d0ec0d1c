//! kimi-cli's `wire.jsonl`: `{"timestamp", "message": {"type", "payload"}}`
//! lines, with a `metadata` header from 0.85 on (none in 0.59–0.84, which
//! also write no `TurnEnd`). Only what the graph reads is taken: turn and
//! step starts, tool call and result times. kimi-cli writes the event type,
//! time and ids first, so a look at a line's start reads them without
//! parsing; a line spelt otherwise is parsed in full.

use std::path::Path;
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde_json::Value;

use crate::read::{guard, lenient};
use crate::sources::WireLog;

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
        let mut reader = std::io::BufReader::with_capacity(256 << 10, g.file.take(g.len));
        let mut log = WireLog::default();
        // The start of a line that runs past the buffer, and whether it was
        // cut at MAX_WIRE_LINE.
        let mut line = Vec::new();
        let mut cut = false;
        let mut lines = 0u64;
        loop {
            let buf = match reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("read failed after {lines} lines: {e}")),
            };
            if buf.is_empty() {
                break;
            }
            let mut start = 0;
            for nl in memchr::memchr_iter(b'\n', buf) {
                if start == 0 && (!line.is_empty() || cut) {
                    keep(&mut line, &mut cut, &buf[..nl]);
                    log.push_kept(&line, cut);
                    line.clear();
                    cut = false;
                } else {
                    log.push_line(&buf[start..nl]);
                }
                lines += 1;
                start = nl + 1;
            }
            keep(&mut line, &mut cut, &buf[start..]);
            let used = buf.len();
            reader.consume(used);
        }
        if !line.is_empty() {
            log.push_kept(&line, cut);
        }
        Ok(Some(log))
    }

    pub fn push_kept(&mut self, line: &[u8], cut: bool) {
        if cut {
            self.push_long_line(line);
        } else {
            self.push_line(line);
        }
    }

    /// A line cut at [`MAX_WIRE_LINE`]: what its start says is used (the
    /// event type, time, ids kimi-cli writes first), the rest (a huge user
    /// input or tool output) is not needed for timing.
    fn push_long_line(&mut self, head: &[u8]) {
        let Some(kind) = event_type(head) else { return };
        if matches!(kind, Kind::Other | Kind::Metadata | Kind::TurnEnd) {
            return;
        }
        let Some(ts) = quick_number(head, &TIMESTAMP) else {
            return;
        };
        if kind == Kind::TurnBegin {
            // Only a plain string start is read; anything else is no slash command.
            self.turn_begin(ts, quick_slash(head) == Some(true));
        } else {
            self.push_quick(kind, head, ts);
        }
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
        match event_type(line) {
            Some(Kind::Other | Kind::TurnEnd) => return,
            Some(kind @ (Kind::ToolCall | Kind::ToolResult | Kind::StepBegin)) => {
                if let Some(ts) = quick_number(line, &TIMESTAMP) {
                    if self.push_quick(kind, line, ts) {
                        return;
                    }
                }
            }
            Some(Kind::TurnBegin) => {
                if let (Some(ts), Some(slash)) = (quick_number(line, &TIMESTAMP), quick_slash(line))
                {
                    self.turn_begin(ts, slash);
                    return;
                }
            }
            Some(Kind::Metadata) | None => {}
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        if let Ok(v) = lenient::parse_value(line) {
            self.add(&v);
        }
    }

    /// A tool event or step start read from the line's start; `false` when
    /// an id isn't spelt plainly there.
    fn push_quick(&mut self, kind: Kind, line: &[u8], ts: f64) -> bool {
        let key = match kind {
            Kind::StepBegin => {
                self.step_begin(ts);
                return true;
            }
            Kind::ToolCall => &ID,
            Kind::ToolResult => &TOOL_CALL_ID,
            _ => return false,
        };
        match quick_string(line, key) {
            Some(id) => {
                self.tool_event(kind == Kind::ToolCall, ts, id);
                true
            }
            None => false,
        }
    }

    fn add(&mut self, v: &Value) {
        if v.get("type").and_then(Value::as_str) == Some("metadata") {
            self.protocol = v
                .get("protocol_version")
                .and_then(Value::as_str)
                .map(str::to_string);
            return;
        }
        let Some(ts) = v
            .get("timestamp")
            .and_then(Value::as_f64)
            .and_then(crate::sources::plausible_time)
        else {
            return;
        };
        let Some(msg) = v.get("message") else { return };
        let payload = msg.get("payload").unwrap_or(&Value::Null);
        match msg.get("type").and_then(Value::as_str).unwrap_or("") {
            "TurnBegin" => self.turn_begin(ts, is_slash_command(payload.get("user_input"))),
            "StepBegin" => self.step_begin(ts),
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

/// Appends `piece` to a line being held, up to [`MAX_WIRE_LINE`] bytes.
pub fn keep(line: &mut Vec<u8>, cut: &mut bool, piece: &[u8]) {
    let room = MAX_WIRE_LINE.saturating_sub(line.len());
    *cut |= piece.len() > room;
    line.extend_from_slice(&piece[..piece.len().min(room)]);
}

/// Longest wire line held in memory; the rest of a longer one is skipped.
pub const MAX_WIRE_LINE: usize = 4 << 20;

/// How far into a line the event type and the ids kimi-cli writes first are
/// looked for; past that the line is parsed in full.
const PEEK: usize = 256;

/// The keys looked for, quotes included; built once (a finder per call
/// costs more than the search on a short line).
static TYPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(br#""type""#));
static TIMESTAMP: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(br#""timestamp""#));
static ID: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(br#""id""#));
static TOOL_CALL_ID: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(br#""tool_call_id""#));
static USER_INPUT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(br#""user_input""#));

/// The event types the log tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Metadata,
    TurnBegin,
    TurnEnd,
    StepBegin,
    ToolCall,
    ToolResult,
    /// Carries no time the graph reads.
    Other,
}

/// The first `"type"` value near the line's start: the event type of
/// `{"timestamp": …, "message": {"type": "…"`, or `metadata`.
fn event_type(line: &[u8]) -> Option<Kind> {
    Some(match quick_string(line, &TYPE)?.as_bytes() {
        b"metadata" => Kind::Metadata,
        b"TurnBegin" => Kind::TurnBegin,
        b"TurnEnd" => Kind::TurnEnd,
        b"StepBegin" => Kind::StepBegin,
        b"ToolCall" => Kind::ToolCall,
        b"ToolResult" => Kind::ToolResult,
        _ => Kind::Other,
    })
}

/// The value of `key` near the line's start, when the value holds no
/// escapes.
fn quick_string<'a>(line: &'a [u8], key: &Finder) -> Option<&'a str> {
    let rest = after_key(line, key)?;
    let rest = rest.strip_prefix(b"\"")?;
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    (rest[end] == b'"')
        .then(|| std::str::from_utf8(&rest[..end]).ok())
        .flatten()
}

/// Does a `TurnBegin`'s `user_input`, a string near the line's start,
/// begin with `/`? `None` when it is not a string seen there (parts, or
/// past the peek window).
fn quick_slash(line: &[u8]) -> Option<bool> {
    let rest = after_key(line, &USER_INPUT)?.strip_prefix(b"\"")?;
    Some(match rest {
        [b'/', ..] | [b'\\', b'/', ..] => true,
        [b'\\', b'u', hex @ ..] if hex.len() >= 4 => hex[..4].eq_ignore_ascii_case(b"002f"),
        [b'\\', _, ..] | [_, ..] => false,
        // The string runs past what was kept of the line: nothing to read.
        [] => return None,
    })
}

/// The number after `key` and its colon, near the line's start.
fn quick_number(line: &[u8], key: &Finder) -> Option<f64> {
    let rest = after_key(line, key)?;
    let end = rest
        .iter()
        .position(|b| !matches!(b, b'0'..=b'9' | b'.' | b'-' | b'+' | b'e' | b'E'))
        .unwrap_or(rest.len());
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

/// The bytes after `key` (quotes included), the colon and white space,
/// within the peek window.
fn after_key<'a>(line: &'a [u8], key: &Finder) -> Option<&'a [u8]> {
    let window = &line[..line.len().min(PEEK)];
    let at = key.find(window)? + key.needle().len();
    let rest = line[at..].trim_ascii_start().strip_prefix(b":")?;
    Some(rest.trim_ascii_start())
}

/// A turn's input is a slash command when its text starts with `/`: a
/// string, or the text parts joined by spaces.
fn is_slash_command(v: Option<&Value>) -> bool {
    match v {
        Some(Value::String(s)) => s.starts_with('/'),
        Some(Value::Array(parts)) => parts
            .iter()
            .find_map(|p| p.get("text").and_then(Value::as_str))
            .is_some_and(|t| t.starts_with('/')),
        _ => false,
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
        assert_eq!(event_type(l), Some(Kind::ToolResult));
        assert_eq!(quick_string(l, &TOOL_CALL_ID), Some("c1"));
        assert_eq!(quick_number(l, &TIMESTAMP), Some(17.5));
        assert_eq!(quick_string(br#"{"type": "a\"b"}"#, &TYPE), None);
    }

    /// Every spelling of a leading `/` is a slash command, as a full parse
    /// of the line says.
    #[test]
    fn slash_commands_by_their_first_character() {
        for (input, slash) in [
            (r#""/compact""#, true),
            (r#""\/compact""#, true),
            (r#""\u002Fcompact""#, true),
            (r#""\u0041/x""#, false),
            (r#""\n/x""#, false),
            (r#""""#, false),
            (r#""hi /x""#, false),
            (r#"[{"type": "text", "text": "/x"}]"#, true),
            (
                r#"[{"type": "image_url"}, {"type": "text", "text": "a"}]"#,
                false,
            ),
        ] {
            let line = format!(
                r#"{{"timestamp": 3.0, "message": {{"type": "TurnBegin", "payload": {{"user_input": {input}}}}}}}"#
            );
            let step =
                r#"{"timestamp": 4.0, "message": {"type": "StepBegin", "payload": {"n": 1}}}"#;
            let mut quick = WireLog::default();
            quick.push_line(line.as_bytes());
            let mut full = WireLog::default();
            full.add(&serde_json::from_str(&line).unwrap());
            assert_eq!(quick, full, "{input}");
            let want: &[f64] = if slash { &[] } else { &[3.0] };
            assert_eq!(quick.checkpoint_times(), want, "{input}");
            quick.push_line(step.as_bytes());
            assert_eq!(quick.checkpoint_times(), &[3.0, 4.0], "{input}");
        }
    }
}
