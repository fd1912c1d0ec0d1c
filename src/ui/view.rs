//! Drawing (pure over `&App`): header, graph rows, detail pane, footer and
//! overlays. Only the visible rows are laid out; previews and bodies come
//! from the cache `App::prepare` filled.

use ratatui::layout::{Constraint, Layout, Rect, Size};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::model::{Marker, RecordMeta, Role};
use crate::text::{sanitize_line, truncate, width};
use crate::worldline::{Family, RecordRef};

use super::app::{App, LiveState, Overlay};
use super::detail;
use super::divergence;
use super::theme::line_name;

/// Screen regions; shared by drawing and mouse hit-testing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    /// Graph rows, without borders.
    pub graph: Rect,
    /// Detail pane including its border.
    pub detail: Rect,
    pub footer: Rect,
    /// Side by side (wide) or stacked (narrow).
    pub wide: bool,
}

pub fn areas(size: Size, expanded: bool) -> Areas {
    let full = Rect::new(0, 0, size.width, size.height);
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(full);
    let wide = size.width >= 110;
    if expanded {
        return Areas {
            header,
            graph: Rect::new(body.x, body.y, body.width, 0),
            detail: body,
            footer,
            wide,
        };
    }
    let (graph, detail) = if wide {
        let [g, d] = Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)])
            .areas(body);
        (g, d)
    } else {
        let detail_h = (body.height * 2 / 5)
            .max(5)
            .min(body.height.saturating_sub(3));
        let [g, d] =
            Layout::vertical([Constraint::Min(1), Constraint::Length(detail_h)]).areas(body);
        (g, d)
    };
    Areas {
        header,
        graph,
        detail,
        footer,
        wide,
    }
}

pub fn picker_list_area(size: Size) -> Rect {
    let full = Rect::new(0, 0, size.width, size.height);
    let [_, list, _] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(full);
    list
}

pub fn draw(f: &mut Frame, app: &App) {
    let size = f.area().as_size();
    if app.session.is_none() {
        if app.picker.is_some() {
            draw_picker(f, app);
        } else {
            let msg = Paragraph::new("loading the session…").style(app.theme.dim());
            f.render_widget(msg, f.area());
        }
        return;
    }
    let a = areas(size, app.expanded);
    draw_header(f, app, a.header);
    if a.graph.height > 0 {
        draw_graph(f, app, a.graph);
    }
    draw_detail(f, app, a.detail, a.wide && !app.expanded);
    draw_footer(f, app, a.footer);
    match &app.overlay {
        Overlay::Help => draw_help(f, app),
        Overlay::Subagents { sel } => draw_subagents(f, app, *sel),
        Overlay::Compose(c) => {
            if let Some(s) = &app.session {
                super::compose::draw(f, s, c, &app.theme);
            }
        }
        Overlay::None => {}
    }
}

fn draw_header(f: &mut Frame, app: &App, area: Rect) {
    let t = &app.theme;
    let Some(s) = &app.session else { return };
    let w = area.width as usize;
    let title = s.title.as_deref().unwrap_or("(untitled)");
    let place = app
        .work_dir
        .clone()
        .unwrap_or_else(|| s.dir.display().to_string());
    let title = sanitize_line(title, 40);
    let id = sanitize_line(&s.id, 8);
    let room = w.saturating_sub(width(&title) + width(&id) + 17).max(8);
    let mut first = vec![
        Span::styled(" worldline ", t.accent()),
        Span::styled(title.clone(), t.bold()),
        Span::raw(format!(
            " · {id} · {}",
            keep_tail(&sanitize_line(&place, 400), room)
        )),
    ];
    if app.agent > 0 {
        let meta = s.agents[app.agent].meta.clone().unwrap_or_default();
        first = vec![
            Span::styled(" subagent ", t.accent()),
            Span::styled(sanitize_line(&meta.agent_id, 20), t.bold()),
            Span::raw(format!(
                " ({}) {} · Esc back to {}",
                sanitize_line(meta.subagent_type.as_deref().unwrap_or("?"), 16),
                sanitize_line(meta.description.as_deref().unwrap_or(""), 30),
                truncate(&title, 20)
            )),
        ];
    }
    let Some(fam) = app.family() else { return };
    let focus = app.focus.min(fam.lines.len().saturating_sub(1));
    let file = fam.lines.get(focus).map_or("", |l| l.file.as_str());
    let live = match app.live {
        LiveState::Loading => "loading",
        LiveState::Static => "static",
        LiveState::Live => "● live",
        LiveState::Deleted => "deleted",
    };
    let mut second = vec![
        Span::raw(format!(
            " {} world line{} · ",
            fam.lines.len(),
            plural(fam.lines.len())
        )),
        Span::styled(
            format!("world line {}", line_name(focus)),
            t.line(focus).patch(t.bold()),
        ),
        Span::raw(format!(" {} · divergence ", sanitize_line(file, 30))),
        Span::styled(divergence::meter(fam, focus), t.bold()),
        Span::raw(format!(" · {live}")),
    ];
    if app.follow {
        second.push(Span::raw(" · follow"));
    }
    if !app.filter.is_all() {
        let mut what = app.filter.role.label();
        if app.filter.collapse {
            what = format!("{what}, collapsed");
        }
        second.push(Span::styled(format!(" · filter: {what}"), t.accent()));
    }
    let lines = vec![Line::from(first), Line::from(second)];
    f.render_widget(Paragraph::new(lines), area);
}

/// The end of a path is what tells sessions apart: cut from the left.
fn keep_tail(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    let mut tail: Vec<char> = Vec::new();
    let mut used = 1;
    for c in s.chars().rev() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w > max {
            break;
        }
        used += w;
        tail.push(c);
    }
    std::iter::once('…').chain(tail.into_iter().rev()).collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn draw_graph(f: &mut Frame, app: &App, area: Rect) {
    let Some(fam) = app.family() else { return };
    let h = area.height as usize;
    let w = area.width as usize;
    let max_lanes = ((w.saturating_sub(30)) / 2).clamp(1, 10);
    let mut lines = Vec::with_capacity(h);
    for pos in app.scroll..(app.scroll + h).min(app.rows.len()) {
        lines.push(row_line(app, fam, pos, w, max_lanes));
    }
    if app.rows.is_empty() {
        lines.push(Line::from(Span::styled(
            "  (no records yet)",
            app.theme.dim(),
        )));
    }
    f.render_widget(Paragraph::new(lines), area);
}

/// One graph row: lanes, a tag, a preview and right-aligned facts.
fn row_line(app: &App, fam: &Family, pos: usize, w: usize, max_lanes: usize) -> Line<'static> {
    let t = &app.theme;
    let Some(row) = app.rows.row_at(pos) else {
        return Line::default();
    };
    let Some(r) = app.rows.record_of(row) else {
        return Line::default();
    };
    let Some(meta) = fam.record(r) else {
        return Line::default();
    };
    let is_dmail = meta.tool_calls.iter().any(|c| c.dmail.is_some())
        || matches!(meta.marker.as_deref(), Some(Marker::DMailInjection(_)));
    let head = fam.lines.get(r.line).is_some_and(|l| l.current)
        && app.rows.line_rows(r.line).end == row + 1;
    let node = if is_dmail {
        '✉'
    } else if head {
        '◆'
    } else if meta.role.is_message() {
        '●'
    } else {
        '○'
    };
    let selected = pos == app.cursor;
    let on_focus = app.on_line(app.focus, r);
    let mut spans: Vec<Span<'static>> = Vec::new();
    for c in app.rows.lanes.cells(row, r.line, node, max_lanes) {
        let style = match c.line {
            Some(l) if c.glyph == '✉' => t.dmail().patch(t.line(l)),
            Some(l) => t.line(l),
            None => Style::new(),
        };
        spans.push(Span::styled(c.glyph.to_string(), style));
    }
    spans.push(Span::raw(" "));
    let used: usize = spans.iter().map(|s| width(&s.content)).sum();
    let (tag, tag_style, text, right) = describe(app, fam, r, meta, pos);
    let avail = w.saturating_sub(used);
    let tag = truncate(&tag, 6);
    let tag_cell = format!("{tag}{}", " ".repeat(7 - width(&tag)));
    // The facts on the right (tools, time) win over the preview, up to a point.
    let right = truncate(&right, avail.saturating_sub(7 + 12));
    let text_w = avail.saturating_sub(width(&tag_cell) + width(&right) + 1);
    let text = truncate(&text, text_w);
    let pad = avail.saturating_sub(width(&tag_cell) + width(&text) + width(&right));
    let hit = app.search.hits.contains(&row);
    let base = if on_focus { Style::new() } else { t.dim() };
    spans.push(Span::styled(
        tag_cell,
        if hit { t.hit() } else { base.patch(tag_style) },
    ));
    spans.push(Span::styled(text, base));
    spans.push(Span::raw(" ".repeat(pad)));
    spans.push(Span::styled(right, base.patch(t.dim())));
    let line = Line::from(spans);
    if selected {
        line.style(t.selected())
    } else {
        line
    }
}

/// Tag, its style, preview text and right-hand facts of a record.
fn describe(
    app: &App,
    fam: &Family,
    r: RecordRef,
    meta: &RecordMeta,
    pos: usize,
) -> (String, Style, String, String) {
    let t = &app.theme;
    let preview = || app.cache.get_preview(r).unwrap_or("").to_string();
    let time = app
        .session
        .as_ref()
        .and_then(|s| {
            let n = *fam.lines.get(r.line)?.nodes.get(r.record)?;
            s.graph[n].time
        })
        .map(detail::clock)
        .unwrap_or_default();
    let hidden = app.rows.hidden_after(pos);
    let hidden = if hidden > 0 {
        format!(" (+{hidden})")
    } else {
        String::new()
    };
    let with_time = |s: String| {
        let mut out = s;
        if !time.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&time);
        }
        out.push_str(&hidden);
        out
    };
    match (&meta.role, meta.marker.as_deref()) {
        (Role::Checkpoint, _) => (
            format!("⚑ {}", meta.checkpoint.unwrap_or(-1)),
            t.role(&Role::Checkpoint),
            format!("checkpoint {}", meta.checkpoint.unwrap_or(-1)),
            with_time(String::new()),
        ),
        (Role::Usage, _) => (
            "Σ".into(),
            t.dim(),
            format!("{} tokens", meta.tokens.unwrap_or(0)),
            with_time(String::new()),
        ),
        (Role::SystemPrompt, _) => ("sys".into(), t.dim(), preview(), with_time(String::new())),
        (_, Some(Marker::CheckpointNote(n))) => (
            "user".into(),
            t.dim(),
            format!("CHECKPOINT {n} (note)"),
            with_time(String::new()),
        ),
        (_, Some(Marker::DMailInjection(msg))) => {
            let cp = fam
                .lines
                .get(r.line)
                .and_then(|l| l.fork.as_ref()?.checkpoint)
                .map_or("?".into(), |c| c.to_string());
            (
                "D-Mail".into(),
                t.dmail(),
                sanitize_line(msg, 200),
                with_time(format!("→ ⚑{cp}")),
            )
        }
        (Role::Assistant, _) => {
            let mut tools: Vec<String> = Vec::new();
            for c in &meta.tool_calls {
                match &c.dmail {
                    Some(d) => {
                        let fate = fam
                            .attempts
                            .iter()
                            .find(|a| a.call == r && a.tool_call_id == c.id)
                            .map(|a| match (a.accepted, a.caused) {
                                (Some(true), Some(k)) => format!(" ⇒{}", line_name(k)),
                                (Some(false), _) => " ✗".into(),
                                _ => String::new(),
                            })
                            .unwrap_or_default();
                        tools.push(format!("SendDMail → ⚑{}{fate}", d.checkpoint_id));
                    }
                    None => tools.push(sanitize_line(&c.name, 24)),
                }
            }
            (
                "asst".into(),
                t.role(&Role::Assistant),
                preview(),
                with_time(tools.join(", ")),
            )
        }
        (Role::Tool, marker) => {
            let extra = match marker {
                Some(Marker::DMailResult(Ok(()))) => "D-Mail accepted".into(),
                Some(Marker::DMailResult(Err(_))) => "D-Mail refused".into(),
                Some(Marker::AgentResult(id)) => format!("⇲ {}", sanitize_line(id, 16)),
                _ => String::new(),
            };
            (
                "tool".into(),
                t.role(&Role::Tool),
                preview(),
                with_time(extra),
            )
        }
        (role, _) => (
            sanitize_line(detail::role_name(role), 6),
            t.role(role),
            preview(),
            with_time(String::new()),
        ),
    }
}

fn draw_detail(f: &mut Frame, app: &App, area: Rect, side: bool) {
    let t = &app.theme;
    let block = if app.expanded {
        Block::default()
            .borders(Borders::TOP)
            .title(" record (Enter/Esc back, PgUp/PgDn scroll) ")
    } else if side {
        Block::default().borders(Borders::LEFT)
    } else {
        Block::default().borders(Borders::TOP)
    };
    let (Some(s), Some(r)) = (&app.session, app.selected()) else {
        f.render_widget(block, area);
        return;
    };
    let lines = detail::lines(s, r, app.cache.get_body(r), t);
    let p = Paragraph::new(lines)
        .block(block)
        .wrap(Wrap { trim: false })
        .scroll((app.detail_scroll, 0));
    f.render_widget(p, area);
}

fn draw_footer(f: &mut Frame, app: &App, area: Rect) {
    let t = &app.theme;
    let line = if let Some(q) = &app.search.input {
        Line::from(vec![
            Span::styled("/", t.accent()),
            Span::raw(sanitize_line(q, area.width as usize)),
            Span::styled("▏", t.accent()),
            Span::styled("  Enter search · Esc cancel", t.dim()),
        ])
    } else if app.search.running {
        let pct = (app.search.scanned * 100)
            .checked_div(app.search.total)
            .unwrap_or(0);
        Line::from(Span::styled(
            format!(
                " searching /{} … {pct}% · {} hits · Esc stops",
                sanitize_line(&app.search.query, 30),
                app.search.hits.len()
            ),
            t.accent(),
        ))
    } else if let Some(msg) = &app.status {
        Line::from(Span::styled(
            format!(" {}", sanitize_line(msg, 200)),
            t.accent(),
        ))
    } else {
        Line::from(Span::styled(
            " j/k move  h/l world line  ]/[ fork  ⏎ expand  / search  f filter  c collapse  s subagents  ? help  q quit",
            t.dim(),
        ))
    };
    f.render_widget(Paragraph::new(line), area);
}

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

pub const HELP: &[(&str, &str)] = &[
    ("j/k ↑/↓", "move"),
    ("PgUp/PgDn g/G", "page, top, bottom"),
    (
        "h/l ←/→ Tab",
        "switch world line, keeping the equivalent point",
    ),
    ("Enter", "expand the record (Esc back)"),
    ("] [", "next / previous fork or D-Mail"),
    ("/ n N", "search bodies (smart case), next / previous match"),
    (
        "f",
        "filter: all, user, assistant, tool, checkpoints, each tool",
    ),
    ("c", "collapse to checkpoints (one row per step)"),
    ("s Esc", "enter a subagent's world lines, back"),
    ("F", "follow the newest record"),
    (
        "d Ctrl-S Esc",
        "D-Mail to the selected ⚑ of the current line: send, cancel",
    ),
    ("mouse", "wheel scrolls, click selects"),
    ("q Ctrl-C", "quit"),
];

fn draw_help(f: &mut Frame, app: &App) {
    let t = &app.theme;
    let area = centered(f.area(), 78, 24);
    let mut lines: Vec<Line> = Vec::new();
    for (k, what) in HELP {
        lines.push(Line::from(vec![
            Span::styled(format!(" {k:<15}"), t.bold()),
            Span::raw(*what),
        ]));
    }
    // Kept to 22 lines so the whole help fits an 80×24 terminal.
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled(" Graph ", t.bold()),
        Span::raw(
            "one row per record, in written order; one lane and colour per world line. \
             ─╮ a world line leaves its origin at the last record they share · \
             ✉ D-Mail call and injection · ◆ current head · ⚑ checkpoint · ○ bookkeeping",
        ),
    ]));
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled(" Divergence N.ppphhh ", t.bold()),
        Span::raw(
            "N = forks between α and this world line (following origins), \
             ppp = per mille of its records not shared with α, \
             hhh = fingerprint of its fork (checkpoint and D-Mail text). α reads 0.000000.",
        ),
    ]));
    let p = Paragraph::new(lines)
        .block(Block::bordered().title(" help — any key closes "))
        .wrap(Wrap { trim: false });
    f.render_widget(Clear, area);
    f.render_widget(p, area);
}

fn draw_subagents(f: &mut Frame, app: &App, sel: usize) {
    let t = &app.theme;
    let Some(s) = &app.session else { return };
    let n = s.agents.len().saturating_sub(1) as u16;
    let area = centered(f.area(), 70, n + 4);
    let mut lines = Vec::new();
    for (i, a) in s.agents.iter().enumerate().skip(1) {
        let m = a.meta.clone().unwrap_or_default();
        let text = format!(
            " {} ({}) {} · {} world line{} {}",
            sanitize_line(&m.agent_id, 20),
            sanitize_line(m.subagent_type.as_deref().unwrap_or("?"), 12),
            sanitize_line(m.description.as_deref().unwrap_or(""), 30),
            a.family.lines.len(),
            plural(a.family.lines.len()),
            sanitize_line(m.status.as_deref().unwrap_or(""), 10)
        );
        let style = if i - 1 == sel {
            t.selected()
        } else {
            Style::new()
        };
        lines.push(Line::from(Span::styled(text, style)));
    }
    let p = Paragraph::new(lines)
        .block(Block::bordered().title(" subagents — Enter opens, Esc closes "));
    f.render_widget(Clear, area);
    f.render_widget(p, area);
}

fn draw_picker(f: &mut Frame, app: &App) {
    let t = &app.theme;
    let Some(p) = &app.picker else { return };
    let size = f.area().as_size();
    let list = picker_list_area(size);
    let header = Rect::new(0, 0, size.width, 3.min(size.height));
    let w = size.width as usize;
    f.render_widget(
        Paragraph::new(vec![
            Line::from(vec![
                Span::styled(" worldline ", t.accent()),
                Span::styled("choose a session", t.bold()),
                Span::styled(format!(" · {} sessions", p.sessions.len()), t.dim()),
            ]),
            Line::default(),
            Line::from(Span::styled(
                format!(
                    " {:<16}  {:>5}  {:>4}  {}",
                    "MODIFIED (UTC)", "LINES", "SUBS", "TITLE · ID"
                ),
                t.dim(),
            )),
        ]),
        header,
    );
    let h = list.height as usize;
    let first = p.sel.saturating_sub(h.saturating_sub(1));
    let mut lines = Vec::new();
    for (i, s) in p.sessions.iter().enumerate().skip(first).take(h) {
        let text = format!(
            " {:<16}  {:>5}  {:>4}  {} · {}",
            crate::export::format_time(s.modified as f64),
            s.world_lines,
            s.subagents,
            sanitize_line(s.title.as_deref().unwrap_or("(untitled)"), 40),
            sanitize_line(&s.id, 36)
        );
        let text = truncate(&text, w);
        let style = if i == p.sel {
            t.selected()
        } else {
            Style::new()
        };
        lines.push(Line::from(Span::styled(text, style)));
    }
    if p.sessions.is_empty() {
        lines.push(Line::from(Span::styled(" no sessions found", t.dim())));
    }
    f.render_widget(Paragraph::new(lines), list);
    let footer = Rect::new(0, size.height.saturating_sub(1), size.width, 1);
    f.render_widget(
        Paragraph::new(Span::styled(" ↑/↓ choose  Enter open  q quit", t.dim())),
        footer,
    );
}
