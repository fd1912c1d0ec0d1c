//! `WireWriter`: kimi-cli's wire.jsonl, a metadata line then timestamped events.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::pyjson::Json;
use super::record::{Part, ToolCall, ToolOutput};
use super::WriteError;

/// The protocol version kimi-cli writes in a main session's wire.jsonl.
pub const WIRE_PROTOCOL_VERSION: &str = "1.10";

pub fn metadata_line(protocol_version: &str) -> String {
    let v = Json::obj([
        ("type", Json::str("metadata")),
        ("protocol_version", Json::str(protocol_version)),
    ]);
    v.to_python() + "\n"
}

/// `{"timestamp": ts, "message": {"type": kind, "payload": payload}}` + `\n`.
pub fn event_line(timestamp: f64, kind: &str, payload: Json) -> String {
    let v = Json::obj([
        ("timestamp", Json::Float(timestamp)),
        ("message", event_message(kind, payload)),
    ]);
    v.to_python() + "\n"
}

fn event_message(kind: &str, payload: Json) -> Json {
    Json::obj([("type", Json::str(kind)), ("payload", payload)])
}

/// Seconds since the Unix epoch, as Python's `time.time()`.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Token figures for a `StatusUpdate`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    pub context_tokens: u64,
    pub max_context_tokens: u64,
    pub output: u64,
}

/// Appends events to one wire.jsonl. Timestamps never go backwards: an
/// event stamped earlier than the last one is moved just after it.
#[derive(Debug)]
pub struct WireWriter {
    path: PathBuf,
    file: File,
    last_timestamp: f64,
}

impl WireWriter {
    /// Opens `path` for appending; a new or empty file gets the metadata line.
    pub fn create(path: impl Into<PathBuf>, protocol_version: &str) -> Result<Self, WriteError> {
        let path = path.into();
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| WriteError::io(&path, e))?;
        let empty = file.metadata().map(|m| m.len() == 0).unwrap_or(true);
        if empty {
            file.write_all(metadata_line(protocol_version).as_bytes())
                .map_err(|e| WriteError::io(&path, e))?;
        }
        Ok(WireWriter {
            path,
            file,
            last_timestamp: 0.0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one event at `timestamp` (see the type's note on ordering).
    pub fn event_at(
        &mut self,
        timestamp: f64,
        kind: &str,
        payload: Json,
    ) -> Result<f64, WriteError> {
        let ts = if timestamp > self.last_timestamp {
            timestamp
        } else {
            self.last_timestamp + 1e-4
        };
        self.last_timestamp = ts;
        self.file
            .write_all(event_line(ts, kind, payload).as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|e| WriteError::io(&self.path, e))?;
        Ok(ts)
    }

    /// Writes one event stamped with the current time.
    pub fn event(&mut self, kind: &str, payload: Json) -> Result<f64, WriteError> {
        self.event_at(unix_now(), kind, payload)
    }
}

/// Payload builders for the event types worldline cares about.
pub mod payload {
    use super::*;

    pub fn turn_begin(user_input: &str) -> Json {
        Json::obj([("user_input", Json::str(user_input))])
    }

    pub fn step_begin(n: i64) -> Json {
        Json::obj([("n", Json::Int(n))])
    }

    pub fn content_part(part: &Part) -> Json {
        part.to_json()
    }

    pub fn tool_call(call: &ToolCall) -> Json {
        match call.to_json() {
            Json::Object(mut pairs) => {
                pairs.push(("extras".into(), Json::Null));
                Json::Object(pairs)
            }
            other => other,
        }
    }

    pub fn tool_result(tool_call_id: &str, out: &ToolOutput) -> Json {
        Json::obj([
            ("tool_call_id", Json::str(tool_call_id)),
            (
                "return_value",
                Json::obj([
                    ("is_error", Json::Bool(out.is_error)),
                    ("output", Json::str(out.output.as_str())),
                    ("message", Json::str(out.message.as_str())),
                    ("display", Json::Array(out.display.clone())),
                    ("extras", Json::Null),
                ]),
            ),
        ])
    }

    /// A `StatusUpdate`; `None` gives the all-null form kimi writes without usage.
    pub fn status_update(usage: Option<Usage>) -> Json {
        let (ctx_usage, tokens, max, token_usage) = match usage {
            Some(u) => (
                Json::Float(u.context_tokens as f64 / u.max_context_tokens.max(1) as f64),
                Json::Int(u.context_tokens as i64),
                Json::Int(u.max_context_tokens as i64),
                Json::obj([
                    ("input_other", Json::Int(u.context_tokens as i64)),
                    ("output", Json::Int(u.output as i64)),
                    ("input_cache_read", Json::Int(0)),
                    ("input_cache_creation", Json::Int(0)),
                ]),
            ),
            None => (Json::Null, Json::Null, Json::Null, Json::Null),
        };
        Json::obj([
            ("context_usage", ctx_usage),
            ("context_tokens", tokens),
            ("max_context_tokens", max),
            ("token_usage", token_usage),
            ("message_id", Json::Null),
            ("plan_mode", Json::Bool(false)),
            ("mcp_status", Json::Null),
        ])
    }

    pub fn empty() -> Json {
        Json::Object(Vec::new())
    }

    /// A subagent's event as relayed in its parent's wire.
    pub fn subagent_event(
        parent_tool_call_id: &str,
        agent_id: &str,
        subagent_type: &str,
        kind: &str,
        inner: Json,
    ) -> Json {
        Json::obj([
            ("parent_tool_call_id", Json::str(parent_tool_call_id)),
            ("agent_id", Json::str(agent_id)),
            ("subagent_type", Json::str(subagent_type)),
            ("event", event_message(kind, inner)),
        ])
    }
}
