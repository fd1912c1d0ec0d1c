//! context.jsonl records and their exact line spellings. Every `*_line`
//! function returns the full line including its `\n`, so a test replayer can
//! write it in chunks of any size.

use super::pyjson::Json;

/// kimi-cli's D-Mail injection text around the (stripped) D-Mail body.
pub const DMAIL_INJECTION_PREFIX: &str = "<system>You just got a D-Mail from your future self. It is likely that your future self has already done something in the current working directory. Please read the D-Mail and decide what to do next. You MUST NEVER mention to the user about this information. D-Mail content:\n\n";
pub const DMAIL_INJECTION_SUFFIX: &str = "</system>";
/// The SendDMail tool's success text (sic: the revert happens after the step).
pub const SEND_DMAIL_ACCEPTED: &str = "If you see this message, the D-Mail was NOT sent successfully. This may be because some other tool that needs approval was rejected.";
pub const SEND_DMAIL_NAME: &str = "SendDMail";
pub const COMPACTION_HEADER: &str =
    "<system>Previous context has been compacted. Here is the compaction output:</system>";

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Think {
        think: String,
        encrypted: Option<String>,
    },
    ImageUrl {
        url: String,
        id: Option<String>,
    },
    AudioUrl {
        url: String,
        id: Option<String>,
    },
    VideoUrl {
        url: String,
        id: Option<String>,
    },
    /// Any other part, written as given (for unknown or legacy types).
    Raw(Json),
}

impl Part {
    pub fn text(s: impl Into<String>) -> Part {
        Part::Text(s.into())
    }

    pub fn think(s: impl Into<String>) -> Part {
        Part::Think {
            think: s.into(),
            encrypted: None,
        }
    }

    /// The part as kosong serialises it (also the wire `ContentPart` payload).
    pub fn to_json(&self) -> Json {
        let media = |kind: &str, url: &str, id: &Option<String>| {
            Json::obj([
                ("type", Json::str(kind)),
                (
                    kind,
                    Json::obj([
                        ("url", Json::str(url)),
                        ("id", Json::opt_str(id.as_deref())),
                    ]),
                ),
            ])
        };
        match self {
            Part::Text(t) => {
                Json::obj([("type", Json::str("text")), ("text", Json::str(t.as_str()))])
            }
            Part::Think { think, encrypted } => Json::obj([
                ("type", Json::str("think")),
                ("think", Json::str(think.as_str())),
                ("encrypted", Json::opt_str(encrypted.as_deref())),
            ]),
            Part::ImageUrl { url, id } => media("image_url", url, id),
            Part::AudioUrl { url, id } => media("audio_url", url, id),
            Part::VideoUrl { url, id } => media("video_url", url, id),
            Part::Raw(j) => j.clone(),
        }
    }
}

/// A message's content: a plain string or a list of parts.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

impl Content {
    /// kosong writes a content list holding one text part as a plain string
    /// (the fixtures' `<system>CHECKPOINT N</system>` is built that way).
    fn to_json(&self) -> Json {
        match self {
            Content::Text(t) => Json::str(t.as_str()),
            Content::Parts(parts) => match parts.as_slice() {
                [Part::Text(t)] => Json::str(t.as_str()),
                _ => Json::Array(parts.iter().map(Part::to_json).collect()),
            },
        }
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_owned())
    }
}
impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}
impl From<Vec<Part>> for Content {
    fn from(p: Vec<Part>) -> Self {
        Content::Parts(p)
    }
}

/// A function tool call; `arguments` is JSON text exactly as the model wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl ToolCall {
    /// Arguments spelled the way kimi's fixtures show them (Python json.dumps).
    pub fn new(id: impl Into<String>, name: impl Into<String>, args: &Json) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_python(),
        }
    }

    pub fn to_json(&self) -> Json {
        Json::obj([
            ("type", Json::str("function")),
            ("id", Json::str(self.id.as_str())),
            (
                "function",
                Json::obj([
                    ("name", Json::str(self.name.as_str())),
                    ("arguments", Json::str(self.arguments.as_str())),
                ]),
            ),
        ])
    }
}

/// A `user`, `assistant`, `tool` or `system` message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: String,
    pub name: Option<String>,
    pub content: Content,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: Option<String>,
    pub partial: Option<bool>,
}

impl Message {
    pub fn new(role: &str, content: impl Into<Content>) -> Message {
        Message {
            role: role.to_owned(),
            name: None,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            partial: None,
        }
    }

    pub fn user(content: impl Into<Content>) -> Message {
        Message::new("user", content)
    }

    pub fn assistant(content: impl Into<Content>) -> Message {
        Message::new("assistant", content)
    }

    pub fn with_tool_calls(mut self, calls: Vec<ToolCall>) -> Message {
        self.tool_calls = calls;
        self
    }

    /// The tool message answering `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<Content>) -> Message {
        let mut m = Message::new("tool", content);
        m.tool_call_id = Some(tool_call_id.into());
        m
    }

    /// The tool message for a tool's return value, built like kimi-cli:
    /// `<system>{message}</system>` (or `<system>ERROR: …</system>`) then the output.
    pub fn tool_result(tool_call_id: impl Into<String>, result: &ToolOutput) -> Message {
        let mut parts = Vec::new();
        if !result.message.is_empty() {
            let tag = if result.is_error { "ERROR: " } else { "" };
            parts.push(Part::text(format!(
                "<system>{tag}{}</system>",
                result.message
            )));
        }
        if !result.output.is_empty() {
            parts.push(Part::text(result.output.as_str()));
        }
        if parts.is_empty() {
            parts.push(Part::text("<system>Tool output is empty.</system>"));
        }
        Message::tool(tool_call_id, Content::Parts(parts))
    }

    /// Field order as kosong's `Message`; absent fields are left out.
    pub fn to_json(&self) -> Json {
        let mut pairs = vec![("role".to_owned(), Json::str(self.role.as_str()))];
        if let Some(name) = &self.name {
            pairs.push(("name".into(), Json::str(name.as_str())));
        }
        pairs.push(("content".into(), self.content.to_json()));
        if !self.tool_calls.is_empty() {
            let calls = self.tool_calls.iter().map(ToolCall::to_json).collect();
            pairs.push(("tool_calls".into(), Json::Array(calls)));
        }
        if let Some(id) = &self.tool_call_id {
            pairs.push(("tool_call_id".into(), Json::str(id.as_str())));
        }
        if let Some(p) = self.partial {
            pairs.push(("partial".into(), Json::Bool(p)));
        }
        Json::Object(pairs)
    }
}

/// A tool's return value as kimi reports it (wire `ToolResult.return_value`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    pub is_error: bool,
    pub output: String,
    pub message: String,
    /// wire `display` blocks, e.g. `{"type": "brief", "text": …}`.
    pub display: Vec<Json>,
}

impl ToolOutput {
    pub fn ok(message: impl Into<String>, output: impl Into<String>) -> ToolOutput {
        ToolOutput {
            message: message.into(),
            output: output.into(),
            ..ToolOutput::default()
        }
    }

    pub fn error(message: impl Into<String>) -> ToolOutput {
        ToolOutput {
            is_error: true,
            message: message.into(),
            ..ToolOutput::default()
        }
    }

    /// SendDMail's result: accepted, or refused with DenwaRenji's reason.
    pub fn send_dmail(result: Result<(), String>) -> ToolOutput {
        let brief = |t: &str| Json::obj([("type", Json::str("brief")), ("text", Json::str(t))]);
        match result {
            Ok(()) => ToolOutput {
                display: vec![brief("El Psy Kongroo")],
                ..ToolOutput::ok(SEND_DMAIL_ACCEPTED, "")
            },
            Err(reason) => ToolOutput {
                display: vec![brief("Failed to send D-Mail")],
                ..ToolOutput::error(format!("Failed to send D-Mail. Error: {reason}"))
            },
        }
    }
}

pub fn system_prompt_line(prompt: &str) -> String {
    let v = Json::obj([
        ("role", Json::str("_system_prompt")),
        ("content", Json::str(prompt)),
    ]);
    v.to_python() + "\n"
}

pub fn checkpoint_line(id: i64) -> String {
    let v = Json::obj([("role", Json::str("_checkpoint")), ("id", Json::Int(id))]);
    v.to_python() + "\n"
}

pub fn usage_line(token_count: u64) -> String {
    let count = i64::try_from(token_count).unwrap_or(i64::MAX);
    let v = Json::obj([
        ("role", Json::str("_usage")),
        ("token_count", Json::Int(count)),
    ]);
    v.to_python() + "\n"
}

pub fn message_line(message: &Message) -> String {
    message.to_json().to_compact() + "\n"
}

/// The `<system>CHECKPOINT N</system>` user message that follows a checkpoint.
pub fn checkpoint_message(id: i64) -> Message {
    Message::user(Content::Parts(vec![Part::text(format!(
        "<system>CHECKPOINT {id}</system>"
    ))]))
}

/// The injected user message text for a D-Mail; kimi strips the body first.
pub fn dmail_injection_text(message: &str) -> String {
    format!(
        "{DMAIL_INJECTION_PREFIX}{}{DMAIL_INJECTION_SUFFIX}",
        message.trim()
    )
}

pub fn dmail_injection_message(message: &str) -> Message {
    Message::user(Content::Parts(vec![Part::text(dmail_injection_text(
        message,
    ))]))
}

/// The first user message of a compacted context.
pub fn compaction_message(summary: &str) -> Message {
    Message::user(Content::Parts(vec![
        Part::text(COMPACTION_HEADER),
        Part::text(summary),
    ]))
}
