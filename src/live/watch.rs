//! `worldline watch --json`: one JSON object per line, flushed, for scripts.
//!
//! First the current state: a `world_line` event per world line of every
//! agent, a `subagent` event per subagent and a `warning` event per warning,
//! but no `record` events (a session can hold millions of records; the
//! `records` count of each world line says how many there are). Then the
//! changes, as they happen:
//! - `world_line`: a new world line, or one whose name, fork or `current`
//!   flag changed (a rotation renames the old `context.jsonl`). The same
//!   fields as a world line of `tree --format json`, plus `agent`.
//! - `record`: a new record: `agent`, `file`, 0-based `index` in that file,
//!   1-based `line`, `role`, and `checkpoint` on checkpoint records; for a
//!   branch inside one file (Kimi Code), `branch`, and `index` is in the
//!   branch's view. A new
//!   world line's copied prefix is not repeated: its records start at its
//!   `shared_records`.
//! - `subagent`: a new subagent, or a change of its status or parent call.
//! - `world_line_removed`: a world line's file is gone (`agent`, `file`);
//!   `subagent_removed`: a whole subagent is (`agent_id`), after a
//!   `world_line_removed` for each of its world lines.
//! - `warning`: a new warning (`file`, `line`, `message`); `file` and
//!   `line` are null for one about following itself (notifications fell
//!   back to polling).
//! - `fork`: a session made from this one by `/fork` or `/undo` appeared
//!   (`session`, `records`, `kind`, as in `tree --format json`'s `forks`);
//!   `forked_from`: this session's source was found (same fields).
//! - `deleted`: the session directory is gone; `error`: a read failed.
//!
//! `agent` is `"main"` or the subagent's id. The command (`cmd/watch.rs`)
//! runs until interrupted (Ctrl-C or SIGTERM: exit 0); a closed stdout ends
//! it quietly too.

use serde_json::{json, Map, Value};

use crate::export::json::{link_json, world_line_json};
use crate::worldline::{Agent, Family, Session};

fn agent_label(a: &Agent) -> String {
    match &a.meta {
        Some(m) => m.agent_id.clone(),
        None => "main".to_string(),
    }
}

fn world_line_event(agent: &str, f: &Family, i: usize) -> Value {
    let mut m = Map::new();
    m.insert("event".into(), json!("world_line"));
    m.insert("agent".into(), json!(agent));
    if let Value::Object(fields) = world_line_json(f, &f.lines[i]) {
        m.extend(fields);
    }
    Value::Object(m)
}

fn subagent_event(a: &Agent) -> Value {
    let meta = a.meta.clone().unwrap_or_default();
    json!({
        "event": "subagent",
        "agent_id": meta.agent_id,
        "subagent_type": meta.subagent_type,
        "description": meta.description,
        "status": meta.status,
        "parent_tool_call_id": a.parent_tool_call_id,
    })
}

fn record_events(agent: &str, f: &Family, i: usize, from: usize, out: &mut Vec<Value>) {
    let file = &f.files[i];
    for (index, r) in file.records.iter().enumerate().skip(from) {
        let mut m = Map::new();
        m.insert("event".into(), json!("record"));
        m.insert("agent".into(), json!(agent));
        m.insert("file".into(), json!(file.name));
        if let Some(b) = &f.lines[i].branch {
            m.insert("branch".into(), json!(b));
        }
        m.insert("index".into(), json!(index));
        m.insert("line".into(), json!(r.line()));
        m.insert("role".into(), json!(r.role().as_str()));
        if let Some(c) = r.checkpoint() {
            m.insert("checkpoint".into(), json!(c));
        }
        out.push(Value::Object(m));
    }
}

/// What changed from `prev` to `next`, as watch events (`prev = None`: the
/// initial state). World lines are matched by position, which survives
/// renames: rotations only ever add a world line at the end.
pub fn events_between(prev: Option<&Session>, next: &Session) -> Vec<Value> {
    let mut out = Vec::new();
    for a in &next.agents {
        let label = agent_label(a);
        // Subagent families can share a directory (`context_sub_N`): match
        // agents by what they are called.
        let before = prev.and_then(|p| p.agents.iter().find(|b| agent_label(b) == label));
        if a.meta.is_some() {
            let changed = before
                .is_none_or(|b| b.meta != a.meta || b.parent_tool_call_id != a.parent_tool_call_id);
            if changed {
                out.push(subagent_event(a));
            }
        }
        let f = &a.family;
        for (i, line) in f.lines.iter().enumerate() {
            let old = before.and_then(|b| Some((&b.family, b.family.lines.get(i)?)));
            let Some((of, ol)) = old else {
                out.push(world_line_event(&label, f, i));
                if prev.is_some() {
                    record_events(&label, f, i, line.shared, &mut out);
                }
                continue;
            };
            let (old_recs, recs) = (&of.files[i].records, &f.files[i].records);
            let appended = recs.len() >= old_recs.len()
                && old_recs
                    .last()
                    .is_none_or(|r| recs[old_recs.len() - 1].same_record(r));
            // Formats that name entries: a line's leaf moves as it grows,
            // and its `parent` is the parent's leaf.
            let parent_leaf = |fam: &Family, l: &crate::worldline::WorldLine| {
                l.parent.and_then(|p| fam.lines.get(p)?.leaf.clone())
            };
            if !appended
                || ol.leaf != line.leaf
                || parent_leaf(of, ol) != parent_leaf(f, line)
                || ol.file != line.file
                || ol.current != line.current
                || ol.parent != line.parent
                || ol.fork != line.fork
                // A folded parallel result adds a record, not a leaf.
                || (line.leaf.is_some() && recs.len() != old_recs.len())
            {
                out.push(world_line_event(&label, f, i));
            }
            let from = if appended { old_recs.len() } else { 0 };
            record_events(&label, f, i, from.max(line.shared), &mut out);
        }
        // A context file deleted (or replaced by something unreadable). By
        // name: a rotation renames files but never takes a name away.
        if let Some(b) = before {
            for ol in &b.family.lines {
                if f.line_by_file(&ol.file).is_none() {
                    out.push(
                        json!({"event": "world_line_removed", "agent": label, "file": ol.file}),
                    );
                }
            }
        }
    }
    if let Some(p) = prev {
        for b in p
            .agents
            .iter()
            .filter(|b| !next.agents.iter().any(|a| a.dir == b.dir))
        {
            let label = agent_label(b);
            for ol in &b.family.lines {
                out.push(json!({"event": "world_line_removed", "agent": label, "file": ol.file}));
            }
            if b.meta.is_some() {
                out.push(json!({"event": "subagent_removed", "agent_id": label}));
            }
        }
    }
    let old_forks = prev.map(|p| p.forks.as_slice()).unwrap_or(&[]);
    for f in &next.forks {
        if !old_forks.iter().any(|o| o.session == f.session) {
            let mut v = link_json(f);
            v["event"] = json!("fork");
            out.push(v);
        }
    }
    if next.forked_from.is_some() && prev.is_none_or(|p| p.forked_from != next.forked_from) {
        if let Some(f) = &next.forked_from {
            let mut v = link_json(f);
            v["event"] = json!("forked_from");
            out.push(v);
        }
    }
    let old_warnings = prev.map(|p| p.warnings.as_slice()).unwrap_or(&[]);
    for w in &next.warnings {
        if !old_warnings.contains(w) {
            out.push(json!({
                "event": "warning",
                "file": w.file,
                "line": w.line,
                "message": w.message,
            }));
        }
    }
    out
}
