//! denwa/1 wire types: request parsing (server side), reply encoding, and the
//! typed replies a client gets back. One JSON object per `\n`-terminated line.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::renji::DMail;

/// The protocol name carried by `hello` and `denwa.json`.
pub const PROTOCOL: &str = "denwa/1";

/// Longest request line accepted, newline excluded.
pub const MAX_LINE: usize = 1024 * 1024;

/// A well-formed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Hello,
    Status,
    SendDMail { message: String, checkpoint_id: i64 },
}

/// Reply to `hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: String,
    /// The session id (unsanitised).
    pub session: String,
    /// `"main"` or the subagent's id.
    pub agent: String,
    /// Server name and version, e.g. `"worldline-demo 0.1.0"`.
    pub server: String,
}

/// Reply to `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub n_checkpoints: i64,
    pub pending: Option<DMail>,
}

/// A parsed request line: the echoed `id` (if any) and the request or what was
/// wrong with it. The id is kept even when the rest is malformed, so error
/// replies can still be matched.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub id: Option<Value>,
    pub request: Result<Request, String>,
}

/// Parses one request line (without its newline). Never panics.
pub fn parse_request(line: &[u8]) -> Parsed {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            let what = if line.iter().all(u8::is_ascii_whitespace) {
                "empty request line".to_string()
            } else {
                format!("bad JSON: {e}")
            };
            return Parsed {
                id: None,
                request: Err(what),
            };
        }
    };
    let Value::Object(obj) = value else {
        return Parsed {
            id: None,
            request: Err("request must be a JSON object".into()),
        };
    };
    Parsed {
        id: obj.get("id").cloned(),
        request: request_from(&obj),
    }
}

fn request_from(obj: &Map<String, Value>) -> Result<Request, String> {
    let op = str_field(obj, "op")?;
    match op {
        "hello" => Ok(Request::Hello),
        "status" => Ok(Request::Status),
        "send_dmail" => Ok(Request::SendDMail {
            message: str_field(obj, "message")?.to_owned(),
            checkpoint_id: int_field(obj, "checkpoint_id")?,
        }),
        other => Err(format!(
            "unknown op {other:?} (expected \"hello\", \"status\" or \"send_dmail\")"
        )),
    }
}

fn str_field<'a>(obj: &'a Map<String, Value>, name: &str) -> Result<&'a str, String> {
    match obj.get(name) {
        None => Err(format!("missing field {name:?}")),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("field {name:?} must be a string")),
    }
}

fn int_field(obj: &Map<String, Value>, name: &str) -> Result<i64, String> {
    match obj.get(name) {
        None => Err(format!("missing field {name:?}")),
        Some(v) => v
            .as_i64()
            .ok_or_else(|| format!("field {name:?} must be an integer")),
    }
}

/// Encodes a reply line (with its trailing newline). `body` must serialise to
/// an object; its fields follow `"ok"`, and `"id"` comes last when present.
pub fn encode_reply(ok: bool, body: Map<String, Value>, id: Option<&Value>) -> Vec<u8> {
    // Built by hand so `"ok"` leads regardless of serde_json's map ordering.
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(if ok {
        b"{\"ok\":true"
    } else {
        b"{\"ok\":false"
    });
    let fields = body
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .chain(id.map(|v| ("id", v)));
    for (k, v) in fields {
        out.push(b',');
        // Serialising a String key or a Value cannot fail.
        out.extend(serde_json::to_vec(k).unwrap_or_default());
        out.push(b':');
        out.extend(serde_json::to_vec(v).unwrap_or_default());
    }
    out.extend_from_slice(b"}\n");
    out
}

/// `{"ok":false,"error":…}` with the id echoed.
pub fn error_reply(message: &str, id: Option<&Value>) -> Vec<u8> {
    let mut body = Map::new();
    body.insert("error".into(), Value::String(message.to_owned()));
    encode_reply(false, body, id)
}

/// Serialises a typed reply body into the object map `encode_reply` wants.
pub fn body_of<T: Serialize>(body: &T) -> Map<String, Value> {
    match serde_json::to_value(body) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// Encodes a request line for the client, with an `id` to match the reply.
pub fn encode_request(request: &Request, id: u64) -> Vec<u8> {
    let mut v = match request {
        Request::Hello => serde_json::json!({"op": "hello"}),
        Request::Status => serde_json::json!({"op": "status"}),
        Request::SendDMail {
            message,
            checkpoint_id,
        } => serde_json::json!({
            "op": "send_dmail", "message": message, "checkpoint_id": checkpoint_id
        }),
    };
    v["id"] = Value::from(id);
    let mut line = serde_json::to_vec(&v).unwrap_or_default();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_reports() {
        let p = parse_request(br#"{"op":"send_dmail","message":"m","checkpoint_id":2,"id":7}"#);
        assert_eq!(p.id, Some(Value::from(7)));
        assert_eq!(
            p.request,
            Ok(Request::SendDMail {
                message: "m".into(),
                checkpoint_id: 2
            })
        );
        let p = parse_request(br#"{"op":"send_dmail","message":"m","checkpoint_id":"1","id":"x"}"#);
        assert_eq!(p.id, Some(Value::from("x")));
        assert_eq!(
            p.request,
            Err("field \"checkpoint_id\" must be an integer".into())
        );
        assert!(parse_request(b"{nope").request.is_err());
        assert!(parse_request(b"[1]").request.is_err());
        assert!(parse_request(b"").request.is_err());
        assert!(parse_request(br#"{"op":1}"#).request.is_err());
    }

    #[test]
    fn reply_layout() {
        let r = error_reply("bad \"x\"", Some(&Value::from(3)));
        assert_eq!(r, b"{\"ok\":false,\"error\":\"bad \\\"x\\\"\",\"id\":3}\n");
        assert_eq!(encode_reply(true, Map::new(), None), b"{\"ok\":true}\n");
    }
}
