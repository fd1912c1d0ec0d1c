//! A Pi entry's body, loaded from its line: messages as role, content
//! parts (thinking as think parts), tool calls and the call a result
//! answers; compactions, branch summaries and bookkeeping as one line of
//! what they say, so every record reads as something in rows and search.

use std::path::Path;

use serde_json::{json, Value};
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::model::{Body, RecordMeta};
use crate::read::lenient;

/// Loads a record's body. A line that changed on disk since it was
/// indexed is reported, not shown as the old record.
pub fn load_body(path: &Path, meta: &RecordMeta) -> Result<Body> {
    let bytes = crate::read::load_line(path, meta)?;
    let line = bytes.strip_suffix(b"\r").unwrap_or(&bytes);
    if xxh3_64(line) != meta.hash() {
        return Err(Error::Other(format!(
            "{}:{}: the line changed on disk since it was read",
            path.display(),
            meta.line()
        )));
    }
    let v = lenient::parse_value(line)
        .map_err(|e| Error::Other(format!("{}:{}: {e}", path.display(), meta.line())))?;
    let mut body = Body::from_value(normal(&v));
    body.raw = v;
    Ok(body)
}

/// The entry in the shape [`Body::from_value`] reads.
pub fn normal(v: &Value) -> Value {
    let s = |o: &Value, k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
    match ty {
        "message" => message(v.get("message").unwrap_or(&Value::Null)),
        "compaction" => {
            let mut note = "⊜ compacted".to_string();
            if let Some(t) = v.get("tokensBefore").and_then(Value::as_u64) {
                note.push_str(&format!(" ({t} tokens before)"));
            }
            if let Some(k) = v.get("firstKeptEntryId").and_then(Value::as_str) {
                note.push_str(&format!("; kept from {k}"));
            }
            json!({"role": "system", "content": [
                {"type": "text", "text": note},
                {"type": "text", "text": s(v, "summary")}]})
        }
        "branch_summary" => json!({"role": "user", "content": [
            {"type": "text", "text": format!("↶ summary of the branch left at {}", s(v, "fromId"))},
            {"type": "text", "text": s(v, "summary")}]}),
        "custom_message" => {
            let mut m = message(v);
            m["role"] = json!("system");
            m
        }
        "label" => {
            let text = match v
                .get("label")
                .and_then(Value::as_str)
                .filter(|l| !l.is_empty())
            {
                Some(l) => format!("label [{l}] on {}", s(v, "targetId")),
                None => format!("label cleared on {}", s(v, "targetId")),
            };
            json!({"role": ty, "content": text})
        }
        "model_change" => json!({"role": ty,
            "content": format!("model {}/{}", s(v, "provider"), s(v, "modelId"))}),
        "thinking_level_change" => json!({"role": ty,
            "content": format!("thinking level {}", s(v, "thinkingLevel"))}),
        "session_info" => json!({"role": ty,
            "content": format!("session name: {}", s(v, "name"))}),
        _ => json!({"role": ty, "content": ty}),
    }
}

/// A `message` entry's message.
fn message(m: &Value) -> Value {
    let role = m.get("role").and_then(Value::as_str).unwrap_or("");
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    match m.get("content") {
        Some(Value::String(t)) => parts.push(json!({"type": "text", "text": t})),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                match b.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text" => parts.push(b.clone()),
                    "thinking" => parts.push(json!({"type": "think",
                        "think": b.get("thinking").cloned().unwrap_or_default()})),
                    "toolCall" => calls.push(json!({"id": b.get("id"), "function": {
                    "name": b.get("name"),
                    "arguments": b.get("arguments").map(|a| match a {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })}})),
                    "image" => {
                        let mime = b.get("mimeType").and_then(Value::as_str).unwrap_or("image");
                        let data = b.get("data").and_then(Value::as_str).unwrap_or("");
                        parts.push(json!({"type": "image_url",
                            "url": format!("data:{mime};base64,{data}")}));
                    }
                    _ => parts.push(b.clone()),
                }
            }
        }
        _ => {}
    }
    if role == "system" {
        // Pi 1.6 keeps the prompt in sections; `content` is empty.
        if let Some(sections) = m.get("sections").and_then(Value::as_object) {
            for text in sections.values().filter_map(Value::as_str) {
                parts.push(json!({"type": "text", "text": text}));
            }
        }
    }
    if role == "bashExecution" {
        let cmd = m.get("command").and_then(Value::as_str).unwrap_or("");
        let out = m.get("output").and_then(Value::as_str).unwrap_or("");
        parts.push(json!({"type": "text", "text": format!("$ {cmd}\n{out}")}));
    }
    // Failed results read as failed in the rows (✗), as the other agents'.
    if role == "toolResult" && m.get("isError").and_then(Value::as_bool) == Some(true) {
        parts.insert(0, json!({"type": "text", "text": "ERROR"}));
    }
    let role = match role {
        "toolResult" => "tool",
        "system" => "_system_prompt",
        r => r,
    };
    json!({"role": role, "content": parts, "tool_calls": calls,
           "tool_call_id": m.get("toolCallId"), "name": m.get("toolName")})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Part, Role};

    #[test]
    fn messages_thinking_calls_results_and_bookkeeping_read_as_text() {
        let b = Body::from_value(normal(&json!({"type": "message", "message": {
            "role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "ok"},
                {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}]}})));
        assert_eq!(b.role, Role::Assistant);
        assert_eq!(
            b.parts,
            [Part::Think("hmm".into()), Part::Text("ok".into())]
        );
        assert_eq!(b.tool_calls[0].arguments, "{\"command\":\"ls\"}");
        let r = Body::from_value(normal(&json!({"type": "message", "message": {
            "role": "toolResult", "toolCallId": "c1", "isError": true,
            "content": [{"type": "text", "text": "boom"}]}})));
        assert_eq!(r.role, Role::Tool);
        assert_eq!(r.tool_call_id.as_deref(), Some("c1"));
        assert!(r.text().starts_with("ERROR"));
        let l = Body::from_value(normal(
            &json!({"type": "label", "targetId": "ab", "label": "here"}),
        ));
        assert_eq!(l.text(), "label [here] on ab");
    }
}
