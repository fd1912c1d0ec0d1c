//! Graphviz and Mermaid diagrams of the world-line tree: one node per world
//! line, an edge from each origin labelled with why it forked, subagents
//! hanging off the world line that ran them, and sessions made from this
//! one (or it from another) by `/fork` and `/undo` as nodes of their own.

use std::fmt::Write;

use super::plain::fork_label;
use crate::text::sanitize_line;
use crate::worldline::{Family, Session};

fn line_label(f: &Family, i: usize) -> String {
    let l = &f.lines[i];
    format!(
        "{}{}\\n{} records",
        l.file,
        if l.current { " (current)" } else { "" },
        f.files[i].records.len()
    )
}

fn edge_label(f: &Family, i: usize) -> String {
    let mut s = fork_label(f, i);
    if let Some(msg) = f.lines[i].fork.as_ref().and_then(|k| k.message.as_ref()) {
        s.push_str(&format!("\\n{}", sanitize_line(msg, 40)));
    }
    s
}

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace("\\\\n", "\\n")
}

/// One piece of a diagram: a world line, a fork from its origin, or a
/// subagent hanging off the parent's world line. Ids are `a{agent}l{line}`.
enum Item {
    Line {
        id: String,
        label: String,
    },
    Fork {
        from: String,
        to: String,
        label: String,
    },
    Subagent {
        from: String,
        to: String,
        label: String,
    },
    /// Another session (the source, or a fork of this one).
    Session {
        id: String,
        label: String,
    },
    Lineage {
        from: String,
        to: String,
        label: String,
    },
}

fn link_label(l: &crate::worldline::SessionLink) -> String {
    format!("/{} · {} records", l.kind.as_str(), l.records)
}

fn session_label(id: &str) -> String {
    format!("session {}", sanitize_line(id, 36))
}

/// Every diagram walks the session the same way; only the syntax differs.
fn items(s: &Session) -> Vec<Item> {
    let mut out = Vec::new();
    for (a, agent) in s.agents.iter().enumerate() {
        let f = &agent.family;
        for i in 0..f.lines.len() {
            out.push(Item::Line {
                id: format!("a{a}l{i}"),
                label: line_label(f, i),
            });
            if let Some(o) = f.lines[i].fork.as_ref().and_then(|k| k.origin) {
                out.push(Item::Fork {
                    from: format!("a{a}l{o}"),
                    to: format!("a{a}l{i}"),
                    label: edge_label(f, i),
                });
            }
        }
        if let (Some(meta), Some(call)) = (&agent.meta, agent.parent_call) {
            out.push(Item::Subagent {
                from: format!("a0l{}", call.line),
                to: format!("a{a}l0"),
                label: format!("subagent {}", sanitize_line(&meta.agent_id, 30)),
            });
        }
    }
    if let Some(src) = &s.forked_from {
        out.push(Item::Session {
            id: "src".into(),
            label: session_label(&src.session),
        });
        out.push(Item::Lineage {
            from: "src".into(),
            to: "a0l0".into(),
            label: link_label(src),
        });
    }
    let current = s.main().lines.len().saturating_sub(1);
    for (k, fork) in s.forks.iter().enumerate() {
        out.push(Item::Session {
            id: format!("fork{k}"),
            label: session_label(&fork.session),
        });
        out.push(Item::Lineage {
            from: format!("a0l{current}"),
            to: format!("fork{k}"),
            label: link_label(fork),
        });
    }
    out
}

pub fn dot(s: &Session) -> String {
    let mut out =
        String::from("digraph worldlines {\n  rankdir=LR;\n  node [shape=box, style=rounded];\n");
    for item in items(s) {
        let _ = match item {
            Item::Line { id, label } => writeln!(out, "  {id} [label=\"{}\"];", dot_escape(&label)),
            Item::Fork { from, to, label } => {
                writeln!(out, "  {from} -> {to} [label=\"{}\"];", dot_escape(&label))
            }
            Item::Subagent { from, to, label } => writeln!(
                out,
                "  {from} -> {to} [style=dashed, label=\"{}\"];",
                dot_escape(&label)
            ),
            Item::Session { id, label } => writeln!(
                out,
                "  {id} [shape=folder, label=\"{}\"];",
                dot_escape(&label)
            ),
            Item::Lineage { from, to, label } => writeln!(
                out,
                "  {from} -> {to} [style=bold, label=\"{}\"];",
                dot_escape(&label)
            ),
        };
    }
    out.push_str("}\n");
    out
}

/// Mermaid text can't hold `"`; it has its own entity for it.
fn mm_escape(s: &str) -> String {
    s.replace('"', "#quot;").replace("\\n", "<br/>")
}

pub fn mermaid(s: &Session) -> String {
    let mut out = String::from("graph LR\n");
    for item in items(s) {
        let _ = match item {
            Item::Line { id, label } => writeln!(out, "  {id}[\"{}\"]", mm_escape(&label)),
            Item::Fork { from, to, label } => {
                writeln!(out, "  {from} -->|\"{}\"| {to}", mm_escape(&label))
            }
            Item::Subagent { from, to, label } => {
                writeln!(out, "  {from} -.->|\"{}\"| {to}", mm_escape(&label))
            }
            Item::Session { id, label } => writeln!(out, "  {id}[/\"{}\"/]", mm_escape(&label)),
            Item::Lineage { from, to, label } => {
                writeln!(out, "  {from} ==>|\"{}\"| {to}", mm_escape(&label))
            }
        };
    }
    out
}
