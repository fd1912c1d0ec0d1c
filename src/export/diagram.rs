//! Graphviz and Mermaid diagrams of the world-line tree: one node per world
//! line, an edge from each origin labelled with why it forked, and subagents
//! hanging off the world line that ran them.

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

pub fn dot(s: &Session) -> String {
    let mut out =
        String::from("digraph worldlines {\n  rankdir=LR;\n  node [shape=box, style=rounded];\n");
    for (a, agent) in s.agents.iter().enumerate() {
        let f = &agent.family;
        for i in 0..f.lines.len() {
            let _ = writeln!(
                out,
                "  a{a}l{i} [label=\"{}\"];",
                dot_escape(&line_label(f, i))
            );
            if let Some(o) = f.lines[i].fork.as_ref().and_then(|k| k.origin) {
                let _ = writeln!(
                    out,
                    "  a{a}l{o} -> a{a}l{i} [label=\"{}\"];",
                    dot_escape(&edge_label(f, i))
                );
            }
        }
        if let (Some(meta), Some(call)) = (&agent.meta, agent.parent_call) {
            let _ = writeln!(
                out,
                "  a0l{} -> a{a}l0 [style=dashed, label=\"{}\"];",
                call.line,
                dot_escape(&format!("subagent {}", sanitize_line(&meta.agent_id, 30)))
            );
        }
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
    for (a, agent) in s.agents.iter().enumerate() {
        let f = &agent.family;
        for i in 0..f.lines.len() {
            let _ = writeln!(out, "  a{a}l{i}[\"{}\"]", mm_escape(&line_label(f, i)));
            if let Some(o) = f.lines[i].fork.as_ref().and_then(|k| k.origin) {
                let _ = writeln!(
                    out,
                    "  a{a}l{o} -->|\"{}\"| a{a}l{i}",
                    mm_escape(&edge_label(f, i))
                );
            }
        }
        if let (Some(meta), Some(call)) = (&agent.meta, agent.parent_call) {
            let _ = writeln!(
                out,
                "  a0l{} -.->|\"subagent {}\"| a{a}l0",
                call.line,
                mm_escape(&sanitize_line(&meta.agent_id, 30))
            );
        }
    }
    out
}
