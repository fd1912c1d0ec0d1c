//! A comparison of two world lines ([`crate::worldline::compare`]) printed
//! for scripts and for pasting: plain text, JSON and Markdown. Every text a
//! session holds goes through `text.rs` (JSON is escaped by serde and the
//! caller's `json_for_terminal`).

use serde_json::{json, Value};

use crate::text::{sanitize_line, truncate, width};
use crate::worldline::compare::{Comparison, FileTouch, LineSummary, Step, StepKind};
use crate::worldline::names::line_name;
use crate::worldline::tools::Effect;
use crate::worldline::Session;

/// Columns of one side in the text form's side-by-side steps.
const SIDE: usize = 44;
/// Columns of a path or command in a list.
const WHAT: usize = 100;

/// `12.3 s`, `4 min`, `1.5 h`.
pub fn duration(secs: f64) -> String {
    if secs < 60.0 {
        format!("{secs:.1} s")
    } else if secs < 3600.0 {
        format!("{:.0} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
    }
}

/// Where they part, in words: `shared: 6 records, 2 steps, up to ⚑1 (line 6)`.
pub fn fork_words(c: &Comparison) -> String {
    let f = &c.fork;
    if f.shared == 0 {
        return "nothing shared: the two lines start apart".into();
    }
    let mut s = format!(
        "shared: {} step{} ({} record{})",
        f.steps,
        plural(f.steps),
        f.shared,
        plural(f.shared)
    );
    if let Some(cp) = f.checkpoint {
        s.push_str(&format!(", up to ⚑{cp}"));
    }
    if let Some(at) = f.at {
        s.push_str(&format!(", last written by {}", line_name(at.line)));
    }
    if let Some(l) = f.file_line {
        s.push_str(&format!(", line {l}"));
    }
    if let Some(e) = &f.entry {
        s.push_str(&format!(", entry {}", sanitize_line(e, 40)));
    }
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `3 (2 ✓ 1 ✗)`: a line's tool calls and how they ended.
pub fn calls_words(l: &LineSummary) -> String {
    if l.tool_calls == 0 {
        return "0".into();
    }
    let mut s = format!("{} ({} ✓ {} ✗", l.tool_calls, l.ok, l.errors);
    if l.open_calls() > 0 {
        s.push_str(&format!(" {} open", l.open_calls()));
    }
    s.push(')');
    s
}

/// A file as a list shows it: `wrote out.txt`, `edited a.rs (2×)`, marked
/// when every call failed or a subagent made it.
pub fn file_words(f: &FileTouch) -> String {
    let verb = if f.effect == Effect::Write {
        "wrote"
    } else {
        "edited"
    };
    let mut s = format!("{verb} {}", sanitize_line(&f.path, WHAT));
    if f.calls > 1 {
        s.push_str(&format!(" ({}×)", f.calls));
    }
    if f.failed {
        s.push_str(" (failed)");
    }
    if let Some(by) = &f.by {
        s.push_str(&format!(" [subagent {}]", sanitize_line(by, 20)));
    }
    s
}

/// One step on one line: `⚑3 asst  WriteFile out.txt ✓ · Shell ls ✓`.
pub fn step_words(st: &Step, cols: usize) -> String {
    let cp = st.checkpoint.map(|c| format!("⚑{c} ")).unwrap_or_default();
    let tag = st.kind.tag();
    // A compaction's own text may already start with its tag (`⊜ …`).
    let mut s = if st.kind == StepKind::Compaction && st.text.starts_with(tag) {
        cp
    } else {
        format!("{cp}{tag} ")
    };
    if st.calls.is_empty() {
        s.push_str(&st.text);
    } else {
        let calls: Vec<String> = st
            .calls
            .iter()
            .map(|c| {
                let t = c
                    .target
                    .as_deref()
                    .map(|t| format!(" {}", sanitize_line(t, 40)))
                    .unwrap_or_default();
                format!("{}{t} {}", sanitize_line(&c.tool, 24), c.outcome.glyph())
            })
            .collect();
        s.push_str(&calls.join(" · "));
    }
    truncate(&s, cols)
}

fn pad(s: &str, cols: usize) -> String {
    let s = truncate(s, cols);
    let w = width(&s);
    format!("{s}{}", " ".repeat(cols.saturating_sub(w)))
}

fn header(s: &Session, c: &Comparison) -> String {
    let title = s
        .title
        .as_deref()
        .map(|t| format!("  \"{}\"", sanitize_line(t, 80)))
        .unwrap_or_default();
    let [a, b] = &c.lines;
    format!(
        "session {}{title}\ncompare {} ↔ {}\n{}\n",
        sanitize_line(&s.id, 80),
        line_title(a),
        line_title(b),
        fork_words(c)
    )
}

fn line_title(l: &LineSummary) -> String {
    let label = match &l.branch {
        Some(b) => format!("branch {}", sanitize_line(b, 30)),
        None => sanitize_line(&l.label, 40),
    };
    format!("{} ({label})", l.name)
}

/// The facts table: one row per fact, one column per line.
fn facts(c: &Comparison) -> Vec<(&'static str, [String; 2])> {
    let both = |f: &dyn Fn(&LineSummary) -> String| [f(&c.lines[0]), f(&c.lines[1])];
    vec![
        ("why", both(&|l| l.reason.clone())),
        ("state", both(&|l| l.state.as_str().to_string())),
        ("steps", both(&|l| l.steps.len().to_string())),
        ("tool calls", both(&calls_words)),
        (
            "tokens",
            both(&|l| l.tokens.map_or("—".into(), |t| t.to_string())),
        ),
        ("time", both(&|l| l.duration_s.map_or("—".into(), duration))),
        (
            "files",
            both(&|l| {
                let n = l.files_written().len();
                format!("{n} written or edited")
            }),
        ),
        ("commands", both(&|l| format!("{} run", l.commands.len()))),
        (
            "ended with",
            both(&|l| {
                l.last_text
                    .as_deref()
                    .map_or("—".into(), |t| format!("\"{}\"", sanitize_line(t, 60)))
            }),
        ),
    ]
}

/// The plain-text comparison.
pub fn text(s: &Session, c: &Comparison) -> String {
    let mut out = header(s, c);
    out.push('\n');
    let [a, b] = &c.lines;
    out.push_str(&format!(
        "{}  {}  {}\n",
        pad("", 11),
        pad(&line_title(a), SIDE),
        line_title(b)
    ));
    for (name, [x, y]) in facts(c) {
        out.push_str(&format!(
            "{}  {}  {}\n",
            pad(name, 11),
            pad(&x, SIDE),
            truncate(&y, SIDE + 20)
        ));
    }
    out.push_str("\nfiles both touched: ");
    if c.files_both.is_empty() {
        out.push_str("none\n");
    } else {
        let files: Vec<String> = c
            .files_both
            .iter()
            .map(|f| sanitize_line(f, WHAT))
            .collect();
        out.push_str(&files.join(", "));
        out.push('\n');
    }
    for l in [a, b] {
        out.push_str(&format!("\n{} after the fork:\n", l.name));
        if l.files.is_empty() && l.commands.is_empty() {
            out.push_str("  wrote, edited and ran nothing\n");
        }
        for f in &l.files {
            let both = c.files_both.contains(&f.path);
            let mark = if both { "  ‼ " } else { "  - " };
            out.push_str(&format!("{mark}{}\n", file_words(f)));
        }
        for cmd in &l.commands {
            let by = cmd
                .by
                .as_deref()
                .map(|b| format!(" [subagent {}]", sanitize_line(b, 20)))
                .unwrap_or_default();
            out.push_str(&format!(
                "  $ {} {}{by}\n",
                sanitize_line(&cmd.command, WHAT),
                cmd.outcome.glyph()
            ));
        }
        if l.unread > 0 {
            out.push_str(&format!(
                "  ({} record{} not read)\n",
                l.unread,
                plural(l.unread)
            ));
        }
    }
    out.push_str(&format!(
        "\nsteps after the fork (= the same on both):\n  {}  {}\n",
        pad(&a.name, SIDE),
        b.name
    ));
    for row in &c.rows {
        let side = |l: &LineSummary, i: Option<usize>| {
            i.and_then(|i| l.steps.get(i))
                .map(|st| step_words(st, SIDE))
                .unwrap_or_default()
        };
        let mark = if row.same { "=" } else { " " };
        out.push_str(
            format!("{mark} {}  {}", pad(&side(a, row.a), SIDE), side(b, row.b)).trim_end(),
        );
        out.push('\n');
    }
    out
}

/// The JSON comparison: `{"fork": {…}, "lines": [{…}, {…}], "files_both"}`.
pub fn json(s: &Session, c: &Comparison) -> Value {
    let f = &c.fork;
    let fork = json!({
        "records": f.shared,
        "steps": f.steps,
        "checkpoint": f.checkpoint,
        "written_by": f.at.map(|r| line_name(r.line)),
        "record": f.at.map(|r| r.record),
        "file_line": f.file_line,
        "entry": f.entry,
        "time": f.time,
    });
    json!({
        "session": s.id,
        "agent": c.agent,
        "fork": fork,
        "lines": c.lines.iter().map(line_json).collect::<Vec<_>>(),
        "files_both": c.files_both,
        "rows": c.rows.iter().map(|r| json!({"a": r.a, "b": r.b, "same": r.same})).collect::<Vec<_>>(),
    })
}

fn line_json(l: &LineSummary) -> Value {
    json!({
        "name": l.name,
        "label": l.label,
        "branch": l.branch,
        "leaf": l.leaf,
        "reason": l.reason,
        "kind": l.kind.map(|k| k.as_str()),
        "state": l.state.as_str(),
        "records": l.own.len(),
        "steps": l.steps.len(),
        "tool_calls": l.tool_calls,
        "ok": l.ok,
        "errors": l.errors,
        "tokens": l.tokens,
        "duration_s": l.duration_s,
        "files_written": l.files_written(),
        "files": l.files.iter().map(|f| json!({
            "path": f.path,
            "wrote": f.effect == Effect::Write,
            "calls": f.calls,
            "failed": f.failed,
            "by": f.by,
        })).collect::<Vec<_>>(),
        "commands": l.commands.iter().map(|c| c.command.as_str()).collect::<Vec<_>>(),
        "command_runs": l.commands.iter().map(|c| json!({
            "command": c.command,
            "ok": match c.outcome {
                crate::worldline::compare::Outcome::Ok => Some(true),
                crate::worldline::compare::Outcome::Failed => Some(false),
                crate::worldline::compare::Outcome::Open => None,
            },
            "by": c.by,
        })).collect::<Vec<_>>(),
        "last_text": l.last_text,
        "unread": l.unread,
        "timeline": l.steps.iter().map(step_json).collect::<Vec<_>>(),
    })
}

fn step_json(st: &Step) -> Value {
    json!({
        "kind": format!("{:?}", st.kind).to_lowercase(),
        "checkpoint": st.checkpoint,
        "text": st.text,
        "time": st.time,
        "calls": st.calls.iter().map(|c| json!({
            "tool": c.tool,
            "target": c.target,
            "outcome": c.outcome.glyph(),
        })).collect::<Vec<_>>(),
    })
}

/// Text safe in a Markdown table cell or paragraph: one line, pipes and
/// the characters that start markup escaped.
pub fn md_text(s: &str, cols: usize) -> String {
    let mut out = String::new();
    for ch in sanitize_line(s, cols).chars() {
        if matches!(
            ch,
            '|' | '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '~'
        ) {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// Inline code that holds any backticks in `s`.
pub fn md_code(s: &str, cols: usize) -> String {
    let s = sanitize_line(s, cols).replace('|', "¦");
    let mut fence = "`".to_string();
    while s.contains(&fence) {
        fence.push('`');
    }
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// The Markdown comparison, for a PR or an issue.
pub fn markdown(s: &Session, c: &Comparison) -> String {
    let [a, b] = &c.lines;
    let mut out = format!(
        "### {} vs {}\n\nSession `{}`{}. {}.\n\n",
        md_text(&line_title(a), 60),
        md_text(&line_title(b), 60),
        sanitize_line(&s.id, 80).replace('`', "'"),
        s.title
            .as_deref()
            .map(|t| format!(" — {}", md_text(t, 80)))
            .unwrap_or_default(),
        md_text(&fork_words(c), 200)
    );
    out.push_str(&format!(
        "| | {} | {} |\n|---|---|---|\n",
        md_text(&a.name, 10),
        md_text(&b.name, 10)
    ));
    for (name, [x, y]) in facts(c) {
        out.push_str(&format!(
            "| {name} | {} | {} |\n",
            md_text(&x, 120),
            md_text(&y, 120)
        ));
    }
    out.push_str("\n**Files both touched:** ");
    if c.files_both.is_empty() {
        out.push_str("none.\n");
    } else {
        let files: Vec<String> = c.files_both.iter().map(|f| md_code(f, WHAT)).collect();
        out.push_str(&files.join(", "));
        out.push_str(" — a revert never undoes files.\n");
    }
    for l in [a, b] {
        out.push_str(&format!(
            "\n#### {} after the fork\n\n",
            md_text(&l.name, 10)
        ));
        if l.files.is_empty() && l.commands.is_empty() {
            out.push_str("Wrote, edited and ran nothing.\n");
        }
        for f in &l.files {
            let verb = if f.effect == Effect::Write {
                "wrote"
            } else {
                "edited"
            };
            let both = if c.files_both.contains(&f.path) {
                " **(both)**"
            } else {
                ""
            };
            let failed = if f.failed { " (failed)" } else { "" };
            out.push_str(&format!(
                "- {verb} {}{failed}{both}\n",
                md_code(&f.path, WHAT)
            ));
        }
        for cmd in &l.commands {
            out.push_str(&format!(
                "- ran {} {}\n",
                md_code(&cmd.command, WHAT),
                cmd.outcome.glyph()
            ));
        }
        if !l.steps.is_empty() {
            out.push_str(&format!(
                "\n<details><summary>{} step{}</summary>\n\n",
                l.steps.len(),
                plural(l.steps.len())
            ));
            for st in &l.steps {
                out.push_str(&format!("1. {}\n", md_text(&step_words(st, 160), 200)));
            }
            out.push_str("\n</details>\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_escapes_what_would_be_markup() {
        assert_eq!(md_text("a|b *c*", 40), "a\\|b \\*c\\*");
        // One space each side is stripped by Markdown: the code is exact.
        assert_eq!(md_code("echo `x`", 40), "`` echo `x` ``");
        assert_eq!(md_code("ls", 40), "`ls`");
        assert_eq!(duration(3.25), "3.2 s");
        assert_eq!(duration(600.0), "10 min");
    }
}
