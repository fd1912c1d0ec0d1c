//! The readable tree of `worldline tree`: world lines nested under the world
//! line they branched from (their origin), each with why it forked.

use std::fmt::Write;

use crate::text::{sanitize_line, sanitize_message, sanitize_path};
use crate::worldline::names::line_name;
use crate::worldline::{Agent, Family, ForkKind, Pos, Session, SessionLink, SubagentMeta, Tool};

/// Where the session came from and what was made from it.
fn lineage(out: &mut String, s: &Session) {
    // A fork that copies a whole file of branches (Kimi Code's /fork) or
    // a tree of entries names where the copy ends by line or entry; a fork
    // of one world line's records (kimi-cli) counts them.
    let by_place = s.tool != Tool::default();
    let what = |l: &SessionLink| match &l.after {
        Some(Pos { entry: Some(e), .. }) => format!("after entry {}", sanitize_line(e, 40)),
        Some(Pos { line: Some(n), .. }) => format!("after line {n}"),
        _ if by_place => "at an unknown line".to_string(),
        _ => format!("from its first {} record{}", l.records, plural(l.records)),
    };
    if let Some(f) = &s.forked_from {
        match by_place {
            true => {
                let _ = writeln!(
                    out,
                    "  forked from {} {}",
                    sanitize_line(&f.session, 60),
                    what(f)
                );
            }
            false => {
                let _ = writeln!(
                    out,
                    "  forked from {} by /{} (shares its first {} record{})",
                    sanitize_line(&f.session, 60),
                    f.kind.as_str(),
                    f.records,
                    plural(f.records)
                );
            }
        }
    }
    for f in &s.forks {
        let _ = writeln!(
            out,
            "  ↳ /{} made {} {}",
            f.kind.as_str(),
            sanitize_line(&f.session, 60),
            what(f)
        );
    }
}

pub fn text_tree(s: &Session) -> String {
    let mut out = String::new();
    let title = s
        .title
        .as_deref()
        .map(|t| format!("  \"{}\"", sanitize_line(t, 60)))
        .unwrap_or_default();
    // Directory and file names come from whoever made the session: escaped.
    let _ = writeln!(out, "session {}{}", sanitize_message(&s.id), title);
    let _ = writeln!(out, "  {}", sanitize_path(&s.dir));
    if s.tool != Tool::default() {
        let _ = writeln!(out, "  written by {}", s.tool.as_str());
    }
    lineage(&mut out, s);
    let main = s.main();
    let sent = main.attempts.len();
    let accepted = main
        .attempts
        .iter()
        .filter(|a| a.accepted == Some(true))
        .count();
    let _ = writeln!(
        out,
        "  {} world line{} · {} subagent{} · {} D-Mail attempt{} ({} accepted)\n",
        main.lines.len(),
        plural(main.lines.len()),
        s.agents.len() - 1,
        plural(s.agents.len() - 1),
        sent,
        plural(sent),
        accepted
    );
    family_tree(&mut out, &s.agents[0], "");
    attempts(&mut out, main, "");
    for a in &s.agents[1..] {
        let meta = a.meta.clone().unwrap_or_default();
        let _ = writeln!(
            out,
            "\nsubagent {}{}",
            subagent_words(&meta),
            a.parent_tool_call_id
                .as_deref()
                .map(|id| format!(" ← Agent call {}", sanitize_line(id, 40)))
                .unwrap_or_default()
        );
        family_tree(&mut out, a, "  ");
        attempts(&mut out, &a.family, "  ");
    }
    if !s.warnings.is_empty() {
        let _ = writeln!(
            out,
            "\n{} warning{}:",
            s.warnings.len(),
            plural(s.warnings.len())
        );
        for w in &s.warnings {
            let _ = writeln!(
                out,
                "  {}: {}",
                sanitize_line(&w.place(), 90),
                sanitize_line(&w.message, 100)
            );
        }
    }
    out
}

/// `sub_1 (coder) "explore repo" [idle]`, leaving out what the session
/// does not say (no `(?)` or `""`).
pub fn subagent_words(meta: &SubagentMeta) -> String {
    let mut out = sanitize_line(&meta.agent_id, 40);
    if let Some(k) = meta
        .subagent_type
        .as_deref()
        .filter(|k| !k.trim().is_empty())
    {
        let _ = write!(out, " ({})", sanitize_line(k, 20));
    }
    if let Some(d) = meta.description.as_deref().filter(|d| !d.trim().is_empty()) {
        let _ = write!(out, " \"{}\"", sanitize_line(d, 60));
    }
    if let Some(st) = meta.status.as_deref().filter(|s| !s.trim().is_empty()) {
        let _ = write!(out, " [{}]", sanitize_line(st, 20));
    }
    out
}

/// `1 checkpoint`, `3 checkpoints`.
pub fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", plural(n))
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Children of a world line in the tree: the lines whose origin it is.
/// A line that shares nothing (a new root) hangs at the top level.
fn children(f: &Family, of: Option<usize>) -> Vec<usize> {
    f.lines
        .iter()
        .filter(|l| {
            l.fork.as_ref().and_then(|k| k.origin) == of
                && (of.is_some() || l.index > 0 || l.fork.is_none())
        })
        .map(|l| l.index)
        .collect()
}

fn family_tree(out: &mut String, a: &Agent, indent: &str) {
    let f = &a.family;
    let roots: Vec<usize> = f
        .lines
        .iter()
        .filter(|l| l.fork.as_ref().is_none_or(|k| k.origin.is_none()))
        .map(|l| l.index)
        .collect();
    for (i, &r) in roots.iter().enumerate() {
        line_row(out, a, r, indent, i + 1 == roots.len(), true);
    }
}

fn line_row(out: &mut String, a: &Agent, i: usize, prefix: &str, last: bool, root: bool) {
    let f = &a.family;
    let l = &f.lines[i];
    let file = &f.files[i];
    let branch = if root {
        ""
    } else if last {
        "└─"
    } else {
        "├─"
    };
    // World lines by name, as every other view calls them; the file (or
    // branch) after it says where it is on disk.
    let mut row = format!(
        "{prefix}{branch}● {}  {}{}  {}",
        line_name(i),
        sanitize_message(&l.file),
        if l.current { " (current)" } else { "" },
        count(file.records.len(), "record"),
    );
    // Formats that name entries have no checkpoints.
    if l.branch.is_none() && l.leaf.is_none() {
        let _ = write!(row, " · {}", count(file.checkpoints(), "checkpoint"));
    }
    if let Some(fk) = &l.fork {
        let _ = write!(row, "  {}", fork_label(f, i));
        if let (ForkKind::Dmail, Some(msg)) = (fk.kind, &fk.message) {
            let _ = write!(row, " \"{}\"", sanitize_line(msg, 70));
        }
        // Formats that name entries: where it leaves, and what started it.
        if fk.kind.is_branch() {
            if let Some(after) = fk.after.as_ref().and_then(|p| p.entry.as_ref()) {
                let _ = write!(row, " after {}", sanitize_line(after, 40));
            }
            if let Some(msg) = &fk.message {
                let _ = write!(row, ": \"{}\"", sanitize_line(msg, 70));
            }
        }
    }
    for m in a.compactions.iter().filter(|m| m.world_line == i) {
        let _ = write!(row, "  ⊜ compacted at line {}", m.at.line.unwrap_or(0));
        if let Some(e) = &m.at.entry {
            let _ = write!(row, " (entry {})", sanitize_line(e, 40));
        }
    }
    for lb in a
        .labels
        .iter()
        .filter(|lb| lb.at.is_some_and(|(w, _)| w == i))
    {
        let _ = write!(
            row,
            "  [{}] on {}",
            sanitize_line(&lb.label, 40),
            sanitize_line(&lb.entry, 40)
        );
    }
    for m in a.folded_undos.iter().filter(|m| m.world_line == i) {
        let _ = write!(
            row,
            "  ↶ folded undo of {} at line {}",
            m.count.unwrap_or(1),
            m.at.line.unwrap_or(0)
        );
    }
    let _ = writeln!(out, "{row}");
    let kids = children(f, Some(i));
    let child_prefix = format!(
        "{prefix}{}",
        if root {
            ""
        } else if last {
            "  "
        } else {
            "│ "
        }
    );
    for (k, &c) in kids.iter().enumerate() {
        line_row(out, a, c, &child_prefix, k + 1 == kids.len(), false);
    }
}

/// Why world line `i` exists, with its mark: `✉ D-Mail from α → ⚑1`,
/// `⊜ compaction`, `∅ /clear`, `↶ undo of 1 turn after line 47`, `↶ rewind`;
/// `(after β)` when it left another line than the one written before it
/// (a D-Mail says `from β` instead). Lines are
/// named α β γ, never by file or call id.
pub fn fork_label(f: &Family, i: usize) -> String {
    let l = &f.lines[i];
    let Some(fk) = &l.fork else {
        return String::new();
    };
    let mut s = match fk.kind {
        ForkKind::Dmail => {
            let from = match &fk.sender {
                Some(snd) => line_name(snd.call.line),
                None => "outside the agent".to_string(),
            };
            // `⚑3`, or `2 turns back` where the agent undoes turns.
            format!("✉ D-Mail from {from} → {}", fk.dmail_back())
        }
        ForkKind::Undo => format!("↶ {}", fk.undo_summary()),
        ForkKind::Unknown if l.branch.is_some() => "? branch, reason unknown".to_string(),
        ForkKind::Unknown => "? unknown rotation".to_string(),
        k => k.branch_words().to_string(),
    };
    // A D-Mail already names the line it came from.
    if fk.kind != ForkKind::Dmail && fk.origin.is_some() && fk.origin != l.parent {
        if let Some(p) = l.parent {
            let _ = write!(s, " (after {})", line_name(p));
        }
    }
    s
}

fn attempts(out: &mut String, f: &Family, indent: &str) {
    let refused: Vec<_> = f
        .attempts
        .iter()
        .filter(|a| a.accepted != Some(true))
        .collect();
    if refused.is_empty() {
        return;
    }
    let _ = writeln!(out, "{indent}D-Mails that did not fork:");
    for a in refused {
        let why = match (&a.accepted, &a.error, &a.arguments_error) {
            (_, _, Some(e)) => format!("unreadable arguments: {e}"),
            (None, _, _) => "no result yet".to_string(),
            (_, Some(e), _) => sanitize_line(e, 80),
            _ => "refused".to_string(),
        };
        let checkpoint = match a.arguments_error {
            Some(_) => "?".to_string(),
            None => a.checkpoint_id.to_string(),
        };
        let _ = writeln!(
            out,
            "{indent}  ✗ from {} → ⚑{checkpoint}: {} \"{}\"",
            line_name(a.call.line),
            why,
            sanitize_line(&a.message, 50)
        );
    }
}
