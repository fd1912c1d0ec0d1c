//! Pulls out of one line only what the index needs. Bodies (content, tool
//! arguments) are skipped as raw JSON and looked into only when they may
//! carry a marker the graph interprets, so indexing never builds whole bodies.

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use xxhash_rust::xxh3::xxh3_64;

use super::{canonical_hash, lenient, scan};
use crate::model::{DMailArgs, Marker, Role, ToolCallHead};

/// The index fields of one record, before its position is known.
pub use crate::model::RecordParts as Head;

#[derive(Deserialize)]
struct RawCall<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(borrow, default)]
    function: Option<RawFunction<'a>>,
}

#[derive(Deserialize)]
struct RawFunction<'a> {
    #[serde(default)]
    name: Option<String>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// How much of `content` the marker check looks at.
pub(crate) const MARKER_WINDOW: usize = 1024;

pub const DMAIL_INJECTION_PREFIX: &str = "<system>You just got a D-Mail from your future self.";
pub const DMAIL_CONTENT_SEPARATOR: &str = "D-Mail content:\n\n";
pub const COMPACTION_PREFIX: &str = "<system>Previous context has been compacted.";
pub const DMAIL_ACCEPTED_TEXT: &str =
    "If you see this message, the D-Mail was NOT sent successfully";
pub const DMAIL_ERROR_PREFIX: &str = "<system>ERROR: Failed to send D-Mail. Error: ";
/// kimi-cli 0.35–0.5x's wording of the accepted result (`ERROR:` and a
/// lowercase "not", same meaning).
pub const DMAIL_ACCEPTED_TEXT_OLD: &str =
    "If you see this message, the D-Mail was not sent successfully";

/// Reads a line's index fields and its record hash, or says why kimi-cli
/// would skip the line.
pub fn read_head(line: &[u8]) -> Result<(Head, u64), String> {
    if let Some(fields) = scan::scan_object(line) {
        if let Some(head) = head_from_fields(&fields) {
            let hash = if fields.spaced {
                canonical_hash(line)
            } else {
                // Already canonical: one fast pass (equal to canonical_hash).
                xxh3_64(line.trim_ascii())
            };
            return Ok((head, hash));
        }
    }
    // Odd lines (escaped keys, deep nesting, a role that isn't a plain
    // string, not an object, not JSON) take the slow, exact road.
    let head = head_from_value(lenient::parse_value(line)?)?;
    Ok((head, canonical_hash(line)))
}

fn head_from_fields(f: &scan::Fields) -> Option<Head> {
    let role = match f.role? {
        // The common roles, without allocating a string per record.
        br#""user""# => Role::User,
        br#""assistant""# => Role::Assistant,
        br#""tool""# => Role::Tool,
        br#""_checkpoint""# => Role::Checkpoint,
        br#""_usage""# => Role::Usage,
        other => Role::parse(&serde_json::from_slice::<String>(other).ok()?),
    };
    let num = |raw: Option<&[u8]>| {
        raw.and_then(|r| match std::str::from_utf8(r).ok()?.parse::<i64>() {
            Ok(n) => Some(Value::from(n)),
            Err(_) => serde_json::from_slice::<Value>(r).ok(),
        })
    };
    let tool_calls = match f.tool_calls {
        Some(raw) if role == Role::Assistant => raw_tool_call_heads(raw),
        _ => Vec::new(),
    };
    Some(Head {
        checkpoint: checkpoint_of(&role, num(f.id).as_ref()),
        tokens: num(f.token_count).and_then(|v| v.as_u64()),
        tool_call_id: f
            .tool_call_id
            .and_then(|r| serde_json::from_slice::<String>(r).ok()),
        marker: f.content.and_then(|c| marker_from_raw(&role, c)),
        tool_calls,
        role,
    })
}

/// The index fields of a line read in pieces (`stream`): `fields` hold the
/// values kept whole; `content_start` is the beginning of a `content` too
/// long to keep, `calls_cut` says `tool_calls` was too long to keep. A cut
/// value still gets what its beginning allows: the marker window check, and
/// a note saying what couldn't be read.
pub fn head_from_parts(
    fields: &scan::Fields,
    content_start: Option<&[u8]>,
    calls_cut: bool,
) -> Result<(Head, Option<String>), String> {
    // Same words as the exact path gives a record without a usable role.
    let mut head = head_from_fields(fields).ok_or("record has no string \"role\"")?;
    let mut note = None;
    if let Some(start) = content_start.filter(|c| worth_parsing(&head.role, window(c))) {
        match marker_from_leading_parts(&head.role, start) {
            Some(marker) => head.marker = marker,
            None => {
                note = Some(
                    "content too long to look into; a marker it may hold is not read".to_string(),
                )
            }
        }
    }
    if calls_cut && head.role == Role::Assistant {
        note = Some("tool calls too long to index; this record's calls are not listed".to_string());
    }
    Ok((head, note))
}

/// The marker of a content array cut short, when its first text part lies
/// whole in the kept beginning (a text part before a big image); `None`
/// when that can't be told.
fn marker_from_leading_parts(role: &Role, start: &[u8]) -> Option<Option<Marker>> {
    for item in scan::leading_items(start) {
        let part = Value::Array(vec![lenient::parse_value(item).ok()?]);
        if first_text(&part).is_some() {
            return Some(marker_from_content(role, &part));
        }
    }
    None
}

/// Tool calls without building their (possibly large) arguments, except
/// SendDMail's.
fn raw_tool_call_heads(raw: &[u8]) -> Vec<ToolCallHead> {
    let Ok(calls) = serde_json::from_slice::<Vec<RawCall>>(raw) else {
        // Not the usual shape: the value-based reader copes with anything.
        return serde_json::from_slice::<Value>(raw)
            .map(|v| tool_call_heads(&v))
            .unwrap_or_default();
    };
    calls
        .into_iter()
        .map(|c| {
            let (name, args) = match c.function {
                Some(f) => (f.name.unwrap_or_default(), f.arguments),
                None => (String::new(), None),
            };
            let dmail = (name == "SendDMail")
                .then(|| args.and_then(|a| serde_json::from_str::<Value>(a.get()).ok()))
                .flatten()
                .and_then(|v| dmail_args(&v));
            ToolCallHead {
                id: c.id.unwrap_or_default(),
                name,
                dmail,
            }
        })
        .collect()
}

fn head_from_value(v: Value) -> Result<Head, String> {
    let Value::Object(map) = &v else {
        return Err("line is not a JSON object".to_string());
    };
    let role = match map.get("role") {
        Some(Value::String(s)) => Role::parse(s),
        _ => return Err("record has no string \"role\"".to_string()),
    };
    let tool_calls = match (&role, map.get("tool_calls")) {
        (Role::Assistant, Some(calls)) => tool_call_heads(calls),
        _ => Vec::new(),
    };
    Ok(Head {
        checkpoint: checkpoint_of(&role, map.get("id")),
        tokens: map.get("token_count").and_then(Value::as_u64),
        tool_call_id: map
            .get("tool_call_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        marker: map
            .get("content")
            .and_then(|c| marker_from_content(&role, c)),
        tool_calls,
        role,
    })
}

fn checkpoint_of(role: &Role, id: Option<&Value>) -> Option<i64> {
    (*role == Role::Checkpoint)
        .then(|| id.and_then(Value::as_i64))
        .flatten()
}

fn tool_call_heads(calls: &Value) -> Vec<ToolCallHead> {
    let Some(calls) = calls.as_array() else {
        return Vec::new();
    };
    calls
        .iter()
        .map(|call| {
            let function = call.get("function");
            let name = function
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let dmail = if name == "SendDMail" {
                function
                    .and_then(|f| f.get("arguments"))
                    .and_then(dmail_args)
            } else {
                None
            };
            ToolCallHead {
                id: call
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                name,
                dmail,
            }
        })
        .collect()
}

/// SendDMail arguments arrive as JSON text (or, in odd files, an object).
fn dmail_args(args: &Value) -> Option<DMailArgs> {
    let parsed;
    let obj = match args {
        Value::String(text) => {
            parsed = lenient::parse_value(text.as_bytes()).ok()?;
            &parsed
        }
        other => other,
    };
    Some(DMailArgs {
        message: obj.get("message")?.as_str()?.to_string(),
        checkpoint_id: obj.get("checkpoint_id")?.as_i64()?,
    })
}

/// Cheap byte checks first: only content that may hold a marker is parsed.
fn marker_from_raw(role: &Role, content: &[u8]) -> Option<Marker> {
    if !worth_parsing(role, window(content)) {
        return None;
    }
    let value = lenient::parse_value(content).ok()?;
    marker_from_content(role, &value)
}

/// Every marker kimi-cli writes opens the content's first text, so a look
/// at the start is enough (and cheap next to a 20 MB image).
fn window(content: &[u8]) -> &[u8] {
    &content[..content.len().min(MARKER_WINDOW)]
}

/// The words a marker's text holds, looked for in every content window:
/// finders built once (building one costs more than a search of 1 KiB).
static CHECKPOINT_WORD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"CHECKPOINT "));
static DMAIL_INJECTION_WORDS: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"D-Mail from your future self"));
static COMPACTION_WORDS: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"Previous context has been compacted"));
static DMAIL_WORD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"D-Mail"));
static AGENT_ID_WORD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"agent_id: "));

fn worth_parsing(role: &Role, head: &[u8]) -> bool {
    let has = |f: &Finder| f.find(head).is_some();
    match role {
        Role::User => {
            has(&CHECKPOINT_WORD) || has(&DMAIL_INJECTION_WORDS) || has(&COMPACTION_WORDS)
        }
        Role::Tool => has(&DMAIL_WORD) || has(&AGENT_ID_WORD),
        // kimi-cli 0.35–0.5x writes the compaction summary as an assistant
        // message.
        Role::Assistant => has(&COMPACTION_WORDS),
        _ => false,
    }
}

fn first_text(content: &Value) -> Option<&str> {
    match content {
        Value::String(s) => Some(s),
        Value::Array(parts) => parts.iter().find_map(|p| {
            (p.get("type").and_then(Value::as_str) == Some("text"))
                .then(|| p.get("text").and_then(Value::as_str))
                .flatten()
        }),
        _ => None,
    }
}

fn marker_from_content(role: &Role, content: &Value) -> Option<Marker> {
    let text = first_text(content)?;
    match role {
        Role::User => user_marker(text),
        Role::Tool => tool_marker(text),
        Role::Assistant if text.starts_with(COMPACTION_PREFIX) => Some(Marker::Compaction),
        _ => None,
    }
}

fn user_marker(text: &str) -> Option<Marker> {
    if let Some(n) = text
        .strip_prefix("<system>CHECKPOINT ")
        .and_then(|rest| rest.strip_suffix("</system>"))
        .and_then(|n| n.parse::<i64>().ok())
    {
        return Some(Marker::CheckpointNote(n));
    }
    if text.starts_with(DMAIL_INJECTION_PREFIX) {
        let body = text
            .split_once(DMAIL_CONTENT_SEPARATOR)
            .map(|(_, b)| b)
            .unwrap_or("");
        let body = body.strip_suffix("</system>").unwrap_or(body);
        return Some(Marker::DMailInjection(body.to_string()));
    }
    if text.starts_with(COMPACTION_PREFIX) {
        return Some(Marker::Compaction);
    }
    None
}

fn tool_marker(text: &str) -> Option<Marker> {
    if let Some(reason) = text.strip_prefix(DMAIL_ERROR_PREFIX) {
        let reason = reason.strip_suffix("</system>").unwrap_or(reason);
        return Some(Marker::DMailResult(Err(reason.to_string())));
    }
    if text.contains(DMAIL_ACCEPTED_TEXT) || text.contains(DMAIL_ACCEPTED_TEXT_OLD) {
        return Some(Marker::DMailResult(Ok(())));
    }
    text.lines()
        .find_map(|l| l.trim().strip_prefix("agent_id: "))
        .map(|id| Marker::AgentResult(id.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_checkpoints_usage_and_markers() {
        let h = read_head(br#"{"role": "_checkpoint", "id": 3}"#).unwrap().0;
        assert_eq!((h.role, h.checkpoint), (Role::Checkpoint, Some(3)));
        let h = read_head(br#"{"role": "_usage", "token_count": 937}"#)
            .unwrap()
            .0;
        assert_eq!(h.tokens, Some(937));
        let h = read_head(br#"{"role":"user","content":"<system>CHECKPOINT 2</system>"}"#)
            .unwrap()
            .0;
        assert_eq!(h.marker, Some(Marker::CheckpointNote(2)));
        let line = format!(
            r#"{{"role":"user","content":"{} blah. D-Mail content:\n\nhello\nworld</system>"}}"#,
            DMAIL_INJECTION_PREFIX
        );
        let h = read_head(line.as_bytes()).unwrap().0;
        assert_eq!(
            h.marker,
            Some(Marker::DMailInjection("hello\nworld".into()))
        );
        let h = read_head(br#"{"role":"tool","content":"<system>ERROR: Failed to send D-Mail. Error: Only one D-Mail can be sent at a time</system>","tool_call_id":"c3"}"#).unwrap().0;
        assert_eq!(
            h.marker,
            Some(Marker::DMailResult(Err(
                "Only one D-Mail can be sent at a time".into()
            )))
        );
        assert_eq!(h.tool_call_id.as_deref(), Some("c3"));
    }

    #[test]
    fn reads_send_dmail_arguments() {
        let h = read_head(br#"{"role":"assistant","content":"x","tool_calls":[{"type":"function","id":"c2","function":{"name":"SendDMail","arguments":"{\"message\": \"m\", \"checkpoint_id\": 1}"}}]}"#).unwrap().0;
        assert_eq!(h.tool_calls.len(), 1);
        assert_eq!(
            h.tool_calls[0].dmail,
            Some(DMailArgs {
                message: "m".into(),
                checkpoint_id: 1
            })
        );
    }

    #[test]
    fn rejects_what_kimi_skips() {
        assert!(read_head(b"[1,2]").is_err());
        assert!(read_head(br#"["user"]"#).is_err());
        assert!(read_head(br#"{"role": 5}"#).is_err());
        assert!(read_head(br#"{"content": "x"}"#).is_err());
        assert!(read_head(b"garbage").is_err());
        // Raw control characters are fine, like Python's strict=False.
        assert!(read_head(b"{\"role\":\"user\",\"content\":\"a\x01b\"}").is_ok());
    }
}
