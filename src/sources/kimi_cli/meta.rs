//! kimi-cli's side files: `state.json` (the title), `subagents/<id>/meta.json`
//! (`wire.jsonl` is `wire`).
//! A broken or missing side file means "unknown", never a failure.

use std::path::Path;

use crate::read::guard;
use crate::sources::SubagentMeta;

use super::layout::{file_name, MetaSource};

/// `state.json`'s `custom_title` (read through the guard: a regular file,
/// size-capped, never blocking on a FIFO).
pub fn title(state_json: &Path) -> Option<String> {
    let state = guard::read_json(state_json, guard::STATE_JSON_CAP).ok()??;
    state
        .get("custom_title")
        .and_then(|t| t.as_str())
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

/// `meta.json` of a `subagents/<agent_id>/` directory, leniently.
pub fn subagent_meta(meta_json: &Path) -> SubagentMeta {
    let agent_id = meta_json.parent().map(file_name).unwrap_or_default();
    let doc = guard::read_json(meta_json, guard::META_JSON_CAP)
        .ok()
        .flatten()
        .unwrap_or_default();
    let s = |k: &str| doc.get(k).and_then(|v| v.as_str()).map(str::to_string);
    SubagentMeta {
        agent_id: s("agent_id").unwrap_or(agent_id),
        subagent_type: s("subagent_type"),
        description: s("description"),
        status: s("status"),
        created_at: doc.get("created_at").and_then(|v| v.as_f64()),
    }
}

/// The meta an agent spec stands for (`None` for the main agent).
pub fn read_meta(source: &MetaSource) -> Option<SubagentMeta> {
    match source {
        MetaSource::Main => None,
        MetaSource::File(p) => Some(subagent_meta(p)),
        MetaSource::Fixed(m) => Some(m.clone()),
    }
}
