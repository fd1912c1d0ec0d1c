//! What a branch shows: the wire entries that are records, on its chain,
//! as the project's record index (byte ranges into the wire; bodies loaded
//! on demand). An assistant message is its step: `step.begin` up to the
//! step's last line, rebuilt from its parts and calls as Kimi Code's `vis`
//! projector does.

use std::path::Path;

use serde_json::{json, Value};
use xxhash_rust::xxh3::xxh3_64;

use super::tree::WireTree;
use super::wire::{fold, Entry, EntryKind, WireIndex};
use crate::error::{Error, Result};
use crate::model::{Body, Marker, RecordMeta, RecordParts, Role};
use crate::read::{lenient, FileIndex, Records};
use crate::sources::Times;

/// The index entry of a record-shaped wire entry.
pub fn record_meta(e: &Entry) -> Option<RecordMeta> {
    let (role, tool_calls, tool_call_id, marker) = match &e.kind {
        EntryKind::Message {
            role,
            injection,
            tool_calls,
            tool_call_id,
            dmail,
        } => (
            if *injection {
                Role::System
            } else {
                role.clone()
            },
            tool_calls.clone(),
            tool_call_id.clone(),
            // A D-Mail worldline sent reads as one, like kimi-cli's.
            dmail.clone().map(Marker::DMailInjection),
        ),
        EntryKind::Step { tool_calls, .. } => (Role::Assistant, tool_calls.clone(), None, None),
        EntryKind::ToolResult {
            tool_call_id,
            agent,
        } => (
            Role::Tool,
            Vec::new(),
            Some(tool_call_id.clone()),
            agent.clone().map(Marker::AgentResult),
        ),
        EntryKind::Compaction => (Role::System, Vec::new(), None, Some(Marker::Compaction)),
        _ => return None,
    };
    let parts = RecordParts {
        role,
        checkpoint: None,
        tokens: None,
        tool_calls,
        tool_call_id,
        marker,
    };
    Some(RecordMeta::new(e.offset, e.len, e.line, e.hash, parts))
}

/// The records a branch sees, in wire order, as one index, with each
/// record's time (Unix seconds) where its line has one. Entries are found
/// per chain range by binary search (entries are in line order), so a
/// branch costs its own view, not a pass over the whole wire.
pub fn branch_index(wire: &WireIndex, tree: &WireTree, b: usize) -> (FileIndex, Vec<Option<f64>>) {
    let (index, times) = branch_view(wire, tree, b, None);
    let times = (0..index.records.len()).map(|r| times.at(r)).collect();
    (index, times)
}

/// Branch `b`'s view, sharing `base`'s records up to the fork (`base`:
/// a view of an ancestor and the last line both views hold): the view
/// stores only its own records, and times only for those.
pub fn branch_view(
    wire: &WireIndex,
    tree: &WireTree,
    b: usize,
    base: Option<(&FileIndex, u32)>,
) -> (FileIndex, Times) {
    let (mut records, after) = match base {
        Some((f, fl)) => {
            let shared = f.records.partition_point(|r| r.line() <= fl);
            (f.records.prefix(shared), Some(fl))
        }
        None => (Records::new(), None),
    };
    let mut times = Times::default();
    let ranges = match after {
        Some(fl) => tree.chain_after(b, fl),
        None => tree.chain(b),
    };
    for (a, z) in ranges {
        let from = wire.entries.partition_point(|e| e.line < a);
        for e in wire.entries[from..].iter().take_while(|e| e.line <= z) {
            if let Some(meta) = record_meta(e) {
                times.set(records.len(), e.time.map(|ms| ms / 1000.0));
                records.push(meta);
            }
        }
    }
    let index = FileIndex {
        name: wire.name.clone(),
        path: wire.path.clone(),
        records,
        warnings: Vec::new(),
        dropped_warnings: 0,
        bytes: wire.bytes,
    };
    (index, times)
}

/// Loads a record's body from its wire. A range that changed on disk since
/// it was indexed is reported, not trusted.
pub fn load_body(path: &Path, meta: &RecordMeta) -> Result<Body> {
    let bytes = crate::read::load_line(path, meta)?;
    let changed = || {
        Error::Other(format!(
            "{}:{}: the line changed on disk since it was read",
            path.display(),
            meta.line()
        ))
    };
    let mut lines = bytes
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace));
    let first = lines.next().ok_or_else(changed)?;
    let parse = |l: &[u8]| {
        lenient::parse_value(l)
            .map_err(|e| Error::Other(format!("{}:{}: {e}", path.display(), meta.line())))
    };
    let head = parse(first)?;
    let ty = head.get("type").and_then(Value::as_str).unwrap_or("");
    let event = head.get("event");
    let ev_ty = event.and_then(|e| e.get("type")).and_then(Value::as_str);
    if ev_ty == Some("step.begin") {
        let uuid = event.and_then(|e| e.get("uuid")).cloned();
        let mut hash = xxh3_64(first);
        let mut raws = vec![head];
        let mut parts = Vec::new();
        let mut calls = Vec::new();
        for l in lines {
            let Ok(v) = lenient::parse_value(l) else {
                continue;
            };
            let Some(ev) = v.get("event") else { continue };
            let ety = ev.get("type").and_then(Value::as_str).unwrap_or("");
            let key = if ety == "step.end" {
                "uuid"
            } else {
                "stepUuid"
            };
            if !matches!(ety, "content.part" | "tool.call" | "step.end")
                || ev.get(key) != uuid.as_ref()
            {
                continue;
            }
            hash = fold(hash, xxh3_64(l));
            match ety {
                "content.part" => parts.extend(ev.get("part").cloned()),
                "tool.call" => calls.push(json!({
                    "id": ev.get("toolCallId"),
                    "function": {"name": ev.get("name"),
                                 "arguments": ev.get("args").map(Value::to_string)},
                })),
                _ => {}
            }
            raws.push(v);
        }
        if hash != meta.hash() {
            return Err(changed());
        }
        let mut body = Body::from_value(json!({
            "role": "assistant", "content": parts, "tool_calls": calls}));
        body.raw = Value::Array(raws);
        return Ok(body);
    }
    if xxh3_64(first) != meta.hash() {
        return Err(changed());
    }
    let normal = match (ty, ev_ty) {
        ("context.append_message", _) => {
            let m = head.get("message").cloned().unwrap_or_default();
            let calls: Vec<Value> = m
                .get("toolCalls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|c| {
                    let f = c.get("function");
                    json!({"id": c.get("id"), "function": {
                        "name": c.get("name").or_else(|| f.and_then(|f| f.get("name"))),
                        "arguments": c.get("arguments").or_else(|| f.and_then(|f| f.get("arguments")))
                            .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_string)),
                    }})
                })
                .collect();
            json!({"role": meta.role().as_str(), "content": m.get("content"),
                   "tool_calls": calls,
                   "tool_call_id": m.get("toolCallId").or_else(|| m.get("tool_call_id"))})
        }
        (_, Some("tool.result")) => {
            let ev = event.cloned().unwrap_or_default();
            let result = ev.get("result").cloned().unwrap_or_default();
            let text = match result.get("output") {
                Some(Value::String(s)) => s.clone(),
                _ => result.to_string(),
            };
            json!({"role": "tool", "content": text, "tool_call_id": ev.get("toolCallId")})
        }
        ("context.apply_compaction", _) => {
            let summary = head.get("summary").and_then(Value::as_str).unwrap_or("");
            json!({"role": "system", "content": [
                {"type": "text", "text": compaction_note(&head)},
                {"type": "text", "text": summary}]})
        }
        _ => json!({"role": meta.role().as_str()}),
    };
    let mut body = Body::from_value(normal);
    body.raw = head;
    Ok(body)
}

/// `compacted 12 messages (20716 → 172 tokens)`: what the row says first,
/// so a compaction reads as one in any list.
fn compaction_note(v: &Value) -> String {
    let n = |k: &str| v.get(k).and_then(Value::as_u64);
    let mut s = "⊜ compacted".to_string();
    if let Some(c) = n("compactedCount") {
        s.push_str(&format!(" {c} message{}", if c == 1 { "" } else { "s" }));
    }
    if let (Some(a), Some(b)) = (n("tokensBefore"), n("tokensAfter")) {
        s.push_str(&format!(" ({a} → {b} tokens)"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Part;
    use crate::sources::kimi_code::tree;

    const WIRE: &str = concat!(
        "{\"type\":\"metadata\",\"protocol_version\":\"1.5\"}\n",
        "{\"type\":\"context.append_message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"origin\":{\"kind\":\"user\"}}}\n",
        "{\"type\":\"context.append_loop_event\",\"event\":{\"type\":\"step.begin\",\"uuid\":\"s\"}}\n",
        "{\"type\":\"context.append_loop_event\",\"event\":{\"type\":\"content.part\",\"stepUuid\":\"s\",\"part\":{\"type\":\"text\",\"text\":\"hello\"}}}\n",
        "{\"type\":\"llm.request\"}\n",
        "{\"type\":\"context.append_loop_event\",\"event\":{\"type\":\"tool.call\",\"stepUuid\":\"s\",\"toolCallId\":\"c\",\"name\":\"Bash\",\"args\":{\"command\":\"ls\"}}}\n",
        "{\"type\":\"context.append_loop_event\",\"event\":{\"type\":\"tool.result\",\"toolCallId\":\"c\",\"result\":{\"output\":\"a\\nb\"}}}\n",
        "{\"type\":\"context.append_loop_event\",\"event\":{\"type\":\"step.end\",\"uuid\":\"s\"}}\n",
        "{\"type\":\"context.append_message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"<system-reminder>x\"}],\"origin\":{\"kind\":\"injection\"}}}\n",
        "{\"type\":\"context.apply_compaction\",\"summary\":\"short\"}\n",
    );

    #[test]
    fn bodies_rebuild_messages_steps_results_and_compactions() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("wire.jsonl");
        std::fs::write(&path, WIRE).unwrap();
        let w = WireIndex::read(&path, "agents/main/wire.jsonl").unwrap();
        let t = tree::build(&w.entries, w.lines);
        let (ix, times) = branch_index(&w, &t, 0);
        assert_eq!(times.len(), ix.records.len());
        let roles: Vec<&str> = ix.records.iter().map(|r| r.role().as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "system", "system"]);
        let bodies: Vec<Body> = ix
            .records
            .iter()
            .map(|r| load_body(&path, r).unwrap())
            .collect();
        assert_eq!(bodies[0].text(), "hi");
        assert_eq!(bodies[1].parts, vec![Part::Text("hello".into())]);
        assert_eq!(bodies[1].tool_calls[0].name, "Bash");
        assert_eq!(bodies[1].tool_calls[0].arguments, "{\"command\":\"ls\"}");
        assert_eq!(bodies[2].text(), "a\nb");
        assert_eq!(bodies[2].tool_call_id.as_deref(), Some("c"));
        assert_eq!(bodies[4].text(), "⊜ compacted\nshort");
        assert_eq!(ix.records[4].marker().as_deref(), Some(&Marker::Compaction));
        // A rewritten line is caught, not shown as the old record.
        std::fs::write(&path, WIRE.replace("hello", "HELLO")).unwrap();
        assert!(load_body(&path, &ix.records[1]).is_err());
        assert!(load_body(&path, &ix.records[0]).is_ok());
    }
}
