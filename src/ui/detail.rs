//! The detail pane: the selected record in full, as lines a wrapping
//! paragraph draws. Pure: session index + an already-loaded body in, lines
//! out. Every string from the session is sanitised here.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::model::{Marker, Part, Role};
use crate::text::{sanitize, sanitize_line};
use crate::worldline::{Family, ForkKind, RecordRef, Session};

use super::cache::Cache;
use super::theme::{line_name, Theme};

/// Bytes of one part shown; the rest is summarised (bodies can be 20 MB).
const MAX_PART: usize = 64 * 1024;

/// The lines for record `r`, from what `cache` holds: its body and, for a
/// D-Mail's landing, what was on disk then (read before the frame).
pub fn lines(s: &Session, r: RecordRef, cache: &Cache, t: &Theme) -> Vec<Line<'static>> {
    let body = cache.get_body(r);
    let mut out: Vec<Line<'static>> = Vec::new();
    let Some(agent) = s.agents.get(r.agent) else {
        return out;
    };
    let f = &agent.family;
    let Some(meta) = f.record(r) else {
        return out;
    };
    let file = f.lines.get(r.line).map_or("?", |l| l.file.as_str());
    let time = s
        .time(r)
        .map(|t| format!(" · {} UTC", clock(t)))
        .unwrap_or_default();
    out.push(Line::from(vec![
        Span::styled(
            match meta.role() {
                Role::Checkpoint => s.tool.checkpoint_word(),
                role => role_name(role),
            }
            .to_string(),
            t.role(meta.role()).patch(t.bold()),
        ),
        Span::styled(
            format!(
                " · {} {}:{}{}",
                line_name(r.line),
                sanitize_line(file, 40),
                meta.line(),
                time
            ),
            t.dim(),
        ),
    ]));

    // A world line's first own record says why it exists.
    if let Some(l) = f.lines.get(r.line) {
        if l.shared == r.record && l.fork.is_some() {
            out.push(Line::from(Span::styled(
                format!(
                    "world line {} begins: {}",
                    line_name(r.line),
                    sanitize_line(&crate::export::fork_label(f, r.line), 200)
                ),
                t.accent(),
            )));
        }
    }
    forks_here(&mut out, f, r, t);

    match meta.marker().as_deref() {
        Some(Marker::DMailInjection(msg)) => {
            dmail_injection(&mut out, f, r, msg, t);
            super::compose::landing_detail(&mut out, cache.get_landing(s, r), t);
        }
        Some(Marker::DMailResult(res)) => out.push(Line::from(Span::styled(
            match res {
                Ok(()) => {
                    "✉ DenwaRenji accepted the D-Mail (the text below is kimi's wording)".into()
                }
                Err(e) => format!("✉ D-Mail refused: {}", sanitize_line(e, 200)),
            },
            t.dmail(),
        ))),
        Some(Marker::AgentResult(id)) => out.push(Line::from(Span::styled(
            format!("⇲ subagent {} (s enters it)", sanitize_line(id, 40)),
            t.accent(),
        ))),
        Some(Marker::Compaction) => out.push(Line::from(Span::styled(
            "⊜ the context was compacted here (summarised, not reverted)".to_string(),
            t.accent(),
        ))),
        _ => {}
    }
    for a in f.attempts.iter().filter(|a| a.call == r) {
        let outcome = match (a.accepted, &a.error, a.caused) {
            (Some(true), _, Some(c)) => format!("accepted: created world line {}", line_name(c)),
            (Some(true), _, None) => "accepted (no revert seen yet)".into(),
            (Some(false), Some(e), _) => format!("refused: {}", sanitize_line(e, 120)),
            (Some(false), None, _) => "refused".into(),
            (None, _, _) => "no result yet".into(),
        };
        out.push(Line::from(Span::styled(
            format!("✉ SendDMail → checkpoint {}: {outcome}", a.checkpoint_id),
            t.dmail(),
        )));
        push_text(&mut out, &a.message, Style::new());
    }
    out.push(Line::default());

    match meta.role() {
        Role::Checkpoint => {
            let n = meta.checkpoint().unwrap_or(-1);
            // Only an agent that takes D-Mails at checkpoints can go back.
            let word = s.tool.checkpoint_word();
            out.push(Line::from(if s.tool.dmail_to_marks() {
                format!("{word} {n} — a D-Mail can send the agent back here")
            } else {
                format!("{word} {n} begins")
            }));
            return out;
        }
        Role::Usage => {
            out.push(Line::from(format!(
                "context size: {} tokens",
                meta.tokens().unwrap_or(0)
            )));
            return out;
        }
        _ => {}
    }

    let Some(body) = body else {
        out.push(Line::from(Span::styled("loading…".to_string(), t.dim())));
        return out;
    };
    let b = match body {
        Ok(b) => b,
        Err(e) => {
            out.push(Line::from(Span::styled(
                format!("cannot read this record: {}", sanitize_line(e, 200)),
                t.error(),
            )));
            return out;
        }
    };
    if b.tool_call_id.is_some() {
        // Named by the tool that was called, not by its call id.
        let what = calling_tool(f, r)
            .map(|name| format!("↳ result of {}", sanitize_line(name, 60)))
            .unwrap_or_else(|| "↳ a tool's result".to_string());
        out.push(Line::from(Span::styled(what, t.dim())));
    }
    for p in &b.parts {
        match p {
            Part::Text(text) => push_text(&mut out, text, Style::new()),
            Part::Think(text) => {
                out.push(Line::from(Span::styled(
                    "thinking".to_string(),
                    t.dim().patch(t.bold()),
                )));
                push_text(&mut out, text, t.dim());
            }
            Part::Media {
                kind,
                bytes,
                url_head,
            } => out.push(Line::from(Span::styled(
                format!(
                    "[{} · {} · {}…]",
                    sanitize_line(kind, 20),
                    crate::export::human_size(*bytes as u64),
                    sanitize_line(url_head, 40)
                ),
                t.accent(),
            ))),
            Part::Unknown(v) => {
                out.push(Line::from(Span::styled(
                    "[unknown part]".to_string(),
                    t.dim(),
                )));
                push_text(&mut out, &v.to_string(), t.dim());
            }
        }
    }
    for c in &b.tool_calls {
        out.push(Line::default());
        out.push(Line::from(vec![
            Span::styled("→ ".to_string(), t.accent()),
            Span::styled(sanitize_line(&c.name, 60), t.bold()),
        ]));
        // An edit or write reads as its diff; other calls as arguments.
        if super::diffview::push(&mut out, &c.name, &c.arguments, t) {
            continue;
        }
        let pretty = serde_json::from_str::<serde_json::Value>(&c.arguments)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| c.arguments.clone());
        push_text(&mut out, &pretty, Style::new());
    }
    if let Some(tokens) = b.tokens {
        out.push(Line::from(format!("{tokens} tokens")));
    }
    out
}

/// The name of the tool whose call tool result `r` answers: the nearest
/// call with its key before it on its line (a bounded look back).
fn calling_tool(f: &Family, r: RecordRef) -> Option<&str> {
    let records = &f.files.get(r.line)?.records;
    let key = records.get(r.record)?.tool_call_key()?;
    records.range(..r.record).rev().take(4096).find_map(|m| {
        m.tool_calls()
            .iter()
            .find(|c| c.key() == key)
            .map(|c| c.name())
    })
}

/// World lines that leave from this record.
fn forks_here(out: &mut Vec<Line<'static>>, f: &Family, r: RecordRef, t: &Theme) {
    for (i, l) in f.lines.iter().enumerate() {
        if f.fork_record(i) == Some(r) {
            out.push(Line::from(Span::styled(
                format!(
                    "⑂ world line {} ({}) branches off here",
                    line_name(i),
                    l.file
                ),
                t.line(i),
            )));
        }
    }
}

fn dmail_injection(out: &mut Vec<Line<'static>>, f: &Family, r: RecordRef, msg: &str, t: &Theme) {
    let fork = f.lines.get(r.line).and_then(|l| l.fork.as_ref());
    let by_turns = fork.is_some_and(|k| k.checkpoint.is_none() && k.turns.is_some());
    let back = match fork {
        Some(k) if by_turns => k.dmail_back(),
        _ => format!(
            "checkpoint {}",
            fork.and_then(|k| k.checkpoint)
                .map_or("?".to_string(), |c| c.to_string())
        ),
    };
    out.push(Line::from(Span::styled(
        format!("✉ D-Mail to {back}"),
        t.dmail(),
    )));
    let from = match fork.and_then(|k| k.sender.as_ref()) {
        Some(snd) => format!(
            "sent from the future of world line {}",
            line_name(snd.call.line)
        ),
        None if fork.is_some_and(|k| k.kind == ForkKind::Dmail) => {
            "sent from outside the agent".to_string()
        }
        None => "sender unknown".to_string(),
    };
    out.push(Line::from(Span::styled(from, t.dim())));
    out.push(Line::default());
    push_text(out, msg, t.bold());
    out.push(Line::default());
    out.push(Line::from(Span::styled(
        if by_turns {
            "(the agent's undo took the turns back; this message is the next prompt)"
        } else {
            "(kimi-cli wraps it in a note telling the agent never to mention it)"
        }
        .to_string(),
        t.dim(),
    )));
}

/// Sanitised text, one `Line` per source line, tabs as spaces, capped.
fn push_text(out: &mut Vec<Line<'static>>, text: &str, style: Style) {
    let (shown, rest) = if text.len() > MAX_PART {
        let mut cut = MAX_PART;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        (&text[..cut], text.len() - cut)
    } else {
        (text, 0)
    };
    let clean = sanitize(shown, true).replace('\t', "    ");
    for l in clean.lines() {
        out.push(Line::from(Span::styled(l.to_string(), style)));
    }
    if rest > 0 {
        out.push(Line::from(format!(
            "… {} more not shown",
            crate::export::human_size(rest as u64)
        )));
    }
}

pub fn role_name(r: &Role) -> &str {
    match r {
        Role::SystemPrompt => "system prompt",
        Role::Checkpoint => "checkpoint",
        Role::Usage => "usage",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
        Role::System => "system",
        Role::Other(s) => s,
    }
}

/// `HH:MM:SS` in UTC (no tz database; deterministic for tests).
pub fn clock(unix: f64) -> String {
    let s = (unix.max(0.0) as i64).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}
