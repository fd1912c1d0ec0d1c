//! What a world line shows: its entries as the project's record index
//! (byte ranges into the `.jsonl`, bodies loaded on demand), and each
//! body rebuilt as a message: prompts, replies with thinking and tool
//! calls, tool results (`toolUseResult` string or object), attachments,
//! compactions, task notifications.

use std::path::Path;

use serde_json::{json, Value};
use xxhash_rust::xxh3::xxh3_64;

use super::scan::{Kind, Scan};
use super::tree::{Line, Rec};
use crate::error::{Error, Result};
use crate::model::{Body, Marker, RecordMeta, RecordParts, Role, ToolCallHead};
use crate::read::{lenient, FileIndex};
use crate::sources::Times;

/// Hash of several lines read as one record.
pub fn fold(acc: u64, line: u64) -> u64 {
    xxh3_64(&[acc.to_le_bytes(), line.to_le_bytes()].concat())
}

/// The role a row shows an entry with.
pub fn role_of(kind: Kind) -> Role {
    match kind {
        Kind::Prompt | Kind::Command => Role::User,
        Kind::Result => Role::Tool,
        Kind::Assistant => Role::Assistant,
        _ => Role::System,
    }
}

/// The index entry of one record: its entry, or an entry and the other
/// parallel `tool_use` entries of its message up to `rec.upto()`.
pub fn record_meta(scan: &Scan, rec: Rec) -> RecordMeta {
    let entries = &scan.entries;
    let e = &entries[rec.entry()];
    let head = |(id, name): (&str, &str)| ToolCallHead {
        id: id.to_string(),
        name: name.to_string(),
        dmail: None,
    };
    let mut calls: Vec<ToolCallHead> = scan.calls(e).map(head).collect();
    let (len, hash) = if rec.upto() > rec.entry() {
        let mut hash = e.hash;
        for x in &entries[rec.entry() + 1..=rec.upto()] {
            if x.kind == Kind::Assistant && x.msg == e.msg {
                hash = fold(hash, x.hash);
                calls.extend(scan.calls(x).map(head));
            }
        }
        let end = &entries[rec.upto()];
        let len = (end.offset + u64::from(end.len)).saturating_sub(e.offset);
        (u32::try_from(len).unwrap_or(u32::MAX), hash)
    } else {
        (e.len, e.hash)
    };
    let parts = RecordParts {
        role: role_of(e.kind),
        checkpoint: None,
        tokens: None,
        tool_calls: calls,
        tool_call_id: scan.result_of(e).map(str::to_string),
        marker: match e.kind {
            Kind::Boundary => Some(Marker::Compaction),
            Kind::Result => scan.agent(e).map(|a| Marker::AgentResult(a.to_string())),
            _ => None,
        },
    };
    RecordMeta::new(e.offset, len, e.line, hash, parts)
}

/// A world line's records as one index, with its own records' times
/// (none without `times`). `base`: its parent line's records, of which it
/// shares the first `line.shared`: those are the parent's storage, not a
/// copy, and only its own records are timed.
pub fn line_index(
    scan: &Scan,
    line: &Line,
    base: Option<&crate::read::Records>,
    times: bool,
) -> (FileIndex, Times) {
    let (mut records, shared) = match base {
        Some(b) if b.len() >= line.shared => (b.prefix(line.shared), line.shared),
        _ => (crate::read::Records::new(), 0),
    };
    // Its own records in one allocation: a buffer doubling to a million
    // records leaves the freed halves resident.
    records.reserve_exact(line.records.len().saturating_sub(shared));
    let mut when = Times::default();
    for (i, &r) in line.records.iter().enumerate().skip(shared) {
        records.push(record_meta(scan, r));
        if times {
            when.set(i, time_of(scan, r));
        }
    }
    let index = FileIndex {
        name: scan.name.clone(),
        path: scan.path.clone(),
        records,
        warnings: Vec::new(),
        dropped_warnings: 0,
        bytes: scan.bytes,
    };
    (index, when)
}

/// A record's time: its entry's `timestamp`.
pub fn time_of(scan: &Scan, r: Rec) -> Option<f64> {
    let t = scan.entries[r.entry()].time;
    (!t.is_nan()).then_some(t)
}

/// Loads a record's body from its file. A range that changed on disk
/// since it was indexed is reported, not trusted.
pub fn load_body(path: &Path, meta: &RecordMeta) -> Result<Body> {
    let bytes = crate::read::load_line(path, meta)?;
    let changed = || {
        Error::Other(format!(
            "{}:{}: the line changed on disk since it was read",
            path.display(),
            meta.line()
        ))
    };
    let parse = |l: &[u8]| {
        lenient::parse_value(l)
            .map_err(|e| Error::Other(format!("{}:{}: {e}", path.display(), meta.line())))
    };
    let mut lines = bytes
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let first_bytes = lines.next().ok_or_else(changed)?;
    let first = parse(first_bytes)?;
    let mut hash = xxh3_64(first_bytes);
    let mut values = vec![first];
    // A record spanning parallel calls: the other entries of its message.
    let msg = values[0].pointer("/message/id").cloned();
    for l in lines {
        let Ok(v) = lenient::parse_value(l) else {
            continue;
        };
        let same = v.get("type").and_then(Value::as_str) == Some("assistant")
            && v.get("uuid").is_some()
            && msg.is_some()
            && v.pointer("/message/id") == msg.as_ref();
        if same {
            hash = fold(hash, xxh3_64(l));
            values.push(v);
        }
    }
    if hash != meta.hash() {
        return Err(changed());
    }
    let mut body = if values.len() == 1 {
        Body::from_value(message_of(&values[0]))
    } else {
        let mut content = Vec::new();
        let mut calls = Vec::new();
        for v in &values {
            let m = message_of(v);
            if let Some(Value::Array(c)) = m.get("content") {
                content.extend(c.iter().cloned());
            }
            if let Some(Value::Array(c)) = m.get("tool_calls") {
                calls.extend(c.iter().cloned());
            }
        }
        Body::from_value(json!({"role": "assistant", "content": content, "tool_calls": calls}))
    };
    body.raw = if values.len() == 1 {
        values.pop().unwrap_or_default()
    } else {
        Value::Array(values)
    };
    Ok(body)
}

/// One entry as a message `Body::from_value` reads.
pub fn message_of(v: &Value) -> Value {
    let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
    let content = v.pointer("/message/content");
    match ty {
        "assistant" => {
            let mut parts = Vec::new();
            let mut calls = Vec::new();
            for b in blocks(content) {
                match b.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text" => parts.push(json!({"type": "text", "text": b.get("text")})),
                    "thinking" => parts.push(json!({"type": "think", "think": b.get("thinking")})),
                    "redacted_thinking" => {
                        parts.push(json!({"type": "think", "think": "(redacted thinking)"}))
                    }
                    "tool_use" => calls.push(json!({
                        "id": b.get("id"),
                        "function": {"name": b.get("name"),
                                     "arguments": b.get("input").map(Value::to_string)},
                    })),
                    _ => parts.push(b.clone()),
                }
            }
            json!({"role": "assistant", "content": parts, "tool_calls": calls})
        }
        "user" => user_message(v, content),
        "attachment" => {
            let a = v.get("attachment");
            let kind = a
                .and_then(|a| a.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("?");
            let detail = a
                .and_then(|a| {
                    a.get("content")
                        .or_else(|| a.get("filename"))
                        .or_else(|| a.get("text"))
                })
                .map(|d| d.as_str().map_or_else(|| d.to_string(), str::to_string));
            let text = match detail {
                Some(d) => format!("attachment: {kind}\n{d}"),
                None => format!("attachment: {kind}"),
            };
            json!({"role": "system", "content": text})
        }
        "system" => {
            let sub = v.get("subtype").and_then(Value::as_str).unwrap_or("");
            let text = v.get("content").and_then(Value::as_str).unwrap_or("");
            let text = match sub {
                "compact_boundary" => {
                    let pre = v
                        .pointer("/compactMetadata/preTokens")
                        .and_then(Value::as_u64);
                    match pre {
                        Some(t) => format!("⊜ {text} ({t} tokens before)"),
                        None => format!("⊜ {text}"),
                    }
                }
                "turn_duration" => {
                    let ms = v.get("durationMs").and_then(Value::as_u64).unwrap_or(0);
                    format!("turn took {:.1} s", ms as f64 / 1000.0)
                }
                "" => text.to_string(),
                s if text.is_empty() => s.to_string(),
                s => format!("{s}: {text}"),
            };
            json!({"role": "system", "content": text})
        }
        other => json!({"role": "system", "content": format!("{other} entry")}),
    }
}

fn blocks(content: Option<&Value>) -> impl Iterator<Item = &Value> {
    content.and_then(Value::as_array).into_iter().flatten()
}

fn user_message(v: &Value, content: Option<&Value>) -> Value {
    let results: Vec<&Value> = blocks(content)
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .collect();
    if let Some(r) = results.first() {
        let mut text = result_text(r.get("content"));
        if text.is_empty() {
            // `toolUseResult` says more for some tools (a rejected call is a
            // plain string there).
            text = match v.get("toolUseResult") {
                Some(Value::String(s)) => s.clone(),
                Some(o @ Value::Object(_)) => o.to_string(),
                _ => String::new(),
            };
        }
        for more in &results[1..] {
            text.push('\n');
            text.push_str(&result_text(more.get("content")));
        }
        if r.get("is_error").and_then(Value::as_bool) == Some(true) {
            text = format!("ERROR: {text}");
        }
        return json!({"role": "tool", "content": text, "tool_call_id": r.get("tool_use_id")});
    }
    let text = match content {
        Some(Value::String(s)) => s.clone(),
        _ => blocks(content)
            .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).map(str::to_string),
                Some("image") => Some("[image]".into()),
                Some(t) => Some(format!("[{t}]")),
                None => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let compact = v.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
    let meta = v.get("isMeta").and_then(Value::as_bool) == Some(true);
    let (role, text) = if compact {
        ("system", format!("⊜ summary\n{text}"))
    } else if let Some(n) = notification(&text) {
        ("user", n)
    } else if let Some(c) = command(&text) {
        ("user", c)
    } else if meta || super::scan::note_kind(&text).is_some() {
        ("system", text)
    } else {
        ("user", text)
    };
    json!({"role": role, "content": text})
}

fn result_text(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).map(str::to_string),
                Some(t) => Some(format!("[{t}]")),
                None => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The text between `<tag>` and `</tag>`.
fn tag<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let a = text.find(&open)? + open.len();
    let z = text[a..].find(&close)? + a;
    Some(text[a..z].trim())
}

/// `<task-notification>`: a background agent finished.
fn notification(text: &str) -> Option<String> {
    if !text.trim_start().starts_with("<task-notification>") {
        return None;
    }
    let summary = tag(text, "summary").unwrap_or("background task");
    let status = tag(text, "status").unwrap_or("?");
    let mut out = format!("⚑ task notification: {summary} ({status})");
    if let Some(r) = tag(text, "result") {
        out.push('\n');
        out.push_str(r);
    }
    Some(out)
}

/// `<command-name>/compact</command-name>…`: the command as typed.
fn command(text: &str) -> Option<String> {
    let name = tag(text, "command-name")?;
    let args = tag(text, "command-args").unwrap_or("");
    Some(if args.is_empty() {
        name.to_string()
    } else {
        format!("{name} {args}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Part;

    #[test]
    fn messages_of_each_kind() {
        let a = json!({"type":"assistant","message":{"content":[
            {"type":"thinking","thinking":"hmm"},{"type":"text","text":"hi"},
            {"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}});
        let b = Body::from_value(message_of(&a));
        assert_eq!(b.parts[0], Part::Think("hmm".into()));
        assert_eq!(b.tool_calls[0].name, "Bash");
        assert_eq!(b.tool_calls[0].arguments, r#"{"command":"ls"}"#);
        let r = json!({"type":"user","toolUseResult":"User rejected tool use","message":{"content":[
            {"type":"tool_result","tool_use_id":"t1","is_error":true}]}});
        let b = Body::from_value(message_of(&r));
        assert_eq!(b.text(), "ERROR: User rejected tool use");
        assert_eq!(b.tool_call_id.as_deref(), Some("t1"));
        let n = json!({"type":"user","message":{"content":
            "<task-notification>\n<status>completed</status>\n<summary>Agent \"x\" finished</summary>\n<result>done</result>\n</task-notification>"}});
        assert_eq!(
            Body::from_value(message_of(&n)).text(),
            "⚑ task notification: Agent \"x\" finished (completed)\ndone"
        );
        let c = json!({"type":"user","message":{"content":
            "<command-name>/compact</command-name>\n<command-message>compact</command-message>\n<command-args></command-args>"}});
        assert_eq!(Body::from_value(message_of(&c)).text(), "/compact");
    }
}
