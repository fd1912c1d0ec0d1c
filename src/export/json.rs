//! The JSON contract of `worldline tree --format json` (and the shape of
//! `worldline watch` world-line events). Fields are only ever added.

use serde_json::{json, Value};

use crate::worldline::{
    DMailAttempt, Family, ForkKind, LineMark, Pos, Session, SessionLink, WorldLine,
};

pub fn session_json(s: &Session) -> Value {
    // Branches inside one file (Kimi Code) carry their marks by branch.
    let code = s
        .agents
        .iter()
        .any(|a| a.family.lines.iter().any(|l| l.branch.is_some()));
    let subagents: Vec<Value> = s.agents[1..]
        .iter()
        .map(|a| {
            let meta = a.meta.clone().unwrap_or_default();
            let mut v = json!({
                "agent_id": meta.agent_id,
                "subagent_type": meta.subagent_type,
                "description": meta.description,
                "status": meta.status,
                "parent_tool_call_id": a.parent_tool_call_id,
                "parent_file": a.parent_call.and_then(|c| s.agents.get(c.agent)?.family.files.get(c.line)).map(|f| f.name.clone()),
                "world_lines": family_lines(&a.family),
                "dmail_attempts": attempts(&a.family),
            });
            if code {
                v["parent_line"] = json!(a.parent_line);
                v["compactions"] = json!(marks(&a.family, &a.compactions));
                v["folded_undos"] = json!(marks(&a.family, &a.folded_undos));
            }
            v
        })
        .collect();
    let main = &s.agents[0];
    let mut v = json!({
        "session_dir": s.dir.display().to_string(),
        "session_id": s.id,
        "title": s.title,
        "tool": s.tool.as_str(),
        "world_lines": family_lines(&main.family),
        "subagents": subagents,
        "dmail_attempts": attempts(&main.family),
        "warnings": s.warnings,
        "forked_from": s.forked_from.as_ref().map(link_json),
        "forks": s.forks.iter().map(link_json).collect::<Vec<_>>(),
    });
    // Formats that name their entries: marks and labels by entry id.
    if main.family.lines.iter().any(|l| l.leaf.is_some()) {
        v["compactions"] = json!(entry_marks(&main.family, &main.compactions));
        v["labels"] = json!(main
            .labels
            .iter()
            .map(|l| json!({"entry": l.entry, "label": l.label}))
            .collect::<Vec<_>>());
        if let Some(subs) = v["subagents"].as_array_mut() {
            for (sv, a) in subs.iter_mut().zip(&s.agents[1..]) {
                sv["compactions"] = json!(entry_marks(&a.family, &a.compactions));
            }
        }
    }
    // Kimi Code: marks on branches.
    if code {
        v["compactions"] = json!(marks(&main.family, &main.compactions));
        v["folded_undos"] = json!(marks(&main.family, &main.folded_undos));
    }
    v
}

/// One session made from another: the other session, the records the copy
/// shares with its source's main world line, `fork` or `undo`, and the
/// source's world line (file) the copy was taken from; for a Kimi Code
/// `/fork`, `line`: the last source wire line it copied.
pub fn link_json(l: &SessionLink) -> Value {
    let mut v = json!({
        "session": l.session,
        "records": l.records,
        "kind": l.kind.as_str(),
        "file": l.source_file,
    });
    // Formats that name entries say which; the others, which line.
    match &l.after {
        Some(Pos { entry: Some(e), .. }) => v["after"] = json!(e),
        Some(Pos { line: Some(n), .. }) => v["line"] = json!(n),
        _ => {}
    }
    v
}

/// `[{"leaf", "entry"}]`: the world line a mark is on (by its leaf) and
/// the entry that marks it.
fn entry_marks(f: &Family, list: &[LineMark]) -> Vec<Value> {
    list.iter()
        .map(|m| {
            let leaf = f.lines.get(m.world_line).and_then(|l| l.leaf.clone());
            let mut v = json!({"leaf": leaf, "entry": m.at.entry});
            if let Some(kept) = &m.first_kept {
                v["firstKeptEntryId"] = json!(kept);
            }
            v
        })
        .collect()
}

/// `[{"branch", "line"}]`, with `count` for folded undos.
fn marks(f: &Family, list: &[LineMark]) -> Vec<Value> {
    list.iter()
        .map(|m| {
            let branch = f.lines.get(m.world_line).and_then(|l| l.branch.clone());
            match m.count {
                Some(n) => json!({"branch": branch, "line": m.at.line, "count": n}),
                None => json!({"branch": branch, "line": m.at.line}),
            }
        })
        .collect()
}

pub fn family_lines(f: &Family) -> Vec<Value> {
    f.lines.iter().map(|l| world_line_json(f, l)).collect()
}

/// One world line; also the payload of a live `world_line` event.
pub fn world_line_json(f: &Family, l: &WorldLine) -> Value {
    if l.leaf.is_some() {
        return entry_line_json(f, l);
    }
    if l.branch.is_some() {
        return branch_json(f, l);
    }
    let name = |i: usize| f.lines.get(i).map(|l| l.file.clone());
    let file = &f.files[l.index];
    let fork = l.fork.as_ref().map(|fk| {
        let sender = fk.sender.as_ref().and_then(|s| {
            let rec = f.record(s.call)?;
            Some(json!({
                "file": name(s.call.line),
                "line": rec.line(),
                "tool_call_id": s.tool_call_id,
            }))
        });
        json!({
            "kind": fk.kind.as_str(),
            "checkpoint": fk.checkpoint,
            "message": fk.message,
            "origin": fk.origin.and_then(name),
            "sender": sender,
        })
    });
    json!({
        "file": l.file,
        "parent": l.parent.and_then(name),
        "fork": fork,
        "records": file.records.len(),
        "shared_records": l.shared,
        "checkpoints": file.checkpoints(),
        "tokens": file.records.iter().rev().find_map(|r| r.tokens()),
        "current": l.current,
    })
}

/// A branch inside one wire (Kimi Code): `file` is the wire, `parent` and
/// `origin` are branch names, `fork.line` the last shared wire line.
fn branch_json(f: &Family, l: &WorldLine) -> Value {
    let name = |i: usize| f.lines.get(i).and_then(|l| l.branch.clone());
    let file = &f.files[l.index];
    let fork = l.fork.as_ref().map(|fk| {
        json!({
            "kind": fk.kind.as_str(),
            "line": fk.after.as_ref().map(|p| p.line),
            "turns": fk.turns,
            "inferred": fk.inferred,
            "origin": fk.origin.and_then(name),
            "checkpoint": null,
            // A D-Mail's body (worldline sent it as the branch's prompt).
            "message": (fk.kind == ForkKind::Dmail).then(|| fk.message.clone()).flatten(),
            "sender": null,
        })
    });
    json!({
        "file": file.name,
        "branch": l.branch,
        "parent": l.parent.and_then(name),
        "fork": fork,
        "records": file.records.len(),
        "shared_records": l.shared,
        "checkpoints": 0,
        "tokens": null,
        "current": l.current,
    })
}

/// A world line of a format that names its entries (Claude Code, Pi,
/// Codex): `leaf` its last entry, `parent` the parent's leaf, `fork.after`
/// the last shared entry, `fork.prompt` what started it.
fn entry_line_json(f: &Family, l: &WorldLine) -> Value {
    let leaf = |i: usize| f.lines.get(i).and_then(|l| l.leaf.clone());
    let file = &f.files[l.index];
    let fork = l.fork.as_ref().map(|fk| {
        json!({
            "kind": fk.kind.as_str(),
            "after": fk.after.as_ref().and_then(|p| p.entry.clone()),
            "prompt": fk.message,
            "origin": fk.origin.and_then(leaf),
        })
    });
    json!({
        "file": file.name,
        // Stable while the line grows (its leaf moves): what watch's
        // `world_line_removed` names.
        "name": l.file,
        "leaf": l.leaf,
        "parent": l.parent.and_then(leaf),
        "fork": fork,
        "records": file.records.len(),
        "shared_records": l.shared,
        "current": l.current,
    })
}

fn attempts(f: &Family) -> Vec<Value> {
    f.attempts.iter().map(|a| attempt_json(f, a)).collect()
}

fn attempt_json(f: &Family, a: &DMailAttempt) -> Value {
    json!({
        "file": f.lines.get(a.call.line).map(|l| l.file.clone()),
        "line": f.record(a.call).map(|r| r.line()),
        "tool_call_id": a.tool_call_id,
        "checkpoint_id": a.checkpoint_id,
        "message": a.message,
        "accepted": a.accepted,
        "error": a.error,
        "caused": a.caused.and_then(|i| f.lines.get(i)).map(|l| l.file.clone()),
        "arguments_error": a.arguments_error,
    })
}
