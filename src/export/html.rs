//! `tree --format html`: one self-contained file to send a colleague. The
//! world-line map on top (each track links to its world line), an index of
//! the world lines, then each world line's conversation: user prompts,
//! assistant text, thinking and tool calls and results (long ones folded in
//! `<details>`), D-Mails with what became of them, where other world lines
//! fork off, and subagents under their own heading.
//!
//! Safe to open: no script at all (folding is `<details>`, navigation is
//! `#anchors`), a Content-Security-Policy that forbids every fetch, no
//! external asset, and every string from the session escaped by
//! `markup::esc`. Each record appears once, in the world line that wrote
//! it; a later world line links back to the records it shares.

use std::collections::HashMap;
use std::fmt::Write;

use super::markup::{esc, esc_line};
use super::story::{place_name, AgentStory, LineStory, Story, DMAIL_COLOUR};
use crate::model::{Body, CallKey, Marker, Part, RecordMeta, Role};
use crate::worldline::{Family, ForkKind, RecordRef, Session};

/// Bytes of one part written out; the rest is summarised (bodies can be
/// 20 MB of base64).
const MAX_PART: usize = 256 * 1024;
/// Text longer than this (bytes or lines) is folded.
const FOLD_BYTES: usize = 600;
const FOLD_LINES: usize = 12;

/// Blocks every fetch; allows only the inline style sheet and inline SVG.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

const STYLE: &str = r#"
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --muted: #656d76;
  --card: #f6f8fa; --border: #d0d7de; --code: #eff1f3; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #8d96a0; --card: #161b22;
    --border: #30363d; --code: #1c2128; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 72rem; padding: 1.5rem; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .5rem; padding-bottom: .25rem; border-bottom: 2px solid var(--line, var(--border)); }
h3 { font-size: 1.1rem; margin: 2.5rem 0 .5rem; }
a { color: inherit; }
.muted, .time { color: var(--muted); }
.meta { color: var(--muted); margin-bottom: 1rem; }
.map { overflow-x: auto; margin: 1rem 0; }
.map svg { display: block; max-width: none; }
table.index { border-collapse: collapse; width: 100%; margin: 1rem 0; }
table.index td, table.index th { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid var(--border); vertical-align: top; }
.swatch { display: inline-block; width: .8rem; height: .8rem; border-radius: 50%; background: var(--line); vertical-align: middle; margin-right: .3rem; }
.name { font-weight: 700; color: var(--line); }
.why { background: var(--card); border-left: 4px solid var(--line, var(--border)); padding: .5rem .8rem; margin: .5rem 0 1rem; }
.rec { display: grid; grid-template-columns: 3.5rem 6rem 1fr 5rem; gap: .5rem; padding: .35rem 0 .35rem .6rem; border-bottom: 1px solid var(--border); }
.rec > .who { font-weight: 600; }
.rec > .time { text-align: right; font-size: .85em; }
.gutter { color: var(--muted); font-variant-numeric: tabular-nums; }
.body { min-width: 0; overflow-wrap: anywhere; }
.body p { margin: 0 0 .4rem; white-space: pre-wrap; }
pre { margin: .3rem 0; padding: .5rem; background: var(--code); border-radius: 6px; white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.4 ui-monospace, "SF Mono", Menlo, Consolas, monospace; }
details > summary { cursor: pointer; color: var(--muted); }
.user > .who { color: #2f9e44; } .assistant > .who { color: #3f7fe0; } .tool > .who { color: #c04fc0; }
.cp { color: var(--muted); font-size: .85em; padding: .15rem .6rem; border-bottom: 1px dashed var(--border); }
.usage { color: var(--muted); font-size: .85em; text-align: right; }
.call .tool-name { font-weight: 700; }
.dmail { box-shadow: inset 4px 0 0 DMAIL; }
.dmail .tag { color: DMAIL; font-weight: 700; }
.refused .tag, .error { color: #d0342c; font-weight: 700; }
.fork-here { color: var(--line); font-size: .9em; padding: .2rem .6rem; }
.think { color: var(--muted); font-style: italic; }
.sub { border: 1px dashed var(--border); border-radius: 8px; padding: 0 1rem 1rem; margin-top: 2rem; }
footer { color: var(--muted); margin-top: 3rem; font-size: .85em; }
"#;

pub fn html(s: &Session) -> String {
    let story = Story::of(s);
    let mut out = String::with_capacity(64 * 1024);
    let title = story
        .title
        .clone()
        .unwrap_or_else(|| format!("session {}", story.session_id));
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"worldline {}\">\n<title>{} · worldline</title>\n\
         <style>{}</style>\n</head>\n<body>\n",
        env!("CARGO_PKG_VERSION"),
        esc_line(&title),
        STYLE.replace("DMAIL", DMAIL_COLOUR)
    );
    let _ = writeln!(out, "<header>\n<h1>{}</h1>", esc_line(&title));
    let main = story.main();
    let attempts = s.main().attempts.len();
    let _ = writeln!(
        out,
        "<div class=\"meta\">session {} · {} world line{} · {} subagent{} · {} D-Mail{} ({} refused){}</div>\n</header>",
        esc_line(&story.session_id),
        main.lines.len(),
        plural(main.lines.len()),
        story.agents.len() - 1,
        plural(story.agents.len() - 1),
        attempts,
        plural(attempts),
        main.refused.len(),
        span(main)
            .map(|(a, b)| format!(" · {} UTC, {}", super::format_time(a), duration(b - a)))
            .unwrap_or_default()
    );
    out.push_str("<nav class=\"map\" aria-label=\"world-line map\">\n");
    out.push_str(&super::svg::map_svg(s, &super::svg::SvgOptions::embedded()));
    out.push_str("</nav>\n");
    index(&mut out, &story);
    lineage(&mut out, s);
    for (k, agent) in story.agents.iter().enumerate() {
        agent_section(&mut out, s, &story, k, agent);
    }
    if !s.warnings.is_empty() {
        let _ = writeln!(out, "<h2>Warnings</h2>\n<ul>");
        for w in &s.warnings {
            let _ = writeln!(
                out,
                "<li>{}: {}</li>",
                esc_line(&w.place()),
                esc_line(&w.message)
            );
        }
        out.push_str("</ul>\n");
    }
    let _ = writeln!(
        out,
        "<footer>Written by worldline {} from the session's files; times in UTC. \
         Each record is shown once, in the world line that wrote it.</footer>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION")
    );
    out
}

/// Where this session came from and the `/fork` and `/undo` sessions made
/// from it, in the words the TUI's map uses.
fn lineage(out: &mut String, s: &Session) {
    let map = crate::worldline::map::Map::of_session(s);
    let came = crate::worldline::map::came_from(s);
    if came.is_none() && map.forks.is_empty() {
        return;
    }
    out.push_str("<h2>Sessions</h2>\n<ul class=\"lineage\">\n");
    if let Some(c) = came {
        let _ = writeln!(out, "<li>this session is a {}</li>", esc_line(&c));
    }
    for fk in &map.forks {
        let text = fk.text();
        let _ = writeln!(
            out,
            "<li>made from this one: {}</li>",
            esc_line(text.trim_start_matches("⑂ "))
        );
    }
    out.push_str("</ul>\n");
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn duration(secs: f64) -> String {
    if secs < 60.0 {
        format!("{secs:.1} s")
    } else if secs < 3600.0 {
        format!("{:.0} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
    }
}

fn span(a: &AgentStory) -> Option<(f64, f64)> {
    let lo = a.lines.iter().filter_map(|l| l.start).reduce(f64::min)?;
    let hi = a.lines.iter().filter_map(|l| l.end).reduce(f64::max)?;
    Some((lo, hi))
}

/// The anchor of a world line, shared with the SVG map's links.
pub fn line_anchor(agent: usize, line: usize) -> String {
    format!("a{agent}-l{line}")
}

fn record_anchor(r: RecordRef) -> String {
    format!("a{}-l{}-r{}", r.agent, r.line, r.record)
}

/// One sentence on why a world line exists.
fn why(lines: &[LineStory], l: &LineStory) -> String {
    let Some(fk) = &l.fork else {
        return "the first world line".to_string();
    };
    let from = fk
        .origin
        .and_then(|o| lines.get(o))
        .map(|o| o.name.clone())
        .unwrap_or_else(|| "nothing".into());
    match fk.kind {
        ForkKind::Dmail => {
            let who = match fk.sender {
                Some(p) => format!("from {}", place_name(lines, p)),
                None => "from outside the agent".to_string(),
            };
            format!(
                "✉ a D-Mail {who} sent the agent back to {} of {from}",
                fk.back()
            )
        }
        ForkKind::Compaction => format!("⊜ {from} was compacted into a summary"),
        ForkKind::Clear => format!("∅ /clear on {from}: a fresh start"),
        ForkKind::Undo => format!("↶ {} on {from}", fk.undo.as_deref().unwrap_or("undo")),
        ForkKind::Rewind
        | ForkKind::Summarize
        | ForkKind::Tree
        | ForkKind::Fork
        | ForkKind::Rollback => match fk.message.as_deref() {
            Some(m) => format!(
                "{} on {from}: {}",
                fk.kind.branch_words(),
                crate::text::sanitize_line(m, 200)
            ),
            None => format!("{} on {from}", fk.kind.branch_words()),
        },
        ForkKind::Unknown => format!("left {from} for a reason the files don't say"),
    }
}

fn index(out: &mut String, story: &Story) {
    out.push_str("<table class=\"index\">\n<tr><th>world line</th><th>file</th><th>why</th><th>size</th></tr>\n");
    for agent in &story.agents {
        for l in &agent.lines {
            let whose = agent
                .subagent
                .as_ref()
                .map(|sub| {
                    format!(
                        "subagent {} ",
                        esc_line(sub.description.as_deref().unwrap_or(&sub.agent_id))
                    )
                })
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "<tr style=\"--line:{}\"><td><span class=\"swatch\"></span><a class=\"name\" href=\"#{}\">{whose}{}</a>{}</td><td>{}</td><td>{}</td><td>{} · {}</td></tr>",
                l.colour,
                line_anchor(agent.index, l.index),
                esc_line(&l.name),
                if l.current { " ◆ current" } else { "" },
                esc_line(&l.file),
                esc_line(&why(&agent.lines, l)),
                esc_line(&l.checkpoint_range()),
                esc_line(&l.counts())
            );
        }
    }
    out.push_str("</table>\n");
}

fn agent_section(out: &mut String, s: &Session, story: &Story, k: usize, agent: &AgentStory) {
    let f = &s.agents[k].family;
    if let Some(sub) = &agent.subagent {
        let _ = writeln!(
            out,
            "<section class=\"sub\" id=\"a{k}\">\n<h3>subagent {} · {}{}</h3>",
            esc_line(sub.kind.as_deref().unwrap_or("?")),
            esc_line(sub.description.as_deref().unwrap_or("")),
            sub.status
                .as_deref()
                .map(|st| format!(" <span class=\"muted\">[{}]</span>", esc_line(st)))
                .unwrap_or_default()
        );
        let from = match (sub.parent, &sub.parent_tool_call_id) {
            (Some(p), _) => {
                let call = RecordRef {
                    agent: 0,
                    line: p.line,
                    record: p.record,
                };
                format!(
                    "run by the Agent call at <a href=\"#{}\">{}</a>",
                    record_anchor(call),
                    esc_line(&place_name(&story.main().lines, p))
                )
            }
            (None, _) => "its Agent call was not found".to_string(),
        };
        let _ = writeln!(
            out,
            "<p class=\"muted\">{} · agent {}</p>",
            from,
            esc_line(&sub.agent_id)
        );
    }
    let names = call_names(f);
    for l in &agent.lines {
        line_section(out, s, story, f, agent, l, &names);
    }
    if agent.subagent.is_some() {
        out.push_str("</section>\n");
    }
}

/// Tool call id → tool name, for labelling results.
fn call_names(f: &Family) -> HashMap<CallKey, &str> {
    let mut m = HashMap::new();
    for file in &f.files {
        for r in &file.records {
            for c in r.tool_calls().iter() {
                m.insert(c.key(), c.name());
            }
        }
    }
    m
}

fn line_section(
    out: &mut String,
    s: &Session,
    story: &Story,
    f: &Family,
    agent: &AgentStory,
    l: &LineStory,
    names: &HashMap<CallKey, &str>,
) {
    let a = agent.index;
    let _ = writeln!(
        out,
        "<section id=\"{}\" style=\"--line:{}\">\n<h2><span class=\"swatch\"></span><span class=\"name\">{}</span> {}{} <span class=\"muted\">· {} · {}</span></h2>",
        line_anchor(a, l.index),
        l.colour,
        esc_line(&l.name),
        esc_line(&l.file),
        if l.current { " ◆" } else { "" },
        esc_line(&l.checkpoint_range()),
        esc_line(&l.counts())
    );
    let wl = &f.lines[l.index];
    let mut why_html = esc_line(&why(&agent.lines, l));
    if let Some(msg) = l.fork.as_ref().and_then(|fk| fk.message.as_deref()) {
        let _ = write!(why_html, ": <strong>“{}”</strong>", esc_line(msg));
    }
    if let Some(owner) = f.fork_record(l.index) {
        let _ = write!(
            why_html,
            "<br><span class=\"muted\">It shares its first {}, up to <a href=\"#{}\">{}</a>.</span>",
            crate::text::count(wl.shared as u64, "record"),
            record_anchor(owner),
            esc_line(&place_name(
                &agent.lines,
                super::story::place(f, owner)
            ))
        );
    }
    let _ = writeln!(out, "<div class=\"why\">{why_html}</div>");
    let file = &f.files[l.index];
    let mut skip_note = false;
    for r in wl.shared..file.records.len() {
        let rr = RecordRef {
            agent: a,
            line: l.index,
            record: r,
        };
        let meta = &file.records[r];
        // The CHECKPOINT note right after a checkpoint is bookkeeping.
        let is_note = matches!(meta.marker().as_deref(), Some(Marker::CheckpointNote(_)));
        if is_note && skip_note {
            skip_note = false;
            forks_here(out, story, f, rr);
            continue;
        }
        skip_note = *meta.role() == Role::Checkpoint;
        record(out, s, f, agent, rr, meta, names);
        forks_here(out, story, f, rr);
    }
    out.push_str("</section>\n");
}

/// Links to the world lines that branch off after record `r`.
fn forks_here(out: &mut String, story: &Story, f: &Family, r: RecordRef) {
    let lines = &story.agents[r.agent].lines;
    for (i, l) in f.lines.iter().enumerate() {
        if f.fork_record(i) == Some(r) {
            let label = l
                .fork
                .as_ref()
                .map(|_| {
                    lines[i]
                        .fork
                        .as_ref()
                        .map(|fk| fk.headline(lines))
                        .unwrap_or_default()
                })
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "<div class=\"fork-here\" style=\"--line:{}\">⤷ <a href=\"#{}\">world line {}</a> branches off here · {}</div>",
                lines[i].colour,
                line_anchor(r.agent, i),
                esc_line(&lines[i].name),
                esc_line(&label)
            );
        }
    }
}

fn time_of(s: &Session, r: RecordRef) -> String {
    s.time(r)
        .map(|t| format!("{} UTC", super::format_clock(t)))
        .unwrap_or_default()
}

fn record(
    out: &mut String,
    s: &Session,
    f: &Family,
    agent: &AgentStory,
    r: RecordRef,
    meta: &RecordMeta,
    names: &HashMap<CallKey, &str>,
) {
    let id = record_anchor(r);
    match meta.role() {
        Role::Checkpoint => {
            let _ = writeln!(
                out,
                "<div class=\"cp\" id=\"{id}\">⚑{} {} <span class=\"time\">{}</span></div>",
                meta.checkpoint().unwrap_or(-1),
                s.tool.checkpoint_word(),
                time_of(s, r)
            );
            return;
        }
        Role::Usage => {
            let _ = writeln!(
                out,
                "<div class=\"usage\" id=\"{id}\">Σ {} tokens</div>",
                meta.tokens().unwrap_or(0)
            );
            return;
        }
        _ => {}
    }
    let body = s.body(r);
    let (class, who) = match meta.role() {
        Role::SystemPrompt => ("system", "system prompt".to_string()),
        Role::User => ("user", "user".to_string()),
        Role::Assistant => ("assistant", "assistant".to_string()),
        Role::Tool => ("tool", {
            let name = meta
                .tool_call_key()
                .and_then(|c| names.get(&c))
                .copied()
                .unwrap_or("tool");
            format!("← {name}")
        }),
        other => ("other", other.as_str().to_string()),
    };
    let dmail = matches!(
        meta.marker().as_deref(),
        Some(Marker::DMailInjection(_) | Marker::DMailResult(_))
    ) || meta.tool_calls().iter().any(|c| c.dmail().is_some());
    let _ = write!(
        out,
        "<div class=\"rec {class}{}\" id=\"{id}\"><div class=\"gutter\">{}</div><div class=\"who\">{}</div><div class=\"body\">",
        if dmail { " dmail" } else { "" },
        super::story::place(f, r)
            .checkpoint
            .map(|c| format!("⚑{c}"))
            .unwrap_or_default(),
        esc_line(&who)
    );
    match meta.marker().as_deref() {
        Some(Marker::DMailInjection(msg)) => {
            let l = &agent.lines[r.line];
            let from = l
                .fork
                .as_ref()
                .map(|fk| fk.headline(&agent.lines))
                .unwrap_or_else(|| "✉ D-Mail".into());
            let _ = write!(
                out,
                "<p><span class=\"tag\">{}</span></p><p><strong>{}</strong></p>\
                 <p class=\"muted\">kimi-cli wraps it in a note telling the agent never to mention it.</p>",
                esc_line(&from),
                esc(msg)
            );
            out.push_str("</div>");
            let _ = writeln!(out, "<div class=\"time\">{}</div></div>", time_of(s, r));
            return;
        }
        Some(Marker::Compaction) => {
            out.push_str("<p><span class=\"tag\">⊜ the context was compacted here</span></p>")
        }
        Some(Marker::DMailResult(Ok(()))) => {
            out.push_str("<p><span class=\"tag\">✉ DenwaRenji accepted the D-Mail</span></p>")
        }
        Some(Marker::DMailResult(Err(e))) => {
            let _ = write!(
                out,
                "<p class=\"refused\"><span class=\"tag\">✗ D-Mail refused:</span> {}</p>",
                esc_line(e)
            );
        }
        Some(Marker::AgentResult(id)) => {
            let sub = s
                .agents
                .iter()
                .position(|a| a.meta.as_ref().is_some_and(|m| &m.agent_id == id));
            match sub {
                Some(k) => {
                    let _ = write!(
                        out,
                        "<p>⇲ <a href=\"#a{k}\">subagent {}</a></p>",
                        esc_line(id)
                    );
                }
                None => {
                    let _ = write!(out, "<p>⇲ subagent {}</p>", esc_line(id));
                }
            }
        }
        _ => {}
    }
    match body {
        Ok(b) => body_html(out, s, f, agent, r, &b),
        Err(e) => {
            let _ = write!(
                out,
                "<p class=\"error\">cannot read this record: {}</p>",
                esc_line(&e.to_string())
            );
        }
    }
    out.push_str("</div>");
    let _ = writeln!(out, "<div class=\"time\">{}</div></div>", time_of(s, r));
}

fn body_html(
    out: &mut String,
    s: &Session,
    f: &Family,
    agent: &AgentStory,
    r: RecordRef,
    b: &Body,
) {
    let fold_all = b.role == Role::SystemPrompt || b.role == Role::Tool;
    for p in &b.parts {
        match p {
            Part::Text(t) => text_block(out, t, fold_all, "p", None),
            Part::Think(t) => text_block(out, t, true, "p class=\"think\"", Some("thinking")),
            Part::Media {
                kind,
                bytes,
                url_head,
            } => {
                let _ = write!(
                    out,
                    "<p class=\"muted\">[{} · {} · {}…]</p>",
                    esc_line(kind),
                    super::human_size(*bytes as u64),
                    esc_line(url_head)
                );
            }
            Part::Unknown(v) => text_block(out, &v.to_string(), true, "pre", Some("unknown part")),
        }
    }
    for c in &b.tool_calls {
        let pretty = serde_json::from_str::<serde_json::Value>(&c.arguments)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| c.arguments.clone());
        let _ = write!(
            out,
            "<div class=\"call\">→ <span class=\"tool-name\" title=\"call {}\">{}</span>",
            esc_line(&c.id),
            esc_line(&c.name)
        );
        // An edit or write reads as its diff; other calls as arguments.
        let diffs = super::diff::of_call(&c.name, &c.arguments, DIFF_LINES);
        if diffs.is_empty() {
            text_block(out, &pretty, false, "pre", Some("arguments"));
        } else {
            diff_html(out, &diffs);
        }
        out.push_str("</div>");
        if let Some(a) = f
            .attempts
            .iter()
            .find(|a| a.call == r && a.tool_call_id == c.id)
        {
            let outcome = match (a.accepted, &a.error, a.caused) {
                (Some(true), _, Some(k)) => format!(
                    "accepted: created <a href=\"#{}\">world line {}</a>",
                    line_anchor(r.agent, k),
                    esc_line(&agent.lines[k].name)
                ),
                (Some(true), _, None) => "accepted (no revert seen)".to_string(),
                (Some(false), Some(e), _) => {
                    format!("<span class=\"error\">refused</span>: {}", esc_line(e))
                }
                (Some(false), None, _) => "<span class=\"error\">refused</span>".to_string(),
                (None, _, _) => "no result yet".to_string(),
            };
            let _ = write!(
                out,
                "<p><span class=\"tag\">✉ D-Mail → ⚑{}</span> {outcome}</p>",
                a.checkpoint_id
            );
        }
        if let Some((k, a)) = s.agents.iter().enumerate().find(|(_, a)| {
            a.parent_call == Some(r) && a.parent_tool_call_id.as_deref() == Some(&c.id)
        }) {
            let what = a
                .meta
                .as_ref()
                .and_then(|m| m.description.clone().or(Some(m.agent_id.clone())))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<p>⇲ ran <a href=\"#a{k}\">subagent {}</a></p>",
                esc_line(&what)
            );
        }
    }
}

/// Diff lines shown per file before the rest folds.
const DIFF_LINES: usize = 80;

/// Diffs as coloured `<pre>` blocks, the files' names and `+n −m` first;
/// a long one folded into `<details>`.
fn diff_html(out: &mut String, diffs: &[super::diff::Diff]) {
    use super::diff::Kind;
    for d in diffs {
        let head = format!(
            "{} {}{}",
            esc_line(&d.path),
            d.stat(),
            if d.whole { " (whole file written)" } else { "" }
        );
        let mut pre = String::from("<pre class=\"diff\">");
        for l in &d.lines {
            // Colours inline: the page's style sheet stays as it was.
            let colour = match l.kind {
                Kind::Add => "#2f9e44",
                Kind::Del => "#d0342c",
                Kind::Hunk | Kind::Fold => "#888",
                Kind::Context => "inherit",
            };
            let _ = writeln!(
                pre,
                "<span style=\"color:{colour}\">{}</span>",
                esc_line(&l.unified())
            );
        }
        pre.push_str("</pre>");
        if d.lines.len() > FOLD_LINES {
            let _ = write!(out, "<details><summary>{head}</summary>{pre}</details>");
        } else {
            let _ = write!(out, "<p class=\"muted\">{head}</p>{pre}");
        }
    }
}

/// Escaped text in `tag`, folded into `<details>` when long (or always with
/// `fold`), capped at `MAX_PART`.
fn text_block(out: &mut String, text: &str, fold: bool, tag: &str, label: Option<&str>) {
    let shown = &text[..text.floor_char_boundary(MAX_PART)];
    let rest = text.len() - shown.len();
    let close = tag.split(' ').next().unwrap_or("p");
    let lines = shown.lines().count();
    let long = shown.len() > FOLD_BYTES || lines > FOLD_LINES;
    let more = if rest > 0 {
        format!(
            "<p class=\"muted\">… {} more not shown (see the session file)</p>",
            super::human_size(rest as u64)
        )
    } else {
        String::new()
    };
    if fold || long {
        let first = shown.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let _ = write!(
            out,
            "<details><summary>{}{} <span class=\"muted\">({} line{})</span></summary><{tag}>{}</{close}>{more}</details>",
            label.map(|l| format!("{l}: ")).unwrap_or_default(),
            esc_line(&crate::text::truncate(first.trim(), 90)),
            lines,
            plural(lines),
            esc(shown)
        );
    } else if !shown.is_empty() {
        let _ = write!(out, "<{tag}>{}</{close}>{more}", esc(shown));
    }
}
