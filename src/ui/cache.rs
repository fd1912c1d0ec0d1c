//! Bounded caches of what was read from disk: one-line previews of rows and
//! a few full bodies. Sessions reach hundreds of MB, so nothing grows with
//! the session: when a cache is full it is dropped and refilled from the
//! visible rows.

use std::collections::HashMap;

use crate::model::{Body, Marker, Part, Role};
use crate::text::sanitize_line;
use crate::worldline::{RecordRef, Session};

const MAX_PREVIEWS: usize = 2048;
const MAX_BODIES: usize = 8;
/// Columns kept per preview; rows never show more.
const PREVIEW_COLS: usize = 240;

#[derive(Debug, Default)]
pub struct Cache {
    previews: HashMap<RecordRef, String>,
    bodies: Vec<(RecordRef, Result<Body, String>)>,
}

impl Cache {
    pub fn clear(&mut self) {
        self.previews.clear();
        self.bodies.clear();
    }

    pub fn get_preview(&self, r: RecordRef) -> Option<&str> {
        self.previews.get(&r).map(String::as_str)
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
            (&meta.role, meta.marker.as_deref()),
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
        }
        let text = match s.body(r) {
            Ok(b) => preview_of(&b),
            Err(e) => format!("(unreadable: {e})"),
        };
        self.previews.insert(r, sanitize_line(&text, PREVIEW_COLS));
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
