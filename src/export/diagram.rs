//! Graphviz and Mermaid diagrams of what happened: one node per world line
//! (its Greek name, colour, file, checkpoint range and size), an edge from
//! the world line a fork left to the new one, the D-Mail from its sender's
//! checkpoint, refused D-Mails as their own marked nodes, and subagents
//! grouped under their description, hanging off the call that ran them.
//! Sessions made from this one by `/fork` and `/undo` (or the one it was
//! made from) are nodes of their own, linked to the world line they copied.
//! One walk of the `Story`; only the syntax differs. Call ids go only into
//! tooltips (dot) and comments (Mermaid, whose tooltips need scripts).

use std::fmt::Write;

use super::story::{
    cp_name, place_name, wrap, AgentStory, LineStory, Story, DMAIL_COLOUR, ERROR_COLOUR,
};
use crate::text::sanitize_line;
use crate::worldline::{ForkKind, Session, SessionLink};

/// Columns of a wrapped label line and lines of a wrapped message.
const WIDTH: usize = 30;
const MESSAGE_LINES: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// A world line leaving the one it forked from.
    Fork,
    DMail,
    Refused,
    Subagent,
    /// Between sessions: `/fork` or `/undo`.
    Lineage,
}

/// One piece of a diagram. Ids are `a{agent}l{line}` and `a{agent}x{n}`.
enum Item {
    GroupStart {
        id: String,
        label: Vec<String>,
    },
    GroupEnd,
    Line {
        id: String,
        label: Vec<String>,
        colour: &'static str,
        current: bool,
        tooltip: String,
    },
    Refused {
        id: String,
        label: Vec<String>,
        tooltip: String,
    },
    /// Another session: the source, or a fork of this one.
    Session {
        id: String,
        label: Vec<String>,
    },
    Edge {
        from: String,
        to: String,
        label: Vec<String>,
        style: Style,
        colour: &'static str,
        tooltip: String,
    },
}

fn line_id(agent: usize, line: usize) -> String {
    format!("a{agent}l{line}")
}

fn line_label(l: &LineStory) -> Vec<String> {
    let mut label = vec![
        format!(
            "{}  {}{}",
            l.name,
            // A subagent's group already says whose files these are.
            sanitize_line(l.file.rsplit('/').next().unwrap_or(&l.file), WIDTH),
            if l.current { " ◆" } else { "" }
        ),
        l.checkpoint_range(),
        l.counts(),
    ];
    // A compaction inside the line (no world line of its own): said on it,
    // as the text tree, the TUI and the SVG mark it.
    if !l.compactions.is_empty() {
        let at: Vec<String> = l.compactions.iter().map(|n| n.to_string()).collect();
        label.push(format!("⊜ compacted at line {}", at.join(", ")));
    }
    label
}

fn line_tooltip(l: &LineStory) -> String {
    let mut t = format!("world line {} · {}", l.name, sanitize_line(&l.file, 80));
    if l.current {
        t.push_str(" · current");
    }
    if let (Some(a), Some(b)) = (l.start, l.end) {
        let _ = write!(
            t,
            " · from {} UTC for {:.1} s",
            super::format_time(a),
            b - a
        );
    }
    t
}

fn quoted(msg: &str) -> Vec<String> {
    let mut lines = wrap(msg, WIDTH, MESSAGE_LINES);
    if let Some(first) = lines.first_mut() {
        first.insert(0, '“');
    }
    if let Some(last) = lines.last_mut() {
        last.push('”');
    }
    lines
}

/// Every diagram walks the session the same way; only the syntax differs.
fn items(s: &Session, story: &Story) -> Vec<Item> {
    let mut out = Vec::new();
    for agent in &story.agents {
        agent_items(agent, &mut out);
    }
    lineage_items(s, &mut out);
    out
}

const LINEAGE_COLOUR: &str = "#606060";

fn link_label(l: &SessionLink) -> Vec<String> {
    vec![format!(
        "/{} · {}",
        l.kind.as_str(),
        crate::text::count(l.records as u64, "record")
    )]
}

/// The source session feeds the first world line; a fork leaves the world
/// line it copied.
fn lineage_items(s: &Session, out: &mut Vec<Item>) {
    let session = |id: &str| vec!["session".to_string(), sanitize_line(id, 40)];
    if let Some(src) = &s.forked_from {
        out.push(Item::Session {
            id: "src".into(),
            label: session(&src.session),
        });
        out.push(Item::Edge {
            from: "src".into(),
            to: line_id(0, 0),
            label: link_label(src),
            style: Style::Lineage,
            colour: LINEAGE_COLOUR,
            tooltip: format!("copied from session {}", sanitize_line(&src.session, 60)),
        });
    }
    for (k, f) in s.forks.iter().enumerate() {
        let id = format!("fork{k}");
        out.push(Item::Session {
            id: id.clone(),
            label: session(&f.session),
        });
        let line = s.fork_point(f).map_or(0, |r| r.line);
        out.push(Item::Edge {
            from: line_id(0, line),
            to: id,
            label: link_label(f),
            style: Style::Lineage,
            colour: LINEAGE_COLOUR,
            tooltip: format!("session {} copied this one", sanitize_line(&f.session, 60)),
        });
    }
}

fn agent_items(agent: &AgentStory, out: &mut Vec<Item>) {
    let a = agent.index;
    let lines = &agent.lines;
    if let Some(sub) = &agent.subagent {
        let mut label = vec![format!(
            "subagent {}{}",
            sanitize_line(sub.kind.as_deref().unwrap_or("?"), WIDTH),
            sub.status
                .as_deref()
                .map(|s| format!(" [{}]", sanitize_line(s, 20)))
                .unwrap_or_default()
        )];
        label.extend(quoted(sub.description.as_deref().unwrap_or("")));
        out.push(Item::GroupStart {
            id: format!("a{a}"),
            label,
        });
    }
    for l in lines {
        out.push(Item::Line {
            id: line_id(a, l.index),
            label: line_label(l),
            colour: l.colour,
            current: l.current,
            tooltip: line_tooltip(l),
        });
    }
    for (k, r) in agent.refused.iter().enumerate() {
        let id = format!("a{a}x{k}");
        let mut label = vec![format!("✗ D-Mail → ⚑{} refused", r.target)];
        label.extend(wrap(&r.reason, WIDTH, 2));
        label.extend(quoted(&r.message));
        out.push(Item::Refused {
            id: id.clone(),
            label,
            tooltip: format!(
                "call {} · {}",
                sanitize_line(&r.tool_call_id, 60),
                sanitize_line(&r.message, 400)
            ),
        });
        out.push(Item::Edge {
            from: line_id(a, r.at.line),
            to: id,
            label: vec![format!("sent at {}", place_name(lines, r.at))],
            style: Style::Refused,
            colour: ERROR_COLOUR,
            tooltip: format!(
                "refused SendDMail call {}",
                sanitize_line(&r.tool_call_id, 60)
            ),
        });
    }
    if agent.subagent.is_some() {
        out.push(Item::GroupEnd);
    }
    for l in lines {
        fork_items(a, lines, l, out);
    }
    if let Some(sub) = &agent.subagent {
        if let (Some(p), false) = (sub.parent, lines.is_empty()) {
            out.push(Item::Edge {
                from: line_id(0, p.line),
                to: line_id(a, 0),
                label: vec![format!("Agent call at {}", cp_name(p.checkpoint))],
                style: Style::Subagent,
                colour: "#808080",
                tooltip: format!(
                    "Agent call {} ran subagent {}",
                    sanitize_line(sub.parent_tool_call_id.as_deref().unwrap_or("?"), 60),
                    sanitize_line(&sub.agent_id, 60)
                ),
            });
        }
    }
}

/// The edge into a forked world line, and the D-Mail edge from its sender
/// when the sender is not the world line the fork left.
fn fork_items(a: usize, lines: &[LineStory], l: &LineStory, out: &mut Vec<Item>) {
    let Some(fk) = &l.fork else { return };
    let to = line_id(a, l.index);
    let message = fk.message.as_deref().map(quoted).unwrap_or_default();
    let call = fk
        .tool_call_id
        .as_deref()
        .map(|c| format!("SendDMail call {} · ", sanitize_line(c, 60)))
        .unwrap_or_default();
    let full = fk
        .message
        .as_deref()
        .map(|m| sanitize_line(m, 400))
        .unwrap_or_default();
    let from_sender = fk.sender.filter(|s| Some(s.line) != fk.origin);
    let is_dmail = fk.kind == ForkKind::Dmail;
    if let Some(origin) = fk.origin.or(l.index.checked_sub(1)) {
        let mut label = if is_dmail && from_sender.is_none() {
            let mut v = vec![fk.headline(lines)];
            v.extend(message.iter().cloned());
            v
        } else if is_dmail {
            vec![format!("back to {}", fk.back())]
        } else {
            vec![fk.headline(lines)]
        };
        if fk.origin.is_none() {
            label.push("(shares nothing)".to_string());
        }
        let dmail_here = is_dmail && from_sender.is_none();
        out.push(Item::Edge {
            from: line_id(a, origin),
            to: to.clone(),
            label,
            style: if dmail_here {
                Style::DMail
            } else {
                Style::Fork
            },
            colour: if dmail_here { DMAIL_COLOUR } else { l.colour },
            tooltip: if dmail_here {
                format!("{call}{full}")
            } else {
                format!("{} forks from {}", l.name, lines[origin].name)
            },
        });
    }
    if let Some(snd) = from_sender {
        let mut label = vec![fk.headline(lines)];
        label.extend(message);
        out.push(Item::Edge {
            from: line_id(a, snd.line),
            to,
            label,
            style: Style::DMail,
            colour: DMAIL_COLOUR,
            tooltip: format!("{call}{full}"),
        });
    }
}

/// Inside a dot string: quotes and backslashes (which start dot's own
/// escapes like `\N`) are escaped; control characters are already gone.
fn dot_str(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn dot_label(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| dot_str(l))
        .collect::<Vec<_>>()
        .join("\\n")
}

pub fn dot(s: &Session) -> String {
    let story = Story::of(s);
    let mut out = String::from("digraph worldlines {\n  rankdir=LR;\n");
    let title = story
        .title
        .as_deref()
        .map(|t| sanitize_line(t, 80))
        .unwrap_or_else(|| sanitize_line(&story.session_id, 80));
    let _ = writeln!(
        out,
        "  graph [fontname=\"sans-serif\", label=\"{}\", labelloc=t];",
        dot_str(&title)
    );
    out.push_str("  node [shape=box, style=\"rounded\", fontname=\"sans-serif\", fontsize=11];\n");
    out.push_str("  edge [fontname=\"sans-serif\", fontsize=10];\n");
    for item in items(s, &story) {
        let _ = match item {
            Item::GroupStart { id, label } => writeln!(
                out,
                "  subgraph cluster_{id} {{\n    label=\"{}\"; style=dashed; color=\"#808080\";",
                dot_label(&label)
            ),
            Item::GroupEnd => writeln!(out, "  }}"),
            Item::Line {
                id,
                label,
                colour,
                current,
                tooltip,
            } => writeln!(
                out,
                "  {id} [label=\"{}\", color=\"{colour}\", penwidth={}, tooltip=\"{}\"];",
                dot_label(&label),
                if current { 3 } else { 2 },
                dot_str(&tooltip)
            ),
            Item::Refused { id, label, tooltip } => writeln!(
                out,
                "  {id} [label=\"{}\", shape=note, style=dashed, color=\"{ERROR_COLOUR}\", fontcolor=\"{ERROR_COLOUR}\", tooltip=\"{}\"];",
                dot_label(&label),
                dot_str(&tooltip)
            ),
            Item::Session { id, label } => writeln!(
                out,
                "  {id} [label=\"{}\", shape=folder, color=\"{LINEAGE_COLOUR}\"];",
                dot_label(&label)
            ),
            Item::Edge {
                from,
                to,
                label,
                style,
                colour,
                tooltip,
            } => writeln!(
                out,
                "  {from} -> {to} [label=\"{}\", color=\"{colour}\", fontcolor=\"{colour}\"{}, tooltip=\"{}\"];",
                dot_label(&label),
                match style {
                    Style::Fork => ", penwidth=2",
                    Style::DMail => ", penwidth=2, style=bold, arrowhead=vee",
                    Style::Refused => ", style=dashed, arrowhead=tee",
                    Style::Subagent => ", style=dashed",
                    Style::Lineage => ", penwidth=2, style=bold, arrowhead=empty",
                },
                dot_str(&tooltip)
            ),
        };
    }
    out.push_str("}\n");
    out
}

/// Mermaid labels are Markdown/HTML: every character that could open a tag,
/// an entity, a Markdown string or end the label becomes a numeric entity
/// code (`#60;`), which Mermaid shows as the character itself. `%` too:
/// Mermaid looks for `%%{…}%%` directives anywhere in the text, labels and
/// comments included, so session text must never spell one.
fn mm_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '#' | '<' | '>' | '&' | '"' | '`' | '%' => {
                let _ = write!(out, "#{};", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

fn mm_label(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| mm_str(l))
        .collect::<Vec<_>>()
        .join("<br/>")
}

/// Mermaid comments end at the line end, but its directive search is not
/// anchored to a line start: `%%{init: …}%%` inside a comment still
/// restyles the diagram and an unclosed `%%{x:` swallows the rest. So
/// comments are escaped like labels (no `%` is left).
fn mm_comment(s: &str) -> String {
    mm_str(&sanitize_line(s, 400))
}

pub fn mermaid(s: &Session) -> String {
    let story = Story::of(s);
    let mut out = String::from("graph LR\n");
    let mut styles = String::new();
    let mut edge_no = 0;
    for item in items(s, &story) {
        let _ = match item {
            Item::GroupStart { id, label } => {
                writeln!(out, "  subgraph {id} [\"{}\"]", mm_label(&label))
            }
            Item::GroupEnd => writeln!(out, "  end"),
            Item::Line {
                id,
                label,
                colour,
                current,
                tooltip,
            } => {
                let _ = writeln!(
                    styles,
                    "  style {id} stroke:{colour},stroke-width:{}px",
                    if current { 3 } else { 2 }
                );
                writeln!(
                    out,
                    "  %% {}\n  {id}(\"{}\")",
                    mm_comment(&tooltip),
                    mm_label(&label)
                )
            }
            Item::Refused { id, label, tooltip } => {
                let _ = writeln!(
                    styles,
                    "  style {id} stroke:{ERROR_COLOUR},stroke-dasharray:4 3,color:{ERROR_COLOUR}"
                );
                writeln!(
                    out,
                    "  %% {}\n  {id}>\"{}\"]",
                    mm_comment(&tooltip),
                    mm_label(&label)
                )
            }
            Item::Session { id, label } => {
                writeln!(out, "  {id}[/\"{}\"/]", mm_label(&label))
            }
            Item::Edge {
                from,
                to,
                label,
                style,
                colour,
                tooltip,
            } => {
                let arrow = match style {
                    Style::Fork | Style::DMail => "-->",
                    Style::Refused | Style::Subagent => "-.->",
                    Style::Lineage => "==>",
                };
                let _ = writeln!(
                    styles,
                    "  linkStyle {edge_no} stroke:{colour}{}",
                    if style == Style::DMail {
                        ",stroke-width:3px"
                    } else {
                        ""
                    }
                );
                edge_no += 1;
                writeln!(
                    out,
                    "  %% {}\n  {from} {arrow}|\"{}\"| {to}",
                    mm_comment(&tooltip),
                    mm_label(&label)
                )
            }
        };
    }
    out.push_str(&styles);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mermaid_text_cannot_open_tags_or_end_labels() {
        let s = mm_str("<img src=x onerror=alert(1)> \"q\" `md` #1;");
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('"') && !s.contains('`'));
        assert_eq!(mm_str("a#b"), "a#35;b");
        for hostile in ["x %%{init: {'theme':'dark'}}%%", "%%{x: rest"] {
            assert!(!mm_comment(hostile).contains('%'));
            assert!(!mm_str(hostile).contains('%'));
        }
    }

    #[test]
    fn dot_strings_keep_their_quotes_closed() {
        assert_eq!(dot_str(r#"say "hi" \N"#), r#"say \"hi\" \\N"#);
    }
}
