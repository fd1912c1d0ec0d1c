//! Bounded caches of what was read from disk: one-line previews of rows and
//! a few full bodies. Sessions reach hundreds of MB, so nothing grows with
//! the session: when a cache is full it is dropped and refilled from the
//! visible rows.

use std::collections::HashMap;

use crate::model::{Body, Marker, Part, Role};
use crate::text::sanitize_line;
use crate::worldline::revert::{self, Kept};
use crate::worldline::{RecordRef, Session};

const MAX_PREVIEWS: usize = 2048;
/// Records over this size are previewed from their first bytes: parsing a
/// 50 MB image line to fill one row would stall a keypress.
const HUGE: u32 = 1 << 20;
const HEAD: usize = 16 << 10;
const MAX_BODIES: usize = 8;
/// Columns kept per preview; rows never show more.
const PREVIEW_COLS: usize = 240;

#[derive(Debug, Default)]
pub struct Cache {
    previews: HashMap<RecordRef, String>,
    bodies: Vec<(RecordRef, Result<Body, String>)>,
    /// Previews that say their record could not be read.
    failed: Vec<RecordRef>,
    /// The last D-Mail landing looked at: its injection, the agent's world
    /// lines then, and what the line it left had changed on disk.
    landing: Option<(RecordRef, usize, Option<Kept>)>,
}

impl Cache {
    pub fn clear(&mut self) {
        self.previews.clear();
        self.bodies.clear();
        self.failed.clear();
        self.landing = None;
    }

    /// Forgets what could not be read, keeping the rest: for a snapshot
    /// that only added records (a read may have failed on a file since
    /// renamed by a rotation).
    pub fn forget_failures(&mut self) {
        for r in self.failed.drain(..) {
            self.previews.remove(&r);
        }
        self.bodies.retain(|(_, b)| b.is_ok());
    }

    pub fn get_preview(&self, r: RecordRef) -> Option<&str> {
        self.previews.get(&r).map(String::as_str)
    }

    /// Did this tool result report an error (from its loaded preview)?
    pub fn is_error(&self, r: RecordRef) -> Option<bool> {
        self.get_preview(r).map(|p| p.starts_with("ERROR"))
    }

    pub fn get_body(&self, r: RecordRef) -> Option<&Result<Body, String>> {
        self.bodies.iter().find(|(k, _)| *k == r).map(|(_, b)| b)
    }

    /// Loads a row's preview unless the index alone says what it is.
    pub fn preview(&mut self, s: &Session, r: RecordRef) {
        if self.previews.contains_key(&r) {
            return;
        }
        let Some(meta) = s.record(r) else { return };
        let needs_body = !matches!(
            (meta.role(), meta.marker().as_deref()),
            (Role::Checkpoint | Role::Usage, _)
                | (
                    _,
                    Some(Marker::CheckpointNote(_) | Marker::DMailInjection(_))
                )
        );
        if !needs_body {
            return;
        }
        if self.previews.len() >= MAX_PREVIEWS {
            self.previews.clear();
            self.failed.clear();
        }
        let text = if meta.len() > HUGE {
            huge_preview(s, r, meta.len())
        } else {
            s.body(r).map(|b| preview_of(&b)).map_err(|e| e.to_string())
        };
        let text = text.unwrap_or_else(|e| {
            self.failed.push(r);
            format!("(unreadable: {e})")
        });
        self.previews.insert(r, sanitize_line(&text, PREVIEW_COLS));
    }

    /// For a D-Mail's landing `r`: reads what the world line it left had
    /// changed on disk by then, unless read already for as many world lines.
    pub fn landing(&mut self, s: &Session, r: RecordRef) {
        let Some(meta) = s.record(r) else { return };
        if !matches!(meta.marker().as_deref(), Some(Marker::DMailInjection(_))) {
            return;
        }
        let lines = lines_of(s, r);
        if matches!(&self.landing, Some((at, n, _)) if *at == r && *n == lines) {
            return;
        }
        let mut load = |x| s.body(x).ok();
        let kept = revert::kept_at_landing(s, r.agent, r.line, &mut load);
        self.landing = Some((r, lines, kept));
    }

    /// What [`Cache::landing`] read for `r`, if it is current.
    pub fn get_landing(&self, s: &Session, r: RecordRef) -> Option<&Kept> {
        match &self.landing {
            Some((at, n, kept)) if *at == r && *n == lines_of(s, r) => kept.as_ref(),
            _ => None,
        }
    }

    pub fn body(&mut self, s: &Session, r: RecordRef) {
        if self.get_body(r).is_some() {
            return;
        }
        if self.bodies.len() >= MAX_BODIES {
            let _ = self.bodies.remove(0);
        }
        self.bodies.push((r, s.body(r).map_err(|e| e.to_string())));
    }
}

fn lines_of(s: &Session, r: RecordRef) -> usize {
    s.agents.get(r.agent).map_or(0, |a| a.family.lines.len())
}

/// A preview from a huge record's first bytes: its first text, or what
/// kind of media it carries, and its size.
fn huge_preview(s: &Session, r: RecordRef, len: u32) -> Result<String, String> {
    let size = crate::export::human_size(u64::from(len));
    let head = s.line_head(r, HEAD).map_err(|e| e.to_string())?;
    let media = ["image", "audio", "video"]
        .into_iter()
        .find(|m| memchr::memmem::find(&head, format!("data:{m}/").as_bytes()).is_some());
    let text = first_string_after(&head, b"\"text\"")
        .or_else(|| first_string_after(&head, b"\"content\""));
    Ok(match (text, media) {
        (Some(t), Some(m)) => format!("{t} [{m}] ({size} record)"),
        (Some(t), None) => format!("{t} … ({size} record)"),
        (None, Some(m)) => format!("[{m}] ({size} record)"),
        (None, None) => format!("({size} record)"),
    })
}

/// The string value of the first `key` (quoted) in `head`, even when the
/// string runs past the end of `head`.
fn first_string_after(head: &[u8], key: &[u8]) -> Option<String> {
    let mut from = 0;
    while let Some(k) = memchr::memmem::find(&head[from..], key) {
        let after = &head[from + k + key.len()..];
        from += k + key.len();
        let Some(rest) = after.trim_ascii_start().strip_prefix(b":") else {
            continue; // the key's text as a value, e.g. "type":"text"
        };
        let body = rest.trim_ascii_start().strip_prefix(b"\"")?;
        return Some(json_string_prefix(body));
    }
    None
}

/// Decodes the start of a JSON string body (after its opening quote) up to
/// its closing quote or the end of the bytes, dropping a cut-off escape.
fn json_string_prefix(body: &[u8]) -> String {
    let mut end = body.len();
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                end = i;
                break;
            }
            b'\\' if i + 1 >= body.len() => {
                end = i;
                break;
            }
            b'\\' if body[i + 1] == b'u' && i + 6 > body.len() => {
                end = i;
                break;
            }
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    let mut quoted = Vec::with_capacity(end + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(&body[..end.min(body.len())]);
    quoted.push(b'"');
    crate::read::lenient::parse_value(&quoted)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..end.min(body.len())]).into_owned())
}

/// The first thing worth reading in a body: its text, else its tool calls,
/// else its media.
fn preview_of(b: &Body) -> String {
    let mut text = String::new();
    for p in &b.parts {
        match p {
            Part::Text(t) => {
                text.push_str(strip_system(t));
                text.push(' ');
            }
            Part::Media { kind, bytes, .. } => text.push_str(&format!(
                "[{kind} {}] ",
                crate::export::human_size(*bytes as u64)
            )),
            _ => {}
        }
        if text.len() > PREVIEW_COLS * 4 {
            break;
        }
    }
    if text.trim().is_empty() {
        if let Some(t) = b.parts.iter().find_map(|p| match p {
            Part::Think(t) => Some(t),
            _ => None,
        }) {
            text = format!("(thinking) {t}");
        }
    }
    if text.trim().is_empty() {
        for c in &b.tool_calls {
            text.push_str(&c.arguments);
            text.push(' ');
        }
    }
    text
}

/// kimi-cli wraps its own notes in `<system>…</system>`; the tags are noise
/// in a one-line preview.
fn strip_system(t: &str) -> &str {
    let t = t.trim_start();
    let t = t.strip_prefix("<system>").unwrap_or(t);
    t.strip_suffix("</system>").unwrap_or(t)
}

#[cfg(test)]
mod huge_tests {
    use super::*;

    #[test]
    fn strings_are_read_from_a_cut_head() {
        let head = br#"{"role":"tool","content":[{"type":"text","text":"log \"quoted\" \u00e9 line\nnext"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"#;
        assert_eq!(
            first_string_after(head, br#""text""#).as_deref(),
            Some("log \"quoted\" é line\nnext")
        );
        // Cut in the middle of the string, and of an escape.
        assert_eq!(json_string_prefix(br#"abc\"de\u00"#), "abc\"de");
        assert_eq!(json_string_prefix(br#"abc\"#), "abc");
        assert_eq!(json_string_prefix(b"x\xe4\xb8"), "x\u{fffd}");
        // A plain-string content.
        assert_eq!(
            first_string_after(br#"{"role":"user","content":"hello wor"#, br#""content""#)
                .as_deref(),
            Some("hello wor")
        );
        assert_eq!(
            first_string_after(br#"{"content":[{"type":"image"#, br#""text""#),
            None
        );
    }

    #[test]
    fn a_huge_record_is_previewed_from_its_head() {
        let dir = tempfile::tempdir().unwrap();
        let image = "A".repeat(3 << 20);
        let big = serde_json::json!({"role": "user", "content": [
            {"type": "text", "text": "what is in this picture?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{image}")}}]});
        let lines = [
            r#"{"role": "_system_prompt", "content": "s"}"#.to_string(),
            r#"{"role": "_checkpoint", "id": 0}"#.to_string(),
            big.to_string(),
        ];
        std::fs::write(dir.path().join("context.jsonl"), lines.join("\n") + "\n").unwrap();
        let s = Session::load(dir.path()).unwrap();
        let r = RecordRef {
            agent: 0,
            line: 0,
            record: 2,
        };
        let mut cache = Cache::default();
        cache.preview(&s, r);
        let p = cache.get_preview(r).unwrap();
        assert!(
            p.starts_with("what is in this picture? [image] (3.0 MB record)"),
            "{p}"
        );
    }
}
