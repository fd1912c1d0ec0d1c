//! Rollout lines as the project's records: every line is one (records are
//! named by their `ordinal`), with a role rows and steps understand — a
//! turn's `task_started` opens a step (a checkpoint numbered by turn), the
//! real prompt is the user's, injected context and events are system
//! records, `token_count` is usage — and bodies rebuilt on demand from the
//! line: messages, tool calls (an `exec_command` shown as its command),
//! outputs paired by `call_id`, compactions.
//!
//! A world line of a reverted thread holds records of two files: its index
//! names the file of its own records (the generation), and a record of
//! another generation of the thread keeps `generation + 1` above bit 40 of
//! its offset (0: the index's own file), so replay and previews of a
//! line's own records read plain offsets.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::home;
use super::rollout::Parsed;
use crate::error::{Error, Result};
use crate::model::{Body, Marker, RecordMeta, RecordParts, Role, ToolCallHead};
use crate::read::lenient;
use xxhash_rust::xxh3::xxh3_64;

/// Offsets above this bit name the generation file.
const GEN_SHIFT: u32 = 40;
/// Generations a thread may have in the index (the offset keeps 48 bits).
pub const MAX_GENERATIONS: usize = 254;

/// The index entry of a rollout line in its own file; `turn` is the turn
/// a `task_started` opens.
pub fn record_meta(
    p: &Parsed,
    offset: u64,
    len: u32,
    line: u32,
    hash: u64,
    turn: Option<i64>,
) -> RecordMeta {
    let mut parts = RecordParts {
        role: Role::System,
        checkpoint: None,
        tokens: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        marker: None,
    };
    match p {
        Parsed::Meta => parts.role = Role::SystemPrompt,
        Parsed::Prompt(_) => parts.role = Role::User,
        Parsed::Assistant => parts.role = Role::Assistant,
        Parsed::Call(id, name) => {
            parts.role = Role::Assistant;
            parts.tool_calls.push(ToolCallHead {
                id: id.to_string(),
                name: name.to_string(),
                dmail: None,
            });
        }
        Parsed::Output(call_id) => {
            parts.role = Role::Tool;
            parts.tool_call_id = Some(call_id.to_string());
        }
        Parsed::TurnStarted => {
            parts.role = Role::Checkpoint;
            parts.checkpoint = turn;
        }
        Parsed::Tokens(Some(n)) => {
            parts.role = Role::Usage;
            parts.tokens = Some(*n);
        }
        Parsed::Compacted => parts.marker = Some(Marker::Compaction),
        _ => {}
    }
    RecordMeta::new(offset, len, line, hash, parts)
}

/// A `task_started`'s index entry with its turn counted on from `base`
/// (the turns a later generation's base holds); any other as it is.
pub fn turned(meta: &RecordMeta, base: i64) -> RecordMeta {
    match meta.checkpoint() {
        Some(local) if base != 0 && *meta.role() == Role::Checkpoint => {
            let parts = RecordParts {
                role: Role::Checkpoint,
                checkpoint: Some(local + base),
                tokens: None,
                tool_calls: Vec::new(),
                tool_call_id: None,
                marker: None,
            };
            RecordMeta::new(meta.offset(), meta.len(), meta.line(), meta.hash(), parts)
        }
        _ => meta.clone(),
    }
}

/// `meta` as seen from an index of another file of the thread: it lives
/// in generation `gen`.
pub fn elsewhere(meta: &RecordMeta, gen: usize) -> RecordMeta {
    let mut m = meta.clone();
    m.shift(((gen as u64) + 1) << GEN_SHIFT, 0);
    m
}

/// The generation a record is in (`None`: the index's own file), and its
/// byte offset there.
fn split(meta: &RecordMeta) -> (Option<usize>, u64) {
    let off = meta.offset();
    let tag = (off >> GEN_SHIFT) as usize;
    (tag.checked_sub(1), off & ((1 << GEN_SHIFT) - 1))
}

/// A file's offsets must fit below the generation bits.
pub fn fits(bytes: u64) -> bool {
    bytes < 1 << GEN_SHIFT
}

/// The file of generation `gen` of the thread `file` is a file of
/// (`None`: `file` itself).
pub fn generation_path(file: &Path, gen: Option<usize>) -> Result<PathBuf> {
    let Some(gen) = gen else {
        return Ok(file.to_path_buf());
    };
    let files = super::generations_of(file);
    files.get(gen).cloned().ok_or_else(|| {
        Error::Other(format!(
            "{}: generation {gen} of this thread is gone",
            file.display()
        ))
    })
}

/// The raw bytes of one record's line.
pub fn load_line(first: &Path, meta: &RecordMeta, max: usize) -> Result<Vec<u8>> {
    let (gen, offset) = split(meta);
    let path = generation_path(first, gen)?;
    let len = (meta.len() as usize).min(max);
    if home::is_zst(&path) {
        return super::zst::range(&path, offset, len);
    }
    use std::io::{Read, Seek, SeekFrom};
    let g = crate::read::guard::open_regular(&path)
        .map_err(|e| Error::Other(format!("{}: {e}", path.display())))?;
    let mut file = g.file;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::io(&path, e))?;
    let mut line = vec![0u8; len];
    file.read_exact(&mut line)
        .map_err(|e| Error::io(&path, e))?;
    Ok(line)
}

/// Loads a record's body. A line that changed on disk is reported.
pub fn load_body(first: &Path, meta: &RecordMeta) -> Result<Body> {
    let line = load_line(first, meta, usize::MAX)?;
    let at = || format!("{}:{}", first.display(), meta.line());
    if xxh3_64(&line) != meta.hash() {
        return Err(Error::Other(format!(
            "{}: the line changed on disk since it was read",
            at()
        )));
    }
    let v = lenient::parse_value(&line).map_err(|e| Error::Other(format!("{}: {e}", at())))?;
    let mut body = Body::from_value(body_value(&v, meta));
    body.raw = v;
    Ok(body)
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// A rollout line as the message shape `Body::from_value` reads.
pub fn body_value(v: &Value, meta: &RecordMeta) -> Value {
    let p = v.get("payload").cloned().unwrap_or(Value::Null);
    let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
    let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
    match ty {
        "session_meta" => {
            let instr = p
                .get("base_instructions")
                .and_then(|b| b.get("text").or(Some(b)))
                .and_then(Value::as_str)
                .unwrap_or("");
            let mut head = format!("thread {}", s("id"));
            if !s("cwd").is_empty() {
                head.push_str(&format!(" in {}", s("cwd")));
            }
            if !s("cli_version").is_empty() {
                head.push_str(&format!(" (codex {})", s("cli_version")));
            }
            if let Some(src) = p.get("forked_from_id").and_then(Value::as_str) {
                head.push_str(&format!(", forked from {src}"));
            }
            json!({"role": "_system_prompt", "content": [text(&head), text(instr)]})
        }
        "response_item" => item_value(&p, meta),
        "compacted" => {
            let n = p
                .get("replacement_history")
                .and_then(Value::as_array)
                .map(Vec::len);
            let note = match n {
                Some(n) => format!("⊜ compacted ({n} items kept)"),
                None => "⊜ compacted".to_string(),
            };
            json!({"role": "system", "content": [text(&note), text(s("message"))]})
        }
        "event_msg" => json!({"role": meta.role().as_str(), "content": [text(&event_text(&p))]}),
        "turn_context" => {
            let t = format!("turn context: model {} in {}", s("model"), s("cwd"));
            json!({"role": "system", "content": [text(&t)]})
        }
        other => {
            let t = if other.is_empty() {
                "(a line without a type)".to_string()
            } else {
                other.replace('_', " ")
            };
            json!({"role": "system", "content": [text(&t)]})
        }
    }
}

fn content_parts(c: Option<&Value>) -> Vec<Value> {
    match c {
        Some(Value::String(s)) => vec![text(s)],
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                let ty = i.get("type").and_then(Value::as_str).unwrap_or("");
                match (ty, i.get("text").and_then(Value::as_str)) {
                    (_, Some(t)) => text(t),
                    ("input_image", _) => json!({"type": "image_url",
                        "image_url": {"url": i.get("image_url").cloned().unwrap_or_default()}}),
                    _ => i.clone(),
                }
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn item_value(p: &Value, meta: &RecordMeta) -> Value {
    let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
    match s("type") {
        "message" => {
            let role = match s("role") {
                "user" if *meta.role() == Role::User => "user",
                "assistant" => "assistant",
                _ => "system",
            };
            json!({"role": role, "content": content_parts(p.get("content"))})
        }
        "reasoning" => {
            let mut parts: Vec<Value> = Vec::new();
            for key in ["summary", "content"] {
                for i in p.get(key).and_then(Value::as_array).into_iter().flatten() {
                    if let Some(t) = i.get("text").and_then(Value::as_str) {
                        parts.push(json!({"type": "think", "think": t}));
                    }
                }
            }
            json!({"role": "assistant", "content": parts})
        }
        "function_call" | "custom_tool_call" | "local_shell_call" | "tool_search_call" => {
            let name = p
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or(s("type"))
                .to_string();
            let args = match p.get("arguments").or_else(|| p.get("input")) {
                Some(Value::String(a)) => a.clone(),
                Some(other) => other.to_string(),
                None => p.get("action").map(Value::to_string).unwrap_or_default(),
            };
            let mut content = Vec::new();
            if let Some(cmd) = command_of(p, &args) {
                content.push(text(&format!("$ {cmd}")));
            }
            json!({"role": "assistant", "content": content, "tool_calls": [{
                "id": p.get("call_id").or_else(|| p.get("id")),
                "function": {"name": name, "arguments": args}}]})
        }
        t if t.ends_with("_output") => {
            let content = match p.get("output") {
                Some(Value::String(o)) => vec![text(o)],
                Some(Value::Array(_)) => content_parts(p.get("output")),
                Some(Value::Object(o)) => match o.get("content") {
                    Some(Value::String(c)) => vec![text(c)],
                    _ => vec![text(&Value::Object(o.clone()).to_string())],
                },
                _ => Vec::new(),
            };
            json!({"role": "tool", "content": content, "tool_call_id": p.get("call_id")})
        }
        other => {
            json!({"role": "system", "content": [text(&format!("{} item", other.replace('_', " ")))]})
        }
    }
}

/// The shell command a call runs: `exec_command {cmd}`, `shell {command:
/// [...]}`, a `local_shell_call`'s action.
fn command_of(p: &Value, args: &str) -> Option<String> {
    let parsed: Option<Value> = serde_json::from_str(args).ok();
    let from = parsed.as_ref().or_else(|| p.get("action"))?;
    let cmd = from.get("cmd").or_else(|| from.get("command"))?;
    match cmd {
        Value::String(c) => Some(c.clone()),
        Value::Array(parts) => {
            let words: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
            // `["bash", "-lc", "echo hi"]` is the script.
            match words.as_slice() {
                [_, flag, script] if flag.starts_with('-') && flag.ends_with('c') => {
                    Some(script.to_string())
                }
                _ => Some(words.join(" ")),
            }
        }
        _ => None,
    }
}

fn event_text(p: &Value) -> String {
    let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
    match s("type") {
        "task_started" | "turn_started" => "turn started".to_string(),
        "task_complete" | "turn_complete" => match s("last_agent_message") {
            "" => "turn complete".to_string(),
            m => format!("turn complete: {m}"),
        },
        "thread_rolled_back" => format!(
            "↶ rolled back {} turn(s)",
            p.get("num_turns").and_then(Value::as_u64).unwrap_or(0)
        ),
        "token_count" => match p
            .pointer("/info/total_token_usage/total_tokens")
            .and_then(Value::as_u64)
        {
            Some(n) => format!("{n} tokens"),
            None => "token count".to_string(),
        },
        "item_completed" => {
            let item = p.get("item");
            let ty = item
                .and_then(|i| i.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("item");
            let tool = item
                .and_then(|i| i.get("tool"))
                .and_then(Value::as_str)
                .map(|t| format!(" {t}"))
                .unwrap_or_default();
            format!("{ty}{tool} completed")
        }
        "" => "event".to_string(),
        other => other.replace('_', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Part;
    use crate::sources::codex::rollout::Rollout;

    #[test]
    fn bodies_of_calls_outputs_prompts_and_events() {
        let text = concat!(
            "{\"ordinal\":0,\"type\":\"session_meta\",\"payload\":{\"id\":\"t\",\"cwd\":\"/p\",\"base_instructions\":{\"text\":\"be good\"}}}\n",
            "{\"ordinal\":1,\"type\":\"event_msg\",\"payload\":{\"type\":\"task_started\"}}\n",
            "{\"ordinal\":2,\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"<environment_context>x</environment_context>\"}]}}\n",
            "{\"ordinal\":3,\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"hi\"}]}}\n",
            "{\"ordinal\":4,\"type\":\"response_item\",\"payload\":{\"type\":\"function_call\",\"name\":\"exec_command\",\"arguments\":\"{\\\"cmd\\\": \\\"echo hi\\\"}\",\"call_id\":\"c1\"}}\n",
            "{\"ordinal\":5,\"type\":\"response_item\",\"payload\":{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"hi\\n\"}}\n",
            "{\"ordinal\":6,\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\",\"info\":{\"total_token_usage\":{\"total_tokens\":42}}}}\n",
            "{\"ordinal\":7,\"type\":\"compacted\",\"payload\":{\"message\":\"summary\",\"replacement_history\":[]}}\n",
        );
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("r.jsonl");
        std::fs::write(&path, text).unwrap();
        let r = Rollout::parse(&path, "r.jsonl", text.as_bytes());
        let metas: Vec<RecordMeta> = r.records.to_vec();
        let roles: Vec<&str> = metas.iter().map(|m| m.role().as_str()).collect();
        assert_eq!(
            roles,
            [
                "_system_prompt",
                "_checkpoint",
                "system",
                "user",
                "assistant",
                "tool",
                "_usage",
                "system"
            ]
        );
        assert_eq!(metas[6].tokens(), Some(42));
        assert_eq!(metas[1].checkpoint(), Some(0));
        let b = |i: usize| load_body(&path, &metas[i]).unwrap();
        assert_eq!(b(0).text(), "thread t in /p\nbe good");
        assert_eq!(b(3).text(), "hi");
        assert_eq!(b(4).parts, vec![Part::Text("$ echo hi".into())]);
        assert_eq!(b(4).tool_calls[0].name, "exec_command");
        assert_eq!(b(4).tool_calls[0].id, "c1");
        assert_eq!(b(5).tool_call_id.as_deref(), Some("c1"));
        assert_eq!(b(5).text(), "hi\n");
        assert_eq!(b(7).text(), "⊜ compacted (0 items kept)\nsummary");
        assert!(metas[4].tool_calls().first().unwrap().is("c1"));
        std::fs::write(&path, text.replace("echo hi", "echo HI")).unwrap();
        assert!(load_body(&path, &metas[4]).is_err());
    }
}
