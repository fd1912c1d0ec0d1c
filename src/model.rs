//! The record model: a small index entry per context line (what the graph and
//! the UI need to lay rows out) and the full body, loaded from disk on demand.

use std::borrow::Cow;

use serde_json::Value;

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

/// A tool call id as the index keeps it for matching a call with its
/// result: a 64-bit SipHash under a key drawn at random once per process,
/// so a session file cannot be written to make two ids collide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallKey(u64);

impl CallKey {
    pub fn of(id: &str) -> CallKey {
        use std::hash::BuildHasher;
        static KEY: std::sync::OnceLock<std::collections::hash_map::RandomState> =
            std::sync::OnceLock::new();
        CallKey(KEY.get_or_init(Default::default).hash_one(id))
    }
}

/// Tools whose call ids are shown or exported (D-Mail attempts, a
/// subagent's `parent_tool_call_id`), so the index keeps those ids as text.
/// Every other call is matched by its [`CallKey`] alone.
pub fn keeps_call_id(name: &str) -> bool {
    matches!(name, "SendDMail" | "Agent" | "Task")
}

/// A tool result's id is kept as text where something shows it: results
/// the graph interprets (D-Mail and subagent results).
fn keeps_result_id(marker: Option<&Marker>) -> bool {
    matches!(
        marker,
        Some(Marker::DMailResult(_) | Marker::AgentResult(_))
    )
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

/// One record of a context file: where it is and what the graph needs.
/// Kept small (one per record, millions in a big session): rare parts are
/// boxed. Read it through its accessors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMeta {
    /// Byte offset of the line in its file.
    offset: u64,
    /// Length of the line without its line end (lines over 4 GiB are not
    /// indexed).
    len: u32,
    /// 1-based line number in its file.
    line: u32,
    role: Role,
    /// Hash of the record's JSON with insignificant white space removed, so
    /// the two spellings kimi-cli uses compare equal.
    hash: u64,
    checkpoint: Option<i64>,
    tokens: Option<u64>,
    tool_calls: Box<[ToolCallHead]>,
    tool_call_id: Option<Box<str>>,
    marker: Option<Box<Marker>>,
}

impl RecordMeta {
    /// The index entry of the line at `offset` (`len` bytes, 1-based
    /// `line`) whose canonical hash is `hash`.
    pub fn new(offset: u64, len: u32, line: u32, hash: u64, parts: RecordParts) -> RecordMeta {
        RecordMeta {
            offset,
            len,
            line,
            role: parts.role,
            hash,
            checkpoint: parts.checkpoint,
            tokens: parts.tokens,
            tool_calls: parts.tool_calls.into_boxed_slice(),
            tool_call_id: parts.tool_call_id.map(String::into_boxed_str),
            marker: parts.marker.map(Box::new),
        }
    }

    /// Byte offset of the line in its file.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Moves the record `bytes` and `lines` later in its file (a piece
    /// indexed on its own, placed after the pieces before it).
    pub fn shift(&mut self, bytes: u64, lines: u32) {
        self.offset += bytes;
        self.line = self.line.saturating_add(lines);
    }

    /// Length of the line without its line end.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// 1-based line number in its file.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// Hash of the record's canonical JSON.
    pub fn hash(&self) -> u64 {
        self.hash
    }

    pub fn role(&self) -> &Role {
        &self.role
    }

    /// `id` of a `_checkpoint` record.
    pub fn checkpoint(&self) -> Option<i64> {
        self.checkpoint
    }

    /// `token_count` of the record.
    pub fn tokens(&self) -> Option<u64> {
        self.tokens
    }

    /// Tool calls of an assistant message.
    pub fn tool_calls(&self) -> ToolCalls<'_> {
        ToolCalls {
            calls: &self.tool_calls,
        }
    }

    /// The key of a tool message's `tool_call_id`, to find its call.
    pub fn tool_call_key(&self) -> Option<CallKey> {
        self.tool_call_id.as_deref().map(CallKey::of)
    }

    /// Does this tool message answer the call with `key`?
    pub fn answers(&self, key: CallKey) -> bool {
        self.tool_call_key() == Some(key)
    }

    /// A tool message's `tool_call_id` as text, kept only for results the
    /// graph interprets (see `keeps_result_id`); match others by
    /// [`RecordMeta::tool_call_key`].
    pub fn tool_call_id(&self) -> Option<&str> {
        self.tool_call_id
            .as_deref()
            .filter(|_| keeps_result_id(self.marker.as_deref()))
    }

    /// The marker recognised in the record's text, if any.
    pub fn marker(&self) -> Option<Cow<'_, Marker>> {
        self.marker.as_deref().map(Cow::Borrowed)
    }

    /// Index records compare by role and content hash, never by bytes.
    pub fn same_record(&self, other: &RecordMeta) -> bool {
        self.hash == other.hash && self.role == other.role
    }
}

/// The tool calls of one record, in the order written.
#[derive(Debug, Clone, Copy)]
pub struct ToolCalls<'a> {
    calls: &'a [ToolCallHead],
}

impl<'a> ToolCalls<'a> {
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    pub fn first(&self) -> Option<CallRef<'a>> {
        self.get(0)
    }

    pub fn get(&self, i: usize) -> Option<CallRef<'a>> {
        self.iter().nth(i)
    }

    pub fn iter(&self) -> CallIter<'a> {
        CallIter {
            calls: self.calls.iter(),
        }
    }
}

impl<'a> IntoIterator for ToolCalls<'a> {
    type Item = CallRef<'a>;
    type IntoIter = CallIter<'a>;
    fn into_iter(self) -> CallIter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &ToolCalls<'a> {
    type Item = CallRef<'a>;
    type IntoIter = CallIter<'a>;
    fn into_iter(self) -> CallIter<'a> {
        self.iter()
    }
}

/// Iterates a record's [`ToolCalls`].
#[derive(Debug, Clone)]
pub struct CallIter<'a> {
    calls: std::slice::Iter<'a, ToolCallHead>,
}

impl<'a> Iterator for CallIter<'a> {
    type Item = CallRef<'a>;
    fn next(&mut self) -> Option<CallRef<'a>> {
        self.calls.next().map(|c| CallRef {
            name: &c.name,
            key: CallKey::of(&c.id),
            id: keeps_call_id(&c.name).then_some(c.id.as_str()),
            dmail: c.dmail.as_ref(),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.calls.size_hint()
    }
}

impl ExactSizeIterator for CallIter<'_> {}

/// One tool call of a record, as the index keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallRef<'a> {
    name: &'a str,
    key: CallKey,
    id: Option<&'a str>,
    dmail: Option<&'a DMailArgs>,
}

impl<'a> CallRef<'a> {
    /// The tool's name.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The key of the call's id, for finding its result.
    pub fn key(&self) -> CallKey {
        self.key
    }

    /// Is this the call with id `id`?
    pub fn is(&self, id: &str) -> bool {
        self.key == CallKey::of(id)
    }

    /// The call's id as text, kept only for the tools whose ids are shown
    /// or exported (see [`keeps_call_id`]).
    pub fn id(&self) -> Option<&'a str> {
        self.id
    }

    /// SendDMail's arguments, when they could be read.
    pub fn dmail(&self) -> Option<&'a DMailArgs> {
        self.dmail
    }
}

/// Length of the longest run of equal records at the start of both lists:
/// how much a world line shares with another.
pub fn shared_prefix(old: &[RecordMeta], new: &[RecordMeta]) -> usize {
    old.iter()
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
