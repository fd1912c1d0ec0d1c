//! kimi-cli's side files: `state.json` (the title), `subagents/<id>/meta.json`
//! (`wire.jsonl` is `wire`).
//! A broken or missing side file means "unknown", never a failure.

use std::path::Path;

use crate::read::guard;
use crate::sources::SubagentMeta;

use super::layout::{file_name, MetaSource};

/// Longest title kept, in characters: a title is a line in a header, and a
/// 50 MB one must not be carried (or printed) whole.
pub const MAX_TITLE: usize = 1000;

/// `state.json`'s `custom_title` (read through the guard: a regular file,
/// size-capped, never blocking on a FIFO). A broken file means no title.
pub fn title(state_json: &Path) -> Option<String> {
    title_checked(state_json).0
}

/// [`title`], and why `state.json` was not read when it exists but is a
/// FIFO, a device, too big or not JSON.
pub fn title_checked(state_json: &Path) -> (Option<String>, Option<String>) {
    let state = match guard::read_json(state_json, guard::STATE_JSON_CAP) {
        Ok(Some(v)) => v,
        Ok(None) => return (None, None),
        Err(why) => return (None, Some(why)),
    };
    let title = state
        .get("custom_title")
        .and_then(|t| t.as_str())
        .filter(|t| !t.is_empty())
        .map(|t| match t.char_indices().nth(MAX_TITLE) {
            Some((cut, _)) => format!("{}…", &t[..cut]),
            None => t.to_string(),
        });
    (title, None)
}

/// `meta.json` of a `subagents/<agent_id>/` directory, leniently.
pub fn subagent_meta(meta_json: &Path) -> SubagentMeta {
    subagent_meta_checked(meta_json).0
}

/// [`subagent_meta`], and why `meta.json` was not read when it exists but
/// cannot be.
pub fn subagent_meta_checked(meta_json: &Path) -> (SubagentMeta, Option<String>) {
    let agent_id = meta_json.parent().map(file_name).unwrap_or_default();
    let (doc, problem) = match guard::read_json_nofollow(meta_json, guard::META_JSON_CAP) {
        Ok(v) => (v.unwrap_or_default(), None),
        Err(why) => (serde_json::Value::Null, Some(why)),
    };
    let s = |k: &str| doc.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let meta = SubagentMeta {
        agent_id: s("agent_id").unwrap_or(agent_id),
        subagent_type: s("subagent_type"),
        description: s("description"),
        status: s("status"),
        created_at: doc.get("created_at").and_then(|v| v.as_f64()),
    };
    (meta, problem)
}

/// The meta an agent spec stands for (`None` for the main agent).
pub fn read_meta(source: &MetaSource) -> Option<SubagentMeta> {
    read_meta_checked(source).0
}

/// [`read_meta`], and why its `meta.json` was not read.
pub fn read_meta_checked(source: &MetaSource) -> (Option<SubagentMeta>, Option<String>) {
    match source {
        MetaSource::Main => (None, None),
        MetaSource::File(p) => {
            let (m, why) = subagent_meta_checked(p);
            (Some(m), why)
        }
        MetaSource::Fixed(m) => (Some(m.clone()), None),
    }
}
