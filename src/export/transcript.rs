//! A world line as a document (`tree --format markdown [--line NAME]`): its
//! prompts, replies, tool calls (edits and writes as diffs, results folded),
//! D-Mails and compactions as Markdown for sharing. One line reads root to
//! leaf; all lines read as the first whole, then each later one from where
//! it leaves its parent. Text is the session's own (replies are Markdown
//! already), with control characters shown, never passed on.

use std::collections::HashMap;
use std::fmt::Write;

use super::diff;
use crate::model::{Body, CallKey, Marker, Part, Role};
use crate::text::{sanitize, sanitize_line};
use crate::worldline::map::Map;
use crate::worldline::names::line_name;
use crate::worldline::{Family, RecordRef, Session};

/// Bytes of one text part or tool result kept; the file has the rest.
const MAX_PART: usize = 16 << 10;
/// Diff lines shown per file before folding.
const DIFF_LINES: usize = 80;
/// Lines of a tool result shown (inside its fold).
const RESULT_LINES: usize = 60;

/// The transcript of world line `line` of the main agent (root to leaf),
/// or of every line when `None`.
pub fn markdown(s: &Session, line: Option<usize>) -> String {
    let mut out = String::new();
    let title = s
        .title
        .as_deref()
        .map(|t| sanitize_line(t, 120))
        .unwrap_or_else(|| sanitize_line(&s.id, 120));
    let _ = writeln!(out, "# {}\n", esc_inline(&title));
    let _ = writeln!(
        out,
        "Session `{}` · written by {} · {} world line{}\n",
        sanitize_line(&s.id, 80).replace('`', "'"),
        s.tool.as_str(),
        s.main().lines.len(),
        if s.main().lines.len() == 1 { "" } else { "s" }
    );
    let map = Map::of_session(s);
    let f = s.main();
    let names = call_names(f);
    match line {
        Some(i) => {
            section(&mut out, s, f, &map, &names, i, 0);
        }
        None => {
            for i in 0..f.lines.len() {
                let from = if i == 0 { 0 } else { f.lines[i].shared };
                section(&mut out, s, f, &map, &names, i, from);
            }
        }
    }
    out
}

fn call_names(f: &Family) -> HashMap<CallKey, String> {
    let mut m = HashMap::new();
    for file in &f.files {
        for r in file.records.iter() {
            for c in &r.tool_calls() {
                m.entry(c.key()).or_insert_with(|| c.name().to_string());
            }
        }
    }
    m
}

fn section(
    out: &mut String,
    s: &Session,
    f: &Family,
    map: &Map,
    names: &HashMap<CallKey, String>,
    line: usize,
    from: usize,
) {
    let Some(l) = f.lines.get(line) else { return };
    let label = match &l.branch {
        Some(b) => format!("branch {}", sanitize_line(b, 40)),
        None => sanitize_line(&l.file, 60),
    };
    let current = if l.current { " (current)" } else { "" };
    let _ = writeln!(
        out,
        "## World line {} — {}{current}\n",
        line_name(line),
        esc_inline(&label)
    );
    if let Some(t) = map.tracks.get(line) {
        let _ = writeln!(out, "*{}*\n", esc_inline(&t.reason));
    }
    if from > 0 {
        let parent = l.parent.map(line_name).unwrap_or_else(|| "?".into());
        let _ = writeln!(
            out,
            "Its first {from} records are {parent}'s (above); from there it goes its own way.\n"
        );
    }
    let refs = s.walk(0, line);
    let mut skip_note = false;
    for &r in refs.iter().skip(from) {
        let Some(meta) = f.record(r) else { continue };
        let note = matches!(meta.marker().as_deref(), Some(Marker::CheckpointNote(_)));
        if note && skip_note {
            skip_note = false;
            continue;
        }
        skip_note = *meta.role() == Role::Checkpoint;
        match meta.role() {
            Role::Checkpoint => {
                let _ = writeln!(out, "`⚑{}`\n", meta.checkpoint().unwrap_or(-1));
                continue;
            }
            Role::Usage => continue,
            _ => {}
        }
        match meta.marker().as_deref() {
            Some(Marker::DMailInjection(msg)) => {
                let _ = writeln!(out, "> ✉ **D-Mail from the future**\n>");
                quote(out, msg);
                out.push('\n');
                continue;
            }
            Some(Marker::DMailResult(Err(e))) => {
                let _ = writeln!(
                    out,
                    "✗ *D-Mail refused: {}*\n",
                    esc_inline(&sanitize_line(e, 200))
                );
                continue;
            }
            _ => {}
        }
        match s.body(r) {
            Ok(b) => record(out, r, meta.role(), &b, names, meta.tool_call_key()),
            Err(e) => {
                let _ = writeln!(
                    out,
                    "*cannot read this record: {}*\n",
                    esc_inline(&sanitize_line(&e.to_string(), 200))
                );
            }
        }
    }
}

fn record(
    out: &mut String,
    _r: RecordRef,
    role: &Role,
    b: &Body,
    names: &HashMap<CallKey, String>,
    answers: Option<CallKey>,
) {
    match role {
        Role::SystemPrompt => {
            folded(out, "system prompt", &b.text(), "text");
        }
        Role::User => {
            let text = b.text();
            if text.trim().is_empty() {
                return;
            }
            let _ = writeln!(out, "**User:**\n");
            quote(out, &text);
            out.push('\n');
        }
        Role::Assistant => {
            let mut said = false;
            for p in &b.parts {
                match p {
                    Part::Text(t) if !t.trim().is_empty() => {
                        if !said {
                            let _ = writeln!(out, "**Assistant:**\n");
                            said = true;
                        }
                        let _ = writeln!(out, "{}\n", capped(t));
                    }
                    Part::Think(t) if !t.trim().is_empty() => folded(out, "thinking", t, "text"),
                    Part::Media { kind, bytes, .. } => {
                        let _ = writeln!(
                            out,
                            "*[{} · {}]*\n",
                            esc_inline(&sanitize_line(kind, 20)),
                            super::human_size(*bytes as u64)
                        );
                    }
                    _ => {}
                }
            }
            for c in &b.tool_calls {
                let name = sanitize_line(&c.name, 40);
                let target = crate::worldline::tools::target(&c.name, &c.arguments)
                    .map(|t| format!(" {}", code_inline(&sanitize_line(&t, 120))))
                    .unwrap_or_default();
                let _ = writeln!(out, "→ **{}**{target}\n", esc_inline(&name));
                let diffs = diff::of_call(&c.name, &c.arguments, DIFF_LINES);
                if diffs.is_empty() {
                    let pretty = serde_json::from_str::<serde_json::Value>(&c.arguments)
                        .ok()
                        .and_then(|v| serde_json::to_string_pretty(&v).ok())
                        .unwrap_or_else(|| c.arguments.clone());
                    folded(out, "arguments", &pretty, "json");
                } else {
                    for d in diffs {
                        let text = d.unified();
                        let _ = writeln!(out, "{}", fenced(&text, "diff"));
                    }
                }
            }
        }
        Role::Tool => {
            let name = answers
                .and_then(|k| names.get(&k))
                .map(|n| sanitize_line(n, 40))
                .unwrap_or_else(|| "tool".into());
            let text = b.text();
            let failed = crate::worldline::tools::result_failed(b);
            let mark = if failed { "✗" } else { "✓" };
            let shown: String = text
                .lines()
                .take(RESULT_LINES)
                .collect::<Vec<_>>()
                .join("\n");
            let more = text.lines().count().saturating_sub(RESULT_LINES);
            let label = format!("← {name} {mark}");
            let mut body = shown;
            if more > 0 {
                body.push_str(&format!("\n… {more} more lines"));
            }
            folded(out, &label, &body, "text");
        }
        _ => {
            let text = b.text();
            if !text.trim().is_empty() {
                folded(out, role.as_str(), &text, "text");
            }
        }
    }
}

/// Text capped at `MAX_PART`, controls shown.
fn capped(t: &str) -> String {
    let shown = &t[..t.floor_char_boundary(MAX_PART)];
    let mut s = sanitize(shown, true);
    if shown.len() < t.len() {
        s.push_str(&format!(
            "\n\n*… {} more not shown*",
            super::human_size((t.len() - shown.len()) as u64)
        ));
    }
    s
}

fn quote(out: &mut String, text: &str) {
    for l in capped(text).lines() {
        let _ = writeln!(out, "> {l}");
    }
}

/// A `<details>` fold holding `text` in a code block.
fn folded(out: &mut String, label: &str, text: &str, lang: &str) {
    let _ = writeln!(
        out,
        "<details><summary>{}</summary>\n\n{}\n</details>\n",
        esc_html(label),
        fenced(&capped(text), lang)
    );
}

/// A fenced code block whose fence is longer than any backtick run inside.
fn fenced(text: &str, lang: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}", text.trim_end_matches('\n'))
}

fn code_inline(s: &str) -> String {
    let fence = if s.contains('`') { "`` " } else { "`" };
    let close = if s.contains('`') { " ``" } else { "`" };
    format!("{fence}{s}{close}")
}

fn esc_inline(s: &str) -> String {
    super::compare::md_text(s, 400)
}

fn esc_html(s: &str) -> String {
    crate::text::escape_html(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_the_backticks_inside() {
        assert_eq!(fenced("a", "text"), "```text\na\n```");
        assert_eq!(fenced("x ```` y", ""), "`````\nx ```` y\n`````");
    }
}
