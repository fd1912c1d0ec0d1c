//! The readable tree of `worldline tree`: world lines nested under the world
//! line they branched from (their origin), each with why it forked.

use std::fmt::Write;

use crate::text::{sanitize_line, sanitize_message, sanitize_path};
use crate::worldline::{Agent, Family, ForkKind, Session, SessionLink, Tool};

/// Where the session came from and what was made from it.
fn lineage(out: &mut String, s: &Session) {
    // A fork that copies a whole file of branches (Kimi Code's /fork) or
    // a tree of entries names where the copy ends by line or entry; a fork
    // of one world line's records (kimi-cli) counts them.
    let by_place = s.tool != Tool::default();
    let what = |l: &SessionLink| match (&l.after, l.line) {
        (Some(e), _) => format!("after entry {}", sanitize_line(e, 40)),
        (None, Some(n)) => format!("after line {n}"),
        (None, None) if by_place => "at an unknown line".to_string(),
        (None, None) => format!("from its first {} record{}", l.records, plural(l.records)),
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
            "\nsubagent {} ({}) \"{}\"{}{}",
            sanitize_line(&meta.agent_id, 40),
            sanitize_line(meta.subagent_type.as_deref().unwrap_or("?"), 20),
            sanitize_line(meta.description.as_deref().unwrap_or(""), 60),
            meta.status
                .map(|st| format!(" [{}]", sanitize_line(&st, 20)))
                .unwrap_or_default(),
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
                "  {}:{}: {}",
                sanitize_line(&w.file, 80),
                w.line,
                sanitize_line(&w.message, 100)
            );
        }
    }
    out
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
    let mut row = format!(
        "{prefix}{branch}● {}{}  {} records",
        sanitize_message(&l.file),
        if l.current { " (current)" } else { "" },
        file.records.len(),
    );
    if l.branch.is_none() {
        let _ = write!(row, " · {} checkpoints", file.checkpoints());
    }
    if let Some(fk) = &l.fork {
        let _ = write!(row, "  ⟲ {}", fork_label(f, i));
        if let (ForkKind::Dmail, Some(msg)) = (fk.kind, &fk.message) {
            let _ = write!(row, " \"{}\"", sanitize_line(msg, 70));
        }
    }
    for m in a.compactions.iter().filter(|m| m.world_line == i) {
        let _ = write!(row, "  ⊜ compacted at line {}", m.line);
    }
    for m in a.folded_undos.iter().filter(|m| m.world_line == i) {
        let _ = write!(
            row,
            "  ↶ folded undo of {} at line {}",
            m.count.unwrap_or(1),
            m.line
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

/// `D-Mail → checkpoint 1 (sent by call c2 in context_1.jsonl)`.
pub fn fork_label(f: &Family, i: usize) -> String {
    let l = &f.lines[i];
    let Some(fk) = &l.fork else {
        return String::new();
    };
    let mut s = match fk.kind {
        ForkKind::Dmail => match (fk.checkpoint, fk.turns) {
            (None, Some(_)) => format!("D-Mail → {}", fk.dmail_back()),
            (c, _) => format!(
                "D-Mail → checkpoint {}",
                c.map(|c| c.to_string()).unwrap_or_else(|| "?".into())
            ),
        },
        ForkKind::Compaction => "compaction".to_string(),
        ForkKind::Clear => "/clear".to_string(),
        ForkKind::Undo => fk.undo_summary(),
        ForkKind::Rewind
        | ForkKind::Summarize
        | ForkKind::Tree
        | ForkKind::Fork
        | ForkKind::Rollback => fk.kind.as_str().to_string(),
        ForkKind::Unknown if l.branch.is_some() => "branch".to_string(),
        ForkKind::Unknown => "unknown rotation".to_string(),
    };
    if fk.kind == ForkKind::Dmail {
        match &fk.sender {
            Some(snd) => {
                let _ = write!(
                    s,
                    " (sent by call {} in {})",
                    sanitize_line(&snd.tool_call_id, 30),
                    sanitize_message(&f.lines[snd.call.line].file)
                );
            }
            None => s.push_str(" (sent from outside the agent)"),
        }
    }
    if fk.origin.is_some() && fk.origin != l.parent {
        if let Some(p) = l.parent {
            let _ = write!(s, " [after {}]", sanitize_message(&f.lines[p].file));
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
            "{indent}  ✗ {} call {} → checkpoint {checkpoint}: {} \"{}\"",
            sanitize_message(&f.lines[a.call.line].file),
            sanitize_line(&a.tool_call_id, 30),
            why,
            sanitize_line(&a.message, 50)
        );
    }
}
