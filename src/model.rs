//! The record model: a small index entry per context line (what the graph and
//! the UI need to lay rows out) and the full body, loaded from disk on demand.

use serde_json::Value;

mod meta;
mod names;

pub use meta::{keeps_call_id, CallIter, CallKey, CallRef, RecordMeta, ToolCalls};

/// What a context line is, from its `role` field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Role {
    SystemPrompt,
    Checkpoint,
    Usage,
    User,
    Assistant,
    Tool,
    System,
    /// A role kimi-cli doesn't write today; kept, never rejected.
    Other(Box<str>),
}

impl Role {
    pub fn parse(s: &str) -> Role {
        match s {
            "_system_prompt" => Role::SystemPrompt,
            "_checkpoint" => Role::Checkpoint,
            "_usage" => Role::Usage,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            "system" => Role::System,
            other => Role::Other(other.into()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Role::SystemPrompt => "_system_prompt",
            Role::Checkpoint => "_checkpoint",
            Role::Usage => "_usage",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
            Role::Other(s) => s,
        }
    }

    /// Messages are what the model reads; the rest is kimi-cli bookkeeping.
    pub fn is_message(&self) -> bool {
        matches!(
            self,
            Role::User | Role::Assistant | Role::Tool | Role::System | Role::Other(_)
        )
    }
}

/// A tool call as its reader found it (owned strings): what a record's
/// index entry is built from. Arguments are kept only for the calls the
/// graph interprets (SendDMail); the body has the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallHead {
    pub id: String,
    pub name: String,
    pub dmail: Option<DMailArgs>,
}

/// `SendDMail` arguments as the model wrote them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DMailArgs {
    pub message: String,
    pub checkpoint_id: i64,
}

/// Facts recognised in a message's text that the graph builder interprets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// `<system>CHECKPOINT N</system>` after a checkpoint.
    CheckpointNote(i64),
    /// The user message kimi-cli injects after a D-Mail revert; holds the body.
    DMailInjection(String),
    /// The first user message of a compacted context.
    Compaction,
    /// A SendDMail tool result: `Ok` when DenwaRenji accepted it.
    DMailResult(Result<(), String>),
    /// An `Agent` tool result naming the subagent it ran.
    AgentResult(String),
}

/// What a record's index entry is built from: the fields its reader
/// found, before they are packed into a [`RecordMeta`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordParts {
    pub role: Role,
    /// `id` of a `_checkpoint` record.
    pub checkpoint: Option<i64>,
    /// `token_count` of a record (kimi-cli writes it on `_usage`).
    pub tokens: Option<u64>,
    /// Tool calls of an assistant message.
    pub tool_calls: Vec<ToolCallHead>,
    /// `tool_call_id` of a tool message.
    pub tool_call_id: Option<String>,
    pub marker: Option<Marker>,
}

/// Length of the longest run of equal records at the start of both lists:
/// how much a world line shares with another.
pub fn shared_prefix<'a>(
    old: impl IntoIterator<Item = &'a RecordMeta>,
    new: impl IntoIterator<Item = &'a RecordMeta>,
) -> usize {
    old.into_iter()
        .zip(new)
        .take_while(|(a, b)| a.same_record(b))
        .count()
}

/// A warning about one line of one file; reading goes on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Warning {
    pub file: String,
    pub line: u64,
    pub message: String,
}

impl Warning {
    /// `file:line`, or just `file` for a warning about a whole file (line
    /// 0: no `state.json:0:`). Not escaped: the caller sanitises.
    pub fn place(&self) -> String {
        match self.line {
            0 => self.file.clone(),
            n => format!("{}:{n}", self.file),
        }
    }
}

/// One part of a message's content. Unknown part types are kept whole.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Think(String),
    /// Image, audio or video: a placeholder with its kind and data size.
    Media {
        kind: String,
        bytes: usize,
        url_head: String,
    },
    Unknown(Value),
}

/// A tool call with its arguments, as shown in the detail pane.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments JSON text as the model wrote it.
    pub arguments: String,
}

/// The full record, loaded from disk when the UI asks for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    pub role: Role,
    pub parts: Vec<Part>,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: Option<String>,
    pub name: Option<String>,
    pub checkpoint: Option<i64>,
    pub tokens: Option<u64>,
    /// The whole record, for fields this model doesn't name.
    pub raw: Value,
}

impl Body {
    /// Builds a body from a parsed record. Never fails: odd shapes become
    /// `Unknown` parts so nothing a file holds is hidden.
    pub fn from_value(raw: Value) -> Body {
        let role = Role::parse(raw.get("role").and_then(Value::as_str).unwrap_or(""));
        let parts = match raw.get("content") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => vec![Part::Text(s.clone())],
            Some(Value::Array(items)) => items.iter().map(part_from_value).collect(),
            Some(other) => vec![Part::Unknown(other.clone())],
        };
        let tool_calls = raw
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|calls| calls.iter().map(tool_call_from_value).collect())
            .unwrap_or_default();
        Body {
            role,
            parts,
            tool_calls,
            tool_call_id: str_field(&raw, "tool_call_id"),
            name: str_field(&raw, "name"),
            checkpoint: raw.get("id").and_then(Value::as_i64),
            tokens: raw.get("token_count").and_then(Value::as_u64),
            raw,
        }
    }

    /// All text and think parts joined, for search and previews.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            let piece = match part {
                Part::Text(t) | Part::Think(t) => t.as_str(),
                _ => continue,
            };
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(piece);
        }
        out
    }
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn part_from_value(v: &Value) -> Part {
    let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
    match ty {
        "text" => match v.get("text").and_then(Value::as_str) {
            Some(t) => Part::Text(t.to_string()),
            None => Part::Unknown(v.clone()),
        },
        "think" => match v.get("think").and_then(Value::as_str) {
            Some(t) => Part::Think(t.to_string()),
            None => Part::Unknown(v.clone()),
        },
        "image_url" | "audio_url" | "video_url" | "image" | "audio" | "video" => {
            let url = media_url(v, ty).unwrap_or("");
            Part::Media {
                kind: ty.trim_end_matches("_url").to_string(),
                bytes: url.len(),
                url_head: url.chars().take(40).collect(),
            }
        }
        _ => Part::Unknown(v.clone()),
    }
}

/// Media URLs sit at `url`, or `<type>.url` in the OpenAI spelling.
fn media_url<'a>(v: &'a Value, ty: &str) -> Option<&'a str> {
    v.get("url").and_then(Value::as_str).or_else(|| {
        v.get(ty)
            .and_then(|inner| inner.get("url").or(Some(inner)))
            .and_then(Value::as_str)
    })
}

fn tool_call_from_value(v: &Value) -> ToolCall {
    let function = v.get("function");
    let arguments = match function.and_then(|f| f.get("arguments")) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    ToolCall {
        id: str_field(v, "id").unwrap_or_default(),
        name: function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        arguments,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn body_keeps_unknown_parts_and_media_sizes() {
        let b = Body::from_value(json!({"role":"user","content":[
            {"type":"text","text":"hi"},
            {"type":"image","url":"data:image/png;base64,AAAA","id":"img-1"},
            {"type":"image_url","image_url":{"url":"data:x"}},
            {"type":"hologram","beam":1}]}));
        assert_eq!(b.role, Role::User);
        assert_eq!(b.parts[0], Part::Text("hi".into()));
        assert!(matches!(&b.parts[1], Part::Media { kind, bytes: 26, .. } if kind == "image"));
        assert!(matches!(&b.parts[2], Part::Media { bytes: 6, .. }));
        assert!(matches!(&b.parts[3], Part::Unknown(_)));
    }
}
