//! Pulls out of one line only what the index needs. Bodies (content, tool
//! arguments) are skipped as raw JSON and looked into only when they may
//! carry a marker the graph interprets, so indexing never builds whole bodies.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::lenient;
use crate::model::{DMailArgs, Marker, Role, ToolCallHead};

/// The index fields of one record, before its position is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub role: Role,
    pub checkpoint: Option<i64>,
    pub tokens: Option<u64>,
    pub tool_calls: Vec<ToolCallHead>,
    pub tool_call_id: Option<String>,
    pub marker: Option<Marker>,
}

#[derive(Deserialize)]
struct RawHead<'a> {
    #[serde(borrow, default)]
    role: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    token_count: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_call_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_calls: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

pub const DMAIL_INJECTION_PREFIX: &str = "<system>You just got a D-Mail from your future self.";
pub const DMAIL_CONTENT_SEPARATOR: &str = "D-Mail content:\n\n";
pub const COMPACTION_PREFIX: &str = "<system>Previous context has been compacted.";
pub const DMAIL_ACCEPTED_TEXT: &str =
    "If you see this message, the D-Mail was NOT sent successfully";
pub const DMAIL_ERROR_PREFIX: &str = "<system>ERROR: Failed to send D-Mail. Error: ";

/// Reads a line's index fields, or says why kimi-cli would skip the line.
pub fn read_head(line: &[u8]) -> Result<Head, String> {
    // serde would also fill a struct from a JSON array; kimi wants an object.
    let first = line.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return match lenient::parse_value(line) {
            Ok(_) => Err("line is not a JSON object".to_string()),
            Err(e) => Err(e),
        };
    }
    match serde_json::from_slice::<RawHead>(line) {
        Ok(raw) => head_from_raw(&raw),
        // Odd lines (control characters, bad UTF-8, duplicate keys, not an
        // object) take the slow, fully lenient road.
        Err(_) => head_from_value(lenient::parse_value(line)?),
    }
}

fn head_from_raw(raw: &RawHead) -> Result<Head, String> {
    let role: String = raw
        .role
        .and_then(|r| serde_json::from_str(r.get()).ok())
        .ok_or_else(|| "record has no string \"role\"".to_string())?;
    let role = Role::parse(&role);
    let num = |r: Option<&RawValue>| r.and_then(|r| serde_json::from_str::<Value>(r.get()).ok());
    let tool_calls = match raw.tool_calls {
        Some(r) if role == Role::Assistant => {
            tool_call_heads(&serde_json::from_str::<Value>(r.get()).unwrap_or(Value::Null))
        }
        _ => Vec::new(),
    };
    let content = raw.content.map(|c| c.get().as_bytes());
    Ok(Head {
        checkpoint: checkpoint_of(&role, num(raw.id).as_ref()),
        tokens: num(raw.token_count).and_then(|v| v.as_u64()),
        tool_call_id: raw
            .tool_call_id
            .and_then(|r| serde_json::from_str::<String>(r.get()).ok()),
        marker: content.and_then(|c| marker_from_raw(&role, c)),
        tool_calls,
        role,
    })
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
    let worth_parsing = match role {
        Role::User => {
            memchr::memmem::find(content, b"CHECKPOINT ").is_some()
                || memchr::memmem::find(content, b"D-Mail from your future self").is_some()
                || memchr::memmem::find(content, b"Previous context has been compacted").is_some()
        }
        Role::Tool => {
            memchr::memmem::find(content, b"D-Mail").is_some()
                || memchr::memmem::find(content, b"agent_id: ").is_some()
        }
        _ => false,
    };
    if !worth_parsing {
        return None;
    }
    let value = lenient::parse_value(content).ok()?;
    marker_from_content(role, &value)
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
    if text.contains(DMAIL_ACCEPTED_TEXT) {
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
        let h = read_head(br#"{"role": "_checkpoint", "id": 3}"#).unwrap();
        assert_eq!((h.role, h.checkpoint), (Role::Checkpoint, Some(3)));
        let h = read_head(br#"{"role": "_usage", "token_count": 937}"#).unwrap();
        assert_eq!(h.tokens, Some(937));
        let h = read_head(br#"{"role":"user","content":"<system>CHECKPOINT 2</system>"}"#).unwrap();
        assert_eq!(h.marker, Some(Marker::CheckpointNote(2)));
        let line = format!(
            r#"{{"role":"user","content":"{} blah. D-Mail content:\n\nhello\nworld</system>"}}"#,
            DMAIL_INJECTION_PREFIX
        );
        let h = read_head(line.as_bytes()).unwrap();
        assert_eq!(
            h.marker,
            Some(Marker::DMailInjection("hello\nworld".into()))
        );
        let h = read_head(br#"{"role":"tool","content":"<system>ERROR: Failed to send D-Mail. Error: Only one D-Mail can be sent at a time</system>","tool_call_id":"c3"}"#).unwrap();
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
        let h = read_head(br#"{"role":"assistant","content":"x","tool_calls":[{"type":"function","id":"c2","function":{"name":"SendDMail","arguments":"{\"message\": \"m\", \"checkpoint_id\": 1}"}}]}"#).unwrap();
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
